"""Multi-layer perceptrons with any ``torch.nn`` activation by name, batched over seeds.

Used as the ReLU6 and "None" columns of Table 1, the 15 identity-function MLPs of Figure 1 /
Table 5, and (with ``recurrent=True``, see ``nalu.stack``) as the Elman RNNs with ReLU or tanh.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from nalu import ensemble
from nalu.errors import ConfigError, check_choice
from nalu.stack import Stack

# Arguments for activations whose constructor needs some. nn.Threshold(t, v) maps x <= t to v;
# the paper does not give its values. We take t=1, v=0 (a ReLU with a jump at 1): with t=0 it
# would be ReLU itself. Override with model.activation_kwargs.
DEFAULT_KWARGS = {"Threshold": {"threshold": 1.0, "value": 0.0}}


def valid_activations() -> list[str]:
    names = set(nn.modules.activation.__all__) - {"MultiheadAttention", "Softmax2d"}
    return sorted(names | {"none"})


class PReLU(nn.Module):
    """``torch.nn.PReLU`` with one learnable slope per member (initialised to 0.25)."""

    compilable = True  # nalu.fast can compile its training step

    def __init__(self, members: int, init: float = 0.25):
        super().__init__()
        self.init = init
        self.weight = nn.Parameter(torch.full((members, 1, 1), init))

    def init_member(self, i: int, g: torch.Generator) -> None:
        self.weight.data[i] = self.init

    def forward(self, x: Tensor) -> Tensor:
        return torch.where(x >= 0, x, self.weight * x)


def activation(name: str, members: int, **kwargs) -> nn.Module:
    """The activation called ``name`` in ``torch.nn`` (or ``none``), one per member if it learns."""
    check_choice("activation", name, valid_activations())
    if name == "none":
        return nn.Identity()
    if name == "PReLU":
        return PReLU(members, **kwargs)
    kwargs = {**DEFAULT_KWARGS.get(name, {}), **kwargs}
    try:
        module = getattr(nn, name)(**kwargs)
    except TypeError as e:
        raise ConfigError(f"activation {name} cannot be built with {kwargs}: {e}") from None
    if any(True for _ in module.parameters()):
        raise ConfigError(f"activation {name} has parameters; only PReLU is batched over seeds")
    return module


class DenseLayer(nn.Module):
    """``act(W x + b)``; the last layer of a stack is linear (no activation)."""

    compilable = True  # nalu.fast can compile its training step
    takes_parts = True  # forward accepts its input in parts, feature-major too (nalu.ensemble)

    def __init__(self, in_features: int, out_features: int, members: int, act: nn.Module):
        super().__init__()
        self.linear = ensemble.Linear(in_features, out_features, members)
        self.act = act

    def init_identity_state(self, i: int, n_inputs: int) -> None:
        """State-to-state weights = I and zero bias for member ``i`` (the IRNN of Le et al. 2015)."""
        w = self.linear.weight.data[i]
        w[:, n_inputs:] = torch.eye(w.shape[0])
        if self.linear.bias is not None:
            self.linear.bias.data[i] = 0.0

    def forward(self, x: Tensor | ensemble.Parts, layout: ensemble.Layout = "eager") -> Tensor:
        return self.act(self.linear(x, layout))  # the activation acts elementwise, in every layout


def MLP(
    in_features: int,
    out_features: int,
    members: int,
    hidden: Sequence[int],
    activation_name: str = "ReLU6",
    activation_kwargs: dict | None = None,
    recurrent: bool = False,
    state_init: str = "random",
) -> Stack:
    """``in -> hidden... -> out`` with ``activation_name`` after every hidden layer."""
    activation(activation_name, members, **(activation_kwargs or {}))  # validate early

    def layer(i: int, o: int, m: int, last: bool) -> nn.Module:
        act = nn.Identity() if last else activation(activation_name, m, **(activation_kwargs or {}))
        return DenseLayer(i, o, m, act)

    return Stack(layer, in_features, out_features, members, hidden, recurrent, state_init)
