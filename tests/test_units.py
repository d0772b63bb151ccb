"""NAC and NALU: exact hand-set solutions, weight bounds, finite gradients."""

from __future__ import annotations

import math

import pytest
import torch

from nalu.ensemble import init_members
from nalu.stack import units
from nalu.units import NAC, NALU, UNITS
from tasks.arithmetic import OPS, ArithmeticProblem

from .conftest import compose

BIG = 20.0  # tanh(20) and sigmoid(20) are exactly 1 in float32


def set_weights(nac: NAC, W: torch.Tensor) -> None:
    """Make ``tanh(W_hat) * sigmoid(M_hat) == W`` for W in {-1, 0, 1} and |W| < 1 elsewhere."""
    with torch.no_grad():
        nac.M_hat.fill_(BIG)
        exact = W.abs() == 1
        nac.W_hat.copy_(torch.where(exact, W.sign() * BIG, torch.atanh(W.clamp(-0.999, 0.999))))


def hand_set_nalu(W: list[float], gate: float) -> NALU:
    unit = NALU(len(W), 1, members=1)
    set_weights(unit.nac, torch.tensor([[W]]))
    with torch.no_grad():
        unit.G.fill_(gate)  # +BIG: additive path; -BIG: multiplicative path (inputs are positive)
    return unit


@pytest.fixture
def ab():
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(2, 1000, generator=g) * 9 + 1  # in [1, 10]
    return a, b, torch.stack([a, b], -1).unsqueeze(0)  # x: [1, N, 2]


