"""The record of a cell: what its ``metrics.json`` holds, and when a finished cell is up to date.

A cell is *up to date* when its ``metrics.json`` is complete, its config hash matches the
config now asked for, and its task's numerics version (``tasks.Task.numerics``) matches the
version the task has now. Nothing else triggers a rerun: code changes that leave a task's
numbers alone (a comment, a refactor, a faster kernel that computes the same) keep every cell,
and a change that does alter them is declared by bumping the task's version, which the task's
golden test (``tests/test_golden.py``) enforces. This is the practice of Hydra's output folders,
MLflow and W&B: record the commit, the config and the machine; rerun because the numbers would
change, not because a file did. ``force=true`` reruns a cell anyway.

What a cell records beside its task's results (``record``):
- ``config_hash`` (``config_hash``: the resolved config less ``NOT_HASHED``, and less a key added
  later while it holds the value that computes as before, ``NEUTRAL``) and ``numerics``;
- provenance, for diagnosis only: the git commit and whether the code tree was dirty, the digests
  of the modules the cell imported (``suite.provenance``; a dry run names those that differ now),
  the machine (``suite.machine``), the sittings of a run resumed from checkpoints;
- ``solved_at`` per seed where a seed has a success threshold: the first evaluation step whose
  extrapolation error fell below it (``solved_at``, from the run's own ``history.csv``).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import math
import subprocess
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from suite.io import read_json
from suite.provenance import CODE_TREE, ROOT, changed

# config keys that do not change results: a cell made with other values of these is still valid
NOT_HASHED = ("logger", "progress", "force", "threads", "name", "data_dir", "flush_denormal", "dry_run",
              "checkpoint_every_s", "compile_wrapper", "group_cells", "reuse")  # compile_wrapper: the same kernels
# (nalu.fast); group_cells: which cells share a batched model, not what each member computes;
# reuse: whether an identical committed cell is copied (suite.evidence.identical) or trained again


# keys added after cells were made, each with the value that computes what those cells computed:
# at that value a key is left out of the hash, so the new knob keeps every finished cell up to date
# and only a cell that sets it otherwise is new (add a key here with the commit that adds it)
NEUTRAL = {
    ("replicate",): 0,  # configs/config.yaml: an independent rerun of a cell
    ("task", "env", "late_reward"): -1.0,  # configs/task/gridworld_time.yaml: the reward for not arriving
    ("model", "init"): "torch",  # configs/model/lstm.yaml, gru.yaml: the gated cells' initialisation
    ("model", "gate_bias"): None,  # configs/model/nalu.yaml: a learned gate bias (none, the paper's NALU)
    ("task", "encoder", "pool"): False,  # configs/task/mnist_*.yaml: the PyTorch MNIST example's pooled encoder
    ("task", "horizon"): None,  # configs/task/*_arithmetic.yaml: the extrapolation horizon, off
    ("model", "compilable"): False,  # configs/model/npu.yaml, realnpu.yaml, inalu.yaml: through autograd
    ("compile_cells",): False,  # configs/config.yaml: recurrent cells' steps eager
    ("compile_forward",): False,  # configs/config.yaml: the autograd path's forward eager
    ("model", "compile_step"): False,  # configs/model/dnc.yaml: the DNC's step eager
    ("task", "encoder", "shared_first_conv"): False,  # configs/task/mnist_*.yaml: a grouped first convolution
    ("lr_schedule",): "constant",  # configs/config.yaml: the optimiser's rate throughout
}


def config_hash(cfg: DictConfig) -> str:
    """The cell's identity: a digest of its resolved config less ``NOT_HASHED``, the task's
    ``entry`` (which names the code that runs it, not what it computes) and the ``NEUTRAL`` keys
    that hold their neutral value."""
    data = OmegaConf.to_container(cfg, resolve=True)
    for key in NOT_HASHED:
        data.pop(key, None)
    if isinstance(data.get("task"), dict):
        data["task"].pop("entry", None)
    for path, value in NEUTRAL.items():
        *parents, leaf = path
        node = functools.reduce(lambda d, k: d.get(k) if isinstance(d, dict) else None, parents, data)
        if isinstance(node, dict) and leaf in node and node[leaf] == value:
            del node[leaf]
    return hashlib.sha256(OmegaConf.to_yaml(OmegaConf.create(data)).encode()).hexdigest()[:16]


def out_of_date(out_dir: Path, cfg_hash: str, numerics: int) -> str | None:
    """Why the cell in ``out_dir`` must be (re)made, or None if it is complete and up to date."""
    m = read_json(out_dir / "metrics.json")
    if not (m and m.get("complete")):
        return "not run yet" if m is None and not (out_dir / "metrics.json").exists() else "half-written"
    if m.get("config_hash") != cfg_hash:
        return "its config changed"
    if m.get("numerics") != numerics:
        return f"its task's numerics version is now {numerics}, the cell's {m.get('numerics')}"
    return None


def code_note(out_dir: Path) -> str:
    """For a dry run: where today's code differs from the code a finished cell ran (information,
    never a reason to rerun), e.g. ``code differs from the cell's commit abc1234 in nalu/train.py``."""
    m = read_json(out_dir / "metrics.json") or {}
    edited = changed(m.get("code") or {})
    if not edited:
        return ""
    commit = (m.get("commit") or "unknown")[:7] + ("+dirty" if m.get("dirty") else "")
    return f"code differs from the cell's commit {commit} in {', '.join(edited)}"


@functools.cache
def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the tree the runner runs from: dirty when a tracked file of the code
    (``suite.provenance.CODE_TREE``) differs from the commit, or a new one is there; (None, None)
    outside a git checkout (a copied tree, an archive)."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True, timeout=30).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--", *CODE_TREE], cwd=ROOT,
                                capture_output=True, text=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit, bool(status.strip())


def solved_at(history: Path, thresholds: dict[int, float], metric: str) -> dict[int, int]:
    """Per seed, the first evaluation step of ``history`` (``suite.loggers``' long format) whose
    ``metric`` fell below the seed's threshold; seeds that never did are absent."""
    out: dict[int, int] = {}
    if not thresholds or not history.exists():
        return out
    with open(history, newline="") as f:
        for row in csv.DictReader(f):
            if row["metric"] != metric:
                continue
            seed, step, value = int(row["seed"]), int(row["step"]), float(row["value"])
            t = thresholds.get(seed)
            if t is not None and value < t and (seed not in out or step < out[seed]):
                out[seed] = step
    return out


def with_solved_at(members: list[dict], history: Path, metric: str) -> list[dict]:
    """``members`` with ``solved_at`` (the first step below its ``success_threshold``, None if
    never) on every seed that has a threshold; others unchanged."""
    thresholds = {m["seed"]: m["success_threshold"] for m in members
                  if isinstance(m.get("success_threshold"), float) and math.isfinite(m["success_threshold"])}
    if not thresholds:
        return members
    first = solved_at(history, thresholds, metric)
    return [{**m, "solved_at": first.get(m["seed"])} if m["seed"] in thresholds else m for m in members]
