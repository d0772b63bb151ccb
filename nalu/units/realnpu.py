"""Neural power units of Heim, Pevný & Šmídl (NeurIPS 2020, "Neural Power Units"), batched over seeds,
following the authors' code (NeuralArithmetic.jl).

NPU: with a relevance gate ``g`` per input, clamped to [0, 1],::

    r = g * (|x| + eps) + (1 - g)          (an irrelevant input becomes 1, neutral in a product)
    k = g * pi * [x < 0]                   (the phase of a negative input)
    z = exp(W_re log r - W_im k) * cos(W_re k + W_im log r)

which is the real part of ``exp(W log x)`` over the complex logarithm, with complex weights
``W_re + i W_im``: ``W_re = [1, -1]`` divides, ``W_re = [2]`` squares, ``W_re = [0.5]`` takes a
square root, and a negative input of an odd power keeps its sign (``cos(pi) = -1``).

RealNPU: ``W_im = 0``, so ``z = exp(W log r) * cos(W k)``.

Initialisation (the authors' library): ``W_re`` Glorot-uniform, ``W_im = 0``, ``g = 0.5``.
Regulariser (their experiments): ``beta * ||theta||_1`` over the unit's parameters, ``beta`` growing
from ``l1_start`` by a factor 10 every ``l1_every`` steps up to ``l1_end`` (1e-5 -> 1e-4, every
10,000 steps).

``compilable=True`` lets ``nalu.fast`` compile its training step (the regulariser split as
``penalty_scale(step) * penalty()``); off by default, because the committed units-table cells of
the NPUs trained through autograd and the compiled step rounds otherwise in float32: a config that
asks for it (``model.compilable=true``) names new cells. ``tests/test_fast.py`` holds the two steps
equal in float64.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from nalu.ensemble import glorot_uniform_, init_members, member_matmul, plain_input
from nalu.units.sparsity import sparsity_error


def l1_weight(step: int, start: float, end: float, every: int) -> float:
    """``beta`` at ``step``: ``start * 10^(step // every)``, at most ``end``."""
    if start <= 0:
        return 0.0
    if end <= start:
        return end
    decades = step // every
    # past the cap, do not form 10^decades: it overflows a float after 308 decades (3.1M steps at 10k)
    return end if decades >= math.log10(end / start) else min(start * 10.0**decades, end)


class RealNPU(nn.Module):
    """The real neural power unit: ``z = exp(W log r) * cos(W k)``."""

    complex_weights = False

    def __init__(self, in_features: int, out_features: int, members: int = 1, eps: float = 1e-7,
                 l1_start: float = 1e-5, l1_end: float = 1e-4, l1_every: int = 10000, compilable: bool = False):
        super().__init__()
        self.compilable = compilable  # nalu.fast may compile its training step
        self.in_features, self.out_features, self.eps = in_features, out_features, eps
        self.l1_start, self.l1_end, self.l1_every = l1_start, l1_end, l1_every
        self.W_re = nn.Parameter(torch.empty(members, out_features, in_features))
        self.W_im = nn.Parameter(torch.empty(members, out_features, in_features)) if self.complex_weights else None
        self.g = nn.Parameter(torch.empty(members, 1, in_features))
        init_members(self, range(members))  # usable alone, member i from seed i; models re-draw from their seeds

    def init_member(self, i: int, g: torch.Generator) -> None:
        glorot_uniform_(self.W_re.data[i], self.in_features, self.out_features, g)
        if self.W_im is not None:
            self.W_im.data[i].zero_()
        self.g.data[i].fill_(0.5)

    def polar(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``log r`` and ``k`` of the gated input, ``[M, B, in]``."""
        g = self.g.clamp(0.0, 1.0)
        r = g * (x.abs() + self.eps) + (1 - g)
        return torch.log(r), g * math.pi * (x < 0).to(x.dtype)

    @plain_input
    def forward(self, x: Tensor) -> Tensor:
        log_r, k = self.polar(x)
        if self.W_im is None:
            return torch.exp(member_matmul(log_r, self.W_re)) * torch.cos(member_matmul(k, self.W_re))
        magnitude = member_matmul(log_r, self.W_re) - member_matmul(k, self.W_im)
        phase = member_matmul(k, self.W_re) + member_matmul(log_r, self.W_im)
        return torch.exp(magnitude) * torch.cos(phase)

    def sparsity_error(self) -> Tensor:
        """``[M]``: the largest distance of a power (``W_re``, and ``W_im``) from {-1, 0, 1}."""
        W = self.W_re if self.W_im is None else torch.cat([self.W_re, self.W_im], 1)
        return sparsity_error(W)

    def regularizer(self, step: int, loss: Tensor) -> Tensor:
        """``[M]``: ``beta(step) * ||theta||_1`` of each member."""
        beta = self.penalty_scale(step)
        if beta == 0:
            return self.g.new_zeros(self.g.shape[0])
        return beta * self.penalty()

    def penalty_scale(self, step: int) -> float:
        """``beta(step)``: the regulariser is ``penalty_scale(step) * penalty()``."""
        return l1_weight(step, self.l1_start, self.l1_end, self.l1_every)

    def penalty(self) -> Tensor:
        """``[M]``: ``||theta||_1`` of each member."""
        return sum(p.abs().flatten(1).sum(1) for p in self.parameters())
