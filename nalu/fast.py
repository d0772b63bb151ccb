"""A compiled training step: forward, loss, regularisers, backward and Adam as one function.

``fit`` (``nalu.train``) spends a small model's step on per-operation overhead, not arithmetic:
a static NALU cell's step costs about the same for 1 member as for 10. ``CompiledStep`` writes
the whole step as one pure function of the weights, Adam's moments and the batch, takes the
gradients with ``torch.func.grad`` and compiles the lot with ``torch.compile`` (inductor fuses
the elementwise work of forward, backward and update into a few loops)::

    loss_m  = mean_b (model(x) - y)^2                      [M]
    live    = alive & isfinite(loss_m)                     [M]  (a member dying now is not updated)
    g       = grad of sum_m live_m * (loss_m + sum_u c_u * penalty_u,m)
    t      += 1
    m       = beta1 m + (1 - beta1) g                      (0 for members not live)
    v       = beta2 v + (1 - beta2) g^2                    (0 for members not live)
    W      -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)   (live members)

which is the autograd path's step (``freeze_members`` included) and ``torch.optim.Adam``'s
update. The weights and moments are updated in place, in the model's own parameters and the
optimiser's own state, so evaluation, best-step copies, checkpoints and the units' post-step
clamps (``after_step``, run eagerly after it) see them as they see the autograd path's.
``c_u = penalty_scale(step)`` of each regularised unit (NAU, NMU) is passed as a tensor, so a
ramp does not recompile; a unit whose regulariser acts only on some members by their loss (the
iNALU's, below a loss of 1) marks them with ``penalty_active(loss) -> [M]`` and the others' penalty is 0.

The autograd path stays the reference: ``tests/test_fast.py`` checks one step of this function
against one autograd step from the same state, in float64 to 1e-10, for every supported unit,
and the compiled function against the uncompiled one (float64, 1e-10). The compiled step traces
its own layout of the same model (``layout="compiled"``, ``nalu.ensemble.Layout``). Supported
are the models of Table 1 and the units table: stacks of NAC, NALU, NAU and NMU, and the MLPs
(ReLU6, "None"), feed-forward or recurrent, trained with plain Adam; the NPUs where they ask for it
and the iNALU where they ask for it (``compilable=True``, ``nalu/units/realnpu.py``, ``inalu.py``).

The compiled graph is called through a wrapper that allocates its buffers and launches its
kernels and matrix products. ``wrapper="python"`` (inductor's default) is that code in Python;
``"cpp"`` compiles it to C++ (inductor's ``cpp_wrapper``): the same kernels, so the same numbers bit
for bit (``tests/test_fast.py``), without Python's cost per launch. A recurrent step launches tens
of small products and over a hundred allocations per step (one per time step and product), and
gained 1.35-1.5x in two measurements on a loaded machine (recurrent NALU, 6 ops x 10 seeds); a static
step gains nothing measurable, and compiling the C++ wrapper costs about 45 s more the first time
(inductor's cache keeps it for later processes). ``"auto"`` (the suite's default) takes "cpp" for
recurrent models (``model.recurrent``) and "python" otherwise.

Once a step has run its compiled function with all of Dynamo's guards, its later calls skip them
(``torch.compiler.set_stance(skip_guard_eval_unsafe=True)``: 6-10% of a static NALU group's step).
That is sound only for inputs the cache has seen, so it is allowed per step object: a step whose
graph a later model's ``torch._dynamo.reset()`` may have dropped (``_checked`` is cleared with it)
runs once more with every guard first. ``tests/test_fast.py`` alternates two models' steps.
"""

from __future__ import annotations

import sys
import time

import torch
from torch import Tensor, nn
from torch.func import functional_call, grad

from nalu.errors import check_choice
from nalu.hooks import has_hook, having

# the steps (by id) that have run their compiled function with every guard since Dynamo's cache was last reset
_checked: set[int] = set()

