"""The Domain Mixed Unit (Curry 2025, "The Domain Mixed Unit: A New Neural Arithmetic Layer",
arXiv 2509.08180), a unit from outside the suite: ``make benchmark-unit UNIT=examples.units.dmu:DMU
PROTOCOL=primer``.

Written from the layer of its author's code as stored (marict/nalm-benchmark, branch
``pcurry/param_g``, ``stable_nalu/layer/dag.py``, 2025-09-05, four days before the paper's first
version), not from the paper's text, which no stored copy holds past its introduction. Per output
``k`` and member, with weights ``O`` (the operation selector) and one gate ``G = sigmoid(g)``::

    R_lin = sum_i O_i x_i                      R_log = sum_i O_i ln max(|x_i|, 1e-11)
    sign  = G tanh(R_lin / 1e-4) + (1 - G) cos(pi sum_i |O_i| [x_i < 0])
    m     = clamp(R_log, -L, L) + G (ln max(sqrt(R_lin^2 + 1e-8), 1e-11) - clamp(R_log, -L, L))
    y     = sign * exp(clamp(m, -L, L)),        L = ln(1e6) - 1

so ``G = 1`` with ``O = [1, 1]`` adds (``[1, -1]`` subtracts) and ``G = 0`` multiplies (divides).
Initialisation as the code's: ``O = 0.5`` everywhere, ``g = 0`` (``G = 0.5``); every member starts
alike, so seeds differ only by their data. Its published runs fix ``O`` to the operation's (the
code's ``--freeze-O``: ``[1, 1]`` for a+b and a*b, ``[1, -1]`` for a-b and a/b) and train the gate
alone. Here both are learned by default, as for every unit of the benchmark; ``op`` given (the
task tells the unit its function: ``model=unit_told``, ``make benchmark-unit TOLD=1``) fixes ``O``
as those runs do, the comparison like for like with the published claim. No LayerNorm (the code's
runs for its thresholds pass ``--no-norm``), no regulariser.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from nalu.errors import ConfigError

TINY = 1e-11
LIMIT = math.log(1e6) - 1.0  # the clamp on log magnitudes
SELECTORS = {"add": (1.0, 1.0), "mul": (1.0, 1.0), "sub": (1.0, -1.0), "div": (1.0, -1.0)}  # --freeze-O's


class DMU(nn.Module):
    def __init__(self, in_features: int, out_features: int, members: int = 1, op: str | None = None):
        super().__init__()
        self.in_features, self.out_features, self.op = in_features, out_features, op
        O = torch.zeros(members, out_features, in_features)  # [M, out, in]
        if op is None:
            self.O = nn.Parameter(O)
        else:  # told the function: O fixed, a buffer the optimiser never sees
            if op not in SELECTORS:
                raise ConfigError(f"DMU op={op!r}: its selector is fixed for {', '.join(SELECTORS)} only")
            if in_features != 2:
                raise ConfigError(f"DMU op={op!r}: a fixed selector reads 2 inputs (a, b), not {in_features}")
            self.register_buffer("O", O)
        self.g = nn.Parameter(torch.zeros(members, 1, out_features))  # [M, 1, out]: G = sigmoid(g)

    def init_member(self, i: int, g: torch.Generator) -> None:
        # the code's reset_parameters: deterministic, the generator unused
        self.O.data[i] = 0.5 if self.op is None else torch.tensor(SELECTORS[self.op])
        self.g.data[i] = 0.0

    def forward(self, x: Tensor) -> Tensor:
        # x: [M|1, B, in] -> [M, B, out]
        Ot = self.O.transpose(1, 2)  # [M, in, out]
        r_lin = torch.matmul(x, Ot)
        r_log = torch.matmul(torch.log(x.abs().clamp_min(TINY)), Ot)
        negatives = torch.matmul((x < 0).to(x.dtype), Ot.abs())  # sum_i |O_i| [x_i < 0]
        G = torch.sigmoid(self.g)
        sign = G * torch.tanh(r_lin / 1e-4) + (1 - G) * torch.cos(math.pi * negatives)
        l_lin = torch.log(torch.sqrt(r_lin.square() + 1e-8).clamp_min(TINY))
        l_log = r_log.clamp(-LIMIT, LIMIT)
        return sign * torch.exp((l_log + G * (l_lin - l_log)).clamp(-LIMIT, LIMIT))
