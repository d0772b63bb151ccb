"""The runner: make the cells a launcher hands it, each into its folder, as one batched model where
their task can fuse them.

A cell whose ``metrics.json`` is complete and up to date (``suite.record.out_of_date``: the same
config hash and the task's numerics version) is skipped; a dry run (``dry_run=true``) only says,
per cell, whether it is up to date (one ``status:`` line each, with a note where today's code
differs from the code that made it). Everything else trains, resuming from a checkpoint where
one was saved for the same cells, and ends in an atomically written ``metrics.json``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch
from omegaconf import DictConfig, OmegaConf

from nalu import device as devices
from nalu.errors import ConfigError, exit_with
from nalu.train import Checkpoint, Stopped
from suite.config import PENDING, cell_name, cells_text, check_config, task_of
from suite.evidence import identical
from suite.io import read_json, write_json_atomic
from suite.loggers import RunLogger
from suite.machine import environment
from suite.projection import projection, share
from suite.provenance import ROOT, imported, snapshot
from suite.record import code_note, config_hash, git_state, out_of_date, with_solved_at
from tasks.metrics import EXTRAPOLATION

# the keys the running sweep gives several values (set by the sweeper, ``hydra/sweeper=keeping``,
# which parses the command line): what tells a sweep's cells apart in messages
SWEPT: set[str] = set()
SWEEP_REFUSED = False  # set by the fused launcher when it refuses a whole sweep before any cell ran
SWEEP_FUNCTIONS = ("range(", "choice(", "glob(")
STATUS_FILE = "NALU_STATUS_FILE"  # where a dry run also appends each cell's status as a JSON line


def swept_keys(arguments: list[str]) -> set[str]:
    """The keys of a sweep's overrides that take several values (``task.op=add,sub``, ``range(...)``)."""
    keys = set()
    for arg in arguments:
        key, _, value = arg.partition("=")
        if "," in value or value.startswith(SWEEP_FUNCTIONS):
            keys.add(key.lstrip("+~"))
    return keys


def shown_overrides(task_overrides, swept: set[str]) -> str:
    """A job's values of the swept keys, ``model.activation_name=Tanh,task.op=add``."""
    return ",".join(o for o in task_overrides if o.partition("=")[0].lstrip("+~") in swept)


def label(name: str, overrides: str) -> str:
    """The cell's name for messages: ``name`` plus the sweep's overrides it does not already show
    (Table 5's MLP cells are all ``identity/mlp``, told apart by ``model.activation_name``)."""
    parts = set(name.split("/"))
    extra = [o for o in overrides.split(",") if o and o.split("=", 1)[-1] not in parts]
    return f"{name} [{','.join(extra)}]" if extra else name


class CellJob(NamedTuple):
    """A cell as a launcher hands it to the runner: its config, its folder, and the overrides of
    its sweep point (for messages)."""

    cfg: DictConfig
    out_dir: Path
    overrides: str = ""


@dataclass
class Cell:
    """A cell the runner is to make: its config, folder, config digest, numerics version and name
    (with the sweep overrides that tell it apart, for messages)."""

    cfg: DictConfig
    out_dir: Path
    digest: str
    numerics: int
    name: str


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


def why_run(cfg: DictConfig, out_dir: Path, digest: str | None = None) -> str | None:
    """Why the cell in ``out_dir`` is to be made (None: it is complete and up to date); ``digest``:
    its config hash where the caller has it."""
    check_config(cfg)
    return "force=true" if cfg.force else out_of_date(out_dir, digest or config_hash(cfg), task_of(cfg).numerics)