def unsupported(model: nn.Module, optimizer: torch.optim.Optimizer) -> str | None:
    """Why ``CompiledStep`` cannot train ``model`` with ``optimizer`` (None: it can).

    A module takes part by declaring ``compilable = True`` (its forward traces without graph
    breaks and its hooks are the step's: ``penalty``/``penalty_scale`` for a regulariser,
    ``after_step`` run eagerly); torch's own parameter-free modules (activations) need not."""
    for m in model.modules():
        own = type(m).__module__.startswith("torch.nn") and not any(True for _ in m.parameters(recurse=False))
        if not (getattr(m, "compilable", False) or own):
            return f"{type(m).__name__} is not supported"
        if has_hook(m, "regularizer") and not (has_hook(m, "penalty") and has_hook(m, "penalty_scale")):
            return f"{type(m).__name__}'s regulariser has no penalty() and penalty_scale(step)"
    if type(optimizer) is not torch.optim.Adam or len(optimizer.param_groups) != 1:
        return "only torch.optim.Adam with one parameter group is supported"
    group = optimizer.param_groups[0]
    if group["weight_decay"] or group["amsgrad"] or group["maximize"] or isinstance(group["lr"], Tensor):
        return "only plain Adam (no weight decay, amsgrad, maximize, tensor lr) is supported"
    return None


class _Objective(nn.Module):
    """The model's output and its units' penalties in one call, for ``functional_call``."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.regularized = having(model, "penalty")  # a plain list: not registered again

    def forward(self, x: Tensor) -> tuple[Tensor, list[Tensor]]:
        return self.model(x, layout="compiled"), [m.penalty() for m in self.regularized]


class CompiledStep:
    """``step(x, y, alive, step) -> loss [M]``: one training step of every member, in place."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, compile: bool = True,
                 wrapper: str = "python"):
        why = unsupported(model, optimizer)
        if why:
            raise ValueError(why)
        self.wrapper = resolve_wrapper(wrapper, model)
        self.objective = _Objective(model)
        self.regularized = self.objective.regularized
        named = list(self.objective.named_parameters())
        self.names = [k for k, _ in named]
        self.params = [p.detach() for _, p in named]  # the parameters' own storage
        group = optimizer.param_groups[0]
        self.lr, (self.beta1, self.beta2), self.eps = float(group["lr"]), group["betas"], group["eps"]
        self.owned = [p for _, p in named]  # the optimiser's keys
        self.optimizer = optimizer
        self.requested = self.mode = "compiled" if compile else "functional"
        self.compile_s = 0.0
        if compile:
            torch._dynamo.reset()  # one step is compiled per model: drop earlier models' graphs and guards
            _checked.clear()
        options = {"cpp_wrapper": True} if self.wrapper == "cpp" else None
        self._fn = torch.compile(self._step, fullgraph=True, dynamic=False, options=options) if compile else self._step
        self._first = True

    def _loss(self, params: list[Tensor], x: Tensor, y: Tensor, alive: Tensor, scales: Tensor):
        out, penalties = functional_call(self.objective, dict(zip(self.names, params, strict=True)), (x,))
        loss_m = (out - y).square().flatten(1).mean(1)
        live = alive & torch.isfinite(loss_m.detach())
        objective = loss_m
        for k, (m, p) in enumerate(zip(self.regularized, penalties, strict=True)):
            if has_hook(m, "penalty_active"):  # the members a loss-dependent regulariser acts on (iNALU)
                p = torch.where(m.penalty_active(loss_m.detach()), p, 0.0)
            objective = objective + scales[k] * p
        return torch.where(live, objective, 0.0).sum(), (loss_m.detach(), live)

    def corrections(self, t: Tensor) -> Tensor:
        """``[2]``, float64: Adam's bias corrections ``1 - beta1^t'`` and ``sqrt(1 - beta2^t')`` of the
        step about to be taken (``t' = t + 1``), in double precision as ``torch.optim.Adam``'s. Taken
        eagerly, before the compiled call: inside it, inductor recomputed both powers in every
        vector iteration of every update loop (a third of a static NALU group's step here)."""
        t64 = t.double() + 1
        return torch.stack([1 - self.beta1**t64, (1 - self.beta2**t64).sqrt()])

    def _step(self, params, exp_avgs, exp_avg_sqs, t, corrections, x, y, alive, scales):
        grads, (loss_m, live) = grad(self._loss, has_aux=True)(params, x, y, alive, scales)
        t.add_(1.0)
        for p, g, m, v in zip(params, grads, exp_avgs, exp_avg_sqs, strict=True):
            bc1, bc2_sqrt = corrections[0].to(p.dtype), corrections[1].to(p.dtype)
            keep = live.view(-1, *([1] * (p.dim() - 1)))
            g = torch.where(keep, g, 0.0)
            m_new = torch.where(keep, m.lerp(g, 1 - self.beta1), 0.0)
            v_new = torch.where(keep, v * self.beta2 + (1 - self.beta2) * g * g, 0.0)
            update = (self.lr / bc1) * m_new / (v_new.sqrt() / bc2_sqrt + self.eps)
            m.copy_(m_new)
            v.copy_(v_new)
            p.copy_(torch.where(keep, p - update, p))
        return loss_m

    def __call__(self, x: Tensor, y: Tensor, alive: Tensor, step: int) -> Tensor:
        scales = torch.tensor([m.penalty_scale(step) for m in self.regularized], dtype=x.dtype, device=x.device)
        # the optimiser's state as of now (a checkpoint may have replaced it since the last step)
        state = [self.optimizer.state[p] for p in self.owned]
        for st, p in zip(state, self.owned, strict=True):
            if not st:  # as torch.optim.Adam (fused) initialises its state at its first step
                st["step"] = torch.tensor(0.0, dtype=torch.float32, device=p.device)
                st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        # every parameter shares one step count (torch.optim.Adam keeps equal copies per parameter)
        t = state[0]["step"]
        args = (self.params, [s["exp_avg"] for s in state], [s["exp_avg_sq"] for s in state], t,
                self.corrections(t), x, y, alive, scales)
        loss = self._run(args)
        for st in state[1:]:
            st["step"].copy_(t)
        return loss

    def _run(self, args: tuple) -> Tensor:
        if self._first:  # compiles; where it cannot (no C++ compiler, say), the same step uncompiled
            self._first, start = False, time.perf_counter()
            try:
                loss = self._fn(*args)
            except Exception as e:  # noqa: BLE001 (torch raises many kinds)
                print(f"warning: the training step did not compile ({type(e).__name__}); it runs uncompiled",
                      file=sys.stderr)
                self._fn, self.mode = self._step, "functional"
                loss = self._fn(*args)
            self.compile_s = time.perf_counter() - start
        elif self.mode == "compiled" and id(self) in _checked:  # this very graph, these shapes: no guards
            with torch.compiler.set_stance(skip_guard_eval_unsafe=True):
                loss = self._fn(*args)
        else:
            loss = self._fn(*args)
        if self.mode == "compiled":
            _checked.add(id(self))
        return loss


