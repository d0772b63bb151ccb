"""Batched seeds: all seeds of one cell train as one model with a leading member dimension.

Every parameter of an ensemble model has shape ``[M, ...]``, one slice per seed ("member").
Activations are ``[M, B, features]``; an input that is the same for every member (a shared test
set) may be given as ``[1, B, features]`` and is broadcast without copying.

Members never interact:
- each member is initialised from a generator seeded with its own seed (``init_members``), so a
  seed starts from the same weights whether it trains alone or beside nine others;
- the loss is a sum of per-member losses, so each member's gradient is its own loss's gradient;
- Adam is elementwise, so each member's update depends on its own gradients only;
- a diverged member is frozen (``freeze_members``): its gradients and Adam moments are zeroed,
  so its weights stay where they were and nothing of it leaks into the others.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from typing import Literal

import torch
from torch import Tensor, nn

from nalu.hooks import having


SMALL_IN = 4  # input width up to which a compiled per-member product is computed elementwise

# How a model lays out its products, an argument of the forward of every layer that ``takes_parts``
# (the units of ``nalu.units`` that do, ``baselines.mlp.DenseLayer``, ``nalu.stack.Stack``):
# - "eager": the autograd path's own, whose few large operations eager execution runs best;
# - "compiled": the layout a compiled step (``nalu.fast``) traces, which ``torch.compile`` turns into
#   fewer, fused loops: per-member products of ``SMALL_IN`` inputs or fewer elementwise instead of a
#   batch of tiny GEMMs, no fused bias add, and recurrent stacks reading ``(x_t, h_{t-1})``
#   unconcatenated and feature-major;
# - "feature_major": inputs given in parts are ``[M|1, in, B]`` and products come out ``[M, out, B]``.
#   A recurrent layer's state is two or so features wide; laid out ``[M, B, 2]`` its elementwise
#   work runs in loops whose innermost dimension is 2, which inductor vectorises with masked
#   16-lane loads (most of a recurrent step's time); laid out ``[M, 2, B]`` the innermost loop runs
#   over the batch. ``nalu.stack.Stack`` uses it within the compiled layout.
# All three compute the same model; they round differently (``tests/test_fast.py``).
Layout = Literal["eager", "compiled", "feature_major"]

Parts = tuple[Tensor, ...]  # an input given as pieces of its last dimension, e.g. (x_t, h_{t-1})


def member_matmul(x: Tensor | Parts, weight: Tensor, layout: Layout = "eager") -> Tensor:
    """``x @ weight^T`` per member: ``x`` is ``[M|1, B, in]``, ``weight`` is ``[M, out, in]``.

    ``x`` may be a tuple of parts whose widths add up to ``in`` (what a recurrent layer reads,
    ``[x_t, h_{t-1}]``, without concatenating them): a part shared by every member (``[1, B, n]``)
    is then one product for all of them, a member's own narrow state an elementwise one."""
    if isinstance(x, tuple):
        out, start = None, 0
        fm = layout == "feature_major"
        for part in x:
            width = part.shape[-2 if fm else -1]
            w = weight[..., start : start + width]
            y = _feature_major_matmul(part, w) if fm else member_matmul(part, w, layout)
            out, start = y if out is None else out + y, start + width
        return out
    M, out, inp = weight.shape
    if x.shape[0] == M:
        if inp <= SMALL_IN and layout != "eager":  # a few products per output: elementwise, fused
            return (x.unsqueeze(2) * weight.unsqueeze(1)).sum(-1)
        return torch.bmm(x, weight.transpose(1, 2))
    if x.shape[0] == 1:  # shared input: one [B, in] @ [in, M*out] product for all members
        y = x[0] @ weight.reshape(M * out, inp).T
        return y.view(x.shape[1], M, out).transpose(0, 1).contiguous()
    raise ValueError(f"input has {x.shape[0]} members, weights have {M}")


def _feature_major_matmul(x: Tensor, weight: Tensor) -> Tensor:
    """``weight @ x`` per member: ``x`` is ``[M|1, in, B]``, the result ``[M, out, B]``."""
    M, out, inp = weight.shape
    if x.shape[0] == M:
        if inp <= SMALL_IN:  # elementwise, the innermost loop over the batch
            return (weight.unsqueeze(-1) * x.unsqueeze(1)).sum(2)
        return torch.bmm(weight, x)
    if x.shape[0] == 1:  # shared input: one [M*out, in] @ [in, B] product for all members
        return (weight.reshape(M * out, inp) @ x[0]).view(M, out, x.shape[2])
    raise ValueError(f"input has {x.shape[0]} members, weights have {M}")


def plain_input(forward):
    """Let a unit's ``forward`` take a plain torch batch ``[B, in]`` too (as a shared input), and give
    ``[B, out]`` back when the unit has one member (``[M, B, out]`` otherwise): the units work as
    ordinary layers outside the suite. Batched inputs pass through untouched."""

    @functools.wraps(forward)
    def wrapped(self, x, *args, **kwargs):
        if isinstance(x, Tensor) and x.dim() == 2:
            y = forward(self, x.unsqueeze(0), *args, **kwargs)
            return y[0] if y.shape[0] == 1 else y
        return forward(self, x, *args, **kwargs)

    return wrapped


