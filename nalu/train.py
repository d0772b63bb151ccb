"""The one supervised training loop, for all seeds of a cell at once (see ``nalu.ensemble``).

A task hands ``fit`` a *problem*: something that draws a training batch for every member and
evaluates a model on its fixed test sets. ``fit`` trains with squared error (or the problem's own
``loss``), evaluates every ``eval_every`` steps (or on an ``EvalSchedule`` that thins out late in
training), keeps each member's weights from the evaluation where its ``select`` metric was
lowest (early stopping on a validation set), freezes members that diverge, and
returns the metrics of the initial, final and best-step weights per member. Units with a
regulariser or a post-step action (clamping; see ``nalu.units``) take part at every step.

The model may sit on any device (``nalu.device``): batches are moved to it, and the metrics
``fit`` returns are on the CPU.

Long runs survive being killed: given a ``Checkpoint``, ``fit`` saves everything its loop
depends on (weights, optimiser, best-step weights and values, divergence, the loss sums, every
random generator of the problem and the model, torch's global generator; a learning-rate schedule
is a function of the step alone, ``lr_factor``) atomically every
``every_s`` seconds, and a later ``fit`` with the same checkpoint resumes from there. On one
machine the resumed run ends with the same numbers as an uninterrupted one (a test kills one).
A caller that must stop early (a signal: ``suite.runner.stop_signals``) sets the checkpoint's
``stop_signal``; ``fit`` then saves at the end of the step it is in and raises ``Stopped``, so the
next ``fit`` loses nothing.
"""

from __future__ import annotations

import copy
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from nalu import device as devices
from nalu import ensemble
from nalu.errors import ConfigError, check_choice
from nalu.hooks import having
from nalu.fast import training_step

Metrics = dict[str, Tensor]  # metric name -> one value per member, shape [M]


class Problem(Protocol):
    """What ``fit`` trains on. A problem may also define ``loss(output, target) -> [M]``, each
    member's training loss (default ``squared_error``); the compiled step supports only the
    default, so a problem with its own loss trains through autograd."""

    members: int

    def batch(self) -> tuple[Tensor, Tensor]:
        """One training batch per member: inputs ``[M, B, ...]`` and targets ``[M, B, out]``."""

    def evaluate(self, model: nn.Module) -> Metrics:
        """Metrics of every member on the problem's fixed evaluation sets."""

    def to(self, device: torch.device) -> Problem:
        """Move the fixed evaluation sets (and anything ``batch`` computes with) to ``device``."""


LR_SCHEDULES = ("constant", "cosine")


def lr_factor(schedule: str, steps: int) -> Callable[[int], float] | None:
    """The learning rate's multiplier at each step ``t`` of ``1..steps`` (None: ``constant``, the
    optimiser's own rate throughout). ``cosine``: ``(1 + cos(pi (t - 1) / steps)) / 2``, 1 at the first
    step down towards 0 at the last (Loshchilov & Hutter 2017, SGDR, without restarts)."""
    check_choice("lr_schedule", schedule, LR_SCHEDULES)
    if schedule == "constant":
        return None
    return lambda t: 0.5 * (1.0 + math.cos(math.pi * (t - 1) / steps))


def squared_error(output: Tensor, target: Tensor) -> Tensor:
    """Each member's mean squared error, ``[M]``: the training loss unless a problem brings its own."""
    return (output - target).square().flatten(1).mean(1)


@dataclass
class FitResult:
    init: Metrics
    final: Metrics
    best: Metrics  # evaluated with each member's best-step weights
    best_step: Tensor  # [M], -1 where no evaluation had a finite ``select`` metric
    diverged_step: Tensor  # [M], -1 where the member never diverged
    train_loss: Tensor  # [M], the training loss of the last step taken (not a mean)
    steps: int
    wall_s: float
    best_model: nn.Module = field(repr=False)
    resumed_from: int = 0  # the checkpoint's step, 0 for a run from scratch
    train_step: str = "autograd"  # the step that ran (nalu.fast): compiled, functional or autograd
    compile_s: float = 0.0  # the compiled step's first call, compilation included


