"""The one runner: ``python -m suite.run task=<task> model=<model> [overrides]`` (or ``nalu-run``).

One Hydra job trains one *cell* (a task, a model, and every other config value) for all of its
seeds at once, and writes ``<run dir>/metrics.json`` atomically. It knows nothing task-specific:
the ``tasks.Task`` its task config names (``task.entry``) does the work and returns a JSON-able
dict.

A sweep (``-m``) writes each cell to ``multirun/<name>/<overrides>/``; rerunning the same sweep
skips every cell whose ``metrics.json`` is complete and was made by the same config and the same
code (``suite.provenance``), and redoes cells that are missing, half-written or out of date.
``dry_run=true`` only reports, per cell, whether it is up to date (one ``status:`` line each).
A task's ``check(cfg)``, where it has one, refuses what it can from the config alone, before any
cell of the sweep runs or its files are touched.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import math
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict

from nalu import device as devices
from nalu.errors import ConfigError, exit_with
from nalu.train import Checkpoint
from suite.io import read_json, write_json_atomic
from suite.loggers import RunLogger
from suite.machine import environment
from suite.provenance import changed, imported, snapshot
from tasks import Task

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
# config keys that do not change results: a cell made with other values of these is still valid
NOT_HASHED = ("logger", "progress", "force", "threads", "name", "data_dir", "flush_denormal", "dry_run",
              "checkpoint_every_s")


def config_hash(cfg: DictConfig) -> str:
    data = OmegaConf.to_container(cfg, resolve=True)
    for key in NOT_HASHED:
        data.pop(key, None)
    if isinstance(data.get("task"), dict):
        data["task"].pop("entry", None)  # names the code that runs it, which is digested on its own
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


def check_config(cfg: DictConfig) -> None:
    """The runner's own refusals, in one line, before any work; resolves ``cfg.seeds`` to a list."""
    with open_dict(cfg):
        cfg.seeds = resolve_seeds(OmegaConf.to_object(cfg.seeds) if OmegaConf.is_list(cfg.seeds)
                                  else cfg.seeds)
    devices.resolve(cfg.device)  # a bad or absent device
    check_budget(cfg)
    check_values(cfg)


def check_values(cfg: DictConfig) -> None:
    """Refuse values no run can use, before any work: budgets and sizes below 1, a learning rate
    that is not positive."""
    for key in ("steps", "eval_every", "batch_size", "eval_late_from", "eval_late_every"):
        value = cfg.task.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            raise ConfigError(f"task.{key} must be a positive integer, got {value!r}")
    lr = cfg.get("optimizer", {}).get("lr")
    if lr is not None and not (isinstance(lr, int | float) and lr > 0):
        raise ConfigError(f"optimizer.lr must be a positive number, got {lr!r}")


def cell_path(task_cell: str, model: str, uses_model: bool = True) -> str:
    """``<task cell>/<model>``; tasks that build their own model (``uses_model: false``) omit it."""
    return f"{task_cell}/{model}" if uses_model else task_cell


def steps_fraction(fraction: float, *, _root_: DictConfig) -> int:
    """``${steps_fraction:0.2}``: that share of the task's ``steps`` (0 for tasks without one), so
    that a regulariser's ramp scales with the training budget."""
    return int(fraction * (_root_.task.get("steps") or 0))


PENDING = ".hydra.next"  # the job's config as Hydra saves it, until the runner knows the cell runs


def hydra_subdir(dry_run: bool) -> str | None:
    """Where Hydra saves a job's config: beside ``.hydra/``, which the runner replaces with it for a
    cell it makes and keeps for a cell it skips (``settle_config``); nowhere for a dry run, which
    must leave cells untouched."""
    return None if dry_run else PENDING


