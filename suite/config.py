"""A cell's config: where the configs are, the resolvers they use, the task they name, and the
runner's refusals of values no run can use (each one line, before any file is written)."""

from __future__ import annotations

from collections.abc import Sequence

import importlib
import math
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from nalu import device as devices
from nalu.errors import ConfigError, check_choice
from nalu.train import LR_SCHEDULES
from suite.provenance import ROOT
from tasks import Task

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
PENDING = ".hydra.next"  # the job's config as Hydra saves it, until the runner knows the cell runs


def cell_path(task_cell: str, model: str, uses_model: bool = True) -> str:
    """``<task cell>/<model>``; tasks that build their own model (``uses_model: false``) omit it."""
    return f"{task_cell}/{model}" if uses_model else task_cell


def steps_fraction(fraction: float, *, _root_: DictConfig) -> int:
    """``${steps_fraction:0.2}``: that share of the task's ``steps`` (0 for tasks without one), so
    that a regulariser's ramp scales with the training budget."""
    return int(fraction * (_root_.task.get("steps") or 0))


def hydra_subdir(dry_run: bool) -> str | None:
    """Where Hydra saves a job's config: beside ``.hydra/``, which the runner replaces with it for a
    cell it makes and keeps for a cell it skips (``suite.runner.settle_config``); nowhere for a
    dry run, which must leave cells untouched."""
    return None if dry_run else PENDING


# used by hydra.run.dir and hydra.output_subdir in configs/config.yaml, and by configs/model/nmu.yaml
OmegaConf.register_new_resolver("cell_path", cell_path, replace=True)
OmegaConf.register_new_resolver("steps_fraction", steps_fraction, replace=True)
OmegaConf.register_new_resolver("hydra_subdir", hydra_subdir, replace=True)


def cell_name(cfg: DictConfig) -> str:
    return cell_path(cfg.task.cell_name, cfg.model.name, cfg.task.get("uses_model", True))


def task_of(cfg: DictConfig) -> Task:
    """The ``tasks.Task`` that the task's config names (``task.entry``, ``module:attribute``)."""
    entry = cfg.task.get("entry")
    module, _, attribute = str(entry).partition(":")
    try:
        task = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError, ValueError):
        task = None
    if not isinstance(task, Task):
        raise ConfigError(f"task {cfg.task.name}: entry '{entry}' names no tasks.Task (module:attribute)")
    return task


def resolve_seeds(seeds) -> list[int]:
    """``seeds: 10`` means seeds 0..9; a list means exactly those seeds (non-negative integers)."""
    def whole(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)

    if whole(seeds):
        if seeds < 1:
            raise ConfigError(f"seeds must be >= 1, got {seeds}")
        return list(range(seeds))
    if isinstance(seeds, str) or not isinstance(seeds, Sequence) or not all(whole(s) and s >= 0 for s in seeds):
        raise ConfigError(f"seeds must be a count (a positive integer) or a list of non-negative integers, got {seeds!r}")
    seeds = list(seeds)
    if not seeds or len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds must be a non-empty list of distinct integers, got {seeds}")
    return seeds


def check_budget(cfg: DictConfig) -> None:
    """``budget`` names one of the task's ``budgets`` (tasks without any have only ``default``)."""
    budget = cfg.get("budget", "default")
    valid = list(cfg.task.get("budgets") or {"default": None})
    if budget not in valid:
        raise ConfigError(f"task {cfg.task.name} has no budget '{budget}'; valid: {', '.join(valid)}")


def non_finite(node, path: str = "") -> tuple[str, float] | None:
    """The first number in a config that is NaN or infinite, with its key (``optimizer.lr``)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if (found := non_finite(v, f"{path}.{k}" if path else str(k))) is not None:
                return found
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if (found := non_finite(v, f"{path}[{i}]")) is not None:
                return found
    elif isinstance(node, float) and not math.isfinite(node):
        return path, node
    return None


def check_values(cfg: DictConfig) -> None:
    """Refuse values no run can use, before any work: a number that is not finite anywhere,
    budgets, sizes and group caps below 1, a learning rate that is not positive."""
    found = non_finite(OmegaConf.to_container(cfg, resolve=True))
    if found is not None:
        raise ConfigError(f"{found[0]} must be a finite number, got {found[1]}")
    for key in ("steps", "eval_every", "batch_size", "eval_late_from", "eval_late_every"):
        value = cfg.task.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            raise ConfigError(f"task.{key} must be a positive integer, got {value!r}")
    cap = cfg.get("group_cells")
    if cap is not None and not (isinstance(cap, int) and not isinstance(cap, bool) and cap >= 1):
        raise ConfigError(f"group_cells must be a positive integer (cells per fused group) or null, got {cap!r}")
    reuse = cfg.get("reuse")
    if reuse is not None and not (isinstance(reuse, str) and (ROOT / reuse).is_dir()):
        raise ConfigError(f"reuse must be a folder of evidence files (results/evidence) or null, got {reuse!r}")
    check_choice("lr_schedule", cfg.get("lr_schedule", "constant"), LR_SCHEDULES)
    lr = cfg.get("optimizer", {}).get("lr")
    if lr is not None and not (isinstance(lr, int | float) and lr > 0):
        raise ConfigError(f"optimizer.lr must be a positive number, got {lr!r}")


def check_config(cfg: DictConfig) -> None:
    """The runner's own refusals, in one line, before any work; resolves ``cfg.seeds`` to a list."""
    with open_dict(cfg):
        cfg.seeds = resolve_seeds(OmegaConf.to_object(cfg.seeds) if OmegaConf.is_list(cfg.seeds)
                                  else cfg.seeds)
    devices.resolve(cfg.device)  # a bad or absent device
    check_budget(cfg)
    check_values(cfg)


def validate(cfgs: list[DictConfig]) -> None:
    """Ask every cell of a sweep, before any runs, what the runner and its task can refuse from
    the config alone; one ConfigError naming every refused cell and why (a sweep with one bad
    value no longer stops after running the cells before it, nor skips the ones after)."""
    refused: dict[str, list[str]] = {}  # each reason once, with the cells it refuses
    for cfg in cfgs:
        try:
            cfg = cfg.copy()
            check_config(cfg)
            task = task_of(cfg)
            if task.check:
                task.check(cfg)
        except ConfigError as e:
            refused.setdefault(str(e), []).append(cell_name(cfg))
    if refused:
        n = sum(map(len, refused.values()))
        reasons = [f"{reason} ({'every cell' if len(names) == len(cfgs) else cells_text(names)})"
                   for reason, names in refused.items()]
        raise ConfigError(f"{n} of {len(cfgs)} cells refused, none run: " + "; ".join(reasons))


def cells_text(names: list[str]) -> str:
    """``static/mul/nac, translation/lstm_sum x4 and 3 more``: cells named once each, with a count."""
    counts = {name: names.count(name) for name in names}
    shown = [f"{name} x{k}" if k > 1 else name for name, k in counts.items()]
    return ", ".join(shown) if len(shown) <= 3 else f"{', '.join(shown[:2])} and {len(shown) - 2} more"
