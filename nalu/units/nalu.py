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
    """

    compilable = True  # nalu.fast can compile its training step
    takes_parts = True  # forward accepts its input in parts (nalu.ensemble.member_matmul)

    def __init__(self, in_features: int, out_features: int, members: int = 1, eps: float = 1e-7):
        super().__init__()
        self.in_features, self.out_features, self.eps = in_features, out_features, eps
        self.nac = NAC(in_features, out_features, members)
        self.G = nn.Parameter(torch.empty(members, out_features, in_features))
        init_members(self, range(members))  # usable alone, member i from seed i; models re-draw from their seeds

    def init_member(self, i: int, g: torch.Generator) -> None:
        glorot_uniform_(self.G.data[i], self.in_features, self.out_features, g)

    def init_identity_state(self, i: int, n_inputs: int) -> None:
        self.nac.init_identity_state(i, n_inputs)

    @plain_input
    def forward(self, x: Tensor, layout: Layout = "eager") -> Tensor:
        W = self.nac.W
        a = member_matmul(x, W, layout)
        m = torch.exp(member_matmul(elementwise(lambda t: torch.log(torch.abs(t) + self.eps), x), W, layout))
        g = torch.sigmoid(member_matmul(x, self.G, layout))
        return g * a + (1 - g) * m
