"""Adam with one learning rate per member: each member's update is bitwise Adam's at its rate."""

from __future__ import annotations

import functools

import pytest
import torch

from nalu.errors import ConfigError
from nalu.optim import MemberAdam, member_optimizer, runs


def trained(make, members: int = 6, steps: int = 12) -> list[torch.Tensor]:
    """Two parameters of ``members`` members after ``steps`` steps of the same gradients."""
    weights = [torch.randn(members, 7, 13, generator=torch.Generator().manual_seed(0)),
               torch.randn(members, 1, 5, generator=torch.Generator().manual_seed(1))]
    params = [w.clone().requires_grad_() for w in weights]
    optimizer, g = make(params), torch.Generator().manual_seed(2)
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=g)
        optimizer.step()
    return [p.detach() for p in params]


def test_runs_are_the_maximal_stretches_of_equal_rates():
    assert runs([0.1, 0.1, 0.01, 0.01, 0.1]) == [(slice(0, 2), 0.1), (slice(2, 4), 0.01), (slice(4, 5), 0.1)]
    assert runs([1e-3]) == [(slice(0, 1), 1e-3)]


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_each_member_moves_bitwise_as_adam_at_its_own_rate(fused, amsgrad):
    """Three members at 1e-2 then three at 1e-3 (slices that start off any vector boundary) end
    where torch.optim.Adam at 1e-2 and at 1e-3 leave those members, to the bit, fused or not."""
    lrs = [1e-2] * 3 + [1e-3] * 3
    mixed = trained(lambda p: MemberAdam(p, lrs, fused=fused, amsgrad=amsgrad))
    fast = trained(lambda p: torch.optim.Adam(p, lr=1e-2, fused=fused, amsgrad=amsgrad))
    slow = trained(lambda p: torch.optim.Adam(p, lr=1e-3, fused=fused, amsgrad=amsgrad))
    for m, f, s in zip(mixed, fast, slow, strict=True):
        assert torch.equal(m[:3], f[:3]) and torch.equal(m[3:], s[3:])
        assert not torch.equal(m[:3], s[:3])  # the rates did differ


def test_equal_rates_leave_the_configured_optimiser_as_it_is():
    factory = functools.partial(torch.optim.Adam, lr=1e-3, fused=True)
    p = [torch.zeros(4, 2, requires_grad=True)]
    assert type(member_optimizer(factory, p, None)) is torch.optim.Adam
    assert type(member_optimizer(factory, p, [1e-3] * 4)) is torch.optim.Adam
    mixed = member_optimizer(factory, p, [1e-2, 1e-2, 1e-3, 1e-3])
    assert type(mixed) is MemberAdam and mixed.param_groups[0]["fused"]


def test_rates_that_differ_are_refused_where_they_cannot_be_honoured():
    p = [torch.zeros(4, 2, requires_grad=True)]
    with pytest.raises(ConfigError, match="Adam only"):
        member_optimizer(functools.partial(torch.optim.SGD, lr=1e-3), p, [1e-2, 1e-2, 1e-3, 1e-3])
    with pytest.raises(ConfigError, match="no leading dimension of 3 members"):
        MemberAdam(p, [1e-2, 1e-2, 1e-3])
    optimizer = MemberAdam(p, [1e-2, 1e-2, 1e-3, 1e-3])
    optimizer.param_groups[0]["lr"] = 5e-3  # a schedule's rescaling, which the per-member rates would ignore
    p[0].grad = torch.ones(4, 2)
    with pytest.raises(RuntimeError, match="would ignore"):
        optimizer.step()
