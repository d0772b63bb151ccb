"""The one runner: ``python -m nalu.run task=<task> model=<model> [overrides]`` (or ``nalu-run``).

One Hydra job trains one *cell* (a task, a model, and every other config value) for all of its
seeds at once, and writes ``<run dir>/metrics.json`` atomically. It knows nothing task-specific:
``tasks.<task.name>.run(cfg, log)`` does the work and returns a JSON-able dict.

A sweep (``-m``) writes each cell to ``multirun/<name>/<overrides>/``; rerunning the same sweep
skips every cell whose ``metrics.json`` is complete and was made by the same config and the same
code (``nalu.provenance``), and redoes cells that are missing, half-written or out of date.
``dry_run=true`` only reports, per cell, whether it is up to date (one ``status:`` line each).
A task may define ``check(cfg)``: refusals the runner asks before the cell's files are touched.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict

from nalu import device as devices
from nalu.errors import ConfigError, exit_with
from nalu.io import read_json, write_json_atomic
from nalu.loggers import RunLogger
from nalu.provenance import changed, imported, snapshot
from nalu.train import Checkpoint

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
# config keys that do not change results: a cell made with other values of these is still valid
NOT_HASHED = ("logger", "progress", "force", "threads", "name", "data_dir", "flush_denormal", "dry_run",
              "checkpoint_every_s")


def config_hash(cfg: DictConfig) -> str:
    data = OmegaConf.to_container(cfg, resolve=True)
    for key in NOT_HASHED:
        data.pop(key, None)
    return hashlib.sha256(OmegaConf.to_yaml(OmegaConf.create(data)).encode()).hexdigest()[:16]


def out_of_date(out_dir: Path, cfg_hash: str) -> str | None:
    """Why the cell in ``out_dir`` must be (re)made, or None if it is complete and up to date."""
    m = read_json(out_dir / "metrics.json")
    if not (m and m.get("complete")):
        return "not run yet" if m is None and not (out_dir / "metrics.json").exists() else "half-written"
    if m.get("config_hash") != cfg_hash:
        return "its config changed"
    if "code" not in m:
        return "made before cells recorded their code"
    edited = changed(m["code"])
    return f"its code changed ({', '.join(edited)})" if edited else None


def resolve_seeds(seeds) -> list[int]:
    """``seeds: 10`` means seeds 0..9; a list means exactly those seeds."""
    if isinstance(seeds, int):
        if seeds < 1:
            raise ConfigError(f"seeds must be >= 1, got {seeds}")
        return list(range(seeds))
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds must be a non-empty list of distinct integers, got {seeds}")
    return seeds


def check_budget(cfg: DictConfig) -> None:
    """``budget`` names one of the task's ``budgets`` (tasks without any have only ``default``)."""
    budget = cfg.get("budget", "default")
    valid = list(cfg.task.get("budgets") or {"default": None})
    if budget not in valid:
        raise ConfigError(f"task {cfg.task.name} has no budget '{budget}'; valid: {', '.join(valid)}")


def cell_path(task_cell: str, model: str, uses_model: bool = True) -> str:
    """``<task cell>/<model>``; tasks that build their own model (``uses_model: false``) omit it."""
    return f"{task_cell}/{model}" if uses_model else task_cell


def steps_fraction(fraction: float, *, _root_: DictConfig) -> int:
    """``${steps_fraction:0.2}``: that share of the task's ``steps`` (0 for tasks without one), so
    that a regulariser's ramp scales with the training budget."""
    return int(fraction * (_root_.task.get("steps") or 0))


def hydra_subdir(dry_run: bool) -> str | None:
    """Where Hydra saves a job's config: nowhere for a dry run, which must leave cells untouched."""
    return None if dry_run else ".hydra"


# used by hydra.run.dir and hydra.output_subdir in configs/config.yaml, and by configs/model/nmu.yaml
OmegaConf.register_new_resolver("cell_path", cell_path, replace=True)
OmegaConf.register_new_resolver("steps_fraction", steps_fraction, replace=True)
OmegaConf.register_new_resolver("hydra_subdir", hydra_subdir, replace=True)


def cell_name(cfg: DictConfig) -> str:
    return cell_path(cfg.task.cell_name, cfg.model.name, cfg.task.get("uses_model", True))


