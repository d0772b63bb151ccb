"""The DNC: its memory invariants hold at every step, and it learns a tiny copy task."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from baselines.dnc import DNC, allocation_weighting, content_weighting, directional_reads, temporal_links
from nalu.ensemble import init_members

TOL = 1e-5


def test_content_weighting_is_a_distribution_peaked_at_the_matching_row():
    memory = torch.eye(4).expand(1, 1, 4, 4) * 3.0
    keys = torch.tensor([0.0, 0.0, 2.0, 0.0]).view(1, 1, 1, 4)
    w = content_weighting(memory, keys, torch.tensor([[[50.0]]]))
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 1, 1))
    assert int(w.argmax()) == 2 and float(w[0, 0, 0, 2]) > 0.99


def test_allocation_prefers_free_rows_and_sums_to_at_most_one():
    usage = torch.tensor([[[0.9, 0.0, 0.5, 1.0]]])
    a = allocation_weighting(usage)
    assert int(a.argmax()) == 1 and float(a[0, 0, 1]) == pytest.approx(1.0, abs=1e-5)
    for _ in range(20):
        a = allocation_weighting(torch.rand(2, 3, 8))
        assert (a >= 0).all() and (a.sum(-1) <= 1 + TOL).all()


def test_links_record_the_order_of_writes_and_reads_follow_them():
    """Write rows 0, 1, 2 in turn (one-hot weightings): L[1, 0] = L[2, 1] = 1 and nothing else;
    from row 0 the forward weighting lands on row 1, from row 2 the backward one on row 1."""
    N = 4
    link, precedence = torch.zeros(1, 1, N, N), torch.zeros(1, 1, N)
    for row in (0, 1, 2):
        link, precedence = temporal_links(link, precedence, torch.eye(N)[row].view(1, 1, N))
    expected = torch.zeros(N, N)
    expected[1, 0] = expected[2, 1] = 1.0
    torch.testing.assert_close(link[0, 0], expected)
    torch.testing.assert_close(precedence[0, 0], torch.eye(N)[2])
    forward, backward = directional_reads(link, torch.eye(N)[[0, 2]].view(1, 1, 2, N))
    torch.testing.assert_close(forward[0, 0, 0], torch.eye(N)[1])
    torch.testing.assert_close(backward[0, 0, 1], torch.eye(N)[1])
    assert forward[0, 0, 1].sum() == 0  # nothing was written after row 2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_memory_invariants_hold_at_every_step(seed):
    torch.manual_seed(seed)
    dnc = DNC(5, 3, members=2, hidden=[16], memory_size=6, word_size=4, read_heads=2)
    init_members(dnc, [seed, seed + 10])
    x = 3 * torch.randn(1, 4, 12, 5)
    for _, s in dnc.steps(x):
        assert ((s.usage >= -TOL) & (s.usage <= 1 + TOL)).all()
        assert (s.write_weights >= 0).all() and (s.write_weights.sum(-1) <= 1 + TOL).all()
        assert (s.read_weights >= 0).all() and (s.read_weights.sum(-1) <= 1 + TOL).all()
        assert (s.precedence >= 0).all() and (s.precedence.sum(-1) <= 1 + TOL).all()
        assert torch.count_nonzero(s.link.diagonal(dim1=-2, dim2=-1)) == 0
        assert ((s.link >= -TOL) & (s.link <= 1 + TOL)).all()
        assert (s.link.sum(-1) <= 1 + TOL).all() and (s.link.sum(-2) <= 1 + TOL).all()


def test_members_do_not_interact():
    x = torch.randn(1, 3, 5, 4)
    both = DNC(4, 2, members=2, hidden=[8], memory_size=4, word_size=3, read_heads=1)
    init_members(both, [7, 8])
    alone = DNC(4, 2, members=1, hidden=[8], memory_size=4, word_size=3, read_heads=1)
    init_members(alone, [8])
    torch.testing.assert_close(both(x)[1], alone(x)[0])


def test_dnc_learns_a_tiny_copy_task():
    """Three 4-bit vectors, a delimiter, then reproduce them: bit accuracy from 50% to > 98%."""
    torch.manual_seed(0)
    bits_n, T, B = 4, 3, 32
    dnc = DNC(bits_n + 1, bits_n, members=1, hidden=[32], memory_size=8, word_size=8, read_heads=1)
    init_members(dnc, [0])
    opt = torch.optim.Adam(dnc.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)

    def batch():
        bits = torch.randint(0, 2, (B, T, bits_n), generator=g).float()
        x = torch.zeros(1, B, 2 * T + 1, bits_n + 1)
        x[0, :, :T, :bits_n] = bits
        x[0, :, T, bits_n] = 1.0  # the delimiter
        return x, bits

    for _ in range(400):
        x, bits = batch()
        loss = F.binary_cross_entropy_with_logits(dnc.per_step(x)[0, :, T + 1:], bits)
        opt.zero_grad()
        loss.backward()
        opt.step()
    x, bits = batch()
    with torch.no_grad():
        accuracy = ((dnc.per_step(x)[0, :, T + 1:] > 0).float() == bits).float().mean()
    assert accuracy > 0.98


def test_the_compiled_step_computes_what_the_eager_step_does_outputs_and_gradients():
    """float64, so that fusion's reordering stays far below the tolerance."""
    def make(compile_step):
        model = DNC(5, 2, members=3, hidden=[6], memory_size=4, word_size=3, read_heads=2, readout="nalu",
                    compile_step=compile_step).double()
        init_members(model, [0, 1, 2])
        return model

    eager, compiled = make(False), make(True)
    x = torch.randn(1, 7, 6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for model in (eager, compiled):
        (model(x) ** 2).mean().backward()
    torch.testing.assert_close(compiled(x), eager(x), rtol=1e-10, atol=1e-10)
    for (name, a), b in zip(eager.named_parameters(), compiled.parameters()):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-9, atol=1e-10, msg=name)
