"""Adam with one learning rate per member, so cells that differ only in their rate train as one
batched model (``tasks.language.translation.run_group``: Table 3's grid of two rates).

Every parameter is ``[M, ...]`` (``nalu.ensemble``) and Adam is elementwise, so member ``m``'s
update reads its own slice only:

    t      += 1
    m_t     = beta1 * m + (1 - beta1) * g
    v_t     = beta2 * v + (1 - beta2) * g^2
    W      -= lr[m] / (1 - beta1^t) * m_t / (sqrt(v_t) / sqrt(1 - beta2^t) + eps)

``MemberAdam`` runs torch's own Adam function (``torch.optim.adam.adam``: fused, foreach or
single-tensor, as the config says) once per run of members with equal rates, on views of their
slices (a run of leading slices is contiguous), so each member's update is bitwise the one
``torch.optim.Adam`` makes at its rate (``tests/test_optim.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import Tensor
from torch.optim.adam import adam

from nalu.errors import ConfigError


def runs(lrs: Sequence[float]) -> list[tuple[slice, float]]:
    """``lrs`` as maximal runs of equal values: ``[(slice of members, lr), ...]``."""
    out, start = [], 0
    for i in range(1, len(lrs) + 1):
        if i == len(lrs) or lrs[i] != lrs[start]:
            out.append((slice(start, i), float(lrs[start])))
            start = i
    return out


class MemberAdam(torch.optim.Adam):
    """``torch.optim.Adam`` with ``lrs[m]`` for member ``m`` (every parameter's slice ``[m]``).

    The parameter group's ``lr`` is ``lrs[0]`` and must stay so: a schedule that rescales it
    (``fit``'s ``lr_schedule``) would be ignored, so a step after such a change is refused."""

    def __init__(self, params: Iterable[Tensor], lrs: Sequence[float], **kwargs):
        if "lr" in kwargs:
            raise TypeError("MemberAdam takes lrs (one per member), not lr")
        if not lrs:
            raise ConfigError("MemberAdam needs one learning rate per member, got none")
        super().__init__(params, lr=float(lrs[0]), **kwargs)
        self.members = len(lrs)
        self.runs = runs(lrs)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() == 0 or p.shape[0] != self.members:
                    raise ConfigError(f"a parameter of shape {tuple(p.shape)} has no leading dimension of "
                                      f"{self.members} members, one per learning rate")

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if group["lr"] != self.runs[0][1]:
                raise RuntimeError("MemberAdam's rates are per member (lrs); its group's lr was changed "
                                   f"to {group['lr']}, which it would ignore")
            params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps = [], [], [], [], [], []
            has_complex = self._init_group(group, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps)
            beta1, beta2 = group["betas"]
            for members, lr in self.runs:
                adam(
                    [t[members] for t in params], [t[members] for t in grads],
                    [t[members] for t in exp_avgs], [t[members] for t in exp_avg_sqs],
                    [t[members] for t in max_exp_avg_sqs],
                    [s.clone() for s in steps],  # each run counts this step from the same t
                    foreach=group["foreach"], capturable=group["capturable"],
                    differentiable=group["differentiable"], fused=group["fused"],
                    has_complex=has_complex, decoupled_weight_decay=group["decoupled_weight_decay"],
                    amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=lr,
                    weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                )
            for s in steps:
                s += 1
        return loss


def member_optimizer(factory, params: Iterable[Tensor], lrs: Sequence[float] | None) -> torch.optim.Optimizer:
    """The optimiser a config's partial (``instantiate(cfg.optimizer)``) builds, with ``lrs``, one
    per member, where they differ: a ``MemberAdam`` with the partial's other arguments. Rates
    that are all equal (or None) leave the partial as it is."""
    if lrs is None or len(set(lrs)) == 1:
        return factory(params)
    if getattr(factory, "func", None) is not torch.optim.Adam:
        raise ConfigError(f"cells that differ in their learning rate train as one model with Adam only, "
                          f"not {getattr(factory, 'func', factory)}")
    kwargs = {k: v for k, v in factory.keywords.items() if k != "lr"}
    return MemberAdam(params, lrs, **kwargs)
