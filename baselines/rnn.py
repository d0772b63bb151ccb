"""Gated recurrent baselines (LSTM, GRU, UGRNN) with a linear read-out, batched over seeds.

The LSTM and GRU equations are those of ``torch.nn.LSTM`` / ``torch.nn.GRU`` (Hochreiter &
Schmidhuber 1997; Cho et al. 2014), as is the initialisation ``U(-1/sqrt(H), 1/sqrt(H))``
(``init="torch"``). ``init="tensorflow"`` is TensorFlow's default LSTM construction (Keras'
``LSTM``), which the paper's authors recall using for Table 3 (stable-nalu's
``nalu-author-comments.tex``): input weights Glorot-uniform, ``U(-a, a)`` with
``a = sqrt(6 / (in + gates * H))``; recurrent weights orthogonal (the ``gates * H x H`` matrix has
orthonormal columns); biases 0, the forget gate's 1 (``unit_forget_bias``). The
UGRNN (update-gate RNN; Collins, Sohl-Dickstein & Sussillo 2017, "Capacity and trainability in
recurrent neural networks", Section 2) has one gate that interpolates between the old state and a
tanh candidate::

    c_t = tanh(W_c x_t + U_c h_{t-1} + b_c)
    g_t = sigmoid(W_g x_t + U_g h_{t-1} + b_g)
    h_t = g_t * h_{t-1} + (1 - g_t) * c_t

The ungated ReLU and tanh RNNs are ``baselines.mlp.MLP`` with ``recurrent=True`` (see
``nalu.stack``).

The read-out is linear by default; ``readout="nac"`` or ``"nalu"`` puts an arithmetic unit there
instead (the "LSTM + NAC" and "LSTM + NALU" of the paper's Section 4.3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from nalu import ensemble
from nalu.errors import ConfigError, check_choice
from nalu.units import UNITS, resolve

GATES = {"lstm": 4, "gru": 3, "ugrnn": 2}
INITS = ("torch", "tensorflow")
READOUTS = ("linear", *UNITS)


def make_readout(kind: str, in_features: int, out_features: int, members: int) -> nn.Module:
    """A read-out layer: ``linear`` (with bias), an arithmetic unit (``nac``, ``nalu``, ...), or a
    unit from outside the suite (``module:Class`` or ``file.py:Class``, ``nalu.units.resolve``)."""
    if ":" in kind:
        return resolve(kind)(in_features, out_features, members)
    kind = check_choice("readout", kind, READOUTS)
    if kind == "linear":
        return ensemble.Linear(in_features, out_features, members)
    return UNITS[kind](in_features, out_features, members)


class GatedCell(nn.Module):
    """One LSTM, GRU or UGRNN step for every member: ``state -> state`` given ``x_t``."""

    def __init__(self, kind: str, in_features: int, hidden: int, members: int, init: str = "torch"):
        super().__init__()
        self.kind, self.hidden = check_choice("cell", kind, GATES), hidden
        self.init = check_choice("init", init, INITS)
        n = GATES[kind] * hidden
        self.W_x = nn.Parameter(torch.empty(members, n, in_features))
        self.W_h = nn.Parameter(torch.empty(members, n, hidden))
        self.b_x = nn.Parameter(torch.empty(members, 1, n))
        self.b_h = nn.Parameter(torch.empty(members, 1, n))

    def init_member(self, i: int, g: torch.Generator) -> None:
        if self.init == "tensorflow":
            n, in_features = self.W_x.shape[1:]
            glorot = math.sqrt(6.0 / (in_features + n))
            self.W_x.data[i].uniform_(-glorot, glorot, generator=g)
            # orthogonal: QR of a Gaussian matrix, signs fixed by R's diagonal (Saxe et al. 2014)
            q, r = torch.linalg.qr(torch.randn(n, self.hidden, generator=g, dtype=torch.float64))
            self.W_h.data[i] = (q * torch.sign(torch.diagonal(r))).to(self.W_h.dtype)
            self.b_x.data[i].zero_()
            self.b_h.data[i].zero_()
            if self.kind == "lstm":  # gates i, f, g, o: the forget gate's bias starts at 1
                self.b_x.data[i, :, self.hidden:2 * self.hidden] = 1.0
            return
        bound = 1.0 / math.sqrt(self.hidden)
        for p in (self.W_x, self.W_h, self.b_x, self.b_h):
            p.data[i].uniform_(-bound, bound, generator=g)

    def initial_state(self, members: int, batch: int, like: Tensor) -> tuple[Tensor, ...]:
        h = like.new_zeros(members, batch, self.hidden)
        return (h, h.clone()) if self.kind == "lstm" else (h,)

    def project(self, x: Tensor) -> Tensor:
        """The input's share of the gates, ``W_x x + b_x``: ``[M|1, N, in] -> [M, N, gates * H]``."""
        return ensemble.member_matmul(x, self.W_x) + self.b_x

    def forward(self, x_t: Tensor, state: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        return self.step(self.project(x_t), state)

    def step(self, gx: Tensor, state: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        """One step given the input's share of the gates (``project``), so that it can be computed
        for a whole sequence, or a whole vocabulary, at once."""
        gh = ensemble.member_matmul(state[0], self.W_h) + self.b_h
        if self.kind == "lstm":
            h, c = state
            i, f, g, o = (gx + gh).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            return torch.sigmoid(o) * torch.tanh(c), c
        (h,) = state
        if self.kind == "ugrnn":
            candidate, gate = (gx + gh).chunk(2, dim=-1)
            g = torch.sigmoid(gate)
            return (g * h + (1 - g) * torch.tanh(candidate),)
        xr, xz, xn = gx.chunk(3, dim=-1)
        hr, hz, hn = gh.chunk(3, dim=-1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        return ((1 - z) * n + z * h,)


class GatedRNN(nn.Module):
    """``[M|1, B, T, in] -> [M, B, out]``: a gated cell over time, then a linear read-out.

    ``readout_state="last"`` reads ``h_T``; ``"sum"`` reads ``sum_t h_t`` (the summed-state LSTM
    of the paper's Section 4.3). ``readout`` is ``"linear"`` (with bias), ``"nac"`` or ``"nalu"``.
    ``per_step`` gives the read-out after every step instead of only the last. ``init`` is
    ``"torch"`` or ``"tensorflow"`` (module docstring).
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        members: int,
        hidden: Sequence[int],
        cell: str = "lstm",
        readout_state: str = "last",
        recurrent: bool = True,
        readout: str = "linear",
        init: str = "torch",
    ):
        super().__init__()
        if not recurrent:
            raise ConfigError(f"{cell} is a sequence model; use it with a recurrent task")
        if len(hidden) != 1:
            raise ConfigError(f"{cell} takes one hidden size, got {list(hidden)}")
        self.readout_state = check_choice("readout_state", readout_state, ("last", "sum"))
        self.cell = GatedCell(cell, in_features, hidden[0], members, init)
        self.readout = make_readout(readout, hidden[0], out_features, members)
        self.members = members

    def forward(self, x: Tensor) -> Tensor:
        state = self.cell.initial_state(self.members, x.shape[1], x)
        total = 0
        for t in range(x.shape[2]):
            state = self.cell(x[:, :, t], state)
            if self.readout_state == "sum":
                total = total + state[0]
        return self.readout(total if self.readout_state == "sum" else state[0])

    def per_step(self, x: Tensor) -> Tensor:
        """``[M|1, B, T, in] -> [M, B, T, out]``: the read-out after every step."""
        B, T = x.shape[1:3]
        return self.per_step_from_gates(self.cell.project(x.flatten(1, 2)).unflatten(1, (B, T)))

    def per_step_from_gates(self, gx: Tensor) -> Tensor:
        """``per_step`` given the inputs' share of the gates ``[M, B, T, gates * H]``."""
        B, T = gx.shape[1:3]
        state = self.cell.initial_state(self.members, B, gx)
        read, total = [], 0
        for t in range(T):
            state = self.cell.step(gx[:, :, t], state)
            total = total + state[0] if self.readout_state == "sum" else state[0]
            read.append(total)
        return self.readout(torch.stack(read, dim=2).flatten(1, 2)).unflatten(1, (B, T))
