"""The optional methods through which a unit (or any layer) takes part in training, and the one
place that looks for them (``having``)."""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor, nn


class Hooks(Protocol):
    """The optional methods of a unit (or any layer) that training calls; each is looked up by
    ``having`` and may be absent.

    - ``init_member(i, g)``: draw member ``i``'s weights from generator ``g``
      (``nalu.ensemble.init_members``); ``after_init_member(i)`` runs after every layer's;
    - ``regularizer(step, loss) -> [M]``: added to each member's loss (``loss`` is the member's
      training loss, detached); a compiled step (``nalu.fast``) asks for it split as
      ``penalty_scale(step) * penalty()`` where the unit offers that, for the members
      ``penalty_active(loss) -> [M] bool`` marks where it offers that too (all members where not);
    - ``after_step(step, loss)``: after every optimiser step (clamping, re-initialisation);
    - ``sparsity_error() -> [M]``: how far its weights are from discrete values;
    - ``init_identity_state(i, n_inputs)``: as the step of a recurrent stack with
      ``state_init=identity``, set member ``i`` to carry its state unchanged (``nalu.stack.Stack``;
      the NAC's and NALU's).
    """

    def init_member(self, i: int, g: torch.Generator) -> None: ...
    def after_init_member(self, i: int) -> None: ...
    def regularizer(self, step: int, loss: Tensor) -> Tensor: ...
    def after_step(self, step: int, loss: Tensor) -> None: ...
    def sparsity_error(self) -> Tensor: ...
    def init_identity_state(self, i: int, n_inputs: int) -> None: ...


def has_hook(module: nn.Module, hook: str) -> bool:
    """Whether ``module`` itself implements ``hook`` (one of ``Hooks``'s methods, or ``penalty``)."""
    return callable(getattr(module, hook, None))


def having(model: nn.Module, hook: str) -> list[nn.Module]:
    """The modules of ``model`` (itself included) that implement ``hook``, in ``model.modules()``
    order."""
    return [m for m in model.modules() if has_hook(m, hook)]