@pytest.mark.parametrize("W,gate,expected", [
    ([1, 1], BIG, lambda a, b: a + b),
    ([1, -1], BIG, lambda a, b: a - b),
    ([1, 1], -BIG, lambda a, b: a * b),
    ([1, -1], -BIG, lambda a, b: a / b),
    ([0.5, 0], -BIG, lambda a, b: torch.sqrt(a)),
])
def test_single_nalu_with_hand_set_weights_is_exact(ab, W, gate, expected):
    a, b, x = ab
    y = hand_set_nalu(W, gate)(x)[0, :, 0]
    torch.testing.assert_close(y, expected(a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", list(OPS))
def test_two_layer_nalu_solves_static_task_exactly(op):
    """Layer 1 computes a and b (a, a for a^2 and sqrt); layer 2 applies the operation."""
    cfg = compose([f"task.op={op}", "task.test_samples=500", "task.extrapolation_samples=500"])
    problem = ArithmeticProblem(cfg.task, [7], recurrent=False)
    model = units("nalu", 100, 1, members=1, hidden=[2])
    first, second = model.layers
    second_b = problem.mask_b[0] if op in ("add", "sub", "mul", "div") else problem.mask_a[0]
    set_weights(first.nac, torch.stack([problem.mask_a[0], second_b]).unsqueeze(0))
    W2, gate = {"add": ([1, 1], BIG), "sub": ([1, -1], BIG), "mul": ([1, 1], -BIG),
                "div": ([1, -1], -BIG), "square": ([1, 1], -BIG), "sqrt": ([0.5, 0], -BIG)}[op]
    set_weights(second.nac, torch.tensor([[W2]], dtype=torch.float32))
    with torch.no_grad():
        first.G.fill_(BIG)
        second.G.fill_(gate)
    for split in ("interpolation", "extrapolation"):
        x, y = problem.sets[split]
        torch.testing.assert_close(model(x), y, rtol=1e-5, atol=1e-4)


def test_nac_weights_stay_in_unit_interval():
    nac = NAC(5, 3, members=4)
    init_members(nac, range(4))
    opt = torch.optim.Adam(nac.parameters(), lr=10.0)
    x = torch.rand(4, 32, 5)
    for _ in range(50):
        opt.zero_grad()
        (nac(x) - 1e4).square().mean().backward()
        opt.step()
        W = nac.W
        assert W.min() >= -1 and W.max() <= 1
    with torch.no_grad():
        nac.W_hat.fill_(1e4)
        nac.M_hat.fill_(1e4)
    assert nac.W.max() == 1.0


@pytest.mark.parametrize("unit", ["nac", "nalu"])
@pytest.mark.parametrize("low,high", [(1, 2), (2, 6), (-5, 5), (-1000, 1000)])
def test_gradients_are_finite_at_initialisation(unit, low, high):
    model = units(unit, 100, 1, members=3, hidden=[2])
    init_members(model, [0, 1, 2])
    x = torch.empty(3, 64, 100).uniform_(low, high)
    x[:, 0, :] = 0.0  # exact zeros too: log(|0| + eps) must not break the gradient
    model(x).square().mean().backward()
    for name, p in model.named_parameters():
        assert torch.isfinite(p.grad).all(), name


def test_recurrent_nac_sums_a_sequence_exactly():
    """h_t = h_{t-1} + x_t (weights 1 on both) gives the running sum; read-out copies it."""
    model = units("nac", 1, 1, members=1, hidden=[1], recurrent=True)
    cell, readout = model.layers
    set_weights(cell, torch.tensor([[[1.0, 1.0]]]))
    set_weights(readout, torch.tensor([[[1.0]]]))
    x = torch.rand(1, 8, 1000, 1) + 1
    torch.testing.assert_close(model(x)[0, :, 0], x[0].sum((1, 2)), rtol=1e-5, atol=1e-3)
    with torch.no_grad():
        assert math.isclose(float(model(torch.ones(1, 1, 1000, 1))), 1000.0, rel_tol=1e-6)


@pytest.mark.parametrize("unit", ["nac", "nalu"])
def test_identity_state_init_starts_recurrent_units_as_accumulators(unit):
    plain = units(unit, 3, 1, members=2, hidden=[2], recurrent=True)
    ident = units(unit, 3, 1, members=2, hidden=[2], recurrent=True, state_init="identity")
    init_members(plain, [0, 1])
    init_members(ident, [0, 1])
    nac = ident.layers[0] if unit == "nac" else ident.layers[0].nac
    with torch.no_grad():
        W = nac.W
    torch.testing.assert_close(W[:, :, 3:], torch.eye(2).expand(2, 2, 2), atol=1e-4, rtol=0)
    # the input block and the read-out keep the default initialisation
    plain_cell = plain.layers[0] if unit == "nac" else plain.layers[0].nac
    torch.testing.assert_close(nac.W_hat[:, :, :3], plain_cell.W_hat[:, :, :3])
    for p, q in zip(plain.layers[1].parameters(), ident.layers[1].parameters()):
        torch.testing.assert_close(p, q)


def test_identity_state_init_of_an_elman_rnn_is_the_irnn():
    from baselines.mlp import MLP

    rnn = MLP(4, 1, members=2, hidden=[3], activation_name="ReLU", recurrent=True, state_init="identity")
    init_members(rnn, [0, 1])
    lin = rnn.layers[0].linear
    assert torch.equal(lin.weight[:, :, 4:], torch.eye(3).expand(2, 3, 3))
    assert torch.equal(lin.bias, torch.zeros_like(lin.bias))


@pytest.mark.parametrize("name", sorted(UNITS))
def test_a_unit_works_as_a_plain_torch_layer(name):
    """``Unit(in, out)`` has one member and maps ``[B, in]`` to ``[B, out]``, the same numbers as
    the batched form ``[1, B, in] -> [1, B, out]``; with several members, ``[M, B, out]``."""
    torch.manual_seed(0)
    layer = UNITS[name](3, 2)
    init_members(layer, [7])
    x = torch.rand(5, 3) + 0.5
    y = layer(x)
    assert y.shape == (5, 2)
    assert torch.equal(y, layer(x.unsqueeze(0))[0])
    several = UNITS[name](3, 2, 4)
    init_members(several, [0, 1, 2, 3])
    assert several(x).shape == (4, 5, 2)


def test_the_readme_example_of_a_plain_nalu():
    from .conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    example = readme[readme.index("from nalu.units import NALU") - len("import torch\n"):]
    example = example[: example.index("```")]
    scope: dict = {}
    exec(example, scope)  # the README's own lines
    assert scope["y"].shape == (32, 2) and torch.isfinite(scope["y"]).all()


def test_a_two_layer_cell_feeds_its_second_layer_back_as_the_state():
    """step_depth=2: h_t = L2(L1([x_t, h_{t-1}])), the read-out after; a one-layer step is unchanged."""
    from nalu.ensemble import init_members

    x = torch.randn(1, 3, 5, 2)  # [1, B, T, in]
    deep = units(["nac", "nac", "nac"], 2, 1, members=1, hidden=[4, 3], recurrent=True, step_depth=2)
    init_members(deep, [0])
    l1, l2, out = deep.layers
    assert (l1.in_features, l1.out_features, l2.out_features) == (2 + 3, 4, 3)
    h = torch.zeros(1, 3, 3)
    for t in range(5):
        h = l2(l1(torch.cat([x[:, :, t], h], -1)))
    assert torch.allclose(deep(x), out(h), atol=1e-6)
    assert deep.per_step(x).shape == (1, 3, 5, 1)
    assert torch.allclose(deep.per_step(x)[:, :, -1], deep(x), atol=1e-6)

    shallow = units("nac", 2, 1, members=1, hidden=[4, 3], recurrent=True)
    assert shallow.layers[0].in_features == 2 + 4  # the default cell is the first layer
    flat = units("nac", 2, 1, members=1, hidden=[4, 3], step_depth=2)  # feed-forward: no recurrent step
    assert flat.layers[0].in_features == 2 and flat(x[:, :, 0]).shape == (1, 3, 1)


@pytest.mark.parametrize("kwargs, message", [
    (dict(recurrent=True, step_depth=3), "step_depth"),
    (dict(recurrent=True, step_depth=0), "step_depth"),
    (dict(recurrent=True, step_depth=2, state_init="identity"), "identity"),
])
def test_impossible_cells_are_refused(kwargs, message):
    from nalu.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        units("nac", 2, 1, members=1, hidden=[4, 3], **kwargs)


def test_a_list_of_units_names_one_per_layer():
    from nalu.errors import ConfigError

    stack = units(["nalu", "nac", "nac"], 2, 1, members=1, hidden=[4, 3])
    assert [type(layer).__name__ for layer in stack.layers] == ["NALU", "NAC", "NAC"]
    with pytest.raises(ConfigError, match="3 layers"):
        units(["nalu", "nac"], 2, 1, members=1, hidden=[4, 3])
    with pytest.raises(ConfigError, match="nmu"):  # an unknown unit lists the valid ones
        units(["nalu", "nac", "adder"], 2, 1, members=1, hidden=[4, 3])


def test_a_large_gate_bias_makes_the_nalu_its_nac_and_none_adds_no_parameter():
    plain, biased = NALU(3, 2, members=2), NALU(3, 2, members=2, gate_bias=40.0)  # sigmoid(40) is 1.0 in float32
    assert "b" not in dict(plain.named_parameters()) and biased.b.shape == (2, 1, 2)
    with torch.no_grad():
        biased.nac.W.copy_(plain.nac.W)
        biased.G.copy_(plain.G)
    x = torch.rand(1, 5, 3) + 0.5
    torch.testing.assert_close(biased(x), plain.nac(x), rtol=0, atol=0)
    assert not torch.equal(plain(x), plain.nac(x))  # without it the multiplicative path takes its share
