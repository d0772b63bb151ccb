"""How far a unit's weights are from discrete values (Madsen & Johansen 2020, Section 4.1), shared
by every unit that reports a ``sparsity_error``."""

from __future__ import annotations

import torch
from torch import Tensor


def sparsity(W: Tensor) -> Tensor:
    """``min(|W|, |1 - |W||)`` per weight: 0 exactly at -1, 0 and 1."""
    a = W.abs()
    return torch.minimum(a, (1 - a).abs())


def sparsity_error(W: Tensor) -> Tensor:
    """``[M]``: the largest ``sparsity`` of a member's weights ``W [M, ...]`` (Madsen & Johansen,
    Section 4.1)."""
    return sparsity(W.detach()).flatten(1).amax(1)
