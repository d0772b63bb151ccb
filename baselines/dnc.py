"""Differentiable neural computer, batched over seeds.

Graves et al. 2016, "Hybrid computing using a neural network with dynamic external memory"
(Nature 538), Methods; equation names below are the paper's. An LSTM controller reads
``[x_t, r_{t-1}]`` and emits an interface vector that drives one write head and ``R`` read heads
over a memory of ``N`` rows of width ``W``:

- content addressing ``C(M, k, beta)[i] = softmax_i(beta * cos(k, M[i]))``, ``beta = oneplus(.)``;
- dynamic allocation: retention ``psi = prod_r (1 - f_r w^r_{t-1})``, usage
  ``u_t = (u_{t-1} + w^w_{t-1} - u_{t-1} w^w_{t-1}) psi``, allocation
  ``a[phi_j] = (1 - u[phi_j]) prod_{i<j} u[phi_i]`` with ``phi`` the rows sorted by usage;
- write ``w^w = g^w (g^a a + (1 - g^a) c^w)``, ``M_t = M_{t-1} (E - w^w e^T) + w^w v^T``;
- temporal links ``L[i,j] = (1 - w^w[i] - w^w[j]) L[i,j] + w^w[i] p_{t-1}[j]`` (zero diagonal),
  precedence ``p_t = (1 - sum_i w^w[i]) p_{t-1} + w^w``;
- reads ``w^r = pi_1 b + pi_2 c^r + pi_3 f`` with forward ``f = L w^r_{t-1}`` and backward
  ``b = L^T w^r_{t-1}``; read vectors ``r = M^T w^r``.

The output is a read-out of ``[h_t, r_t]``: linear, or a NAC/NALU (``readout``).
Shapes: every tensor is ``[M, B, ...]`` (members, batch).

A step is some sixty small operations on tensors of a few thousand numbers, so on a CPU its cost is
launching them. ``compile_step=True`` runs ``step`` through ``torch.compile`` (inductor fuses its
elementwise work, forward and backward; autograd is unchanged around it): 2.2-2.6x faster per training
batch here (10 members, batch 64, 45 steps; ``make bench``), the same function to rounding
(``tests/test_dnc.py`` checks outputs and gradients against the eager step in float64). The eager
step stays the reference and the default.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from baselines.rnn import GatedCell, make_readout
from nalu import ensemble
from nalu.errors import ConfigError

EPS = 1e-6


def oneplus(x: Tensor) -> Tensor:
    return 1 + F.softplus(x)


def content_weighting(memory: Tensor, keys: Tensor, strengths: Tensor) -> Tensor:
    """``C(M, k, beta)``: memory ``[M, B, N, W]``, keys ``[M, B, H, W]``, strengths ``[M, B, H]``
    -> ``[M, B, H, N]``, each head's weighting summing to 1."""
    cos = torch.einsum("mbhw,mbnw->mbhn", keys, memory)
    cos = cos / (keys.norm(dim=-1, keepdim=True) * memory.norm(dim=-1).unsqueeze(-2) + EPS)
    return torch.softmax(strengths.unsqueeze(-1) * cos, dim=-1)


def allocation_weighting(usage: Tensor) -> Tensor:
    """``a_t``: the least used rows first. ``[M, B, N] -> [M, B, N]``, summing to at most 1."""
    usage = EPS + (1 - EPS) * usage  # keeps the products away from exact zeros (as in DeepMind's code)
    sorted_usage, order = usage.sort(dim=-1)
    before = torch.cumprod(torch.cat([torch.ones_like(sorted_usage[..., :1]), sorted_usage[..., :-1]], -1), -1)
    return torch.zeros_like(usage).scatter(-1, order, (1 - sorted_usage) * before)


def temporal_links(link: Tensor, precedence: Tensor, ww: Tensor) -> tuple[Tensor, Tensor]:
    """``L_t`` and ``p_t`` from ``L_{t-1}`` ``[M, B, N, N]``, ``p_{t-1}`` and the write weighting
    ``w^w_t`` ``[M, B, N]``: ``L[i, j]`` grows when row ``i`` is written right after row ``j``."""
    n = link.shape[-1]
    link = (1 - ww.unsqueeze(-1) - ww.unsqueeze(-2)) * link + ww.unsqueeze(-1) * precedence.unsqueeze(-2)
    link = link * (1 - torch.eye(n, dtype=link.dtype, device=link.device))
    return link, (1 - ww.sum(-1, keepdim=True)) * precedence + ww


def directional_reads(link: Tensor, read_weights: Tensor) -> tuple[Tensor, Tensor]:
    """Forward ``f = L w^r_{t-1}`` and backward ``b = L^T w^r_{t-1}`` weightings ``[M, B, R, N]``."""
    forward = torch.einsum("mbij,mbrj->mbri", link, read_weights)
    backward = torch.einsum("mbji,mbrj->mbri", link, read_weights)
    return forward, backward


@dataclass
class MemoryState:
    controller: tuple[Tensor, ...]  # the LSTM's (h, c)
    memory: Tensor  # [M, B, N, W]
    usage: Tensor  # [M, B, N]
    link: Tensor  # [M, B, N, N]
    precedence: Tensor  # [M, B, N]
    read_weights: Tensor  # [M, B, R, N]
    write_weights: Tensor  # [M, B, N]
    read_vectors: Tensor  # [M, B, R, W]