def full_float32() -> None:
    """No TensorFloat-32 on CUDA: matmuls and convolutions in full float32, as on the CPU (torch
    lets cuDNN convolutions, the MNIST encoder's, round to TF32's 10-bit mantissa by default)."""
    # imported here: run as ``python -m nalu.run``, this module is __main__, whose functions the
    # submitit launcher pickles by value, and a global reference to torch's backend modules fails
    from torch.backends import cuda, cudnn

    if hasattr(cuda.matmul, "fp32_precision"):  # the API of torch >= 2.9; the two must not be mixed
        cuda.matmul.fp32_precision = cudnn.conv.fp32_precision = cudnn.rnn.fp32_precision = "ieee"
    else:
        cuda.matmul.allow_tf32 = cudnn.allow_tf32 = False


@dataclass
class Cell:
    """A cell the runner is to make: its config, folder, config digest and name."""

    cfg: DictConfig
    out_dir: Path
    digest: str
    name: str


def prepare(cfg: DictConfig, out_dir: Path) -> Cell | None:
    """Resolve and check ``cfg``; None if the cell is up to date (or this is a dry run)."""
    with open_dict(cfg):
        cfg.seeds = resolve_seeds(OmegaConf.to_object(cfg.seeds) if OmegaConf.is_list(cfg.seeds)
                                  else cfg.seeds)  # fmt: skip
    devices.resolve(cfg.device)  # a bad or absent device fails here, in one line, before any work
    check_budget(cfg)
    digest = config_hash(cfg)
    name = cell_name(cfg)
    reason = "force=true" if cfg.force else out_of_date(out_dir, digest)
    if cfg.get("dry_run"):
        print(f"status: {'up to date' if reason is None else 'to run'}: {name}"
              f"{'' if reason is None else f' ({reason})'}", file=sys.stderr)  # fmt: skip
        return None
    if reason is None:
        print(f"skip {name}: complete in {out_dir}", file=sys.stderr)
        return None
    return Cell(cfg, out_dir, digest, name)


def task_module(cfg: DictConfig):
    return importlib.import_module(f"tasks.{cfg.task.name}")


def group_key(cfg: DictConfig) -> str:
    """Cells with the same key may train as one batched model (``hydra/launcher=fused``): the
    same config but for the values their task's ``run_group`` lets differ (its ``FUSES``: e.g.
    the op and the seeds of an arithmetic cell). A task without ``run_group`` never fuses."""
    task = task_module(cfg)
    data = OmegaConf.to_container(cfg, resolve=True)
    data.pop("hydra", None)
    if not hasattr(task, "run_group"):
        return "alone:" + config_hash(OmegaConf.create(data))
    for key in task.FUSES:
        *path, last = key.split(".")
        node = data
        for part in path:
            node = node.get(part, {})
        node.pop(last, None)
    return config_hash(OmegaConf.create(data))


class GroupLog:
    """The loggers of a group's cells behind one ``metrics``: member slices go to their cell."""

    def __init__(self, logs: list[RunLogger]):
        self.logs = logs
        self.name = f"{logs[0].name} +{len(logs) - 1} cells"

    def metrics(self, step: int, metrics: dict) -> None:
        start = 0
        for log in self.logs:
            stop = start + len(log.seeds)
            log.metrics(step, {k: v[start:stop] for k, v in metrics.items()})
            start = stop

    def rewind(self, step: int) -> None:
        for log in self.logs:
            log.rewind(step)