def elementwise(fn, x: Tensor | Parts) -> Tensor | Parts:
    """``fn(x)``, part by part where ``x`` is a tuple of parts (``fn`` must act elementwise)."""
    return tuple(fn(part) for part in x) if isinstance(x, tuple) else fn(x)


def glorot_uniform_(t: Tensor, fan_in: int, fan_out: int, g: torch.Generator) -> None:
    """Glorot & Bengio (2010) uniform initialisation of one member's slice, in place."""
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    t.uniform_(-bound, bound, generator=g)


class Linear(nn.Module):
    """``y = x W^T + b`` with one ``W`` (and ``b``) per member.

    Initialised like ``torch.nn.Linear``: ``U(-1/sqrt(in), 1/sqrt(in))`` for weight and bias.
    """

    compilable = True  # nalu.fast can compile its training step

    def __init__(self, in_features: int, out_features: int, members: int, bias: bool = True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = nn.Parameter(torch.empty(members, out_features, in_features))
        self.bias = nn.Parameter(torch.empty(members, 1, out_features)) if bias else None

    def init_member(self, i: int, g: torch.Generator) -> None:
        bound = 1.0 / math.sqrt(self.in_features)
        self.weight.data[i].uniform_(-bound, bound, generator=g)
        if self.bias is not None:
            self.bias.data[i].uniform_(-bound, bound, generator=g)

    def forward(self, x: Tensor | Parts, layout: Layout = "eager") -> Tensor:
        if layout == "eager" and self.bias is not None and x.shape[0] == self.weight.shape[0]:
            return torch.baddbmm(self.bias, x, self.weight.transpose(1, 2))  # fused bias add
        y = member_matmul(x, self.weight, layout)
        if self.bias is None:
            return y
        return y + (self.bias.transpose(1, 2) if layout == "feature_major" else self.bias)  # [M, out, 1] or [M, 1, out]


class Embedding(nn.Module):
    """``[B, T]`` token ids -> ``[M, B, T, dim]``: one table per member, ``N(0, 1)`` like
    ``torch.nn.Embedding``."""

    def __init__(self, vocabulary: int, dim: int, members: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(members, vocabulary, dim))

    def init_member(self, i: int, g: torch.Generator) -> None:
        self.weight.data[i].normal_(generator=g)

    def forward(self, tokens: Tensor) -> Tensor:
        return self.weight[:, tokens]


def init_members(model: nn.Module, seeds: Sequence[int]) -> None:
    """Initialise member ``i`` of every sub-module from a generator seeded with ``seeds[i]``.

    Modules take part by defining ``init_member(i, generator)``; they are visited in registration
    order, so member ``i``'s weights depend on ``seeds[i]`` and the architecture only. A module
    may also define ``after_init_member(i)``, called once every module has been initialised (a
    container overriding part of what its children drew).
    """
    drawing, completing = having(model, "init_member"), having(model, "after_init_member")
    for i, seed in enumerate(seeds):
        g = torch.Generator().manual_seed(int(seed))
        with torch.no_grad():
            for module in drawing:
                module.init_member(i, g)
            for module in completing:
                module.after_init_member(i)


def member_view(mask: Tensor, like: Tensor) -> Tensor:
    """Reshape a ``[M]`` mask so that it broadcasts against a ``[M, ...]`` tensor."""
    return mask.view(-1, *([1] * (like.dim() - 1)))


def mask_dead_gradients(params: Iterable[nn.Parameter], alive: Tensor) -> None:
    """Zero (and de-NaN) the gradients of members that are not alive."""
    for p in params:
        if p.grad is not None:
            p.grad = torch.where(member_view(alive, p.grad), p.grad, torch.zeros_like(p.grad))


def freeze_members(optimizer: torch.optim.Optimizer, dead: Tensor) -> None:
    """Zero the optimiser state (e.g. Adam moments) of dead members so their weights stop moving."""
    for state in optimizer.state.values():
        for key, value in state.items():
            if isinstance(value, Tensor) and value.dim() > 0 and value.shape[0] == dead.shape[0]:
                value[dead] = 0.0


def copy_members(dst: Iterable[Tensor], src: Iterable[Tensor], mask: Tensor) -> None:
    """``dst[m] = src[m]`` for members where ``mask`` is true (used to keep best-step weights)."""
    with torch.no_grad():
        for d, s in zip(dst, src, strict=True):
            d.copy_(torch.where(member_view(mask, d), s, d))


def in_chunks(fn, n: int, chunk: int) -> Tensor:
    """``fn(slice)`` over ``range(n)`` in slices of ``chunk``, concatenated along dim 1 (the batch
    dimension of ``[M, B, ...]`` outputs): bounds the memory of large evaluation sets."""
    return torch.cat([fn(slice(i, i + chunk)) for i in range(0, n, chunk)], dim=1)


def count_members(model: nn.Module) -> int:
    return next(model.parameters()).shape[0]
