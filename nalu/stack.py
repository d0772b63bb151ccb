"""Layer stacks, used feed-forward or as a recurrent model (Trask et al. 2018, Section 4.1).

``Stack`` chains layers ``in -> hidden[0] -> ... -> out``. With ``recurrent=True`` the first
layer becomes the recurrent layer: at every time step it reads ``[x_t, h_{t-1}]`` and writes
``h_t`` (``h_0 = 0``); the remaining layers read the last state out. For NAC and NALU with
``hidden=[2]`` this is the paper's "two units stacked end to end" recurrent model; for a dense
layer with a ReLU or tanh it is the classic Elman RNN with its read-out.

Every model of the suite is built by a callable with the signature
``(in_features, out_features, members, recurrent) -> nn.Module``; feed-forward models map
``[M|1, B, in] -> [M, B, out]``, recurrent ones ``[M|1, B, T, in] -> [M, B, out]``.

``state_init="identity"`` (an option; ``+model.state_init=identity`` on the command line) starts
the recurrent layer as an accumulator: its state-to-state weights begin at ~I instead of the
layer's own random initialisation (for a dense layer, the IRNN of Le et al. 2015).

``step_depth=k`` makes the first ``k`` layers the recurrent step: ``h_t = L_k(...L_1([x_t, h_{t-1}]))``,
the state being ``hidden[k - 1]`` wide. With a NALU under a NAC (``model=nalu_builder``) one step
can compute ``v_t = 10 * v_{t-1} + digit``: the NALU's multiplicative path forms ``e_t * v_{t-1}``
(``e_t`` a product of the token's embedding entries: 10 for a digit, ~0 to clear), its additive path passes the
digit's value and the other registers on, and the NAC adds them (``tests/test_program_eval.py``
sets it by hand). A feed-forward stack ignores ``step_depth``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from nalu.ensemble import Layout, count_members
from nalu.errors import ConfigError, check_choice
from nalu.units import resolve

# (in_features, out_features, members, last) -> layer
LayerFactory = Callable[[int, int, int, bool], nn.Module]


class Stack(nn.Module):
    compilable = True  # nalu.fast can compile its training step

    def __init__(
        self,
        layer: LayerFactory,
        in_features: int,
        out_features: int,
        members: int,
        hidden: Sequence[int],
        recurrent: bool = False,
        state_init: str = "random",
        step_depth: int = 1,
    ):
        super().__init__()
        self.state_init = check_choice("state_init", state_init, ("random", "identity"))
        hidden = list(hidden)
        if recurrent and not hidden:
            raise ConfigError("a recurrent stack needs at least one hidden layer (its state)")
        step_depth = step_depth if recurrent else 1  # a feed-forward stack has no recurrent step
        if not 1 <= step_depth <= max(len(hidden), 1):
            raise ConfigError(f"step_depth must be between 1 and the number of hidden layers ({len(hidden)}), "
                              f"got {step_depth}")
        if step_depth != 1 and state_init != "random":
            raise ConfigError("state_init=identity starts a one-layer step as an accumulator; "
                              f"this step has {step_depth} layers")
        sizes = [in_features, *hidden, out_features]
        if recurrent:
            sizes[0] += hidden[step_depth - 1]  # the step reads [x_t, h_{t-1}]
        n = len(sizes) - 1
        self.layers = nn.ModuleList(
            layer(sizes[k], sizes[k + 1], members, k == n - 1) for k in range(n)
        )
        if recurrent and self.state_init == "identity" and not callable(getattr(self.layers[0], "init_identity_state", None)):
            raise ConfigError(f"state_init=identity starts the step through its unit's init_identity_state(i, n_inputs) "
                              f"(nalu/hooks.py), which {type(self.layers[0]).__name__} has not: model.state_init=random")
        self.recurrent, self.step_depth = recurrent, step_depth
        self.state_size = hidden[step_depth - 1] if recurrent else 0
        self.n_inputs = in_features

    def after_init_member(self, i: int) -> None:
        """``state_init=identity``: the recurrent layer starts by carrying its state unchanged."""
        if self.recurrent and self.state_init == "identity":
            self.layers[0].init_identity_state(i, self.n_inputs)

    def recurrent_step(self) -> nn.Module:
        """The recurrent step: the first layer, or the first ``step_depth`` layers in a chain."""
        return self.layers[0] if self.step_depth == 1 else nn.Sequential(*self.layers[: self.step_depth])

    def forward(self, x: Tensor, layout: Layout = "eager") -> Tensor:
        """``layout`` (``nalu.ensemble.Layout``): "compiled" in a compiled step (``nalu.fast``),
        whose leading layers that ``takes_parts`` then run feature-major."""
        if layout != "eager" and takes_parts(self.layers[0]) and self.step_depth == 1:
            return self._forward_feature_major(x)
        layers = list(self.layers)
        if self.recurrent:
            x = recur(self.recurrent_step(), x, self.state_size, layout=layout)
            layers = layers[self.step_depth:]
        for layer in layers:
            x = apply(layer, x, layout)
        return x

    def per_step(self, x: Tensor) -> Tensor:
        """A recurrent stack's output after every step: ``[M|1, B, T, in] -> [M, B, T, out]``
        (the read-out layers applied to every ``h_t``), for tasks that supervise every prefix."""
        if not self.recurrent:
            raise ConfigError("per-step outputs need a recurrent stack")
        B, T = x.shape[1:3]
        h = recur(self.recurrent_step(), x, self.state_size, every_step=True).flatten(1, 2)  # [M, B * T, state]
        for layer in self.layers[self.step_depth:]:
            h = layer(h)
        return h.unflatten(1, (B, T))

    def _forward_feature_major(self, x: Tensor) -> Tensor:
        """The same model in the layout a compiled step traces: the leading layers that
        ``takes_parts`` read their input in parts and feature-major, ``[M|1, features, B]``
        (``layout="feature_major"``), so that an input shared by every member is one product for
        all of them and the elementwise work of a 1- or 2-wide layer loops over the batch; the
        layers after them get ``[M, B, features]`` in the compiled layout."""
        layers = list(self.layers)
        if self.recurrent:
            h = x.permute(0, 2, 3, 1).contiguous()  # [M|1, T, in, B]
            h = recur_parts(layers.pop(0), h, self.state_size)
        else:
            h = x.transpose(1, 2)  # [M|1, in, B]
        while layers and takes_parts(layers[0]):
            h = layers.pop(0)((h,), layout="feature_major")
        x = h.transpose(1, 2)  # [M, B, features]
        for layer in layers:
            x = apply(layer, x, "compiled")
        return x


def takes_parts(layer: nn.Module) -> bool:
    """Whether ``layer`` accepts its input as a tuple of parts (``nalu.ensemble.member_matmul``),
    and a ``layout``."""
    return getattr(layer, "takes_parts", False)


def apply(layer: nn.Module, x: Tensor, layout: Layout) -> Tensor:
    """``layer(x)`` in ``layout``, for a layer that takes one (others have a single layout)."""
    return layer(x, layout=layout) if layout != "eager" and takes_parts(layer) else layer(x)


def recur(step: nn.Module, x: Tensor, state_size: int, every_step: bool = False, layout: Layout = "eager") -> Tensor:
    """Run ``h_t = step([x_t, h_{t-1}])`` over ``x`` of shape ``[M|1, B, T, in]``; return ``h_T``
    (``h_0 = 0``), ``[M, B, state]``, or with ``every_step`` every ``h_t``, ``[M, B, T, state]``."""
    M = count_members(step)
    h = x.new_zeros(M, x.shape[1], state_size)
    states = []
    for t in range(x.shape[2]):
        x_t = x[:, :, t]
        if x_t.shape[0] != M:
            x_t = x_t.expand(M, -1, -1)
        h = apply(step, torch.cat([x_t, h], dim=-1), layout)
        if every_step:
            states.append(h)
    return torch.stack(states, dim=2) if every_step else h


def recur_parts(step: nn.Module, xT: Tensor, state_size: int) -> Tensor:
    """``recur`` for a step layer that ``takes_parts``, feature-major: ``xT`` is ``[M|1, T, in, B]``,
    the layer reads ``(x_t, h_{t-1})`` unconcatenated, and ``h_T`` comes back ``[M, state, B]``."""
    h = xT.new_zeros(count_members(step), state_size, xT.shape[-1])
    for t in range(xT.shape[1]):
        h = step((xT[:, t], h), layout="feature_major")
    return h


def units(
    unit: str | Sequence[str],
    in_features: int,
    out_features: int,
    members: int,
    hidden: Sequence[int],
    recurrent: bool = False,
    state_init: str = "random",
    hidden_unit: str | None = None,
    hidden_kwargs: Mapping[str, Any] | None = None,
    step_depth: int = 1,
    **unit_kwargs,
) -> Stack:
    """A stack of arithmetic units (``unit`` in ``nalu.units.UNITS``, or a unit from outside the
    suite, ``module:Class`` or ``file.py:Class``: ``nalu.units.resolve``) with no nonlinearity between.

    ``hidden_unit`` (default: ``unit``) is the unit of every layer before the last, e.g. the NAU
    under the NMU of Madsen & Johansen's multiplication model. ``unit_kwargs`` go to every layer,
    unless ``hidden_kwargs`` is given: then the layers before the last get those instead (a unit
    of another kind, such as an NAU under an NPU, takes other arguments). ``unit`` may instead
    list one unit per layer (``[nalu, nac, nac]``), each built with its own defaults.
    """
    if unit is not None and not isinstance(unit, str):
        if len(unit) != len(hidden) + 1:
            raise ConfigError(f"unit lists {len(unit)} units for a stack of {len(hidden) + 1} layers")
        if hidden_unit or hidden_kwargs or unit_kwargs:
            raise ConfigError("a list of units takes no hidden_unit, hidden_kwargs or unit arguments")
        classes = iter([resolve(u) for u in unit])  # Stack builds its layers first to last

        def next_layer(i: int, o: int, m: int, last: bool) -> nn.Module:
            return next(classes)(i, o, m)

        return Stack(next_layer, in_features, out_features, members, hidden, recurrent, state_init, step_depth)
    cls = resolve(unit)
    hidden_cls = resolve(hidden_unit) if hidden_unit else cls
    below = dict(unit_kwargs if hidden_kwargs is None else hidden_kwargs)

    def layer(i: int, o: int, m: int, last: bool) -> nn.Module:
        return cls(i, o, m, **unit_kwargs) if last else hidden_cls(i, o, m, **below)

    return Stack(layer, in_features, out_features, members, hidden, recurrent, state_init, step_depth)
