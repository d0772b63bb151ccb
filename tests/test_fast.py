"""The compiled training step (``nalu.fast``) against the autograd reference path."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch import nn

from nalu.ensemble import init_members
from nalu.errors import ConfigError
from nalu.fast import CompiledStep, unsupported
from nalu.train import AutogradStep, fit, lr_factor
from nalu.units.nau import NAU
from tasks.arithmetic import ArithmeticProblem
from tasks.cell import build_model, model_factory

from .conftest import TINY_ARITHMETIC, compose

UNITS = {  # the models of Table 1 and the units table, with regulariser ramps inside a short run
    "nac": [], "nalu": [], "none": [], "relu6": [],
    "nau": ["model.sparsity_start=5", "model.sparsity_end=15"],
    "nmu": [],  # ramps over 20%..40% of task.steps
}
RANGES = {
    "[1,2]": [],
    "[0.1,0.2]": ["task.interpolation.low=0.1", "task.interpolation.high=0.2",
                  "task.extrapolation.low=0.2", "task.extrapolation.high=2"],
}
SEEDS = [0, 1, 2]
# recurrent sequences of 3 steps, not the task's 10: the same step function, a graph a third the size
# to compile (the recurrent NALU's took over a minute cold)
SHORT = {True: ["task.length=3"], False: []}
LR = {"nau": 0.2}  # large enough that NAU weights reach their bounds within the runs (the clamp acts)


@contextlib.contextmanager
def default_dtype(dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def train(model_name: str, op: str, recurrent: bool, extra: list[str], mode: str, steps: int = 30, lr: float = 1e-2,
          nan_member: int | None = None):
    task = "recurrent_arithmetic" if recurrent else "static_arithmetic"
    cfg = compose(TINY_ARITHMETIC + [f"task={task}", f"model={model_name}", f"task.op={op}", f"task.steps={steps}",
                                     f"seeds={len(SEEDS)}", *SHORT[recurrent], *extra])
    problem = ArithmeticProblem(cfg.task, SEEDS, recurrent)
    model = build_model(model_factory(cfg.model), cfg.task.input_size, 1, len(SEEDS), recurrent)
    init_members(model, SEEDS)
    if nan_member is not None:
        with torch.no_grad():
            next(model.parameters())[nan_member] = float("nan")
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    result = fit(model, problem, opt, steps=steps, eval_every=10, select="validation", progress=False,
                 train_step=mode)
    return result, model, opt


def assert_same(a, b, rtol: float) -> None:
    (ra, ma, oa), (rb, mb, ob) = a, b
    for when in ("init", "final", "best"):
        for k in getattr(ra, when):
            torch.testing.assert_close(getattr(ra, when)[k], getattr(rb, when)[k], rtol=rtol, atol=1e-12,
                                       equal_nan=True, msg=lambda m, w=when, k=k: f"{w} {k}: {m}")
    assert ra.best_step.tolist() == rb.best_step.tolist()
    assert ra.diverged_step.tolist() == rb.diverged_step.tolist()
    for (name, p), q in zip(ma.named_parameters(), mb.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=rtol, atol=1e-12, equal_nan=True, msg=lambda m, n=name: f"{n}: {m}")
    for p, q in zip(ma.parameters(), mb.parameters(), strict=True):  # Adam's moments too
        for key in ("exp_avg", "exp_avg_sq", "step"):
            torch.testing.assert_close(oa.state[p][key], ob.state[q][key], rtol=rtol, atol=1e-12, equal_nan=True)


def build(model_name: str, op: str, recurrent: bool, extra: list[str]):
    task = "recurrent_arithmetic" if recurrent else "static_arithmetic"
    cfg = compose(TINY_ARITHMETIC + [f"task={task}", f"model={model_name}", f"task.op={op}", "task.steps=30",
                                     f"seeds={len(SEEDS)}", *SHORT[recurrent], *extra])
    model = build_model(model_factory(cfg.model), cfg.task.input_size, 1, len(SEEDS), recurrent)
    init_members(model, SEEDS)
    opt = torch.optim.Adam(model.parameters(), lr=LR.get(model_name, 1e-2), fused=True)
    return model, opt, ArithmeticProblem(cfg.task, SEEDS, recurrent)


def copy_state(dst, src) -> None:
    """Model and Adam state of ``src`` into ``dst`` (both ``(model, optimizer)``)."""
    with torch.no_grad():
        for p, q in zip(dst[0].parameters(), src[0].parameters(), strict=True):
            p.copy_(q)
            for key, value in src[1].state[q].items():
                dst[1].state[p][key] = value.clone()


class InCompiledLayout(nn.Module):
    """``model`` run in the layout a compiled step traces (``layout="compiled"``), for the autograd step."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x, layout="compiled")