@dataclass(frozen=True)
class EvalSchedule:
    """When ``fit`` evaluates: every ``every`` steps up to ``late_from``, every ``late_every``
    steps after it (``late_from=None``: never thins). The last step is always evaluated. At
    Madsen & Johansen's 5,000,000 steps an evaluation every 1,000 costs 4-8% of training and
    writes 5,000 rows per seed and metric; thinned after the first 100,000 steps, the early
    phase, where most units solve or fail, keeps its resolution. Selection is unchanged: each
    member's best step is the evaluated step with its lowest ``select`` metric."""

    every: int
    late_from: int | None = None
    late_every: int | None = None

    def __post_init__(self):
        for name in ("every", "late_from", "late_every"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"eval_{name} must be a positive integer, got {value!r}")
        if (self.late_from is None) != (self.late_every is None):
            raise ConfigError("eval_late_from and eval_late_every go together (both null: no thinning)")

    def __call__(self, step: int) -> bool:
        if self.late_from is not None and step > self.late_from:
            return step % self.late_every == 0
        return step % self.every == 0


def generators(*objects: Any) -> list[torch.Generator]:
    """Every ``torch.Generator`` held by ``objects`` and their sub-modules, as attributes or in
    lists, in a fixed order: the random state a checkpoint must carry."""
    found: list[torch.Generator] = []
    for obj in objects:
        for o in obj.modules() if isinstance(obj, nn.Module) else (obj,):
            for value in vars(o).values():
                for v in value if isinstance(value, list | tuple) else (value,):
                    if isinstance(v, torch.Generator):
                        found.append(v)
    return found


class Stopped(Exception):
    """``fit`` stopped early, as its checkpoint's ``stop_signal`` asked, after saving at ``step``."""

    def __init__(self, step: int, signum: int):
        super().__init__(f"stopped at step {step:,} (signal {signum})")
        self.step, self.signum = step, signum


