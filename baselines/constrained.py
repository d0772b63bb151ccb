"""Final layers with constrained weights: the ablation of Table 4 (Trask et al. 2018, Section 4.6).

``y = f(W) x (+ b)`` with ``f`` one of: identity (``Wx+b``), ``sigmoid``, ``tanh``, or the NAC
parameterisation ``tanh(W_hat) * sigmoid(M_hat)``; the bias is optional.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from nalu import ensemble
from nalu.errors import ConfigError
from nalu.units import NAC, resolve

# the rows of Table 4: name -> (weight map, bias)
VARIANTS = {
    "wx_plus_b": ("free", True),
    "sigmoid_w_x_plus_b": ("sigmoid", True),
    "sigmoid_w_x": ("sigmoid", False),
    "tanh_w_x_plus_b": ("tanh", True),
    "tanh_w_x": ("tanh", False),
    "nac_plus_b": ("nac", True),
    "nac": ("nac", False),
}
WEIGHT_MAPS = {"free": lambda w: w, "sigmoid": torch.sigmoid, "tanh": torch.tanh}


def is_unit(variant: str) -> bool:
    """A final layer named ``module:Class`` or ``file.py:Class``: a unit from outside the suite in the
    place of the layer under study (``make benchmark-unit PROTOCOL=tasks``)."""
    return ":" in variant


class ConstrainedLinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, members: int, variant: str):
        super().__init__()
        if variant not in VARIANTS and not is_unit(variant):
            raise ConfigError(f"unknown final layer '{variant}'; valid: {', '.join(VARIANTS)}, or a unit <module>:<Class>")
        self.variant = variant
        weight_map, bias = VARIANTS.get(variant, ("nac", False))
        self.in_features = in_features
        if is_unit(variant):  # no bias: the unit alone, as the NAC row
            self.nac = resolve(variant)(in_features, out_features, members)
        elif weight_map == "nac":
            self.nac = NAC(in_features, out_features, members)
        else:
            self.weight = nn.Parameter(torch.empty(members, out_features, in_features))
            self.map = WEIGHT_MAPS[weight_map]
        self.bias = nn.Parameter(torch.zeros(members, 1, out_features)) if bias else None

    def init_member(self, i: int, g: torch.Generator) -> None:
        if hasattr(self, "weight"):
            bound = 1.0 / math.sqrt(self.in_features)  # torch.nn.Linear's default
            self.weight.data[i].uniform_(-bound, bound, generator=g)

    def forward(self, x: Tensor) -> Tensor:
        y = self.nac(x) if hasattr(self, "nac") else ensemble.member_matmul(x, self.map(self.weight))
        return y if self.bias is None else y + self.bias