def autograd_in_compiled_layout(model, optimizer) -> AutogradStep:
    return AutogradStep(InCompiledLayout(model), optimizer)


def compare_steps(model_name, op, recurrent, extra, reference, candidate, rtol: float, steps: int = 30) -> None:
    """Step by step along ``reference``'s run, from the same weights and moments: one step of
    ``candidate`` equals one of ``reference``, then both continue from the reference's result.
    ``reference``, ``candidate``: (model, optimizer) -> step. Both take the compiled step's
    layout; ``test_compiled_layout_computes_the_same_model`` compares it with autograd's own."""
    model, opt, problem = build(model_name, op, recurrent, extra)
    twin = build(model_name, op, recurrent, extra)[:2]
    ref, cand = reference(model, opt), candidate(*twin)
    alive = torch.ones(len(SEEDS), dtype=torch.bool)
    for step in range(1, steps + 1):
        x, y = problem.batch()
        copy_state(twin, (model, opt))
        losses = [take(x, y, alive, step) for take in (ref, cand)]
        for m in (model, twin[0]):
            for unit in m.modules():
                if hasattr(unit, "after_step"):
                    unit.after_step(step, losses[0])
        close(losses[1], losses[0], "loss", step, rtol)
        for (name, p), q in zip(model.named_parameters(), twin[0].parameters(), strict=True):
            close(q, p, name, step, rtol)
            for key in ("exp_avg", "exp_avg_sq", "step"):
                close(twin[1].state[q][key], opt.state[p][key], f"{name} {key}", step, rtol)


@pytest.mark.parametrize("recurrent", [False, True], ids=["static", "recurrent"])
@pytest.mark.parametrize("range_name", RANGES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "square", "sqrt"])
@pytest.mark.parametrize("model_name", UNITS)
def test_functional_step_is_the_autograd_step_in_float64(model_name, op, range_name, recurrent):
    """One functional step equals one autograd step to 1e-10 along 30 steps (ramped
    regularisers, clamps and all)."""
    with default_dtype(torch.float64):
        compare_steps(model_name, op, recurrent, UNITS[model_name] + RANGES[range_name], autograd_in_compiled_layout,
                      lambda m, o: CompiledStep(m, o, compile=False), rtol=1e-10)


@pytest.mark.parametrize("recurrent", [False, True], ids=["static", "recurrent"])
@pytest.mark.parametrize("model_name", ["nalu", "nmu"])
def test_compiled_step_is_the_functional_step(model_name, recurrent):
    """The compiled function is the functional one, in float64 to 1e-10. (In float32 inductor's
    kernels round otherwise than eager's, e.g. a vectorised exp; a recurrent NALU's gradient
    then differs by up to 0.5% of its largest entry after one step.)"""
    with default_dtype(torch.float64):
        compare_steps(model_name, "mul", recurrent, UNITS[model_name], lambda m, o: CompiledStep(m, o, compile=False),
                      lambda m, o: CompiledStep(m, o, compile=True), rtol=1e-10, steps=12)


@pytest.mark.parametrize("recurrent", [False, True], ids=["static", "recurrent"])
@pytest.mark.parametrize("model_name", UNITS)
def test_compiled_layout_computes_the_same_model(model_name, recurrent):
    """Elementwise small products and unconcatenated recurrent inputs (``layout="compiled"``) give
    the autograd layout's outputs and gradients to 1e-10 (the order of a sum, which the recurrent
    NALU amplifies: 5e-12 after its 10 steps)."""
    with default_dtype(torch.float64):
        model, _, problem = build(model_name, "mul", recurrent, UNITS[model_name])
        x, y = problem.batch()
        outputs, grads = [], []
        for layout in ("eager", "compiled"):
            model.zero_grad()
            out = model(x, layout=layout)
            (out - y).square().sum().backward()
            outputs.append(out.detach())
            grads.append([p.grad.clone() for p in model.parameters()])
    close(outputs[1], outputs[0], "output", 0)
    for a, b in zip(*grads, strict=True):
        close(a, b, "gradient", 0)


