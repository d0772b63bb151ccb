"""Throughput of the real training loop (``nalu.train.fit``), printed as member-steps per second.

    make bench [DEVICE=cuda]      (or: python scripts/bench.py [--steps N] [--device cuda])

A member-step is one optimiser step of one seed. Each figure is the best of ``--repeats`` runs
taken in turns, so that a busy moment of the machine does not decide a ratio. Printed:
- a cell as the suite ran it before fused sweeps (autograd step, 1 and 10 members);
- a fused group (``hydra/launcher=fused``: 6 ops x 10 and 6 ops x 40 seeds as one model) through
  the compiled step (``nalu.fast``), with its compile time, and each ratio to the 10-member cell;
- the projected wall time of Table 1 at ``budget=paper`` on 2 cores: static (5,000,000 steps,
  four groups, one per model, of 6 ops x 10 seeds) and recurrent (2,000,000 steps, NAC and NALU),
  two groups at a time, the paper budget's thinned evaluation schedule included;
- beside each fused group, its pure-GEMM bound: the same matrix products a step makes (found by
  the profiler), alone in a loop, as member-steps per second, and the group's fraction of it (how far
  from the machine's limit the rest of the step keeps it);
- the recurrent group launched from Python (``compile_wrapper=python``) beside the default C++
  launcher (``auto``);
- the iNALU's sign product as written (``mixed_sign_product``, the reference) against the matmuls
  that replace it (``mixed_sign``), in the units table's group of 6 ops x 10 seeds;
- Table 4's counting CNN and Table 2's MNIST example encoder, their first convolution grouped over
  a copy of the shared batch per member against run once (``shared_first_conv``);
- the static NALU fused into 240, 2,400 and 24,000 members, and Madsen & Johansen's whole static
  experiment (7 units x 6 ops x 100 seeds x 5,000,000 steps) projected on this device (``scale``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from nalu import device as devices
from nalu.ensemble import init_members
from nalu.train import fit
from nalu.optim import member_optimizer
from suite.config import CONFIG_DIR, resolve_seeds
from tasks.arithmetic import OPS, ArithmeticProblem
from tasks.cell import build_model, model_factory
from tasks.arithmetic.identity import IdentityProblem
from tasks.mnist.data import raw_dir


class Case:
    """One model on one problem, ready to train: ``rate(steps)`` runs ``fit`` for ``steps``
    (training only: the problem's evaluation is switched off, and ``eval_s`` times it apart)."""

    def __init__(self, overrides: list[str], seeds: int, ops: int, train_step: str, device: torch.device,
                 wrapper: str = "auto"):
        with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
            cfg = compose("config", overrides + ["task.test_samples=100", "task.extrapolation_samples=10"]
                          if "task=identity" not in overrides else overrides)
        seeds_ = list(range(seeds)) * ops
        self.members = len(seeds_)
        if cfg.task.name == "identity":
            problem, in_features, recurrent = IdentityProblem(cfg.task, seeds_), 1, False
        else:
            recurrent = cfg.task.name.startswith("recurrent")
            ops_ = [op for op in list(OPS)[:ops] for _ in range(seeds)]
            problem, in_features = ArithmeticProblem(cfg.task, seeds_, recurrent, ops=ops_), cfg.task.input_size
        model = build_model(model_factory(cfg.model), in_features, 1, self.members, recurrent)
        init_members(model, seeds_)
        self.device, self.model, self.problem = device, model.to(device), problem.to(device)
        self.evaluate = problem.evaluate
        problem.evaluate = lambda model: {}  # training only: evaluation is measured apart (eval_s)
        self.opt = instantiate(cfg.optimizer)(model.parameters())
        self.train_step, self.wrapper = train_step, wrapper
        self.remake = lambda **changed: Case(**{"overrides": overrides, "seeds": seeds, "ops": ops,
                                                 "train_step": train_step, "device": device,
                                                 "wrapper": wrapper, **changed})
        warm = fit(model, problem, self.opt, steps=20, eval_every=10**9, progress=False, train_step=train_step,
                   compile_wrapper=wrapper)
        self.compile_s, self.mode = warm.compile_s, warm.train_step
        self.cfg = cfg

    def rate(self, steps: int) -> float:
        start = time.perf_counter()
        fit(self.model, self.problem, self.opt, steps=steps, eval_every=10**9, progress=False,
            train_step=self.train_step, compile_wrapper=self.wrapper)
        synchronize(self.device)
        return self.members * steps / (time.perf_counter() - start)

    def eval_s(self) -> float:
        """One evaluation on the task's full test sets (the suite's 10,000 samples each)."""
        with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
            full = compose("config", [f"task={self.cfg.task.name}"]).task
        problem = ArithmeticProblem(full, list(range(self.members)), full.name.startswith("recurrent"))
        problem.to(self.device)
        self.model.eval()
        with torch.no_grad():
            problem.evaluate(self.model)  # a first call pays for the device's warm-up, not timed
            synchronize(self.device)
            start = time.perf_counter()
            problem.evaluate(self.model)
            synchronize(self.device)
        self.model.train()
        return time.perf_counter() - start


GEMMS = ("aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm")


class GemmBound:
    """The matrix products of one training step of ``case`` (recorded by the profiler over a few
    steps), timed alone: ``rate(steps)`` is the member-steps per second a step made of nothing
    else would reach, the bound that arithmetic sets on this machine. Operands are contiguous
    and freshly drawn (the step's own may be transposed views)."""

    def __init__(self, case: Case, probe: int = 4):
        from collections import Counter

        from torch.profiler import ProfilerActivity, profile

        def products(steps: int) -> Counter:
            with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
                case.rate(steps)
            return Counter((e.name, repr(e.input_shapes)) for e in prof.events() if e.name in GEMMS)

        members = case.members
        if case.model._nalu_step.wrapper == "cpp":  # its C++ launcher's products are not profiled: the same
            case = case.remake(wrapper="python")   # graph launched from Python makes them where they are
        # a fit of 2k steps less a fit of k: the products of k steps, without those made once per fit
        case.rate(1)  # a step whose graph a later case's compilation dropped compiles again, unprofiled
        once, twice = products(probe), products(2 * probe)
        per_step = {call: (twice[call] - once[call]) / probe for call in twice}
        if any(n != int(n) or n < 0 for n in per_step.values()):
            raise RuntimeError(f"matrix products per step not whole: {per_step}")
        self.members, self.device = members, case.device
        self.calls = [self._operands(name, eval(shapes)) for (name, shapes), n in per_step.items() for _ in range(int(n))]

    def _operands(self, name: str, shapes: list[list[int]]):
        def draw(shape):
            return torch.randn(shape, device=self.device)

        fn = getattr(torch, name.removeprefix("aten::"))
        if name in ("aten::mm", "aten::bmm") and len(shapes) > 2 and shapes[2]:  # out= (inductor's extern kernels)
            return fn, [draw(shapes[0]), draw(shapes[1])], {"out": draw(shapes[2])}
        return fn, [draw(s) for s in shapes[:3]], {}

    def rate(self, steps: int) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            for fn, args, kwargs in self.calls:
                fn(*args, **kwargs)
        synchronize(self.device)
        return self.members * steps / (time.perf_counter() - start)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work, so that a timer read next counts it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def best_rates(cases: dict[str, Case | GemmBound], steps: int, repeats: int) -> dict[str, float]:
    """Each case's best throughput over ``repeats`` rounds, the cases taking turns, after a step of
    each untimed (a compiled step whose graph a later case's compilation dropped compiles again)."""
    for case in cases.values():
        case.rate(1)
    best = dict.fromkeys(cases, 0.0)
    for _ in range(repeats):
        for name, case in cases.items():
            best[name] = max(best[name], case.rate(steps))
    return best


def arithmetic(title: str, base: list[str], steps: int, repeats: int, device: torch.device) -> dict[str, Case]:
    cases = {
        "1 member, autograd": Case(base, 1, 1, "autograd", device),
        "10 members, autograd (one cell)": Case(base, 10, 1, "autograd", device),
        "6 ops x 10 seeds, fused, compiled": Case(base, 10, 6, "compiled", device),
        "6 ops x 40 seeds, fused, compiled": Case(base, 40, 6, "compiled", device),
    }
    if "task=recurrent_arithmetic" in base:  # compile_wrapper=auto launches it from C++ (nalu.fast)
        cases["6 ops x 10 seeds, Python launcher"] = Case(base, 10, 6, "compiled", device, wrapper="python")
    bounds = {f"{name}: bound": GemmBound(case) for name, case in cases.items() if "fused" in name}
    rates = best_rates({**cases, **bounds}, steps, repeats)
    cell = rates["10 members, autograd (one cell)"]
    print(f"{title}:")
    for name, case in cases.items():
        compiled = f", compile {case.compile_s:.1f} s" if case.mode == "compiled" else ""
        print(f"  {name:<36} {rates[name]:>9,.0f} member-steps/s  ({rates[name] / cell:4.1f}x the cell{compiled})")
        if f"{name}: bound" in rates:
            bound = rates[f"{name}: bound"]
            print(f"    {'its matrix products alone':<34} {bound:>9,.0f} member-steps/s  "
                  f"(the group runs at {rates[name] / bound:.2f} of this bound)")
    return cases


def inalu_sign(steps: int, repeats: int, device: torch.device) -> None:
    """The iNALU through autograd (its default; its compiled step is opt-in) with each way of taking its sign."""
    import nalu.units.inalu as inalu

    fast = inalu.mixed_sign
    ways = {"product (the reference)": inalu.mixed_sign_product, "matmuls (nalu.units.inalu)": fast}
    case, best = Case(["task=static_arithmetic", "model=inalu"], 10, 6, "autograd", device), dict.fromkeys(ways, 0.0)
    for _ in range(repeats):
        for name, way in ways.items():
            inalu.mixed_sign = way  # the module global its forward calls
            try:
                best[name] = max(best[name], case.rate(steps))
            finally:
                inalu.mixed_sign = fast
    print("static iNALU, 6 ops x 10 seeds (the units table's group), autograd, the sign of the product:")
    reference = best["product (the reference)"]
    for name, rate in best.items():
        print(f"  {name:<36} {rate:>9,.0f} member-steps/s  ({rate / reference:4.1f}x the reference)")


def evaluations(task: str) -> tuple[int, int]:
    """(steps, evaluations) of ``task`` at ``budget=paper`` (its thinned schedule)."""
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        t = compose("config", [f"task={task}", "budget=paper"]).task
    late = t.eval_late_from or t.steps
    return t.steps, late // t.eval_every + (t.steps - late) // (t.eval_late_every or 1)


def projection(task: str, models: tuple[str, ...], steps: int, repeats: int, device: torch.device) -> None:
    """Table 1 at ``budget=paper``: one group of 6 ops x 10 seeds per model, two at a time, on the
    paper budget's evaluation schedule."""
    budget, n_evals = evaluations(task)
    hours = {}
    for model in models:
        case = Case([f"task={task}", f"model={model}"], 10, 6, "compiled", device)
        rate = best_rates({model: case}, steps, repeats)[model]
        train_s = budget * case.members / rate
        eval_s = n_evals * case.eval_s()
        hours[model] = (train_s + eval_s) / 3600
        print(f"  {model:<6} group: {rate:>9,.0f} member-steps/s, training {train_s / 3600:4.2f} h "
              f"+ {n_evals} evaluations {eval_s / 3600:4.2f} h ({100 * eval_s / train_s:.0f}% of training)")
    # two groups at a time: the longest first, each into the slot that frees first
    slots = [0.0, 0.0]
    for h in sorted(hours.values(), reverse=True):
        slots[slots.index(min(slots))] += h
    print(f"  projected, {budget:,} steps x 10 seeds, 2 cores: {max(slots):.2f} h")


MJ_UNITS = ("nac", "nalu", "nau", "nmu", "inalu", "npu", "realnpu")  # Madsen & Johansen's static experiment's
MJ_STEPS, MJ_SEEDS = 5_000_000, 100


def scale(steps: int, repeats: int, device: torch.device, seeds: tuple[int, ...] = (40, 400, 4000)) -> None:
    """The static NALU as one fused model of 6 ops x ``seeds`` (240, 2,400 and 24,000 members), the
    same code path on every device (a GPU pays only with thousands of members), and Madsen &
    Johansen's whole static experiment (7 units x 6 ops x 100 seeds x 5,000,000 steps) projected
    from each unit's group of 600 members, the groups one after another on this device (training
    alone: the thinned evaluation schedule adds about a tenth, ``projection`` above)."""
    print("static NALU, fused and compiled, by group size (about the same work per measurement):")
    for n in seeds:
        case = Case(["task=static_arithmetic", "model=nalu"], n, 6, "compiled", device)
        rate = best_rates({"group": case}, max(steps * 240 // case.members, 10), repeats)["group"]
        print(f"  {case.members:>6,} members: {rate:>12,.0f} member-steps/s  ({case.mode} step)")
    print(f"Madsen & Johansen's static experiment, {len(MJ_UNITS)} units x 6 ops x {MJ_SEEDS} seeds x "
          f"{MJ_STEPS:,} steps, one group of {6 * MJ_SEEDS} members per unit, one after another:")
    total = 0.0
    for unit in MJ_UNITS:
        compiled = ["model.compilable=true"] if unit in ("npu", "realnpu", "inalu") else []  # their opt-in compiled step
        case = Case(["task=static_arithmetic", f"model={unit}", *compiled], MJ_SEEDS, 6, "compiled", device)
        rate = best_rates({unit: case}, max(steps * 240 // case.members, 10), repeats)[unit]
        hours = MJ_STEPS * case.members / rate / 3600
        total += hours
        print(f"  {unit:<8} {rate:>12,.0f} member-steps/s ({case.mode} step): {hours:8.1f} h")
    print(f"  projected on this device: {total:.1f} h ({total / 24:.1f} days)")


def mnist_images_per_second(members: int, steps: int, device: torch.device) -> float | None:
    """Training throughput of encoder + recurrent NAC core on MNIST counting series."""
    from tasks.mnist import series as mnist_series

    if not raw_dir(Path("data")).exists():
        return None
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", ["task=mnist_counting", "model=nac", f"seeds={members}",
                                 "task.test_series={1: 10}", "task.validation_series=10"])
    seeds = list(range(members))
    problem = mnist_series.SeriesProblem(cfg.task, seeds, Path("data"))
    problem.evaluate = lambda model: {}  # training only
    model = build_model(mnist_series.factory_for(cfg), 28 * 28, 10, members, True)
    init_members(model, seeds)
    model.to(device)
    problem.to(device)
    opt = instantiate(cfg.optimizer)(model.parameters())
    fit(model, problem, opt, steps=5, eval_every=10**9, progress=False)
    start = time.perf_counter()
    fit(model, problem, opt, steps=steps, eval_every=10**9, progress=False)
    return steps * cfg.task.batch_size * cfg.task.length / (time.perf_counter() - start)


def program_steps_per_second(model_name: str, compile_cells: bool, members: int, steps: int,
                             device: torch.device) -> float:
    """Training steps per second of Figure 4's program evaluation (batch 64 programs of about 45
    characters), the recurrent model's steps eager or through torch.compile (``compile_cells``);
    the compilation (a first fit of 2 steps) is left out."""
    from tasks.programs import evaluation

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", ["task=program_eval", "task.kind=program", f"model={model_name}",
                                 f"seeds={members}", f"compile_cells={compile_cells}"])
    seeds = list(range(members))
    problem = evaluation.ProgramProblem(cfg.task, seeds).to(device)
    core = model_factory(cfg.model)(in_features=cfg.task.embedding, out_features=1, members=members, recurrent=True)
    model = evaluation.CharsToNumber(evaluation.Embedding(evaluation.programs.NUMBER + 1, cfg.task.embedding, members),
                                     core)
    return training_steps_per_second(model, problem, cfg, seeds, steps, device)


def translation_steps_per_second(compile_forward: bool, steps: int, device: torch.device, rates: int = 1,
                                 model_name: str = "lstm_nalu", lstm_size: int = 32) -> float:
    """Training steps per second of Table 3's LSTM + NALU (10 seeds per rate, state 32, the full
    batch of 169 number words), its forward eager or through torch.compile (``compile_forward``);
    ``rates=2``: two cells of the grid, 1e-2 and 1e-3, fused as one model of 20 members
    (``nalu.optim.MemberAdam``). The compilation (a first fit of 2 steps) is left out."""
    from tasks.language import translation

    members = 10 * rates
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", ["task=translation", f"model={model_name}", f"seeds={members}",
                                 f"task.lstm_size={lstm_size}"])
    seeds = list(range(members))
    problem = translation.TranslationProblem(cfg.task, seeds).to(device)
    core = model_factory(cfg.model)(in_features=cfg.task.embedding, out_features=1, members=members, recurrent=True)
    model = translation.WordsToNumber(translation.Embedding(len(problem.vocabulary), cfg.task.embedding, members),
                                      core)
    lrs = [1e-2] * 10 + [1e-3] * 10 if rates == 2 else None
    return training_steps_per_second(model, problem, cfg, seeds, steps, device, lrs=lrs,
                                     compile_forward=compile_forward)