def settle_config(out_dir: Path, runs: bool) -> None:
    """Hydra writes a job's config before the runner knows whether the cell is up to date: a cell
    that runs gets the config of the command running it in ``.hydra/``; a skipped cell keeps the
    one of the command that made it (a rerun with other unhashed settings, such as
    ``logger=wandb``, does not rewrite it)."""
    pending = out_dir / PENDING
    if not pending.is_dir():
        return
    if runs:
        shutil.rmtree(out_dir / ".hydra", ignore_errors=True)
        pending.rename(out_dir / ".hydra")
    else:
        shutil.rmtree(pending, ignore_errors=True)


# used by hydra.run.dir and hydra.output_subdir in configs/config.yaml, and by configs/model/nmu.yaml
OmegaConf.register_new_resolver("cell_path", cell_path, replace=True)
OmegaConf.register_new_resolver("steps_fraction", steps_fraction, replace=True)
OmegaConf.register_new_resolver("hydra_subdir", hydra_subdir, replace=True)


def cell_name(cfg: DictConfig) -> str:
    return cell_path(cfg.task.cell_name, cfg.model.name, cfg.task.get("uses_model", True))


def full_float32() -> None:
    """No TensorFloat-32 on CUDA: matmuls and convolutions in full float32, as on the CPU (torch
    lets cuDNN convolutions, the MNIST encoder's, round to TF32's 10-bit mantissa by default)."""
    # imported here: run as ``python -m suite.run``, this module is __main__, whose functions the
    # submitit launcher pickles by value, and a global reference to torch's backend modules fails
    from torch.backends import cuda, cudnn

    if hasattr(cuda.matmul, "fp32_precision"):  # the API of torch >= 2.9; the two must not be mixed
        cuda.matmul.fp32_precision = cudnn.conv.fp32_precision = cudnn.rnn.fp32_precision = "ieee"
    else:
        cuda.matmul.allow_tf32 = cudnn.allow_tf32 = False


def label(name: str, overrides: str) -> str:
    """The cell's name for messages: ``name`` plus the sweep's overrides it does not already show
    (Table 5's MLP cells are all ``identity/mlp``, told apart by ``model.activation_name``)."""
    parts = set(name.split("/"))
    extra = [o for o in overrides.split(",") if o and o.split("=", 1)[-1] not in parts]
    return f"{name} [{','.join(extra)}]" if extra else name


def job_overrides() -> str:
    """The running sweep job's values of the keys its sweep varies (``model.activation_name=Tanh``);
    '' for a single run. The sweep's own overrides are in its ``multirun.yaml``, which Hydra writes
    before any job: a key given several values there, or in ``hydra.sweeper.params``, varies."""
    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return ""
    hc = HydraConfig.get()
    sweep = Path(hc.sweep.dir) / "multirun.yaml"
    stamp = sweep.stat().st_mtime_ns if sweep.exists() else None
    swept = set(hc.sweeper.get("params") or {}) | swept_on_command_line(sweep, stamp)
    return ",".join(o for o in hc.overrides.task if o.partition("=")[0].lstrip("+~") in swept)


_SWEPT: dict[tuple[Path, int], frozenset[str]] = {}


def swept_on_command_line(sweep: Path, stamp: int | None) -> frozenset[str]:
    """The keys a sweep's ``multirun.yaml`` gives several values, read once per version of the file
    (``stamp``, its modification time; Hydra writes it before a sweep's first job). A plain dict
    caches it: launchers pickle this module's functions by value, which a ``functools`` cache
    does not survive."""
    if stamp is None:
        return frozenset()
    if (sweep, stamp) not in _SWEPT:
        keys = set()
        for arg in OmegaConf.load(sweep).hydra.overrides.task:
            key, _, value = arg.partition("=")
            if "," in value or value.startswith(("range(", "choice(", "glob(")):
                keys.add(key.lstrip("+~"))
        _SWEPT[sweep, stamp] = frozenset(keys)
    return _SWEPT[sweep, stamp]


class CellJob(NamedTuple):
    """A cell as a launcher hands it to the runner: its config, its folder, and the overrides of
    its sweep point (for messages)."""

    cfg: DictConfig
    out_dir: Path
    overrides: str = ""


