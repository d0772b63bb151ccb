"""Scores shared by the tasks: integer answers from a regression output, success rates."""

from __future__ import annotations

import math

import torch
from torch import Tensor

EXACT = 2.0**24  # beyond this, float32 no longer holds every integer


def rounded(pred: Tensor) -> Tensor:
    """``pred`` rounded to the nearest integer; NaN where it is not finite or beyond ``EXACT``, so
    that a diverged or exploded output matches no label (NaN compares unequal to everything)."""
    return torch.where(pred.isfinite() & (pred.abs() < EXACT), pred.round(), float("nan"))


def wilson_interval(successes: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a success rate (95% by default; Wilson 1927)."""
    if trials == 0:
        return (math.nan, math.nan)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return (max(0.0, centre - half), min(1.0, centre + half))
