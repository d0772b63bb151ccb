"""Scores shared by the tasks that round a regression output to an integer answer."""

from __future__ import annotations

import torch
from torch import Tensor

EXACT = 2.0**24  # beyond this, float32 no longer holds every integer


def rounded(pred: Tensor) -> Tensor:
    """``pred`` rounded to the nearest integer; NaN where it is not finite or beyond ``EXACT``, so
    that a diverged or exploded output matches no label (NaN compares unequal to everything)."""
    return torch.where(pred.isfinite() & (pred.abs() < EXACT), pred.round(), float("nan"))