def training_steps_per_second(model, problem, cfg, seeds: list[int], steps: int, device: torch.device,
                              lrs: list[float] | None = None, **fit_options) -> float:
    """``fit``'s training steps per second for a model its task composed, after a first fit of 2
    steps that pays any compilation (not timed); training only, the problem's evaluation off."""
    problem.evaluate = lambda model: {}
    init_members(model, seeds)
    model.to(device)
    opt = member_optimizer(instantiate(cfg.optimizer), model.parameters(), lrs)
    fit(model, problem, opt, steps=2, eval_every=10**9, progress=False, **fit_options)
    start = time.perf_counter()
    fit(model, problem, opt, steps=steps, eval_every=10**9, progress=False, **fit_options)
    return steps / (time.perf_counter() - start)


def mnist_encoder_steps_per_second(task: str, shared_first_conv: bool, steps: int, device: torch.device) -> float | None:
    """Training steps per second of an MNIST encoder whose members read one batch: Table 4's
    counting CNN (``mnist_count_even``, 5 seeds, 32 canvases of 100 x 100) or Table 2's PyTorch
    MNIST example encoder under a NAC core (``mnist_addition``, 3 seeds, 50 series of 10), the
    first convolution grouped over a copy per member or run once (``shared_first_conv``)."""
    from tasks.mnist import count_even, series

    if not raw_dir(Path("data")).exists():
        return None
    example = ["task.encoder.channels=[20,50]", "task.encoder.hidden=500", "task.encoder.pool=true",
               "model=nac", "seeds=3", "task.test_series={1: 10}", "task.validation_series=10"]
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", [f"task={task}", f"task.encoder.shared_first_conv={shared_first_conv}",
                                 *(["seeds=5", "task.validation_images=100", "task.validation_samples=10",
                                    "task.test_samples=10"] if task == "mnist_count_even" else example)])
    seeds = resolve_seeds(cfg.seeds)
    if task == "mnist_count_even":
        problem = count_even.CountEvenProblem(cfg.task, seeds, Path("data"))
        model = count_even.factory_for(cfg)(1, 1, len(seeds), False)
    else:
        problem = series.SeriesProblem(cfg.task, seeds, Path("data"))
        model = build_model(series.factory_for(cfg), 28 * 28, 1, len(seeds), True)
    problem.to(device)
    return training_steps_per_second(model, problem, cfg, seeds, steps, device)


