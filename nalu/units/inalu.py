"""The improved NALU of Schlör, Ring & Hotho (2020, "iNALU: Improved Neural Arithmetic Logic Unit",
Frontiers in Artificial Intelligence), batched over seeds, following the authors' code::

    W_a = tanh(W_hat_a) * sigmoid(M_hat_a)              separate additive ...
    W_m = tanh(W_hat_m) * sigmoid(M_hat_m)              ... and multiplicative weights
    a = W_a x
    m = exp(min(W_m log(max(|x|, eps)), omega))         clipped log and exp
    msv_j = prod_i (sign(x_i) |W_m,ji| + 1 - |W_m,ji|)  the sign of the product (mixed sign vector)
    g = sigmoid(G)                                      a gate per output, independent of x
    z = g * a + (1 - g) * m * clip(msv, -1, 1)

``eps = 1e-7`` and ``omega = 20``. The sign product is computed with matmuls, not as the
``[M, B, out, in]`` product it is written as (``mixed_sign``; ``mixed_sign_product`` is that
reference, and ``tests/test_followup_units.py`` holds one to the other, values and gradients).
Initialisation (the authors' experiment scripts):
``W_hat ~ N(1, 0.1)``, ``M_hat ~ N(-1, 0.1)``, ``G ~ N(0, 0.1)``.

Regulariser (their Section 3.4): ``sum over W_hat, M_hat, G of mean(max(t - |v|, 0)) / t`` with
``t = 20``, which pushes the raw parameters away from 0 (so that the weights saturate at -1, 0 or
1). The authors add it only once training is under way and the loss is below 1; here it is
active from step ``reg_start`` for each member whose last training loss is below ``reg_below``.

``compilable=True`` lets ``nalu.fast`` compile its training step: the regulariser split as
``penalty_scale(step) * penalty()`` for the members ``penalty_active(loss)`` marks. Off by default, as
the NPUs' (``nalu/units/realnpu.py``): the committed cells trained through autograd, and a config that
asks for it (``model.compilable=true``) names new cells. ``tests/test_fast.py`` holds the two steps
equal in float64. The re-initialisation stays an eager ``after_step``.

Re-initialisation (their Section 3.5, ``reinit=true``): every ``reinit_every`` steps, a member
whose loss has stopped improving (mean of the older half of its last ``reinit_window`` losses <=
mean + std of the newer half) while still high (newer mean > ``reinit_above``) has all of its
parameters redrawn from U(-2, 2) and its loss history cleared.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from nalu.ensemble import init_members, member_matmul, plain_input
from nalu.units.sparsity import sparsity_error


def mixed_sign_product(x: Tensor, W_m: Tensor) -> Tensor:
    """The reference: ``msv_j = clip(prod_i (sign(x_i) |W_m,ji| + 1 - |W_m,ji|), -1, 1)``, as written
    (and as the authors compute it), through an ``[M, B, out, in]`` intermediate. ``x`` is
    ``[M|1, B, in]``, ``W_m`` is ``[M, out, in]``; the result is ``[M, B, out]``."""
    w = W_m.abs().unsqueeze(1)  # [M, 1, out, in]
    return (torch.sign(x).unsqueeze(2) * w + 1 - w).prod(-1).clamp(-1.0, 1.0)


def mixed_sign(x: Tensor, W_m: Tensor) -> Tensor:
    """``mixed_sign_product`` without its ``[M, B, out, in]`` intermediate, which makes most of an
    iNALU step's cost. A factor of the product is 1 for a positive input, ``1 - |w|`` for a zero and
    ``1 - 2|w|`` for a negative one, so with ``N = [x < 0]`` and ``Z = [x == 0]`` (``[M|1, B, in]``)::

        |msv| = exp(N log|1 - 2|W||^T + Z log(1 - |W|)^T)      [M, B, out]
        sign  = (-1)^(N [1 - 2|W| < 0]^T)                       (the count of negative factors)

    The same function and gradient where no factor is 0; the logs are floored at the dtype's
    smallest normal number (so that a factor of exactly 0 gives ~1e-38, not 0 * -inf = NaN)."""
    w = W_m.abs()
    neg, zero = (x < 0).to(x.dtype), (x == 0).to(x.dtype)
    tiny = torch.finfo(x.dtype).tiny
    f_neg = 1 - 2 * w  # [M, out, in]: the factor of a negative input
    log_abs = (member_matmul(neg, torch.log(f_neg.abs().clamp_min(tiny)))
               + member_matmul(zero, torch.log((1 - w).clamp_min(tiny))))
    flips = member_matmul(neg, (f_neg < 0).to(x.dtype))  # exact small integers
    return (torch.exp(log_abs) * (1 - 2 * torch.remainder(flips, 2))).clamp(-1.0, 1.0)


class INALU(nn.Module):
    def __init__(self, in_features: int, out_features: int, members: int = 1, eps: float = 1e-7, omega: float = 20.0,
                 reg_t: float = 20.0, reg_start: int = 0, reg_below: float = 1.0, reinit: bool = False,
                 reinit_every: int = 1000, reinit_window: int = 10000, reinit_above: float = 1.0,
                 compilable: bool = False):
        super().__init__()
        self.compilable = compilable  # nalu.fast may compile its training step
        self.in_features, self.out_features = in_features, out_features
        self.eps, self.omega, self.reg_t, self.reg_start, self.reg_below = eps, omega, reg_t, reg_start, reg_below
        shape = (members, out_features, in_features)
        self.W_hat_a, self.M_hat_a = nn.Parameter(torch.empty(shape)), nn.Parameter(torch.empty(shape))
        self.W_hat_m, self.M_hat_m = nn.Parameter(torch.empty(shape)), nn.Parameter(torch.empty(shape))
        self.G = nn.Parameter(torch.empty(members, 1, out_features))
        self.reinit, self.reinit_every, self.reinit_window, self.reinit_above = (
            reinit, reinit_every, reinit_window, reinit_above)
        # each member's last ``reinit_window`` training losses (a ring) and how many it holds
        # (buffers, so that they follow the model to its device; not saved with its weights)
        self.register_buffer("_losses", torch.zeros(reinit_window if reinit else 0, members), persistent=False)
        self.register_buffer("_count", torch.zeros(members, dtype=torch.long), persistent=False)
        self._reinit_gens = [torch.Generator() for _ in range(members)]
        init_members(self, range(members))  # usable alone, member i from seed i; models re-draw from their seeds

    def init_member(self, i: int, g: torch.Generator) -> None:
        for p in (self.W_hat_a, self.W_hat_m):
            p.data[i].normal_(1.0, 0.1, generator=g)
        for p in (self.M_hat_a, self.M_hat_m):
            p.data[i].normal_(-1.0, 0.1, generator=g)
        self.G.data[i].normal_(0.0, 0.1, generator=g)
        self._reinit_gens[i].manual_seed(int(torch.randint(2**62, (1,), generator=g)))

    @staticmethod
    def weight(W_hat: Tensor, M_hat: Tensor) -> Tensor:
        return torch.tanh(W_hat) * torch.sigmoid(M_hat)

    @plain_input
    def forward(self, x: Tensor) -> Tensor:
        W_a, W_m = self.weight(self.W_hat_a, self.M_hat_a), self.weight(self.W_hat_m, self.M_hat_m)
        a = member_matmul(x, W_a)
        log_x = torch.log(torch.clamp(x.abs(), min=self.eps))
        m = torch.exp(torch.clamp(member_matmul(log_x, W_m), max=self.omega))
        g = torch.sigmoid(self.G)
        return g * a + (1 - g) * m * mixed_sign(x, W_m)

    def sparsity_error(self) -> Tensor:
        """``[M]``: the largest distance of a weight of ``W_a`` or ``W_m`` from {-1, 0, 1}."""
        W = torch.cat([self.weight(self.W_hat_a, self.M_hat_a), self.weight(self.W_hat_m, self.M_hat_m)], 1)
        return sparsity_error(W)

    def parameters_raw(self) -> list[Tensor]:
        return [self.W_hat_a, self.M_hat_a, self.W_hat_m, self.M_hat_m, self.G]

    def regularizer(self, step: int, loss: Tensor) -> Tensor:
        """``[M]``: the regulariser of the members for which it is active (0 for the others)."""
        if step < self.reg_start:
            return self.G.new_zeros(self.G.shape[0])
        r = self.penalty_scale(step) * self.penalty()
        return torch.where(self.penalty_active(loss), r, torch.zeros_like(r))

    def penalty_scale(self, step: int) -> float:
        """1 from ``reg_start`` on, 0 before: the regulariser is ``penalty_scale(step) * penalty()``
        for the members ``penalty_active`` marks."""
        return 0.0 if step < self.reg_start else 1.0

    def penalty(self) -> Tensor:
        """``[M]``: ``sum over W_hat, M_hat, G of mean(max(t - |v|, 0)) / t``."""
        return sum((self.reg_t - p.abs()).clamp_min(0).flatten(1).mean(1) for p in self.parameters_raw()) / self.reg_t

    def penalty_active(self, loss: Tensor) -> Tensor:
        """``[M]`` bool: the members whose training loss (detached) is below ``reg_below``."""
        return loss < self.reg_below

    def after_step(self, step: int, loss: Tensor) -> None:
        """The re-initialisation trick (when ``reinit``), for each member on its own: see the
        module docstring. ``loss`` is each member's training loss at this step, ``[M]``."""
        if not self.reinit:
            return
        self._losses[step % self.reinit_window] = loss.detach()
        self._count += 1
        if step % self.reinit_every:
            return
        # the ring, oldest first
        order = torch.arange(step + 1, step + 1 + self.reinit_window, device=self._losses.device) % self.reinit_window
        history = self._losses[order]
        old, new = history[: self.reinit_window // 2], history[self.reinit_window // 2 :]
        full = self._count >= self.reinit_window
        stuck = full & (old.mean(0) <= new.mean(0) + new.std(0)) & (new.mean(0) > self.reinit_above)
        with torch.no_grad():
            for m in stuck.nonzero().flatten().tolist():
                for p in self.parameters_raw():
                    # drawn on the CPU (where the generator lives), whatever the model's device
                    p.data[m] = torch.empty(p.shape[1:]).uniform_(-2.0, 2.0, generator=self._reinit_gens[m])
                self._count[m] = 0
