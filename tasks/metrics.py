"""The names of what the tasks measure: the keys a cell's ``metrics.json`` records and the table
builders (``suite.tables``) read, defined here once for both. Plain Python, no torch.

Every task returns one ``Member`` record per seed; ``init``, ``final`` and ``best`` map the
task's metric names below to that seed's values at step 0, at the last step and at the step
its validation metric chose.
"""

from __future__ import annotations

from typing import TypedDict

# every task: the metric each seed's best step is chosen by (lower is better)
VALIDATION = "validation"


class Member(TypedDict, total=False):
    """One seed's record in ``metrics.json`` (``members``); the fields after ``best`` only for the
    arithmetic tasks (Madsen & Johansen's success criterion, ``tasks.arithmetic``; the published
    threshold for the static task alone)."""

    seed: int
    diverged: bool
    diverged_step: int | None
    best_step: int | None
    init: dict[str, float]
    final: dict[str, float]
    best: dict[str, float]
    reference: dict[str, float]
    success_threshold: float
    solved: bool
    success_threshold_published: float
    solved_published: bool
    sparsity_error: float | None


# arithmetic (Table 1, the units table): mean squared error on each range
INTERPOLATION, EXTRAPOLATION = "interpolation", "extrapolation"

# identity (Table 5, Figure 1)
TABLE5_MAE = "table5_mae"  # mean absolute error on Table 5's inputs
MAE_AT_MINUS20, MAE_AT_PLUS20 = "mae_at_minus20", "mae_at_plus20"  # Figure 1's curve at its ends

# MNIST counting and even-digit counting / parity (Table 4): % of test images answered exactly
ACCURACY = "accuracy"


def series_metric(length: int) -> str:
    """MNIST counting and addition (Table 2): % exact at length 1, mean absolute error beyond."""
    return "accuracy_1" if length == 1 else f"mae_{length}"


def mae(split: str) -> str:
    """Mean absolute error on a split (number words, Table 3) or a test domain (programs, Figure 4)."""
    return f"mae_{split}"


def accuracy_on(domain: str) -> str:
    """Programs (Figure 4): % of a test domain's answers exact after rounding."""
    return f"accuracy_{domain}"


def reward(command: int | str) -> str:
    """Grid world (Figure 5): the mean episode reward for a command (an int, or ``train``/``beyond``)."""
    return f"reward_{command}"


def early(command: int) -> str:
    """Grid world (Figure 5): the % of a command's episodes ended by arriving too early."""
    return f"early_{command}"