def run_cells(pairs: list[tuple[DictConfig, Path]]) -> list[dict | None]:
    """Make every cell of ``pairs`` (config, folder) that is not up to date; together, as one
    batched model, where there are several (their task's ``run_group``; the fused launcher
    hands only cells of one ``group_key`` here). Returns each cell's metrics, None if skipped."""
    cells = [prepare(cfg, out_dir) for cfg, out_dir in pairs]
    todo = [c for c in cells if c is not None]
    if not todo:
        return [None] * len(pairs)
    cfg = todo[0].cfg
    code = snapshot()  # before the task's modules load: the code these cells run
    torch.set_num_threads(cfg.threads)
    torch.set_flush_denormal(bool(cfg.get("flush_denormal", True)))
    torch.manual_seed(0)  # nothing should draw from the global generator; pin it anyway
    if devices.resolve(cfg.device).type == "cuda":
        full_float32()
    task = task_module(cfg)
    for c in todo:
        if hasattr(task, "check"):
            task.check(c.cfg)  # refusals known before any work, before the logger touches the cell's files
    if len(todo) > 1 and not hasattr(task, "run_group"):
        raise ConfigError(f"task {cfg.task.name} trains one cell at a time; {len(todo)} were given together")

    key = hashlib.sha256(repr([c.digest for c in todo]).encode()).hexdigest()[:16]
    checkpoint = Checkpoint(todo[0].out_dir / "checkpoint.pt", float(cfg.get("checkpoint_every_s", 600)), key,
                            code=lambda: imported(code), changed=changed)  # fmt: skip
    saved, unusable = checkpoint.read()
    if unusable:
        print(f"{todo[0].name}: not resuming from {checkpoint.path}: {unusable}", file=sys.stderr)
    resume_step = saved["step"] if saved else 0
    logs = [open_logger(c, resume=resume_step > 0) for c in todo]
    log = logs[0] if len(logs) == 1 else GroupLog(logs)
    log.checkpoint, checkpoint.on_resume = checkpoint, log.rewind
    if resume_step:
        print(f"{log.name}: resumed from step {resume_step:,} ({checkpoint.path})", file=sys.stderr)
    start = time.perf_counter()
    try:
        results = task.run_group([c.cfg for c in todo], log) if len(todo) > 1 else [task.run(cfg, log)]
    finally:
        for lg in logs:
            lg.close()
    wall = time.perf_counter() - start
    made = {id(c): finish(c, r, code, wall, [o.name for o in todo if o is not c])
            for c, r in zip(todo, results, strict=True)}  # fmt: skip
    checkpoint.remove()
    return [made.get(id(c)) if c is not None else None for c in cells]


def open_logger(cell: Cell, resume: bool) -> RunLogger:
    cfg = cell.cfg
    wandb_cfg = OmegaConf.to_container(cfg.logger) if cfg.logger.name == "wandb" else None
    return RunLogger(cell.out_dir, cell.name, list(cfg.seeds), group=cfg.name, wandb_cfg=wandb_cfg,
                     config=OmegaConf.to_container(cfg, resolve=True), resume=resume)  # fmt: skip


def finish(cell: Cell, result: dict, code: dict, wall_s: float, fused_with: list[str]) -> dict:
    """Write the cell's ``metrics.json`` atomically and say where it is."""
    cfg = cell.cfg
    metrics = {
        "complete": True,
        "config_hash": cell.digest,
        "cell": cell.name,
        "task": cfg.task.name,
        "model": cfg.model.name,
        "name": cfg.name,
        "seeds": list(cfg.seeds),
        "wall_s": round(wall_s, 2),
        "code": imported(code),
        "fused_with": fused_with,  # the cells it trained beside, as one batched model
        **result,
        "config": OmegaConf.to_container(cfg, resolve=True),
    }
    write_json_atomic(cell.out_dir / "metrics.json", metrics)
    n_div = sum(m.get("diverged", False) for m in metrics.get("members", []))
    print(f"done {cell.name}: {len(cfg.seeds)} seeds, {n_div} diverged, {metrics['wall_s']:.0f} s "
          f"-> {cell.out_dir / 'metrics.json'}", file=sys.stderr)  # fmt: skip
    return metrics


def run_job(cfg: DictConfig, out_dir: Path) -> dict | None:
    """Run one cell into ``out_dir``; return its metrics, or None if it was already complete."""
    return run_cells([(cfg, out_dir)])[0]


def run_group_main(pairs: list[tuple[DictConfig, Path]]) -> None:
    """``run_cells`` with the runner's one-line errors (the fused launcher's task function)."""
    try:
        run_cells(pairs)
    except ConfigError as e:
        exit_with(e)


@hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    try:
        run_job(cfg, Path(HydraConfig.get().runtime.output_dir))
    except ConfigError as e:
        exit_with(e)


def check_group_choices(argv: list[str], config_dir: Path = CONFIG_DIR) -> None:
    """Refuse ``group=name`` overrides that name no config file, in one line listing the valid ones.

    (Hydra's own message for this spans several lines and hides the list in the middle.)
    """
    groups = {p.name for p in config_dir.iterdir() if p.is_dir() and p.name != "hydra"}
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        key = key.lstrip("+~")
        if key not in groups or value.startswith(("range(", "choice(", "glob(")):
            continue
        valid = sorted(p.stem for p in (config_dir / key).glob("*.yaml"))
        for choice in value.split(","):
            if choice and choice not in valid:
                raise ConfigError(f"unknown {key} '{choice}'; valid: {', '.join(valid)}")


def main() -> None:
    try:
        check_group_choices(sys.argv[1:])
    except ConfigError as e:
        exit_with(e)
    _hydra_main()


if __name__ == "__main__":
    main()