@dataclass
class Checkpoint:
    """Where ``fit`` saves its state, how often, and what the state must belong to: ``key``
    names the run (the runner: its cells' configs and their task's numerics version); a file
    saved under another key is ignored. ``on_resume(step)`` is called when a run picks up from a
    saved step (e.g. to drop the history logged after it), ``on_save(step)`` at each save, once the
    state is written and before it replaces the last one (e.g. to note how long the sitting has
    trained so far: a kill in between leaves the last state, whose steps are trained again). ``stop_signal`` set (to the signal's
    number) asks a running ``fit`` to save now and raise ``Stopped``; ``listening`` says whether a
    ``fit`` is in its loop to hear it."""

    path: Path
    every_s: float = 600.0
    key: str = ""
    on_resume: Callable[[int], None] | None = None
    on_save: Callable[[int], None] | None = None
    stop_signal: int = 0
    listening: bool = False

    def read(self) -> tuple[dict | None, str | None]:
        """The saved state, or None and why it cannot be used (None: there is none). Tensors and plain
        data only (``weights_only``): a checkpoint may come from elsewhere (``make carry`` commits them),
        and a pickle of any other object could run code as it loads, so such a file is refused unread."""
        try:
            state = torch.load(self.path, weights_only=True)
        except FileNotFoundError:
            return None, None
        except Exception as e:  # torn or foreign: a run from scratch
            if "unsupported global" in str(e).lower():  # a class or function, which loading would call
                return None, ("refused: it holds objects other than tensors and plain data, which loading could "
                              "run as code; not loaded, and replaced by this run's own")
            return None, "unreadable"
        if not (isinstance(state, dict) and state.get("key") == self.key):
            return None, "saved for another run (another config, numerics version or group of cells)"
        return state, None

    def load(self) -> dict | None:
        return self.read()[0]

    def step(self) -> int:
        """The step a run would resume from (0: from scratch)."""
        state = self.load()
        return state["step"] if state else 0

    def save(self, state: dict) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        torch.save({**state, "key": self.key}, tmp)
        if self.on_save:  # before the state is in place: a checkpoint on disk has had its note
            self.on_save(state["step"])
        os.replace(tmp, self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def fit(
    model: nn.Module,
    problem: Problem,
    optimizer: torch.optim.Optimizer,
    *,
    steps: int,
    eval_every: int | EvalSchedule,
    select: str | None = None,
    log: Callable[[int, Metrics], None] | None = None,
    progress: bool = True,
    desc: str = "train",
    checkpoint: Checkpoint | None = None,
    train_step: str = "autograd",
    compile_wrapper: str = "python",
    compile_forward: bool = False,
    lr_schedule: str = "constant",
) -> FitResult:
    """Train every member of ``model`` on ``problem`` for ``steps`` steps, evaluating on
    ``eval_every``'s schedule and keeping each member's best by ``select``. ``lr_schedule``
    (``lr_factor``) scales every parameter group's rate at each step; a scheduled run trains through
    autograd (the compiled step holds its rate fixed)."""
    start = time.perf_counter()
    evaluates = eval_every if isinstance(eval_every, EvalSchedule) else EvalSchedule(eval_every)
    M = problem.members
    params = list(model.parameters())
    dev = devices.of(model)
    alive = torch.ones(M, dtype=torch.bool, device=dev)
    diverged_step = torch.full((M,), -1, dtype=torch.long, device=dev)
    best_model = copy.deepcopy(model) if select else model
    best_value = torch.full((M,), float("inf"))
    best_step = torch.full((M,), -1, dtype=torch.long)
    loss_sum, loss_count = torch.zeros(M, device=dev), 0
    post_step = having(model, "after_step")  # clamps, re-initialisation (nalu.hooks)
    rngs = generators(problem, model)
    own_loss = getattr(problem, "loss", None)  # a problem's own loss trains through autograd
    factor = lr_factor(lr_schedule, steps)
    base_lrs = [g["lr"] for g in optimizer.param_groups]  # before a checkpoint's state replaces them
    fast = (training_step(train_step, model, optimizer, compile_wrapper)
            if own_loss is None and factor is None else None)  # None: autograd
    take_step = fast or AutogradStep(model, optimizer, own_loss or squared_error, compile_forward)

    def evaluate(step: int) -> Metrics:
        nonlocal loss_sum, loss_count
        model.eval()
        with torch.no_grad():
            metrics = devices.move(problem.evaluate(model), "cpu")
        model.train()
        if loss_count:
            metrics = {"train_loss": (loss_sum / loss_count).cpu(), **metrics}
            loss_sum, loss_count = torch.zeros(M, device=dev), 0
        if select:
            improved = metrics[select] < best_value  # NaN never improves
            if improved.any():
                best_value[improved] = metrics[select][improved]
                best_step[improved] = step
                ensemble.copy_members(best_model.parameters(), params, improved.to(dev))
        if log:
            log(step, metrics)
        return metrics

    def state(step: int) -> dict:
        """Everything the rest of the loop depends on, as of the end of ``step``."""
        return {
            "step": step, "model": tensors(model), "best_model": tensors(best_model) if select else None,
            "optimizer": optimizer.state_dict(), "alive": alive, "diverged_step": diverged_step,
            "best_value": best_value, "best_step": best_step, "loss_sum": loss_sum,
            "loss_count": loss_count, "last_loss": last_loss, "init": init,
            "rngs": [g.get_state() for g in rngs], "torch_rng": torch.get_rng_state(),
        }

    saved = checkpoint.load() if checkpoint else None
    first = 1
    if saved:  # resume: the loop continues after the saved step as if it had never stopped
        load_tensors(model, saved["model"])
        if select:
            load_tensors(best_model, saved["best_model"])
        optimizer.load_state_dict(saved["optimizer"])
        for t, name in ((alive, "alive"), (diverged_step, "diverged_step"), (best_value, "best_value"),
                        (best_step, "best_step"), (loss_sum, "loss_sum")):
            t.copy_(saved[name])
        loss_count, last_loss, init = saved["loss_count"], saved["last_loss"].to(dev), saved["init"]
        for g, s in zip(rngs, saved["rngs"], strict=True):
            g.set_state(s)
        torch.set_rng_state(saved["torch_rng"])
        first = saved["step"] + 1
        if checkpoint.on_resume:
            checkpoint.on_resume(saved["step"])
    else:
        init = evaluate(0)
        last_loss = torch.full((M,), float("nan"), device=dev)
    last_save = time.monotonic()
    bar = tqdm(total=steps, initial=first - 1, desc=desc, disable=not progress, mininterval=2.0, leave=False)
    if checkpoint:
        checkpoint.listening = True
    for step in range(first, steps + 1):
        x, y = (t.to(dev) for t in problem.batch())
        if factor:
            for group, lr in zip(optimizer.param_groups, base_lrs, strict=True):
                group["lr"] = lr * factor(step)
        loss_m = take_step(x, y, alive, step)  # members dying at this step are not updated
        newly_dead = ~torch.isfinite(loss_m) & alive
        if newly_dead.any():
            alive &= ~newly_dead
            diverged_step[newly_dead] = step
            if not alive.any():
                break
        for m in post_step:
            m.after_step(step, loss_m.detach())
        last_loss = loss_m.detach()
        loss_sum += torch.where(alive, last_loss, float("nan"))
        loss_count += 1
        if evaluates(step) and step != steps:
            evaluate(step)
        if checkpoint and step != steps and (checkpoint.stop_signal
                                             or time.monotonic() - last_save >= checkpoint.every_s):
            checkpoint.save(state(step))
            last_save = time.monotonic()
            if checkpoint.stop_signal:
                bar.close()
                checkpoint.listening = False
                raise Stopped(step, checkpoint.stop_signal)
        bar.update()
    bar.close()
    if checkpoint:
        checkpoint.listening = False
        if first <= steps and step == steps:  # the last steps kept before the last evaluation, which a stop can cut:
            checkpoint.save(state(steps))     # a resume then only evaluates again
    final = evaluate(steps)
    if select:
        best_model.eval()
        with torch.no_grad():
            best = devices.move(problem.evaluate(best_model), "cpu")
    else:
        best = final
    return FitResult(
        init=init,
        final=final,
        best=best,
        best_step=best_step,
        diverged_step=diverged_step.cpu(),
        train_loss=last_loss.cpu(),
        steps=steps,
        wall_s=time.perf_counter() - start,
        best_model=best_model,
        resumed_from=first - 1,
        train_step="autograd" if fast is None else fast.mode,
        compile_s=fast.compile_s if fast else 0.0,
    )


# inductor's in-place buffer reuse computes a wrong gradient for an LSTM read out by a NALU on the CPU
# (torch 2.14: W_h's gradient off by up to 100% where finite differences and the eager path agree;
# tests/test_translation.py); without it the compiled forward matches the eager one to rounding
SAFE_INDUCTOR = {"inplace_buffers": False}


class AutogradStep:
    """The reference training step of every member: the loss (squared error unless the problem
    brings its own) plus the units' regularisers,
    ``backward``, the optimiser's step. A member that is not ``alive``, or whose loss is not
    finite now (it dies at this step), is frozen: its gradients and optimiser moments are zeroed,
    so its weights stay where they are. ``nalu.fast.CompiledStep`` computes the same.

    ``compile_forward=True`` runs the model's forward through ``torch.compile`` (forward and backward
    compiled, the loss and the optimiser eager): for a model ``nalu.fast`` does not compile whose
    step is many small operations over a fixed shape (Table 3's LSTM over number words: 1.6-1.8x here,
    ``make bench``), the same function to rounding (``tests/test_translation.py``). A forward over inputs
    of varying length recompiles per length: leave it off there."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer,
                 loss: Callable[[Tensor, Tensor], Tensor] = squared_error, compile_forward: bool = False):
        self.model, self.optimizer, self.loss = model, optimizer, loss
        self.forward = torch.compile(model, dynamic=False, options=SAFE_INDUCTOR) if compile_forward else model
        self.params = list(model.parameters())
        # units that regularise their weights (see nalu.units)
        self.regularized = having(model, "regularizer")

    def __call__(self, x: Tensor, y: Tensor, alive: Tensor, step: int) -> Tensor:
        loss_m = self.loss(self.forward(x), y)
        live = alive & torch.isfinite(loss_m.detach())
        all_live = bool(live.all())
        objective = loss_m
        if self.regularized:
            objective = loss_m + sum(m.regularizer(step, loss_m.detach()) for m in self.regularized)
        self.optimizer.zero_grad(set_to_none=True)
        (objective.sum() if all_live else torch.where(live, objective, 0.0).sum()).backward()
        if not all_live:
            ensemble.mask_dead_gradients(self.params, live)
            ensemble.freeze_members(self.optimizer, ~live)
        self.optimizer.step()
        return loss_m.detach()


def tensors(model: nn.Module) -> dict[str, Tensor]:
    """A model's parameters and buffers, non-persistent ones too (a unit's loss ring), copied."""
    out = {f"p:{k}": v.detach().clone() for k, v in model.named_parameters()}
    out.update({f"b:{k}": v.detach().clone() for k, v in model.named_buffers()})
    return out


def load_tensors(model: nn.Module, saved: dict[str, Tensor]) -> None:
    with torch.no_grad():
        for k, v in model.named_parameters():
            v.copy_(saved[f"p:{k}"])
        for k, v in model.named_buffers():
            v.copy_(saved[f"b:{k}"])