@dataclass
class Cell:
    """A cell the runner is to make: its config, folder, config digest and name (with the sweep
    overrides that tell it apart, for messages)."""

    cfg: DictConfig
    out_dir: Path
    digest: str
    name: str


def prepare(cfg: DictConfig, out_dir: Path, overrides: str = "") -> Cell | None:
    """Resolve and check ``cfg``; None if the cell is up to date (or this is a dry run)."""
    check_config(cfg)
    digest = config_hash(cfg)
    name = label(cell_name(cfg), overrides)
    reason = "force=true" if cfg.force else out_of_date(out_dir, digest)
    if cfg.get("dry_run"):
        print(f"status: {'up to date' if reason is None else 'to run'}: {name}"
              f"{'' if reason is None else f' ({reason})'}", file=sys.stderr)
        return None
    if reason is None:
        again = "; its history is not logged to wandb again (force=true reruns it)" if cfg.logger.name == "wandb" else ""
        print(f"skip {name}: complete in {out_dir}{again}", file=sys.stderr)
        settle_config(out_dir, runs=False)
        return None
    return Cell(cfg, out_dir, digest, name)


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


def validate(cfgs: list[DictConfig]) -> None:
    """Ask every cell of a sweep, before any runs, what the runner and its task can refuse from
    the config alone; one ConfigError naming every refused cell and why (a sweep with one bad
    value no longer stops after running the cells before it, nor skips the ones after)."""
    refused = []
    for cfg in cfgs:
        try:
            cfg = cfg.copy()
            check_config(cfg)
            task = task_of(cfg)
            if task.check:
                task.check(cfg)
        except ConfigError as e:
            refused.append(f"{cell_name(cfg)}: {e}")
    if refused:
        raise ConfigError(f"{len(refused)} of {len(cfgs)} cells refused, none run: " + "; ".join(refused))


def group_key(cfg: DictConfig) -> str:
    """Cells with the same key may train as one batched model (``hydra/launcher=fused``): the
    same config but for the values their task's ``run_group`` lets differ (its ``fuses``: e.g.
    the op and the seeds of an arithmetic cell). A task without ``run_group`` never fuses."""
    task = task_of(cfg)
    data = OmegaConf.to_container(cfg, resolve=True)
    data.pop("hydra", None)
    if not task.run_group:
        return "alone:" + config_hash(OmegaConf.create(data))
    for key in task.fuses:
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


def run_cells(jobs: list[CellJob]) -> list[dict | None]:
    """Make every cell of ``jobs`` that is not up to date; together, as one batched model, where
    there are several (their task's ``run_group``; the fused launcher hands only cells of one
    ``group_key`` here). Returns each cell's metrics, None if skipped."""
    cells = [prepare(*job) for job in jobs]
    todo = [c for c in cells if c is not None]
    if not todo:
        return [None] * len(jobs)
    cfg = todo[0].cfg
    code = snapshot()  # before the task's modules load: the code these cells run
    torch.set_num_threads(cfg.threads)
    torch.set_flush_denormal(bool(cfg.get("flush_denormal", True)))
    torch.manual_seed(0)  # nothing should draw from the global generator; pin it anyway
    if devices.resolve(cfg.device).type == "cuda":
        full_float32()
    task = task_of(cfg)
    for c in todo:
        if task.check:
            task.check(c.cfg)  # refusals known before any work, before the logger touches the cell's files
    if len(todo) > 1 and not task.run_group:
        raise ConfigError(f"task {cfg.task.name} trains one cell at a time; {len(todo)} were given together")
    for c in todo:
        settle_config(c.out_dir, runs=True)

    key = hashlib.sha256(repr([c.digest for c in todo]).encode()).hexdigest()[:16]
    checkpoint = Checkpoint(todo[0].out_dir / "checkpoint.pt", float(cfg.get("checkpoint_every_s", 600)), key,
                            code=lambda: imported(code), changed=changed)
    saved, unusable = checkpoint.read()
    if unusable:
        print(f"{todo[0].name}: not resuming from {checkpoint.path}: {unusable}", file=sys.stderr)
    resume_step = saved["step"] if saved else 0
    sittings = record_sitting(todo[0].out_dir / "sittings.json", resume_step)
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
    made = {id(c): finish(c, {**r, "sittings": sittings}, code, wall, [o.name for o in todo if o is not c])
            for c, r in zip(todo, results, strict=True)}
    checkpoint.remove()
    (todo[0].out_dir / "sittings.json").unlink(missing_ok=True)
    return [made.get(id(c)) if c is not None else None for c in cells]


