"""One cell of a sweep: build a model for all its seeds, train it, and summarise each seed."""

from __future__ import annotations

from collections.abc import Callable

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn

from nalu import device as devices
from nalu.ensemble import init_members
from nalu.errors import ConfigError
from nalu.optim import member_optimizer
from nalu.train import EvalSchedule, FitResult, Problem, fit
from tasks.metrics import Member


def model_factory(model_cfg: DictConfig) -> Callable[..., nn.Module]:
    """The partial a model config describes (its ``name`` is a label, not an argument). A model
    config with an ``op`` key (``model=unit_told``) is told the task's function, so a task without
    one is refused."""
    cfg = OmegaConf.to_container(model_cfg, resolve=True)
    name = cfg.pop("name", None)
    if "op" in cfg and cfg["op"] is None:
        raise ConfigError(f"model={name} tells the unit the task's function (model.op), and this task has none: "
                          "static_arithmetic and recurrent_arithmetic have one")
    return instantiate(cfg)


def build_model(
    factory: Callable[..., nn.Module], in_features: int, out_features: int, members: int,
    recurrent: bool = False,
) -> nn.Module:
    """Call a model config's partial with the sizes the task supplies."""
    try:
        return factory(in_features=in_features, out_features=out_features, members=members,
                       recurrent=recurrent)
    except TypeError as e:
        raise ConfigError(f"model config does not fit this task: {e}") from None


def summarise(result: FitResult, seeds: list[int]) -> list[Member]:
    """One JSON-able record per seed (``tasks.metrics.Member``)."""

    def at(metrics: dict, i: int) -> dict:
        return {k: float(v[i]) for k, v in metrics.items()}

    out = []
    for i, seed in enumerate(seeds):
        diverged = int(result.diverged_step[i])
        best = int(result.best_step[i])
        out.append({
            "seed": int(seed),
            "diverged": diverged >= 0,
            "diverged_step": diverged if diverged >= 0 else None,
            "best_step": best if best >= 0 else None,
            "init": at(result.init, i),
            "final": at(result.final, i),
            "best": at(result.best, i),
        })
    return out


def eval_schedule(task: DictConfig) -> EvalSchedule:
    """``task.eval_every``, thinned to ``task.eval_late_every`` after ``task.eval_late_from``
    where a task sets them (the arithmetic tasks' paper budget does)."""
    return EvalSchedule(task.eval_every, task.get("eval_late_from"), task.get("eval_late_every"))


def train_cell(
    cfg: DictConfig, problem: Problem, in_features: int, out_features: int, recurrent: bool,
    log, select: str | None, factory: Callable[..., nn.Module] | None = None,
    seeds: list[int] | None = None, lrs: list[float] | None = None,
) -> tuple[dict, FitResult]:
    """Build ``cfg.model`` (or ``factory``, a task's own composite) for every seed in ``seeds``
    (default ``cfg.seeds``; a fused group passes every member's), train it on ``problem`` on
    ``cfg.device`` (at ``lrs``, one rate per member, where a fused group's cells differ in
    ``optimizer.lr``: ``nalu.optim``), and summarise each seed. ``log.checkpoint``, where the runner set one, is
    where the training saves its state and resumes from."""
    seeds = list(cfg.seeds) if seeds is None else seeds
    if lrs is not None and len(set(lrs)) > 1 and cfg.get("lr_schedule", "constant") != "constant":
        raise ConfigError(f"lr_schedule={cfg.lr_schedule} rescales one rate, and these cells train at "
                          f"{len(set(lrs))} (optimizer.lr, fused): run them apart (group_cells=1)")
    device = devices.resolve(cfg.device)
    factory = factory or model_factory(cfg.model)
    model = build_model(factory, in_features, out_features, len(seeds), recurrent)
    init_members(model, seeds)  # on the CPU, from each seed's generator, then moved
    model.to(device)
    problem.to(device)
    optimizer = member_optimizer(instantiate(cfg.optimizer), model.parameters(), lrs)
    result = fit(
        model, problem, optimizer, steps=cfg.task.steps, eval_every=eval_schedule(cfg.task),
        select=select, log=log.metrics, progress=cfg.progress, desc=log.name,
        checkpoint=getattr(log, "checkpoint", None), train_step=cfg.get("train_step", "autograd"),
        compile_wrapper=cfg.get("compile_wrapper", "python"), compile_forward=cfg.get("compile_forward", False),
        lr_schedule=cfg.get("lr_schedule", "constant"),
    )
    summary = {
        "steps": result.steps,
        "train_wall_s": round(result.wall_s, 2),
        "resumed_from": result.resumed_from,
        "train_step": result.train_step,  # compiled, functional or autograd (nalu.fast)
        "compile_s": round(result.compile_s, 2),
        "parameters_per_member": sum(p[0].numel() for p in model.parameters()),
        "members": summarise(result, seeds),
    }
    return summary, result
