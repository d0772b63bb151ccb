"""The one supervised training loop, for all seeds of a cell at once (see ``nalu.ensemble``).

A task hands ``fit`` a *problem*: something that draws a training batch for every member and
evaluates a model on its fixed test sets. ``fit`` trains with squared error, evaluates every
``eval_every`` steps, keeps each member's weights from the evaluation where its ``select``
metric was lowest (early stopping on a validation set), freezes members that diverge, and
returns the metrics of the initial, final and best-step weights per member. Units with a
regulariser or a post-step action (clamping; see ``nalu.units``) take part at every step.

The model may sit on any device (``nalu.device``): batches are moved to it, and the metrics
``fit`` returns are on the CPU.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from nalu import device as devices
from nalu import ensemble

Metrics = dict[str, Tensor]  # metric name -> one value per member, shape [M]


class Problem(Protocol):
    members: int

    def batch(self) -> tuple[Tensor, Tensor]:
        """One training batch per member: inputs ``[M, B, ...]`` and targets ``[M, B, out]``."""

    def evaluate(self, model: nn.Module) -> Metrics:
        """Metrics of every member on the problem's fixed evaluation sets."""

    def to(self, device: torch.device) -> Problem:
        """Move the fixed evaluation sets (and anything ``batch`` computes with) to ``device``."""


@dataclass
class FitResult:
    init: Metrics
    final: Metrics
    best: Metrics  # evaluated with each member's best-step weights
    best_step: Tensor  # [M], -1 where no evaluation had a finite ``select`` metric
    diverged_step: Tensor  # [M], -1 where the member never diverged
    train_loss: Tensor  # [M], mean training loss over the last evaluation interval
    steps: int
    wall_s: float
    best_model: nn.Module = field(repr=False)


def fit(
    model: nn.Module,
    problem: Problem,
    optimizer: torch.optim.Optimizer,
    *,
    steps: int,
    eval_every: int,
    select: str | None = None,
    log: Callable[[int, Metrics], None] | None = None,
    progress: bool = True,
    desc: str = "train",
) -> FitResult:
    start = time.perf_counter()
    M = problem.members
    params = list(model.parameters())
    dev = devices.of(model)
    alive = torch.ones(M, dtype=torch.bool, device=dev)
    diverged_step = torch.full((M,), -1, dtype=torch.long, device=dev)
    best_model = copy.deepcopy(model) if select else model
    best_value = torch.full((M,), float("inf"))
    best_step = torch.full((M,), -1, dtype=torch.long)
    loss_sum, loss_count = torch.zeros(M, device=dev), 0
    # units that regularise their weights or act after each step (see nalu.units)
    regularized = [m for m in model.modules() if hasattr(m, "regularizer")]
    post_step = [m for m in model.modules() if hasattr(m, "after_step")]

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

    init = evaluate(0)
    last_loss = torch.full((M,), float("nan"), device=dev)
    bar = tqdm(total=steps, desc=desc, disable=not progress, mininterval=2.0, leave=False)
    all_alive = True  # a Python copy of alive.all(), updated only when a member dies
    for step in range(1, steps + 1):
        x, y = (t.to(dev) for t in problem.batch())
        loss_m = (model(x) - y).square().flatten(1).mean(1)
        newly_dead = ~torch.isfinite(loss_m.detach()) & alive
        if newly_dead.any():
            alive &= ~newly_dead
            diverged_step[newly_dead] = step
            ensemble.freeze_members(optimizer, ~alive)
            all_alive = False
            if not alive.any():
                break
        optimizer.zero_grad(set_to_none=True)
        objective = loss_m + sum(m.regularizer(step, loss_m.detach()) for m in regularized) if regularized else loss_m
        loss = objective.sum() if all_alive else torch.where(alive, objective, 0.0).sum()
        loss.backward()
        if not all_alive:
            ensemble.mask_dead_gradients(params, alive)
        optimizer.step()
        for m in post_step:
            m.after_step(step, loss_m.detach())
        last_loss = loss_m.detach()
        loss_sum += last_loss if all_alive else torch.where(alive, last_loss, float("nan"))
        loss_count += 1
        if step % eval_every == 0 and step != steps:
            evaluate(step)
        bar.update()
    bar.close()
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
    )