def a3c_frames_per_second(members: int, frames: int) -> float:
    """Training throughput of the grid-world A3C + NAC agent with the task's default workers,
    start-up of the worker processes included."""
    from tasks.gridworld import workers
    from tasks.gridworld import time_tracking as gridworld_time

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", ["task=gridworld_time", "task.agent=a3c_nac", f"task.frames={frames}"])
    _, summary = workers.train(gridworld_time.a3c_settings(cfg), list(range(members)), progress=False)
    return summary["frames_per_s"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu or cuda[:n]; the A3C runs on the CPU regardless")
    a = p.parse_args()
    try:
        device = devices.resolve(a.device)
    except ValueError as e:
        p.error(str(e))
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)
    print(f"torch {torch.__version__}, device {device}, {a.threads} thread(s), {a.steps} steps per measurement, "
          f"best of {a.repeats}")
    arithmetic("static NALU (batch 128, input 100, hidden 2)", ["task=static_arithmetic", "model=nalu"],
               a.steps, a.repeats, device)
    arithmetic("recurrent NALU (batch 128, length 10, state 2)", ["task=recurrent_arithmetic", "model=nalu"],
               a.steps // 5, a.repeats, device)
    print("Table 1 static at Madsen & Johansen's budget (budget=paper), fused and compiled:")
    projection("static_arithmetic", ("relu6", "none", "nac", "nalu"), a.steps, a.repeats, device)
    print("Table 1 recurrent at Hoedt et al.'s budget (budget=paper: NAC and NALU), fused and compiled:")
    projection("recurrent_arithmetic", ("nac", "nalu"), a.steps // 5, a.repeats, device)
    inalu_sign(a.steps // 10, a.repeats, device)
    scale(a.steps, a.repeats, device)
    others = {
        "static ReLU6 MLP (batch 128, input 100, hidden 2)": (["task=static_arithmetic", "model=relu6"], 10, a.steps),
        "recurrent LSTM (batch 128, length 10, state 2), autograd": (["task=recurrent_arithmetic", "model=lstm"],
                                                                     10, a.steps // 5),
        "identity ReLU MLP (batch 64, 1-8-8-8-1)": (["task=identity", "model=mlp", "model.activation_name=ReLU"],
                                                    100, a.steps),
    }
    for name, (overrides, members, steps) in others.items():
        cases = {"one": Case(overrides, 1, 1, "compiled", device), "many": Case(overrides, members, 1, "compiled", device)}
        rates = best_rates(cases, steps, a.repeats)
        print(f"{name}, {cases['many'].mode} step:\n  {1:>3} member : {rates['one']:>9,.0f} member-steps/s"
              f"\n  {members:>3} members: {rates['many']:>9,.0f} member-steps/s  ({rates['many'] / rates['one']:.1f}x)")
    print("MNIST counting, encoder + recurrent NAC (50 series x 10 digits per step), training:")
    for members in (1, 3):
        ips = mnist_images_per_second(members, max(a.steps // 40, 5), device)
        if ips is None:
            print("  skipped: no MNIST in data/ (run `make data`)")
            break
        print(f"  {members} member{'s' if members > 1 else ' '}: {ips:>9,.0f} images/s "
              f"({ips * members:,.0f} member-images/s)")

    for task, title in (("mnist_count_even", "Table 4's counting CNN (5 seeds, 32 canvases of 100 x 100)"),
                        ("mnist_addition", "Table 2's MNIST example encoder + NAC (3 seeds, 50 series x 10 digits)")):
        print(f"{title}, training, the first convolution grouped over a copy per member and shared "
              "(shared_first_conv):")
        runs = [[mnist_encoder_steps_per_second(task, s, max(a.steps // 100, 5), device) for s in (False, True)]
                for _ in range(a.repeats)]  # in turns: a busy moment of the machine does not decide the ratio
        if None in runs[0]:
            print("  skipped: no MNIST in data/ (run `make data`)")
            continue
        grouped, shared = (max(r[i] for r in runs) for i in (0, 1))
        print(f"  grouped: {grouped:>7,.2f} steps/s\n  shared : {shared:>7,.2f} steps/s  ({shared / grouped:.1f}x)")

    print("Figure 4 programs, DNC (10 seeds, batch 64), training, each time step eager and compiled (compile_cells):")
    runs = [[program_steps_per_second("dnc", c, 10, max(a.steps // 200, 3), device) for c in (False, True)]
            for _ in range(a.repeats)]  # in turns
    eager, compiled = (max(r[i] for r in runs) for i in (0, 1))
    print(f"  eager   : {eager:>7,.2f} steps/s\n  compiled: {compiled:>7,.2f} steps/s  ({compiled / eager:.1f}x)")

    print("Table 3, LSTM + NALU (10 seeds, state 32, full batch), training, the forward eager and compiled "
          "(compile_forward):")
    runs = [[translation_steps_per_second(c, max(a.steps // 10, 20), device) for c in (False, True)]
            for _ in range(a.repeats)]  # in turns
    eager, compiled = (max(r[i] for r in runs) for i in (0, 1))
    print(f"  eager   : {eager:>7,.1f} steps/s\n  compiled: {compiled:>7,.1f} steps/s  ({compiled / eager:.1f}x)")

    print("Table 3's grid, compiled forward: a grid point's two learning rates as two models of 10 seeds, one "
          "after the other, or fused as one of 20 (MemberAdam):")
    for model_name, size in (("lstm_sum", 10), ("lstm_nalu", 32)):
        runs = [[translation_steps_per_second(True, max(a.steps // 10, 20), device, rates, model_name, size)
                 for rates in (1, 2)] for _ in range(a.repeats)]  # in turns
        alone, fused = (max(r[i] for r in runs) for i in (0, 1))
        print(f"  {model_name} state {size}: two of 10: {alone / 2:>6,.1f} grid-point steps/s; one of 20: "
              f"{fused:>6,.1f} ({fused / (alone / 2):.2f}x)")

    print("grid-world A3C + NAC, training (2 worker processes, 16 environments per seed in each):")
    for members in (1, 3):
        fps = a3c_frames_per_second(members, max(a.steps * 50, 5000))
        print(f"  {members} seed{'s' if members > 1 else ' '}: {fps:>9,.0f} environment steps/s per seed "
              f"({fps * members:,.0f} environment steps/s)")


if __name__ == "__main__":
    main()
