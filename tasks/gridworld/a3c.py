"""A3C's update (Mnih et al. 2016, "Asynchronous methods for deep reinforcement learning",
Algorithm S3), batched over seeds: Adam whose moments live in shared memory (every worker applies
its gradients to the shared weights with them, without locks: Hogwild!, as in A3C), per-member
gradient clipping, and the n-step actor-critic losses (policy gradient with an entropy bonus, value
regression). The processes that run it: ``tasks.gridworld.workers``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from nalu import ensemble


def shared_adam_state(params: list[nn.Parameter]) -> list[dict[str, Tensor]]:
    """Adam's moments and step counters for ``params``, in shared memory (one dict per param)."""
    return [{"step": torch.zeros(()).share_memory_(),
             "exp_avg": torch.zeros_like(p).share_memory_(),
             "exp_avg_sq": torch.zeros_like(p).share_memory_()} for p in params]


def shared_adam(params: list[nn.Parameter], state: list[dict[str, Tensor]], **kwargs) -> torch.optim.Adam:
    """A ``torch.optim.Adam`` over shared ``params`` whose state is the shared ``state``: every
    worker's step reads and updates the same moments, in place."""
    optimizer = torch.optim.Adam(params, foreach=False, **kwargs)
    for p, s in zip(params, state, strict=True):
        optimizer.state[p] = s
    return optimizer


def clip_grad_norm_per_member(params: list[nn.Parameter], max_norm: float) -> Tensor:
    """``clip_grad_norm_`` for each member on its own; returns the norms before clipping ``[M]``."""
    grads = [p.grad for p in params if p.grad is not None]
    norms = torch.stack([g.flatten(1).square().sum(1) for g in grads]).sum(0).sqrt()
    scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(ensemble.member_view(scale, g))
    return norms


@dataclass
class Losses:
    policy: Tensor  # [M]
    value: Tensor
    entropy: Tensor

    def total(self, value_coef: float, entropy_coef: float) -> Tensor:
        return self.policy + value_coef * self.value - entropy_coef * self.entropy


def a3c_losses(logits: Tensor, values: Tensor, actions: Tensor, rewards: Tensor, dones: Tensor,
               bootstrap: Tensor, gamma: float) -> Losses:
    """Per-member A3C losses over one rollout. ``logits [T, M, B, A]``; ``values``, ``actions``,
    ``rewards``, ``dones`` ``[T, M, B]``; ``bootstrap [M, B]``, the value after the last step.

    n-step return ``R_t = r_t + gamma * (1 - done_t) * R_{t+1}``, ``R_T = bootstrap``; advantage
    ``R_t - V(s_t)``; policy loss ``-log pi(a_t|s_t) * advantage`` (advantage held constant),
    value loss ``(R_t - V(s_t))^2 / 2``, entropy of the policy; each a mean over steps and
    environments.
    """
    returns, R = torch.empty_like(rewards), bootstrap
    for t in reversed(range(len(rewards))):
        R = rewards[t] + gamma * (~dones[t]).float() * R
        returns[t] = R
    advantage = returns - values
    logp = F.log_softmax(logits, -1)
    chosen = logp.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    entropy = -(logp.exp() * logp).sum(-1)
    return Losses(policy=-(chosen * advantage.detach()).mean((0, 2)),
                  value=0.5 * advantage.square().mean((0, 2)), entropy=entropy.mean((0, 2)))