def prepare(cfg: DictConfig, out_dir: Path, overrides: str = "", group: list[DictConfig] | None = None) -> Cell | None:
    """Resolve and check ``cfg``; None if the cell is up to date (or this is a dry run, where
    ``group`` is the configs of the cells its group would train, the cell's among them)."""
    check_config(cfg)
    digest, numerics = config_hash(cfg), task_of(cfg).numerics
    reason = why_run(cfg, out_dir, digest)
    name = label(cell_name(cfg), overrides)
    reuse = cfg.get("reuse")
    twin = identical(digest, numerics, ROOT / reuse, out_dir) if reason == "not run yet" and reuse else None
    if twin and not cfg.get("dry_run"):
        write_json_atomic(out_dir / "metrics.json", {**twin[1], "reused_from": twin[0]})
        settle_config(out_dir, runs=True)
        print(f"reuse {name}: identical to {twin[0]} (in {reuse}: the same config and numerics), its record "
              "copied, not trained again (reuse=null trains it)", file=sys.stderr)
        return None
    if cfg.get("dry_run"):
        if twin:
            reason = f"not run yet; identical to {twin[0]}, to be reused"
        note = code_note(out_dir) if reason is None else ""
        state = "up to date" if reason is None else "to run"
        seconds, projected = share(group or [cfg]) if reason is not None and not twin else (None, "")
        print(f"status: {state}: {name}{f' ({reason})' if reason else ''}{f'; {note or projected}' if note or projected else ''}",
              file=sys.stderr)
        if os.environ.get(STATUS_FILE):  # the same, as data (scripts/reproduce_all.py)
            with open(os.environ[STATUS_FILE], "a") as f:
                f.write(json.dumps({"cell": name, "state": state, "reason": reason, "code": note or None, "hash": digest,
                                    "dir": str(out_dir), "projected_s": seconds}) + "\n")
        return None
    if reason is None:
        again = "; its history is not logged to wandb again (force=true reruns it)" if cfg.logger.name == "wandb" else ""
        print(f"skip {name}: complete in {out_dir}{again}", file=sys.stderr)
        settle_config(out_dir, runs=False)
        return None
    return Cell(cfg, out_dir, digest, numerics, name)


def full_float32() -> None:
    """No TensorFloat-32 on CUDA: matmuls and convolutions in full float32, as on the CPU (torch
    lets cuDNN convolutions, the MNIST encoder's, round to TF32's 10-bit mantissa by default)."""
    from torch.backends import cuda, cudnn

    if hasattr(cuda.matmul, "fp32_precision"):  # the API of torch >= 2.9; the two must not be mixed
        cuda.matmul.fp32_precision = cudnn.conv.fp32_precision = cudnn.rnn.fp32_precision = "ieee"
    else:
        cuda.matmul.allow_tf32 = cudnn.allow_tf32 = False


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


class Announcing:
    """A run's logger that prints ``line`` (its projected time) when the first metrics arrive: the
    data is loaded and the model built by then, so a refused run says only why."""

    def __init__(self, log, line: str):
        self.log, self.line = log, line

    def metrics(self, step: int, metrics: dict) -> None:
        if self.line:
            print(self.line, file=sys.stderr, flush=True)
            self.line = ""
        self.log.metrics(step, metrics)

    def __getattr__(self, name: str):
        return getattr(self.log, name)


class CellsBusy(ConfigError):
    """Cells another process is making (it holds their locks), left to it: ``names`` of ``total``.
    The fused launcher goes on with the sweep's other groups and names these at the end."""

    def __init__(self, names: list[str], total: int):
        self.names = names
        super().__init__(f"{len(names)} of {total} cells were being made by another process and left to it "
                         f"({cells_text(names)}); run this command again once it ends")