def close(a, b, what: str, step: int, rtol: float = 1e-10) -> None:
    """Equal to ``rtol``, elementwise or relative to the tensor's largest entry: a gradient that
    is a sum of cancelling terms rounds differently when its terms are summed in another order."""
    scale = float(b.detach().abs().max()) if b.numel() else 0.0
    torch.testing.assert_close(a, b, rtol=rtol, atol=rtol * scale + 1e-300, equal_nan=True,
                               msg=lambda m: f"{what} at step {step}: {m}")


@pytest.mark.parametrize("recurrent", [False, True], ids=["static", "recurrent"])
@pytest.mark.parametrize("model_name", [m for m in UNITS if m != "nalu"])
def test_fit_with_the_functional_step_ends_as_with_autograd(model_name, recurrent):
    """Whole runs (evaluation, best steps, divergence): units that do not amplify rounding end
    equal. (A NALU's trajectory does amplify it: an Adam step's sign follows a gradient of
    rounding size, so only the step-by-step comparison above can hold it to 1e-10.)"""
    with default_dtype(torch.float64):
        reference = train(model_name, "mul", recurrent, UNITS[model_name], "autograd")
        functional = train(model_name, "mul", recurrent, UNITS[model_name], "functional")
    assert functional[0].train_step == "functional" and reference[0].train_step == "autograd"
    assert_same(functional, reference, rtol=1e-10)


def test_the_comparison_covers_clamps_and_ramps():
    """The runs above reach the NAU/NMU bounds (the clamp acts) and the ramped regulariser."""
    with default_dtype(torch.float64):
        for name in ("nau", "nmu"):
            _, model, _ = train(name, "mul", False, UNITS[name], "functional", lr=LR.get(name, 1e-2))
            units = [m for m in model.modules() if isinstance(m, NAU)]
            on_bound = sum(int(((u.W == u.low) | (u.W == u.high)).sum()) for u in units)
            assert on_bound > 0, name
            assert units[-1].penalty_scale(30) > 0 and units[-1].penalty_scale(1) == 0


def test_functional_step_freezes_a_diverged_member_as_autograd_does():
    with default_dtype(torch.float64):
        reference = train("nac", "add", False, [], "autograd", nan_member=1)
        functional = train("nac", "add", False, [], "functional", nan_member=1)
    assert reference[0].diverged_step.tolist() == [-1, 1, -1]
    assert_same(functional, reference, rtol=1e-10)


def test_fit_takes_the_compiled_step_and_reports_it():
    result = train("nalu", "mul", False, [], "compiled", steps=12, lr=1e-3)
    assert result[0].train_step == "compiled" and result[0].compile_s > 0
    assert train("inalu", "mul", False, [], "compiled", steps=3)[0].train_step == "autograd"


def test_unsupported_models_and_optimisers_take_the_autograd_path():
    lstm = build_model(model_factory(compose(["task=recurrent_arithmetic", "model=lstm"]).model), 10, 1, 2, True)
    assert "not supported" in unsupported(lstm, torch.optim.Adam(lstm.parameters()))
    nalu = build_model(model_factory(compose(["model=nalu"]).model), 100, 1, 2)
    assert unsupported(nalu, torch.optim.Adam(nalu.parameters())) is None
    assert "Adam" in unsupported(nalu, torch.optim.SGD(nalu.parameters(), lr=0.1))
    assert "weight decay" in unsupported(nalu, torch.optim.Adam(nalu.parameters(), weight_decay=0.1))
    inalu = build_model(model_factory(compose(["model=inalu"]).model), 100, 1, 2)
    assert "INALU" in unsupported(inalu, torch.optim.Adam(inalu.parameters()))


