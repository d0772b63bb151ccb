"""The neural multiplication unit of Madsen & Johansen (ICLR 2020, "Neural Arithmetic Units",
Section 2.4), batched over seeds (shapes as in ``nalu.ensemble``)::

    z_j = prod_i (W_ji x_i + 1 - W_ji),   W clamped to [0, 1] after every optimiser step

so ``W_ji = 1`` multiplies ``x_i`` in and ``W_ji = 0`` leaves it out (a factor 1). It shares the
NAU's clamping, sparsity regulariser and its ramp (``nalu.units.nau``); the defaults are the
paper's for its multiplication model (``lambda = 10`` over steps 1e6..2e6 of 5e6). Initialisation
(stable-nalu): ``W ~ U(0.25, 0.75)`` (mean 1/2).
"""

from __future__ import annotations

import torch
from torch import Tensor

from nalu.ensemble import plain_input
from nalu.units.nau import NAU


class NMU(NAU):
    """Neural multiplication unit: ``z_j = prod_i (W_ji x_i + 1 - W_ji)`` with ``W`` in [0, 1]."""

    low, high = 0.0, 1.0

    def __init__(self, in_features: int, out_features: int, members: int = 1, sparsity_weight: float = 10.0,
                 sparsity_start: int = 1_000_000, sparsity_end: int = 2_000_000):
        super().__init__(in_features, out_features, members, sparsity_weight, sparsity_start, sparsity_end)

    def init_member(self, i: int, g: torch.Generator) -> None:
        self.W.data[i].uniform_(0.25, 0.75, generator=g)

    takes_parts = False  # a product over inputs: given whole

    @plain_input
    def forward(self, x: Tensor) -> Tensor:
        W = self.clamped().unsqueeze(1)  # [M, 1, out, in]
        return (x.unsqueeze(2) * W + 1 - W).prod(-1)  # [M, B, out]
