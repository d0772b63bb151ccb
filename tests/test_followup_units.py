"""NAU, NMU, iNALU, NPU, RealNPU: exact hand-set solutions, clamping, regularisers, finite gradients;
the iNALU's sign by matmuls against the product it replaces."""

from __future__ import annotations

import pytest
import torch

from nalu.ensemble import init_members
from nalu.stack import units
from nalu.train import fit
from nalu.units import UNITS
from nalu.units.inalu import INALU, mixed_sign, mixed_sign_product
from nalu.units.nau import NAU, ramp
from nalu.units.nmu import NMU
from nalu.units.npu import NPU
from nalu.units.realnpu import RealNPU, l1_weight
from tasks.arithmetic import ArithmeticProblem
from tasks.cell import build_model, model_factory

from .conftest import compose

FOLLOW_UPS = ["nau", "nmu", "inalu", "npu", "realnpu"]


@pytest.fixture
def ab():
    g = torch.Generator().manual_seed(0)
    a, b = torch.rand(2, 1000, generator=g) * 9 + 1  # in [1, 10]
    return a, b, torch.stack([a, b], -1).unsqueeze(0)  # x: [1, N, 2]


def with_weights(unit: torch.nn.Module, name: str, W: list[list[float]]) -> torch.nn.Module:
    with torch.no_grad():
        getattr(unit, name).copy_(torch.tensor([W], dtype=torch.float32))
    return unit


@pytest.mark.parametrize("W,expected", [([[1, 1]], lambda a, b: a + b), ([[1, -1]], lambda a, b: a - b),
                                        ([[-1, 0]], lambda a, b: -a)])
def test_nau_adds_and_subtracts(ab, W, expected):
    a, b, x = ab
    torch.testing.assert_close(with_weights(NAU(2, 1, 1), "W", W)(x)[0, :, 0], expected(a, b))


@pytest.mark.parametrize("W,expected", [([[1, 1]], lambda a, b: a * b), ([[1, 0]], lambda a, b: a),
                                        ([[0, 0]], lambda a, b: torch.ones_like(a))])
def test_nmu_multiplies_selected_inputs(ab, W, expected):
    a, b, x = ab
    torch.testing.assert_close(with_weights(NMU(2, 1, 1), "W", W)(x)[0, :, 0], expected(a, b))


@pytest.mark.parametrize("cls", [NPU, RealNPU])
@pytest.mark.parametrize("W,expected", [
    ([[1, 1]], lambda a, b: a * b), ([[1, -1]], lambda a, b: a / b), ([[2, 0]], lambda a, b: a * a),
    ([[0.5, 0]], lambda a, b: torch.sqrt(a)), ([[-1, 0]], lambda a, b: 1 / a),
])
def test_power_units_compute_powers_and_division_of_positive_inputs(ab, cls, W, expected):
    a, b, x = ab
    unit = cls(2, 1, 1, eps=0.0)
    init_members(unit, [0])
    with torch.no_grad():
        unit.g.fill_(1.0)
    torch.testing.assert_close(with_weights(unit, "W_re", W)(x)[0, :, 0], expected(a, b), rtol=1e-5, atol=1e-5)


def test_power_units_keep_the_sign_of_odd_powers_and_gate_out_inputs():
    x = torch.tensor([[[-2.0, 3.0], [-1.5, -4.0]]])  # [1, 2 samples, 2 inputs]
    unit = with_weights(RealNPU(2, 1, 1, eps=0.0), "W_re", [[1, 1]])
    init_members(unit, [0])
    with_weights(unit, "W_re", [[1, 1]])
    with torch.no_grad():
        unit.g.fill_(1.0)
    torch.testing.assert_close(unit(x)[0, :, 0], torch.tensor([-6.0, 6.0]))
    with torch.no_grad():
        unit.g[0, 0, 1] = 0.0  # the second input is irrelevant: r = 1, k = 0
    torch.testing.assert_close(unit(x)[0, :, 0], torch.tensor([-2.0, -1.5]))


def test_inalu_with_hand_set_weights_adds_and_multiplies_with_signs():
    big = 20.0
    unit = INALU(2, 1, 1)
    init_members(unit, [0])
    with torch.no_grad():
        for p in (unit.W_hat_a, unit.W_hat_m, unit.M_hat_a, unit.M_hat_m):
            p.fill_(big)  # W_a = W_m = [1, 1]
    x = torch.tensor([[[2.0, 3.0], [-2.0, 3.0], [-2.0, -3.0]]])
    with torch.no_grad():
        unit.G.fill_(big)
    torch.testing.assert_close(unit(x)[0, :, 0], torch.tensor([5.0, 1.0, -5.0]))
    with torch.no_grad():
        unit.G.fill_(-big)
    torch.testing.assert_close(unit(x)[0, :, 0], torch.tensor([6.0, -6.0, 6.0]))  # signs recovered


