"""The neural addition and multiplication units of Madsen & Johansen (ICLR 2020, "Neural Arithmetic
Units", Section 2), batched over seeds (shapes as in ``nalu.ensemble``).

NAU (Section 2.3)::

    z = W x,            W clamped to [-1, 1] after every optimiser step

NMU (Section 2.4)::

    z_j = prod_i (W_ji x_i + 1 - W_ji),   W clamped to [0, 1] after every optimiser step

so ``W_ji = 1`` multiplies ``x_i`` in and ``W_ji = 0`` leaves it out (a factor 1).

Both are pushed towards discrete weights by the sparsity regulariser (Section 2.3)::

    R = lambda * s(t) * mean_ji min(|W_ji|, 1 - |W_ji|),
    s(t) = clip((t - start) / (end - start), 0, 1)

which is ramped in over ``[start, end]`` optimiser steps. The defaults are the paper's for the
static arithmetic task (its Appendix C): NAU ``lambda = 0.01``, ramped over steps 5,000..50,000;
the NMU of the multiplication model ``lambda = 10`` over 1e6..2e6 steps (of 5e6), config values.

Initialisation (the authors' code, stable-nalu): NAU ``W ~ U(-r, r)``, ``r = min(0.5, sqrt(3) *
sqrt(2 / (in + out)))`` (Glorot's variance, capped); NMU ``W ~ U(0.25, 0.75)`` (mean 1/2).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from nalu.ensemble import Layout, init_members, member_matmul, plain_input
from nalu.units.sparsity import sparsity, sparsity_error


def ramp(step: int, start: int, end: int) -> float:
    """``s(t)``: 0 before ``start``, 1 after ``end``, linear between."""
    if end <= start:
        return float(step >= start)
    return min(max((step - start) / (end - start), 0.0), 1.0)


class NAU(nn.Module):
    """Neural addition unit: ``z = W x`` with ``W`` in [-1, 1]."""

    compilable = True  # nalu.fast can compile its training step
    takes_parts = True  # forward accepts its input in parts (nalu.ensemble.member_matmul)

    low, high = -1.0, 1.0

    def __init__(self, in_features: int, out_features: int, members: int = 1, sparsity_weight: float = 0.01,
                 sparsity_start: int = 5000, sparsity_end: int = 50000):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.sparsity_weight, self.sparsity_start, self.sparsity_end = sparsity_weight, sparsity_start, sparsity_end
        self.W = nn.Parameter(torch.empty(members, out_features, in_features))
        init_members(self, range(members))  # usable alone, member i from seed i; models re-draw from their seeds

    def init_member(self, i: int, g: torch.Generator) -> None:
        r = min(0.5, math.sqrt(3.0) * math.sqrt(2.0 / (self.in_features + self.out_features)))
        self.W.data[i].uniform_(-r, r, generator=g)

    def clamped(self) -> Tensor:
        """``W`` in its range, with the gradient of ``W`` itself. ``after_step`` puts a weight that
        crossed a bound exactly on it, where ``clamp`` passes no gradient (nor does the regulariser:
        ``abs`` has zero gradient at 0): a plain clamp would freeze it there for good, e.g. an NMU
        weight at 0, whose gradient the NMU is built to keep (Madsen & Johansen 2020, Section 2.4)."""
        return self.W + (self.W.clamp(self.low, self.high) - self.W).detach()

    @plain_input
    def forward(self, x: Tensor, layout: Layout = "eager") -> Tensor:
        return member_matmul(x, self.clamped(), layout)

    def after_step(self, step: int, loss: Tensor) -> None:
        """Project the weights back into their range (the paper's clamping)."""
        self.W.data.clamp_(self.low, self.high)

    def regularizer(self, step: int, loss: Tensor) -> Tensor:
        """``[M]``: the ramped sparsity regulariser of each member."""
        scale = self.penalty_scale(step)
        if scale == 0:
            return self.W.new_zeros(self.W.shape[0])
        return scale * self.penalty()

    def penalty_scale(self, step: int) -> float:
        """``lambda * s(t)``: the regulariser is ``penalty_scale(step) * penalty()`` (split so that
        a compiled step, ``nalu.fast``, takes the step's scale as a number)."""
        return self.sparsity_weight * ramp(step, self.sparsity_start, self.sparsity_end)

    def penalty(self) -> Tensor:
        """``[M]``: ``mean_ji min(|W_ji|, 1 - |W_ji|)``."""
        return sparsity(self.W).flatten(1).mean(1)

    def sparsity_error(self) -> Tensor:
        """``[M]``: the largest distance of a weight from {-1, 0, 1}."""
        return sparsity_error(self.W.clamp(self.low, self.high))