def record_sitting(path: Path, resume_step: int) -> list[dict]:
    """The sittings of a run that resumes from checkpoints, this one appended: the step each
    started from, when, and on which machine (a run resumed on another machine continues with
    another BLAS code path; its ``metrics.json`` says so). Kept beside the checkpoint."""
    earlier = (read_json(path) or {}).get("sittings", []) if resume_step else []
    if resume_step and not earlier:  # saved by a runner that did not record sittings
        earlier = [{"from_step": 0, "started": None, "environment": None}]
    sittings = [*earlier, {"from_step": resume_step, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                           "environment": environment()}]
    write_json_atomic(path, {"sittings": sittings})
    return sittings


def open_logger(cell: Cell, resume: bool) -> RunLogger:
    cfg = cell.cfg
    wandb_cfg = OmegaConf.to_container(cfg.logger) if cfg.logger.name == "wandb" else None
    return RunLogger(cell.out_dir, cell.name, list(cfg.seeds), group=cfg.name, wandb_cfg=wandb_cfg,
                     config=OmegaConf.to_container(cfg, resolve=True), resume=resume)


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
        "environment": environment(),  # the machine: results repeat bit for bit on one machine only
        **result,
        "config": OmegaConf.to_container(cfg, resolve=True),
    }
    write_json_atomic(cell.out_dir / "metrics.json", metrics)
    n_div = sum(m.get("diverged", False) for m in metrics.get("members", []))
    print(f"done {cell.name}: {len(cfg.seeds)} seeds, {n_div} diverged, {metrics['wall_s']:.0f} s"
          f"{headline(metrics.get('members', []))} -> {cell.out_dir / 'metrics.json'}", file=sys.stderr)
    return metrics


def headline(members: list[dict]) -> str:
    """``; solved 7/10; median over seeds: extrapolation 0.031, ...``: what a cell's seeds reached
    (the selected model's metrics, else the final ones), for the line that says a cell is done."""
    out = ""
    if members and "solved" in members[0]:
        out += f"; solved {sum(m['solved'] for m in members)}/{len(members)}"
    which = "best" if members and isinstance(members[0].get("best"), dict) else "final"
    if not (members and isinstance(members[0].get(which), dict)):
        return out
    medians = []
    for key, value in members[0][which].items():
        if isinstance(value, int | float):
            finite = sorted(v for m in members if math.isfinite(v := m[which].get(key, math.nan)))
            medians.append(f"{key} {finite[len(finite) // 2] if finite else math.nan:.3g}")
    return out + (f"; median {which}: {', '.join(medians)}" if medians else "")


def run_job(cfg: DictConfig, out_dir: Path, overrides: str = "") -> dict | None:
    """Run one cell into ``out_dir``; return its metrics, or None if it was already complete."""
    return run_cells([CellJob(cfg, out_dir, overrides)])[0]


def discard_if_untouched(out_dir: Path) -> None:
    """Remove the folder made for a refused cell (Hydra's ``.hydra/`` and ``run.log``, its first
    ``sittings.json``, a ``history.csv`` holding only its header) where it holds nothing else: a
    refusal leaves no half-made run behind, and never touches a cell's results."""
    shutil.rmtree(out_dir / PENDING, ignore_errors=True)
    made = {".hydra", "run.log", "history.csv", "sittings.json"}
    if not out_dir.is_dir() or not {p.name for p in out_dir.iterdir()} <= made:
        return
    history = out_dir / "history.csv"
    if history.exists() and len(history.read_text().splitlines()) > 1:
        return
    shutil.rmtree(out_dir, ignore_errors=True)