class DNC(nn.Module):
    """``[M|1, B, T, in] -> [M, B, out]``: the read-out after the last step."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        members: int,
        hidden: Sequence[int],
        memory_size: int = 16,
        word_size: int = 8,
        read_heads: int = 2,
        readout: str = "linear",
        recurrent: bool = True,
        compile_step: bool = False,
    ):
        super().__init__()
        if not recurrent:
            raise ConfigError("dnc is a sequence model; use it with a recurrent task")
        if len(hidden) != 1:
            raise ConfigError(f"dnc takes one controller size, got {list(hidden)}")
        if min(memory_size, word_size, read_heads) < 1:
            raise ConfigError(f"dnc memory_size, word_size and read_heads must be >= 1, got "
                              f"{memory_size}, {word_size}, {read_heads}")
        self.members, self.H, self.compile_step = members, hidden[0], compile_step
        self.N, self.W, self.R = memory_size, word_size, read_heads
        self.controller = GatedCell("lstm", in_features + read_heads * word_size, self.H, members)
        R, W = read_heads, word_size
        self.sizes = {"read_keys": R * W, "read_strengths": R, "write_key": W, "write_strength": 1,
                      "erase": W, "write_vector": W, "free_gates": R, "allocation_gate": 1,
                      "write_gate": 1, "read_modes": 3 * R}
        self.interface = ensemble.Linear(self.H, sum(self.sizes.values()), members)
        self.readout = make_readout(readout, self.H + R * W, out_features, members)

    def initial_state(self, batch: int, like: Tensor) -> MemoryState:
        M, N, W, R = self.members, self.N, self.W, self.R
        z = like.new_zeros
        return MemoryState(self.controller.initial_state(M, batch, like), z(M, batch, N, W), z(M, batch, N),
                           z(M, batch, N, N), z(M, batch, N), z(M, batch, R, N), z(M, batch, N),
                           z(M, batch, R, W))

    def step(self, x_t: Tensor, s: MemoryState) -> tuple[Tensor, MemoryState]:
        """One time step: ``x_t`` ``[M|1, B, in]`` -> (output ``[M, B, out]``, new state)."""
        M, B = self.members, s.memory.shape[1]
        R, W = self.R, self.W
        x_t = x_t.expand(M, -1, -1)
        controller = self.controller(torch.cat([x_t, s.read_vectors.flatten(2)], -1), s.controller)
        h = controller[0]
        xi = dict(zip(self.sizes, self.interface(h).split(list(self.sizes.values()), dim=-1)))
        read_keys = xi["read_keys"].view(M, B, R, W)
        read_strengths = oneplus(xi["read_strengths"])
        write_key, write_strength = xi["write_key"].unsqueeze(2), oneplus(xi["write_strength"])
        erase, write_vector = torch.sigmoid(xi["erase"]), xi["write_vector"]
        free = torch.sigmoid(xi["free_gates"])
        g_a, g_w = torch.sigmoid(xi["allocation_gate"]), torch.sigmoid(xi["write_gate"])
        modes = torch.softmax(xi["read_modes"].view(M, B, R, 3), dim=-1)

        # dynamic allocation, then the write weighting and the write itself
        retention = torch.prod(1 - free.unsqueeze(-1) * s.read_weights, dim=2)
        usage = (s.usage + s.write_weights - s.usage * s.write_weights) * retention
        content_w = content_weighting(s.memory, write_key, write_strength)[:, :, 0]
        ww = g_w * (g_a * allocation_weighting(usage) + (1 - g_a) * content_w)
        memory = (s.memory * (1 - ww.unsqueeze(-1) * erase.unsqueeze(2))
                  + ww.unsqueeze(-1) * write_vector.unsqueeze(2))

        # temporal links (from the previous precedence), then reads: backward, content, forward
        link, precedence = temporal_links(s.link, s.precedence, ww)
        forward, backward = directional_reads(link, s.read_weights)
        content_r = content_weighting(memory, read_keys, read_strengths)
        rw = modes[..., 0:1] * backward + modes[..., 1:2] * content_r + modes[..., 2:3] * forward
        read_vectors = rw @ memory
        out = self.readout(torch.cat([h, read_vectors.flatten(2)], -1))
        return out, MemoryState(controller, memory, usage, link, precedence, rw, ww, read_vectors)

    def steps(self, x: Tensor) -> Iterator[tuple[Tensor, MemoryState]]:
        """(output, state) after every step of ``x`` ``[M|1, B, T, in]``."""
        state = self.initial_state(x.shape[1], x)
        step = compiled_step() if self.compile_step else DNC.step
        for t in range(x.shape[2]):
            out, state = step(self, x[:, :, t], state)
            yield out, state

    def per_step(self, x: Tensor) -> Tensor:
        """``[M, B, T, out]``: the read-out after every step."""
        return torch.stack([out for out, _ in self.steps(x)], dim=2)

    def forward(self, x: Tensor) -> Tensor:
        out = None
        for out, _ in self.steps(x):
            pass
        return out


_compiled = None


def compiled_step():
    """``DNC.step`` through ``torch.compile``, made once per process (a graph per input shape and
    grad mode; modules of one layout share it)."""
    global _compiled
    if _compiled is None:
        from nalu.train import SAFE_INDUCTOR

        _compiled = torch.compile(DNC.step, dynamic=False, options=SAFE_INDUCTOR)
    return _compiled