def run_cells(jobs: list[CellJob]) -> list[dict | None]:
    """Make every cell of ``jobs`` that is not up to date; together, as one batched model, where
    there are several (their task's ``run_group``; the fused launcher hands only cells of one
    ``group_key`` here). Returns each cell's metrics, None if skipped."""
    # a dry run projects each cell to run as its share of the group those cells would train as
    group = [job.cfg for job in jobs if why_run(job.cfg, job.out_dir)] if jobs and jobs[0].cfg.get("dry_run") else None
    cells = [prepare(*job, group=group) for job in jobs]
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
    with ExitStack() as held:
        busy = [c for c in todo if not held.enter_context(cell_lock(c.out_dir))]
        for c in busy:  # another process is making it (the same sweep started twice): left to that one
            settle_config(c.out_dir, runs=False)
            print(f"busy {c.name}: another process is making it in {c.out_dir}; left to that one", file=sys.stderr)
        made = train([c for c in todo if c not in busy], task, code) if len(busy) < len(todo) else {}
    if busy:
        raise CellsBusy([c.name for c in busy], len(todo))
    return [made.get(id(c)) if c is not None else None for c in cells]


@contextmanager
def cell_lock(out_dir: Path) -> Iterator[bool]:
    """Hold ``<cell>/.lock`` while this process makes the cell; False where another process holds
    it (an advisory ``flock``: released by the system when that process ends, however it ends)."""
    import fcntl

    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def train(todo: list[Cell], task, code: dict) -> dict[int, dict]:
    """Train ``todo`` (one group) from its checkpoint if one was saved; each cell's metrics by id."""
    cfg = todo[0].cfg
    for c in todo:
        settle_config(c.out_dir, runs=True)

    # a checkpoint belongs to these cells at this numerics version, whatever code saved it
    key = hashlib.sha256(repr([(c.digest, c.numerics) for c in todo]).encode()).hexdigest()[:16]
    checkpoint = Checkpoint(todo[0].out_dir / "checkpoint.pt", float(cfg.get("checkpoint_every_s", 600)), key)
    saved, unusable = checkpoint.read()
    if unusable:
        print(f"{todo[0].name}: not resuming from {checkpoint.path}: {unusable}", file=sys.stderr)
    resume_step = saved["step"] if saved else 0
    sittings_path = todo[0].out_dir / "sittings.json"
    sittings = record_sitting(sittings_path, resume_step)
    logs = [open_logger(c, resume=resume_step > 0) for c in todo]
    log = logs[0] if len(logs) == 1 else GroupLog(logs)
    log.checkpoint, checkpoint.on_resume = checkpoint, log.rewind
    if line := projection([c.cfg for c in todo], done=resume_step):
        log = Announcing(log, f"{todo[0].name}{f' and {len(todo) - 1} more' if len(todo) > 1 else ''}: {line}")
    if resume_step:
        reached = last_logged_step(todo[0].out_dir / "history.csv")
        again = (f"; the last sitting had reached step {reached:,} at least, so {reached - resume_step:,} steps are "
                 "trained again" if reached > resume_step else "; no step is trained again")
        print(f"{log.name}: resumed from step {resume_step:,} ({checkpoint.path}){again}", file=sys.stderr)
    start = time.perf_counter()
    checkpoint.on_save = lambda step: note_wall(sittings_path, sittings, time.perf_counter() - start)
    try:
        with stop_signals(checkpoint) as previous:
            results = task.run_group([c.cfg for c in todo], log) if len(todo) > 1 else [task.run(cfg, log)]
    except Stopped as stop:
        stopped(stop, log.name, checkpoint, previous)
    finally:
        for lg in logs:
            lg.close()
    wall = time.perf_counter() - start
    sittings[-1]["wall_s"] = round(wall, 2)
    made = {id(c): finish(c, {**r, "sittings": sittings}, imported(code), wall, [o.name for o in todo if o is not c])
            for c, r in zip(todo, results, strict=True)}
    checkpoint.remove()
    sittings_path.unlink(missing_ok=True)
    return made


# the signals that stop a run cleanly: SIGTERM (``kill``, ``scancel``, SLURM's end of a job) and
# SIGUSR2 where something waits for it (submitit on SLURM: preemption or the time limit is near)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR2)