def run_group_main(jobs: list[CellJob]) -> None:
    """``run_cells`` with the runner's one-line errors (the fused launcher's task function)."""
    try:
        run_cells(jobs)
    except ConfigError as e:
        for job in jobs:
            discard_if_untouched(job.out_dir)
        exit_with(e)


REFUSED: list[str] = []  # cells of this process's sweep refused so far (Hydra's basic launcher)


@hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    """One job. In a sweep run in this process (``hydra/launcher=basic``), a refused cell does not
    stop the sweep: the valid cells run, and ``main`` exits non-zero naming the refused ones (the
    fused launcher refuses the whole sweep before any cell runs)."""
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    overrides = job_overrides()
    try:
        run_job(cfg, out_dir, overrides)
    except ConfigError as e:
        discard_if_untouched(out_dir)
        if HydraConfig.get().mode != RunMode.MULTIRUN:
            exit_with(e)
        name = label(cell_name(cfg), overrides)
        print(f"refused {name}: {e}", file=sys.stderr)
        REFUSED.append(f"{name} ({e})")


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


def dotted_keys(node, prefix: str = "") -> list[str]:
    """Every key of a config, dotted (``task.steps``, ``task.success.epsilon``, ...)."""
    out = []
    for key in node:
        path = f"{prefix}{key}"
        out.append(path)
        value = node._get_node(key)
        if OmegaConf.is_dict(value):
            out += dotted_keys(value, f"{path}.")
    return out


def check_keys(argv: list[str], config_dir: Path = CONFIG_DIR) -> None:
    """Refuse, in one line naming the closest valid keys, overrides of keys the composed config
    does not have (a typo such as ``task.stpes=10`` would otherwise run the default budget), and
    ``+key=value`` additions that nothing reads: everything a task reads is declared in its
    config. ``+model.<arg>`` and ``+optimizer.<arg>`` stay open: they become constructor
    arguments, which the constructor refuses if it does not take them."""
    groups = {p.name for p in config_dir.iterdir() if p.is_dir() and p.name != "hydra"}
    choices: dict[str, list[str]] = {}
    values: list[tuple[str, str]] = []
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        bare = key.lstrip("+~")
        if bare == "hydra" or bare.startswith(("hydra.", "hydra/")) or key.startswith("~"):
            continue
        if bare in groups:
            choices[key] = value.split(",") if not value.startswith(("range(", "choice(", "glob(")) else []
        else:
            values.append((key, bare))
    if not values:
        return
    from hydra import compose, initialize_config_dir

    base = {k: v[0] for k, v in choices.items() if v}
    variants = [base] + [{**base, k: c} for k, v in choices.items() for c in v[1:]]
    known: set[str] = set()
    with initialize_config_dir(str(config_dir), version_base="1.3"):
        for variant in variants:
            known.update(dotted_keys(compose("config", [f"{k}={v}" for k, v in variant.items()])))
    for key, bare in values:
        if bare in known or (key.startswith("+") and bare.startswith(("model.", "optimizer."))):
            continue
        close = difflib.get_close_matches(bare, sorted(known), n=3, cutoff=0.6)
        hint = f"; closest: {', '.join(close)}" if close else ""
        if key.startswith("+"):
            raise ConfigError(f"'{bare}' is not a config key and nothing reads it{hint}")
        raise ConfigError(f"unknown key '{bare}'{hint}")


def main() -> None:
    try:
        check_group_choices(sys.argv[1:])
        check_keys(sys.argv[1:])
    except ConfigError as e:
        exit_with(e)
    try:
        _hydra_main()
        if REFUSED:
            exit_with(ConfigError(f"{len(REFUSED)} cell(s) of the sweep refused, the others run: {'; '.join(REFUSED)}"))
    except KeyboardInterrupt:
        print("interrupted: finished cells are kept and a cell in training resumes from its last checkpoint; "
              "rerun the same command to go on", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
