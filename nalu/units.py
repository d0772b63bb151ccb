"""The neural arithmetic units of Trask et al. (2018), Section 2, batched over seeds, and the
registry of every unit of the suite (``UNITS``), the follow-ups included: NAU and NMU
(``nalu.nau``), iNALU (``nalu.inalu``), NPU and RealNPU (``nalu.npu``).

Shapes follow ``nalu.ensemble``: inputs ``[M|1, B, in]``, weights ``[M, out, in]``.

A unit may take part in training through two optional methods, which ``nalu.train.fit`` calls:
``regularizer(step, loss) -> [M]`` (added to each member's loss; ``loss`` is the member's
training loss, detached) and ``after_step(step, loss)`` (after every optimiser step: clamping,
re-initialisation). A unit with a ``sparsity_error() -> [M]`` reports how far its weights are
from discrete values.

Initialisation is not given by the paper; every weight matrix here is Glorot-uniform
(``nalu.ensemble.glorot_uniform_``), which puts ``tanh(W_hat) * sigmoid(M_hat)`` near zero.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from nalu.ensemble import elementwise, glorot_uniform_, member_matmul
from nalu.inalu import INALU
from nalu.nau import NAU, NMU
from nalu.nau import sparsity_error as weights_sparsity_error
from nalu.npu import NPU, RealNPU


class NAC(nn.Module):
    """Neural accumulator (Eq. 1):  ``W = tanh(W_hat) * sigmoid(M_hat)``,  ``a = W x``.

    ``W`` is pushed towards {-1, 0, 1}, so the unit adds and subtracts inputs without scaling
    them. No bias.
    """

    compilable = True  # nalu.fast can compile its training step
    takes_parts = True  # forward accepts its input in parts (nalu.ensemble.member_matmul)

    def __init__(self, in_features: int, out_features: int, members: int):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.W_hat = nn.Parameter(torch.empty(members, out_features, in_features))
        self.M_hat = nn.Parameter(torch.empty(members, out_features, in_features))

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

    def forward(self, x: Tensor) -> Tensor:
        return member_matmul(x, self.W)

    def sparsity_error(self) -> Tensor:
        """``[M]``: the largest distance of a weight of ``W`` from {-1, 0, 1}."""
        return weights_sparsity_error(self.W)


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

    def __init__(self, in_features: int, out_features: int, members: int, eps: float = 1e-7):
        super().__init__()
        self.in_features, self.out_features, self.eps = in_features, out_features, eps
        self.nac = NAC(in_features, out_features, members)
        self.G = nn.Parameter(torch.empty(members, out_features, in_features))

    def init_member(self, i: int, g: torch.Generator) -> None:
        glorot_uniform_(self.G.data[i], self.in_features, self.out_features, g)

    def init_identity_state(self, i: int, n_inputs: int) -> None:
        self.nac.init_identity_state(i, n_inputs)

    def forward(self, x: Tensor) -> Tensor:
        W = self.nac.W
        a = member_matmul(x, W)
        m = torch.exp(member_matmul(elementwise(lambda t: torch.log(torch.abs(t) + self.eps), x), W))
        g = torch.sigmoid(member_matmul(x, self.G))
        return g * a + (1 - g) * m



UNITS: dict[str, type[nn.Module]] = {"nac": NAC, "nalu": NALU, "nau": NAU, "nmu": NMU, "inalu": INALU,
                                     "npu": NPU, "realnpu": RealNPU}  # fmt: skip


def sparsity_error(model: nn.Module) -> Tensor | None:
    """``[M]``: the largest distance from {-1, 0, 1} of any weight of the model's units
    (Madsen & Johansen 2020, Section 4.1); None for a model without units."""
    errors = [m.sparsity_error() for m in model.modules() if hasattr(m, "sparsity_error")]
    return torch.stack(errors).amax(0) if errors else None
