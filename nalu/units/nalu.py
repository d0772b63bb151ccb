"""The neural arithmetic logic unit of Trask et al. (2018), Eq. 2, batched over seeds (shapes as in
``nalu.ensemble``); its additive path is a NAC (``nalu.units.nac``)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from nalu.ensemble import Layout, elementwise, glorot_uniform_, init_members, member_matmul, plain_input
from nalu.units.nac import NAC


class NALU(nn.Module):
    """Neural arithmetic logic unit (Eq. 2), with the paper's tied weights and no bias::

        g = sigmoid(G x)
        a = W x                          (a NAC)
        m = exp(W log(|x| + eps))        (the same W, in log space)
        y = g * a + (1 - g) * m

    The multiplicative path drops the sign of ``x`` and ``exp`` overflows for large inputs: both
    are part of the behaviour being reproduced, so nothing here clips or guards them.
    ``eps`` is not given by the paper (default 1e-7).

    ``gate_bias`` (not the paper's: its gate has no bias; default None, none) adds a learned bias
    ``b`` to the gate, ``g = sigmoid(G x + b)``, starting at ``gate_bias``: 3 starts the unit as
    95% its NAC, a lever for a recurrent NALU that does not learn to count (Table 2).
    """

    compilable = True  # nalu.fast can compile its training step
    takes_parts = True  # forward accepts its input in parts (nalu.ensemble.member_matmul)

    def __init__(self, in_features: int, out_features: int, members: int = 1, eps: float = 1e-7,
                 gate_bias: float | None = None):
        super().__init__()
        self.in_features, self.out_features, self.eps, self.gate_bias = in_features, out_features, eps, gate_bias
        self.nac = NAC(in_features, out_features, members)
        self.G = nn.Parameter(torch.empty(members, out_features, in_features))
        self.b = nn.Parameter(torch.empty(members, 1, out_features)) if gate_bias is not None else None
        init_members(self, range(members))  # usable alone, member i from seed i; models re-draw from their seeds

    def init_member(self, i: int, g: torch.Generator) -> None:
        glorot_uniform_(self.G.data[i], self.in_features, self.out_features, g)
        if self.b is not None:
            self.b.data[i].fill_(self.gate_bias)

    def init_identity_state(self, i: int, n_inputs: int) -> None:
        self.nac.init_identity_state(i, n_inputs)

    @plain_input
    def forward(self, x: Tensor, layout: Layout = "eager") -> Tensor:
        W = self.nac.W
        a = member_matmul(x, W, layout)
        m = torch.exp(member_matmul(elementwise(lambda t: torch.log(torch.abs(t) + self.eps), x), W, layout))
        gate = member_matmul(x, self.G, layout)  # [M, N, out] ([M, out, N] feature-major)
        if self.b is not None:
            gate = gate + (self.b.transpose(1, 2) if layout == "feature_major" else self.b)
        g = torch.sigmoid(gate)
        return g * a + (1 - g) * m