MODES = ("compiled", "functional", "autograd")
WRAPPERS = ("auto", "python", "cpp")


def resolve_wrapper(wrapper: str, model: nn.Module) -> str:
    """``wrapper`` (``compile_wrapper`` in the config), "auto" made "cpp" for a recurrent model."""
    check_choice("compile_wrapper", wrapper, WRAPPERS)
    if wrapper == "auto":
        return "cpp" if getattr(model, "recurrent", False) else "python"
    return wrapper


def training_step(mode: str, model: nn.Module, optimizer: torch.optim.Optimizer,
                  wrapper: str = "python") -> CompiledStep | None:
    """The step ``fit`` takes (``train_step`` in the config): ``compiled`` (the default) and
    ``functional`` (the same function, not compiled: a reference for tests) where the model and
    optimiser are supported, else None: the autograd path, which ``autograd`` always takes."""
    check_choice("train_step", mode, MODES)
    if mode == "autograd" or unsupported(model, optimizer):
        return None
    kept = getattr(model, "_nalu_step", None)  # a later fit of the same model and optimiser: no recompile
    if (kept is not None and kept.optimizer is optimizer and kept.requested == mode
            and kept.wrapper == resolve_wrapper(wrapper, model)):
        return kept
    step = CompiledStep(model, optimizer, compile=mode == "compiled", wrapper=wrapper)
    model._nalu_step = step
    return step
