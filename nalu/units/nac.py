"""The neural accumulator of Trask et al. (2018), Eq. 1, batched over seeds (shapes as in
``nalu.ensemble``). Initialisation is not given by the paper: Glorot-uniform
(``nalu.ensemble.glorot_uniform_``), which puts ``tanh(W_hat) * sigmoid(M_hat)`` near zero."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from nalu.ensemble import Layout, glorot_uniform_, init_members, member_matmul, plain_input
from nalu.units.sparsity import sparsity_error as weights_sparsity_error


class NAC(nn.Module):
    """Neural accumulator (Eq. 1):  ``W = tanh(W_hat) * sigmoid(M_hat)``,  ``a = W x``.

    ``W`` is pushed towards {-1, 0, 1}, so the unit adds and subtracts inputs without scaling
    them. No bias.
    """

    compilable = True  # nalu.fast can compile its training step
    takes_parts = True  # forward accepts its input in parts (nalu.ensemble.member_matmul)

    def __init__(self, in_features: int, out_features: int, members: int = 1):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.W_hat = nn.Parameter(torch.empty(members, out_features, in_features))
        self.M_hat = nn.Parameter(torch.empty(members, out_features, in_features))
        init_members(self, range(members))  # usable alone, member i from seed i; models re-draw from their seeds

    def init_member(self, i: int, g: torch.Generator) -> None:
        for p in (self.W_hat, self.M_hat):
            glorot_uniform_(p.data[i], self.in_features, self.out_features, g)

    def init_identity_state(self, i: int, n_inputs: int, big: float = 10.0) -> None:
        """Make member ``i`` carry its state unchanged: the weights from the state inputs (the
        columns after the first ``n_inputs``) to the outputs become ~I (tanh(10) * sigmoid(10)),
        so a recurrent NAC starts as an accumulator (an option, not the paper's initialisation)."""
        state = self.in_features - n_inputs
        if state != self.out_features:
            raise ValueError(f"state block is {state} wide but the unit has {self.out_features} outputs")
        k = torch.arange(state)
        self.W_hat.data[i, :, n_inputs:] = 0.0
        self.M_hat.data[i, :, n_inputs:] = -big
        self.W_hat.data[i, k, n_inputs + k] = big
        self.M_hat.data[i, k, n_inputs + k] = big

    @property
    def W(self) -> Tensor:
        return torch.tanh(self.W_hat) * torch.sigmoid(self.M_hat)

    @plain_input
    def forward(self, x: Tensor, layout: Layout = "eager") -> Tensor:
        return member_matmul(x, self.W, layout)

    def sparsity_error(self) -> Tensor:
        """``[M]``: the largest distance of a weight of ``W`` from {-1, 0, 1}."""
        return weights_sparsity_error(self.W)