@pytest.mark.parametrize("input_members", [1, 3])
def test_inalu_sign_by_matmuls_matches_the_product_it_replaces(input_members):
    """Positive, zero and negative inputs, factors of either sign: value and gradient, float64."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(input_members, 40, 7, generator=g, dtype=torch.float64)
    x[:, :8, 2] = 0.0
    W = torch.randn(3, 4, 7, generator=g, dtype=torch.float64).tanh()  # |w| on both sides of 1/2
    weights = torch.randn(3, 40, 4, generator=g, dtype=torch.float64)
    out = []
    for fn in (mixed_sign, mixed_sign_product):
        w = W.clone().requires_grad_()
        y = fn(x, w)
        out.append((y, torch.autograd.grad((y * weights).sum(), w)[0]))
    (y, dy), (y_ref, dy_ref) = out
    assert ((y_ref < 0).any() and (y_ref > 0).any())  # both signs occur
    torch.testing.assert_close(y, y_ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(dy, dy_ref, rtol=1e-10, atol=1e-10)


def test_inalu_sign_stays_finite_where_a_factor_or_its_log_is_zero():
    x = torch.tensor([[[2.0, -3.0], [2.0, 3.0], [0.0, 3.0]]])
    W = torch.tensor([[[1.0, 0.5]]])  # |w| = 1 (log(1 - |w|) = -inf), 1 - 2|w| = 0
    torch.testing.assert_close(mixed_sign(x, W), torch.tensor([[[0.0], [1.0], [0.0]]]))


def test_clamped_weights_stay_in_range_after_training_steps():
    """Through the real training loop, with a learning rate that throws the weights far out."""
    cfg = compose(["task.op=mul", "task.test_samples=100", "task.extrapolation_samples=100"])
    problem = ArithmeticProblem(cfg.task, [0, 1], recurrent=False)
    model = units("nmu", 100, 1, 2, [2], hidden_unit="nau")
    init_members(model, [0, 1])
    fit(model, problem, torch.optim.Adam(model.parameters(), lr=5.0), steps=5, eval_every=100, progress=False)
    nau, nmu = model.layers
    assert nau.W.min() >= -1 and nau.W.max() <= 1 and (nau.W.abs() == 1).any()  # pushed to the bounds
    assert nmu.W.min() >= 0 and nmu.W.max() <= 1


@pytest.mark.parametrize("cls,W", [(NMU, [[1.0, 0.0]]), (NAU, [[1.0, -1.0]])])
def test_weights_on_their_bounds_still_get_gradients_and_learn(cls, W):
    """Clamping puts weights exactly on a bound; from there, a*b (NMU) and a+b (NAU) still train."""
    unit = with_weights(cls(2, 1, 1, sparsity_weight=0.0), "W", W)
    g = torch.Generator().manual_seed(0)
    opt = torch.optim.Adam(unit.parameters(), lr=0.03)
    for step in range(400):
        x = torch.rand(1, 64, 2, generator=g) + 1
        target = x.prod(-1, keepdim=True) if cls is NMU else x.sum(-1, keepdim=True)
        loss = (unit(x) - target).square().mean()
        opt.zero_grad()
        loss.backward()
        if step == 0:
            assert (unit.W.grad != 0).all(), unit.W.grad
        opt.step()
        unit.after_step(step, loss.detach())
    torch.testing.assert_close(unit.W.detach(), torch.ones(1, 1, 2), atol=1e-3, rtol=0)


@pytest.mark.parametrize("unit", FOLLOW_UPS)
@pytest.mark.parametrize("low,high", [(1, 2), (2, 6), (-2, 2), (0, 1), (-20, -10), (0, 0), (-1, 1)])
def test_gradients_are_finite_at_initialisation(unit, low, high):
    model = units(unit, 100, 1, 3, [2], **({"hidden_unit": "nau"} if unit == "nmu" else {}))
    init_members(model, [0, 1, 2])
    x = torch.empty(1, 64, 100).uniform_(low, high, generator=torch.Generator().manual_seed(0))
    model(x).square().mean().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name


def test_nau_regulariser_ramps_in_and_vanishes_at_discrete_weights():
    assert [ramp(t, 10, 20) for t in (0, 10, 15, 20, 99)] == [0.0, 0.0, 0.5, 1.0, 1.0]
    unit = with_weights(NAU(3, 1, 1, sparsity_weight=2.0, sparsity_start=10, sparsity_end=20), "W", [[1, 0, -0.5]])
    loss = torch.zeros(1)
    assert unit.regularizer(5, loss).item() == 0
    torch.testing.assert_close(unit.regularizer(15, loss), torch.tensor([2.0 * 0.5 * 0.5 / 3]))
    torch.testing.assert_close(unit.sparsity_error(), torch.tensor([0.5]))
    with_weights(unit, "W", [[1, 0, -1]])
    assert unit.regularizer(30, loss).item() == 0 and unit.sparsity_error().item() == 0


def test_npu_l1_grows_tenfold_up_to_its_cap_and_inalu_regularises_only_low_loss_members():
    assert [l1_weight(t, 1e-5, 1e-4, 100) for t in (0, 99, 100, 250)] == [1e-5, 1e-5, 1e-4, 1e-4]
    # Madsen & Johansen's budget (5M steps) is 500 decades at 10k: the cap holds, nothing overflows
    assert l1_weight(5_000_000, 1e-5, 1e-4, 10_000) == 1e-4 and l1_weight(5_000_000, 1e-7, 1e-1, 1) == 1e-1
    assert [l1_weight(t, 1e-6, 1e-4, 10) for t in (0, 10, 20, 30)] == pytest.approx([1e-6, 1e-5, 1e-4, 1e-4])
    unit = INALU(2, 1, 2, reg_start=10)
    init_members(unit, [0, 1])
    assert (unit.regularizer(5, torch.zeros(2)) == 0).all()
    r = unit.regularizer(10, torch.tensor([0.5, 3.0]))
    assert r[0] > 0 and r[1] == 0


def test_inalu_reinitialises_only_a_stalled_member():
    unit = INALU(2, 1, 2, reinit=True, reinit_every=10, reinit_window=10, reinit_above=1.0)
    init_members(unit, [0, 1])
    before = [p.detach().clone() for p in unit.parameters_raw()]
    for step in range(1, 11):  # member 0 stalls at 5.0, member 1 improves
        unit.after_step(step, torch.tensor([5.0, 10.0 / step]))
    after = list(unit.parameters_raw())
    assert all(not torch.equal(b[0], a[0]) for b, a in zip(before, after))
    assert all(torch.equal(b[1], a[1]) for b, a in zip(before, after))
    assert all(a[0].abs().max() <= 2 for a in after)


@pytest.mark.parametrize("unit", FOLLOW_UPS)
def test_members_are_independent(unit):
    model = units(unit, 4, 1, 2, [2], **({"hidden_unit": "nau"} if unit == "nmu" else {}))
    init_members(model, [5, 6])
    alone = units(unit, 4, 1, 1, [2], **({"hidden_unit": "nau"} if unit == "nmu" else {}))
    init_members(alone, [6])
    x = torch.rand(1, 8, 4) + 0.5
    torch.testing.assert_close(model(x)[1], alone(x)[0])


@pytest.mark.parametrize("model,below,last", [("nmu", NAU, NMU), ("npu", NAU, NPU), ("realnpu", NAU, RealNPU),
                                               ("nau", NAU, NAU), ("inalu", INALU, INALU)])
def test_shipped_configs_stack_the_documented_layers(model, below, last):
    """The model configs, built as a run builds them: NAUs under the multiplicative units."""
    cfg = compose([f"model={model}"])
    stack = build_model(model_factory(cfg.model), 100, 1, 2)
    assert [type(layer) for layer in stack.layers] == [below, last]
    if below is NAU and last is not NAU and model != "nmu":  # its own arguments: the NAU's defaults
        assert (stack.layers[0].sparsity_weight, stack.layers[0].sparsity_end) == (0.01, 50000)


def test_registry_lists_every_unit():
    assert set(FOLLOW_UPS) | {"nac", "nalu"} == set(UNITS)


# --- the success criterion of Madsen & Johansen (2020) ---------------------------------------


@pytest.mark.parametrize("op,second,W2", [("add", "nau", [1, 1]), ("sub", "nau", [1, -1]), ("mul", "nmu", [1, 1])])
def test_success_threshold_is_the_error_of_the_epsilon_perturbed_model(op, second, W2):
    eps = 1e-5
    cfg = compose([f"task.op={op}", "task.test_samples=100", "task.extrapolation_samples=2000"])
    problem = ArithmeticProblem(cfg.task, [3, 4], recurrent=False)
    threshold = problem.success_threshold(eps)
    x, y = problem.sets["extrapolation"]

    def model_with(first_layer: torch.Tensor) -> torch.nn.Module:
        model = units(second, 100, 1, 2, [2], hidden_unit="nau").double()
        with torch.no_grad():
            model.layers[0].W.copy_(first_layer)
            model.layers[1].W.copy_(torch.tensor([[W2]] * 2, dtype=torch.float64))
        return model

    exact = torch.stack([problem.mask_a, problem.mask_b], 1).double()  # [M, 2, 100]
    near = (1 - eps) * exact + eps * (1 - exact)

    def mse(model):
        with torch.no_grad():
            return (model(x.double()) - problem.targets(x.double())).square().flatten(1).mean(1)

    torch.testing.assert_close(mse(model_with(near)).float(), threshold, rtol=1e-3, atol=0)
    assert (mse(model_with(exact)).float() < threshold / 100).all()
    assert (threshold > 0).all()


def test_wilson_interval_matches_known_values():
    from nalu.scoring import wilson_interval

    lo, hi = wilson_interval(8, 10)
    assert (round(lo, 3), round(hi, 3)) == (0.490, 0.943)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0 and round(hi, 3) == 0.278
    assert wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)


def test_tiny_units_sweep_end_to_end(tmp_path):
    """The real experiment file (cut down to 2 units x 2 functions) through to the units table."""
    from .conftest import TINY_ARITHMETIC, build_table, cli

    cli(["-m", "suite.run", "-m", "+experiment=units", "model=nau,nmu", "task.op=add,mul"] + TINY_ARITHMETIC,
        tmp_path)
    out = tmp_path / "results"
    build_table("units", [tmp_path / "multirun/units"], tmp_path, out)
    import pandas as pd

    df = pd.read_csv(out / "units.csv")
    assert len(df) == 4 and set(df.model) == {"nau", "nmu"} and (df.seeds == 2).all()
    # each row's count is its cell's solved seeds, as the evidence records them
    from suite.evidence import load

    evidence = load(tmp_path / "evidence" / "units.jsonl")
    for _, row in df.iterrows():
        (cell,) = [c for c in evidence if c["model"] == row.model and c["label"] == row.function]
        assert row.solved == sum(m["solved"] for m in cell["members"]) and row.rate == row.solved / row.seeds
    nmu_mul = df[(df.model == "nmu") & (df.function == "a*b")].iloc[0]
    assert nmu_mul.paper == 0.98  # Madsen & Johansen's rate, beside ours
    md = (out / "units.md").read_text()
    assert "NAU + NMU" in md and "98%" in md and (out / "units.png").stat().st_size > 10_000


# --- the extrapolation horizon (issue 38): how far out a seed stays under the threshold ----------


class _Operands(torch.nn.Module):
    """A stand-in model that computes ``a + b + c a^3`` from the problem's own subsets: exact at
    c = 0, and for c > 0 an error that outgrows the threshold as the inputs grow."""

    def __init__(self, problem, c: float, nudge: float = 0.0, shift: float = 0.0):
        super().__init__()
        self.problem, self.c, self.nudge, self.shift = problem, c, nudge, shift

    def forward(self, x):
        a, b = self.problem.operands(x)
        return ((1 + self.nudge) * a + b + self.c * a**3 + self.shift).unsqueeze(-1)


@pytest.mark.parametrize("c,nudge,shift,reach", [(0.0, 0.0, 0.0, 1000.0), (1e-11, 0.0, 0.0, 10.0),
                                                  (0.0, 1e-3, 0.0, 0.0), (0.0, 0.0, 0.01, 0.0)])
def test_the_horizon_is_the_last_rung_solved_without_a_gap(c, nudge, shift, reach):
    """Exact: every rung, in both precisions. An error growing as a^3 against a threshold growing
    as a^2: solved up to 10x the extrapolation range, not at 100x. A relative error of 1e-3: none.
    A constant error of 0.01: failed at 1x, under the threshold further out, so none (no gap)."""
    cfg = compose(["task.op=add", "task.test_samples=100", "task.extrapolation_samples=200"])
    problem = ArithmeticProblem(cfg.task, [3, 4], recurrent=False)
    horizon = problem.horizon(_Operands(problem, c, nudge, shift), [1, 10, 100, 1000], 200, 1e-5)
    assert horizon == {"float32": [reach, reach], "float64": [reach, reach]}


def test_the_horizon_of_an_exact_nau_holds_in_float64_and_is_recorded_per_seed(workdir):
    from .conftest import TINY_ARITHMETIC, cli

    cfg = compose(["task.op=add", "task.test_samples=100", "task.extrapolation_samples=200"])
    problem = ArithmeticProblem(cfg.task, [3, 4], recurrent=False)
    model = units("nau", 100, 1, 2, [2], hidden_unit="nau")
    with torch.no_grad():
        model.layers[0].W.copy_(torch.stack([problem.mask_a, problem.mask_b], 1))
        model.layers[1].W.copy_(torch.tensor([[[1.0, 1.0]]] * 2))
    assert problem.horizon(model, [1, 4, 16], 200, 1e-5)["float64"] == [16.0, 16.0]

    cli(["-m", "suite.run", "-m", "model=nau", "task.op=add", "task.horizon={rungs:[1,2],samples:50}",
         *TINY_ARITHMETIC], workdir)
    import json

    (metrics,) = workdir.glob("multirun/*/*/metrics.json")
    members = json.loads(metrics.read_text())["members"]
    assert all(set(m["horizon"]) == {"float32", "float64"} and m["horizon"]["float32"] in (0.0, 1.0, 2.0)
               for m in members)


def test_the_recurrent_horizon_runs_in_length_and_an_exact_model_holds_at_every_rung():
    cfg = compose(["task=recurrent_arithmetic", "task.op=add", "task.length=3", "task.extrapolation_length=40",
                   "task.test_samples=50", "task.extrapolation_samples=20"])
    problem = ArithmeticProblem(cfg.task, [3, 4], recurrent=True)
    assert problem.horizon(_Operands(problem, 0.0), [1, 2, 4], 20, 1e-5) == {"float32": [4.0, 4.0],
                                                                             "float64": [4.0, 4.0]}
    assert problem.horizon(_Operands(problem, 0.0, nudge=1e-3), [1, 2], 20, 1e-5)["float64"] == [0.0, 0.0]


# --- the Primer benchmark's protocol (issue 38): its ranges and its criterion ---------------------


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_the_primer_threshold_is_the_mse_of_its_near_perfect_outputs_on_the_signed_range(op):
    """At the Primer's input size 2 (a = x_1, b = x_2): a +- b off by -eps (|a| + |b|); a * b times
    (1 - eps)^2; a / b times (1 - eps) / (1 + eps) (nalm-benchmark's generate_exp_thresholds.r)."""
    eps = 1e-4
    cfg = compose(["+experiment=units_primer", f"task.op={op}", "task.range=s2_2" if op != "div" else "task.range=n2_1",
                   "task.test_samples=100", "task.extrapolation_samples=4000"])
    problem = ArithmeticProblem(cfg.task, [3, 4], recurrent=False, ops=[op, op])
    x = problem.sets["extrapolation"][0][0].double()  # [N, 2]
    a, b = x[:, 0], x[:, 1]
    exact = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]
    near = {"add": a + b - eps * x.abs().sum(1), "sub": a - b - eps * x.abs().sum(1),
            "mul": (1 - eps) ** 2 * a * b, "div": (1 - eps) / (1 + eps) * a / b}[op]
    expected = (near - exact).square().mean().float()
    torch.testing.assert_close(problem.success_threshold(eps, kind="primer"), expected.expand(2), rtol=1e-6, atol=0)
    if op != "div":  # the signed range: magnitudes in [2, 6], both signs about equally often
        assert x.abs().min() >= 2 and x.abs().max() <= 6 and 0.45 < (x < 0).double().mean() < 0.55


@pytest.mark.parametrize("overrides,message", [
    (["task.op=square"], "criterion covers"),
    (["task.op=div", "task.range=s2_2"], "holds 0"),
    (["task.range=s2_2", "task.input_size=4"], "one input each"),
    (["task.range=n2_1", "task.ranges.n2_1.extrapolation.high=-1.5"], "does not exceed training"),
])
def test_the_primer_protocol_refuses_what_it_cannot_score(overrides, message):
    from nalu.errors import ConfigError
    from tasks.arithmetic.functions import check

    with pytest.raises(ConfigError, match=message):
        check(compose(["+experiment=units_primer", *overrides]))