def test_a_cosine_schedule_sets_each_steps_rate_and_trains_through_autograd():
    """The rate of step t is lr (1 + cos(pi (t - 1) / steps)) / 2: lr at the first step, half of it
    midway, above 0 at the last; the compiled step holds its rate fixed, so a scheduled run takes
    the autograd path even where it asks for the compiled one."""
    rates: list[float] = []

    class Recording(torch.optim.Adam):
        def step(self, closure=None):
            rates.append(self.param_groups[0]["lr"])
            return super().step(closure)

    steps, lr = 20, 1e-2
    cfg = compose(TINY_ARITHMETIC + ["model=nalu", "task.op=mul", f"task.steps={steps}", f"seeds={len(SEEDS)}"])
    problem = ArithmeticProblem(cfg.task, SEEDS, False)
    model = build_model(model_factory(cfg.model), cfg.task.input_size, 1, len(SEEDS), False)
    init_members(model, SEEDS)
    result = fit(model, problem, Recording(model.parameters(), lr=lr), steps=steps, eval_every=10, progress=False,
                 train_step="compiled", lr_schedule="cosine")
    assert result.train_step == "autograd" and len(rates) == steps
    assert rates[0] == lr and rates[steps // 2] == pytest.approx(lr / 2) and 0 < rates[-1] < lr * 0.01
    assert all(a > b for a, b in zip(rates, rates[1:]))
    assert rates == pytest.approx([lr * lr_factor("cosine", steps)(t) for t in range(1, steps + 1)], rel=1e-15)
    assert lr_factor("constant", steps) is None


def run_float32(model_name: str, mode: str, steps: int, perturb: bool = False):
    """``steps`` of the static ``a*b`` task in float32, as the committed tables were made; with
    ``perturb``, every initial weight moved by one float32 rounding step (a relative 2**-23)."""
    model, opt, problem = build(model_name, "mul", False, UNITS[model_name])
    if perturb:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1 + 2.0**-23)
    fit(model, problem, opt, steps=steps, eval_every=steps, select=None, progress=False, train_step=mode)
    return torch.cat([p.detach().flatten(1) for p in model.parameters()], 1)  # [M, weights]


@pytest.mark.parametrize("model_name", ["nac", "nalu", "nau", "nmu"])
def test_compiled_float32_stays_within_the_drift_of_rounding_over_hundreds_of_steps(model_name):
    """The committed tables trained the compiled step in float32, checked against autograd in
    float64 only (above). Over 300 float32 steps, the compiled run's weights stay as close to the
    autograd run's as a rounding control does (the autograd run again, from initial weights moved
    by one float32 rounding step): per member, within 10 times the control's distance, plus 1e-5 of
    the weights' size for members the control leaves bit-identical (the NAU's, whose weights the
    clamp holds at their bounds)."""
    steps = 300
    reference = run_float32(model_name, "autograd", steps)
    control = run_float32(model_name, "autograd", steps, perturb=True)
    compiled = run_float32(model_name, "compiled", steps)
    drift = (control - reference).norm(dim=1)
    off = (compiled - reference).norm(dim=1)
    scale = reference.norm(dim=1)
    assert torch.isfinite(reference).all()
    assert (off <= 10 * drift + 1e-5 * scale).all(), (off.tolist(), drift.tolist())


@pytest.mark.parametrize("recurrent", [False, True], ids=["static", "recurrent"])
def test_a_nalu_with_a_gate_bias_takes_the_functional_step_as_autograd(recurrent):
    """The learned gate bias (model.gate_bias, not the paper's) is one more parameter of the
    functional step, updated as autograd updates it."""
    with default_dtype(torch.float64):
        compare_steps("nalu", "add", recurrent, ["model.gate_bias=3.0"], autograd_in_compiled_layout,
                      lambda m, o: CompiledStep(m, o, compile=False), rtol=1e-10)


def test_two_models_compiled_steps_taken_in_turns_are_each_models_own():
    """A compiled step skips Dynamo's guards once it has run with them, and a later model's
    compilation resets Dynamo's cache: the first model's next step must not run the second's
    graph. NAC and NALU steps in turns, in float64, end where each one's uncompiled step ends."""
    with default_dtype(torch.float64):
        runs = {name: build(name, "add", False, []) for name in ("nac", "nalu")}
        twins = {name: build(name, "add", False, [])[:2] for name in runs}
        references = {name: CompiledStep(*twin, compile=False) for name, twin in twins.items()}
        steps, alive = {}, torch.ones(len(SEEDS), dtype=torch.bool)
        for step in range(1, 5):
            for name, (model, opt, problem) in runs.items():
                if name not in steps:  # NALU's compilation resets Dynamo after NAC's first step
                    steps[name] = CompiledStep(model, opt)
                x, y = problem.batch()
                close(steps[name](x, y, alive, step), references[name](x, y, alive, step), f"{name} loss", step)
        for name, (model, _, _) in runs.items():
            for p, q in zip(model.parameters(), twins[name][0].parameters(), strict=True):
                close(p, q, name, 4)