def last_logged_step(history: Path) -> int:
    """The last step a run folder's history.csv logged (0 where none): how far a stopped sitting got,
    at least (before a resume drops the rows after its checkpoint)."""
    try:
        with open(history, newline="") as f:
            steps = [int(r.split(",", 1)[0]) for r in f.read().splitlines()[1:] if r[:1].isdigit()]
    except OSError:
        return 0
    return max(steps, default=0)


@contextmanager
def stop_signals(checkpoint: Checkpoint) -> Iterator[dict]:
    """While the cells train, a stop signal asks the training loop to save a checkpoint at the end
    of its step and stop (``nalu.train.Stopped``, handled by ``stopped``); outside the loop (set-up,
    the last evaluation) the signal acts at once. Yields the handlers it replaced."""
    previous: dict[int, object] = {}

    def ask(signum: int, frame: object) -> None:
        if checkpoint.listening:
            checkpoint.stop_signal = signum
        elif signum == signal.SIGUSR2 and callable(previous.get(signum)):
            previous[signum](signum, frame)  # submitit: requeue from the last checkpoint
        else:
            raise SystemExit(128 + signum)

    for sig in STOP_SIGNALS:
        if sig == signal.SIGUSR2 and not callable(signal.getsignal(sig)):
            continue  # nothing listens for SIGUSR2 here: its default (terminate) stands
        try:
            previous[sig] = signal.signal(sig, ask)
        except ValueError:  # not the main thread: signals stay as they are
            break
    try:
        yield previous
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def stopped(stop: Stopped, name: str, checkpoint: Checkpoint, previous: dict) -> None:
    """After a clean stop: on SIGUSR2 under submitit, its requeue (the group resumes from the
    checkpoint just saved); otherwise one line and the signal's exit status."""
    what = signal.Signals(stop.signum).name
    print(f"{name}: stopped by {what} at step {stop.step:,}, checkpoint saved ({checkpoint.path}); "
          "the same command resumes from it", file=sys.stderr, flush=True)
    handler = previous.get(stop.signum)
    if stop.signum == signal.SIGUSR2 and callable(handler):
        handler(stop.signum, None)
    raise SystemExit(128 + stop.signum)


def record_sitting(path: Path, resume_step: int) -> list[dict]:
    """The sittings of a run that resumes from checkpoints, this one appended: the step each
    started from, when, on which machine (a run resumed on another machine continues with another
    BLAS code path; its ``metrics.json`` says so) and how long it trained until its last checkpoint
    (``wall_s``, ``note_wall``: a sitting killed before its first counts 0, its steps trained
    again by the next). Kept beside the checkpoint."""
    earlier = (read_json(path) or {}).get("sittings", []) if resume_step else []
    if resume_step and not earlier:  # saved by a runner that did not record sittings
        earlier = [{"from_step": 0, "started": None, "environment": None}]
    sittings = [*earlier, {"from_step": resume_step, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                           "environment": environment(), "wall_s": 0.0}]  # 0 until its first checkpoint
    write_json_atomic(path, {"sittings": sittings})
    return sittings


def note_wall(path: Path, sittings: list[dict], wall_s: float) -> None:
    """At each checkpoint: how long this sitting has trained until the state it saves, so that a
    target carried over several sittings is timed as their sum (``suite.timings``); the time a
    killed sitting spent after its last checkpoint is trained again by the next and counted there.
    Noted before the state replaces the last one, so a checkpoint on disk always has its time (a
    kill between the two counts one interval twice, never a sitting as 0)."""
    sittings[-1]["wall_s"] = round(wall_s, 2)
    write_json_atomic(path, {"sittings": sittings})


def open_logger(cell: Cell, resume: bool) -> RunLogger:
    cfg = cell.cfg
    wandb_cfg = OmegaConf.to_container(cfg.logger, resolve=True) if cfg.logger.name == "wandb" else None
    return RunLogger(cell.out_dir, cell.name, list(cfg.seeds), group=cfg.name, wandb_cfg=wandb_cfg,
                     config=OmegaConf.to_container(cfg, resolve=True), resume=resume)


