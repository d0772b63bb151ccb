"""A unit written outside the suite, as a worked example of the unit protocol (README, "Bring your
own unit"): ``model=unit model.unit=examples/units/clipped_adder.py:ClippedAdder``.

ClippedAdder is ``z = W x`` with ``W`` clamped to [-1, 1] after every optimiser step: the NAU of
Madsen & Johansen (2020) without its sparsity regulariser. It shows the three things a unit owes
the suite (``nalu.units.check_unit`` asks for them when the model is built):

- the constructor ``(in_features, out_features, members=1)``;
- ``forward``: ``[M|1, B, in] -> [M, B, out]``, the member dimension first (``nalu.ensemble``);
- ``init_member(i, generator)``: member ``i``'s weights drawn from ``generator`` alone, so that
  seeds are reproducible and members differ;

and one optional hook (``nalu.hooks.Hooks``): ``after_step`` for the clamp.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class ClippedAdder(nn.Module):
    def __init__(self, in_features: int, out_features: int, members: int = 1):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.W = nn.Parameter(torch.zeros(members, out_features, in_features))  # [M, out, in]

    def init_member(self, i: int, g: torch.Generator) -> None:
        # Glorot-uniform on [-r, r], r = sqrt(6 / (in + out)), drawn from the member's generator
        r = math.sqrt(6.0 / (self.in_features + self.out_features))
        self.W.data[i] = (torch.rand(self.out_features, self.in_features, generator=g) * 2 - 1) * r

    def forward(self, x: Tensor) -> Tensor:
        # x: [M|1, B, in] -> [M, B, out]
        return torch.matmul(x, self.W.transpose(1, 2))

    def after_step(self, step: int, loss: Tensor) -> None:
        with torch.no_grad():
            self.W.clamp_(-1.0, 1.0)