def test_the_cpp_wrapper_launches_the_same_kernels_bit_for_bit():
    """``compile_wrapper``: the C++ launcher of the compiled graph (inductor's cpp_wrapper) gives
    the Python launcher's numbers exactly, in float32, over a recurrent NAC's steps; "auto" takes it
    for recurrent models only."""
    from nalu.fast import resolve_wrapper

    finals = {}
    for wrapper in ("python", "cpp"):
        model, opt, problem = build("nac", "add", True, [])
        step = CompiledStep(model, opt, wrapper=wrapper)
        alive = torch.ones(len(SEEDS), dtype=torch.bool)
        losses = [step(*problem.batch(), alive, k) for k in range(1, 6)]
        finals[wrapper] = torch.stack(losses), [p.detach().clone() for p in model.parameters()]
    (lp, wp), (lc, wc) = finals["python"], finals["cpp"]
    assert torch.equal(lp, lc) and all(torch.equal(a, b) for a, b in zip(wp, wc, strict=True))
    static = build("nac", "add", False, [])[0]
    assert resolve_wrapper("auto", model) == "cpp" and resolve_wrapper("auto", static) == "python"
    with pytest.raises(ConfigError, match="unknown compile_wrapper 'c'; valid: auto, cpp, python"):
        resolve_wrapper("c", static)


@pytest.mark.parametrize("op", ["mul", "div"])
@pytest.mark.parametrize("model_name", ["npu", "realnpu"])
def test_an_npu_that_asks_for_the_compiled_step_takes_the_autograd_step_in_float64(model_name, op):
    """``model.compilable=true``: the NPUs' functional step (forward, the L1 regulariser as
    ``penalty_scale * penalty`` with its x10 steps inside the run, Adam) equals autograd's step by
    step in float64; without it they keep the autograd path their committed cells trained on."""
    extra = ["model.compilable=true", "model.l1_start=1e-3", "model.l1_end=1e-1", "model.l1_every=10"]
    with default_dtype(torch.float64):
        compare_steps(model_name, op, False, extra, autograd_in_compiled_layout,
                      lambda m, o: CompiledStep(m, o, compile=False), rtol=1e-10)
        model, opt, _ = build(model_name, op, False, [])
        assert unsupported(model, opt) == f"{type(model.layers[-1]).__name__} is not supported"


@pytest.mark.parametrize("op,below", [("add", 500), ("div", 2500)])
def test_an_inalu_that_asks_for_the_compiled_step_takes_the_autograd_step_in_float64(op, below):
    """``model.compilable=true``: the iNALU's functional step equals autograd's step by step in
    float64, its regulariser on from step 5 and only for the members whose loss is below ``below``
    (a threshold its three seeds cross at different steps of the 30: none at first, then some);
    without it the iNALU keeps the autograd path its committed cells trained on."""
    extra = ["model.compilable=true", "model.reg_start=5", f"model.reg_below={below}"]
    with default_dtype(torch.float64):
        compare_steps("inalu", op, False, extra, autograd_in_compiled_layout,
                      lambda m, o: CompiledStep(m, o, compile=False), rtol=1e-10)
        model, opt, _ = build("inalu", op, False, [])
        assert unsupported(model, opt) == "INALU is not supported"


def test_a_regulariser_the_compiled_step_cannot_split_sends_the_model_to_autograd():
    """A compilable unit whose regulariser lacks ``penalty`` or ``penalty_scale`` is not compiled
    (the step would have no way to weigh it); with both it is."""

    class Penalised(NAU):
        def regularizer(self, step, loss):
            return self.penalty()

    model, opt = Penalised(2, 1, 3), None
    opt = torch.optim.Adam(model.parameters())
    assert unsupported(model, opt) is None  # the NAU's own penalty and penalty_scale
    Penalised.penalty_scale = None  # a unit without the scale
    assert unsupported(model, opt) == "Penalised's regulariser has no penalty() and penalty_scale(step)"