def finish(cell: Cell, result: dict, code: dict, wall_s: float, fused_with: list[str]) -> dict:
    """Write the cell's ``metrics.json`` atomically (its evidence and provenance, ``suite.record``)
    and say where it is."""
    cfg = cell.cfg
    commit, dirty = git_state()
    result = {**result, "members": with_solved_at(result.get("members", []), cell.out_dir / "history.csv",
                                                  EXTRAPOLATION)}
    metrics = {
        "complete": True,
        "config_hash": cell.digest,
        "numerics": cell.numerics,
        "cell": cell.name,
        "task": cfg.task.name,
        "model": cfg.model.name,
        "name": cfg.name,
        "seeds": list(cfg.seeds),
        "wall_s": round(wall_s, 2),
        "commit": commit,
        "dirty": dirty,
        "code": code,  # digests of the modules it imported: for diagnosis, never a reason to rerun
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
    """``; success 7/10; median best: extrapolation 0.031, ...``: what a cell's seeds reached (the
    selected model's metrics, else the final ones), for the line that says a cell is done. Its
    words are the tables': success is Madsen & Johansen's criterion (the members' ``solved``
    flag), and a seed whose metric is not finite counts as +inf in the median."""
    out = ""
    if members and "solved" in members[0]:
        out += f"; success {sum(m['solved'] for m in members)}/{len(members)}"
    which = "best" if members and isinstance(members[0].get("best"), dict) else "final"
    if not (members and isinstance(members[0].get(which), dict)):
        return out
    medians = []
    for key, value in members[0][which].items():
        if isinstance(value, int | float):
            ordered = sorted(v if math.isfinite(v := m[which].get(key, math.nan)) else math.inf for m in members)
            medians.append(f"{key} {ordered[len(ordered) // 2]:.3g}")
    return out + (f"; median {which}: {', '.join(medians)}" if medians else "")


def run_job(cfg: DictConfig, out_dir: Path, overrides: str = "") -> dict | None:
    """Run one cell into ``out_dir``; return its metrics, or None if it was already complete."""
    return run_cells([CellJob(cfg, out_dir, overrides)])[0]


def discard_if_untouched(out_dir: Path) -> None:
    """Remove the folder made for a refused cell (Hydra's ``.hydra/`` and ``run.log``, its first
    ``sittings.json``, a ``history.csv`` holding only its header) where it holds nothing else, with
    the folders above it that then hold nothing: a refusal leaves no half-made run behind, and never
    touches a cell's results. A folder whose lock another process holds is that process's (a cell
    it is making, its history perhaps not begun): it is left as it is."""
    if not out_dir.is_dir():
        return
    with cell_lock(out_dir) as mine:
        if not mine:
            return
        shutil.rmtree(out_dir / PENDING, ignore_errors=True)
        made = {".hydra", "run.log", "history.csv", "sittings.json", ".lock"}
        if not {p.name for p in out_dir.iterdir()} <= made:
            return
        history = out_dir / "history.csv"
        if history.exists() and len(history.read_text().splitlines()) > 1:
            return
        shutil.rmtree(out_dir, ignore_errors=True)
    # and the folders made above it for it alone (runs/<name>/<cell>/), up to the working directory
    here = Path.cwd().resolve()
    for parent in out_dir.resolve().parents:
        if parent == here or here not in parent.parents or any(parent.iterdir()):
            break
        parent.rmdir()


def run_group_main(jobs: list[CellJob]) -> None:
    """``run_cells`` with the runner's one-line errors (the fused launcher's task function); cells
    another process is making are raised as ``CellsBusy``, for the launcher to go on past them."""
    try:
        run_cells(jobs)
    except ConfigError as e:
        for job in jobs:
            discard_if_untouched(job.out_dir)
        if isinstance(e, CellsBusy):  # the launcher goes on with the sweep's other groups
            raise
        exit_with(e)
