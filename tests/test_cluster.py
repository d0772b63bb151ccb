"""The cluster path (``hydra/launcher=fused_slurm``), through submitit's local executor here and
through a real SLURM where ``sbatch`` exists (``make test-slurm``): one array task per group with
work, a dry run and up-to-date groups never submitted, a preempted group saving at once and
requeued by itself, one line per group as it ends."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from hydra_plugins.nalu_launchers.fused_launcher import FusedLauncher, last_line

from .conftest import TINY_ARITHMETIC, cli
from .test_checkpoint import wait_for

RUN = ["-m", "suite.run", "-m"]
LOCAL = ["hydra/launcher=fused_slurm", "hydra.launcher.cluster=local", "hydra.launcher.poll_s=0.5"]
# one group of two cells, long enough to be preempted mid-run
LONG = ["model=nalu", "task.op=add,mul", *TINY_ARITHMETIC, "task.steps=8000", "task.eval_every=1000",
        "checkpoint_every_s=0.5"]


def members(folder: Path) -> dict[str, list]:
    return {m["cell"]: m["members"] for m in (json.loads(p.read_text()) for p in folder.glob("*/metrics.json"))}


def task_processes(workdir: Path) -> list[int]:
    """The pids of submitit's array tasks that run in ``workdir``'s sweeps."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if "submitit.core._submit" in cmd and str(workdir) in cmd:
            found.append(int(proc.name))
    return found


def test_a_preempted_group_saves_at_once_is_requeued_and_ends_as_an_uninterrupted_one(workdir):
    """SIGUSR2 (SLURM's notice of preemption or time limit) mid-run: the group saves a checkpoint
    at its step, submitit requeues it, it resumes from there by itself, and its cells end with the
    numbers of a run never stopped."""
    cli(RUN + LONG + ["name=whole", "hydra/launcher=fused"], workdir)
    env = {**os.environ, "WANDB_MODE": "disabled"}
    p = subprocess.Popen([sys.executable, *RUN, *LONG, "name=preempted", *LOCAL], cwd=workdir, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sweep = workdir / "multirun/preempted"
    try:
        wait_for(lambda: any(sweep.rglob("checkpoint.pt")) and task_processes(workdir), timeout=300)
        for pid in task_processes(workdir):
            os.kill(pid, signal.SIGUSR2)
        out, _ = p.communicate(timeout=600)
    finally:
        p.kill()
    assert p.returncode == 0, out
    assert "[1/1] task" in out and " done: static/add/nalu, static/mul/nalu" in out
    logs = "".join(f.read_text() for f in (sweep / ".submitit").rglob("*_log.err"))
    stopped = re.search(r"stopped by SIGUSR2 at step ([\d,]+), checkpoint saved", logs)
    assert stopped and f"resumed from step {stopped[1]} " in logs  # nothing lost but the step in flight
    assert members(sweep) == members(workdir / "multirun/whole")


def test_a_dry_run_and_a_finished_sweep_submit_nothing(workdir):
    args = RUN + ["model=nac", "task.op=add,mul", *TINY_ARITHMETIC, "name=done", *LOCAL]
    def said(*extra: str) -> str:
        p = cli(args + list(extra), workdir)
        return p.stdout + p.stderr

    dry = said("dry_run=true")
    assert "status: to run: static/add/nac" in dry and "submitted" not in dry
    assert not (workdir / "multirun/done/.submitit").exists()
    first = said()
    assert "submitted array job" in first and "[1/1] task" in first
    arrays = set((workdir / "multirun/done/.submitit").iterdir())
    again = said()
    assert "nothing to submit" in again and "skip static/mul/nac: complete" in again
    assert "status: up to date: static/add/nac" in said("dry_run=true")
    assert set((workdir / "multirun/done/.submitit").iterdir()) == arrays  # nothing new submitted


def test_the_plain_settings_become_submitit_parameters():
    launcher = FusedLauncher(cluster="slurm", partition="gpu", account="lab", qos="high", timeout_min=720,
                             mem_gb=8, array_parallelism=16, setup=["module load x"],
                             parameters={"slurm_constraint": "avx2"})
    given = launcher.submitit_parameters(threads=1, sweep="table1_static")
    assert given == {"timeout_min": 720, "mem_gb": 8, "cpus_per_task": 1, "name": "nalu-table1_static",
                     "slurm_array_parallelism": 16, "slurm_setup": ["module load x"], "slurm_partition": "gpu",
                     "slurm_account": "lab", "slurm_qos": "high", "slurm_constraint": "avx2"}
    assert FusedLauncher(cluster="slurm", cpus_per_task=4, name="mine").submitit_parameters(2, "s")["cpus_per_task"] == 4
    assert "slurm_partition" not in FusedLauncher(cluster="slurm").submitit_parameters(1, "s")  # the cluster's default


class FakeJob:
    def __init__(self, job_id: str, stderr: Path, error: Exception | None = None):
        self.job_id, self.paths, self.error = job_id, SimpleNamespace(stderr=stderr), error

    def done(self, force_check: bool = False) -> bool:
        return True

    def results(self):
        if self.error:
            raise self.error
        return [["returned"]]


def test_each_group_ends_in_one_line_and_a_failed_one_names_its_error_and_log(tmp_path, caplog):
    log = tmp_path / "7_1_log.err"
    log.write_text("Traceback (most recent call last):\n  ...\nerror: task.op: 'pow' is not one of add, sub\n"
                   "submitit WARNING (2026-12-05) - Bypassing signal SIGCONT\n")
    jobs = {0: FakeJob("7_0", tmp_path / "7_0_log.err"), 1: FakeJob("7_1", log, RuntimeError("long\ntrace"))}
    results = [None, None]
    with caplog.at_level("INFO"):
        failed = FusedLauncher(cluster="local", poll_s=0.01).wait(jobs, ["cells of g0", "cells of g1"], results)
    assert failed == ["7_1"] and results[0] == ["returned"]
    lines = [r.getMessage() for r in caplog.records]
    assert any(m.endswith("task 7_0 done: cells of g0") for m in lines)
    assert any(f"task 7_1 failed: cells of g1: error: task.op: 'pow' is not one of add, sub (log: {log})" in m
               for m in lines)
    assert last_line(tmp_path / "absent", RuntimeError("first\nsecond")) == "first"
    log.write_text("Traceback (most recent call last):\nomegaconf.errors.ReadonlyConfigError: Cannot change\n"
                   "    full_key: hydra.job.id\n")
    assert last_line(log, RuntimeError()) == "omegaconf.errors.ReadonlyConfigError: Cannot change"


class Interrupted(FakeJob):
    def done(self, force_check: bool = False) -> bool:
        raise KeyboardInterrupt


def test_a_submitter_stopped_while_waiting_says_the_array_runs_on_and_how_to_stop_it(tmp_path, caplog):
    with pytest.raises(SystemExit) as leaving:
        FusedLauncher(cluster="slurm", poll_s=0.01).wait({0: Interrupted("41_0", tmp_path / "log")}, ["g"], [None])
    assert leaving.value.code == 130
    assert "array job 41 goes on on the cluster (`scancel 41` stops it;" in caplog.text


def slurm_answers() -> bool:
    return shutil.which("sbatch") is not None and subprocess.run(["sinfo"], capture_output=True).returncode == 0


@pytest.mark.skipif(not (os.environ.get("NALU_SLURM_TEST") and slurm_answers()),
                    reason="a real SLURM: make test-slurm starts a throwaway one and runs this")
def test_on_a_real_slurm_the_readme_command_resumes_a_preempted_group_by_itself_and_builds_the_table(tmp_path):
    """``make reproduce-table1 LAUNCHER=slurm PARTITION=debug`` as the README shows it, narrowed to a
    tiny sweep, in a scratch copy of this tree: SLURM's preemption notice (USR2, as submitit's own
    test sends it) mid-run, the group requeued and resumed by itself, the table built."""
    from scripts.verify import copy_tree

    copy_tree(tmp_path)
    sample = " ".join(["model=nac,nalu", *LONG[1:]])
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    p = subprocess.Popen(["make", "reproduce-table1", "VARIANT=protocol1", "LAUNCHER=slurm", "PARTITION=debug",
                          f"SAMPLE={sample}"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    sweep = tmp_path / "multirun/table1_static_protocol1"
    try:
        wait_for(lambda: any(sweep.rglob("checkpoint.pt")), timeout=300)
        queue = subprocess.run(["squeue", "-h", "-o", "%i", "-t", "RUNNING"], capture_output=True, text=True).stdout.split()
        task = next(j for j in queue if "_" in j)
        subprocess.run(["scancel", task, "--signal", "USR2"], check=True)
        out, _ = p.communicate(timeout=900)
    finally:
        p.kill()
    assert p.returncode == 0, out
    assert "submitted array job" in out and "[2/2] task" in out
    logs = "".join(f.read_text() for f in (sweep / ".submitit").rglob("*_log.err"))
    stopped = re.search(r"stopped by SIGUSR2 at step ([\d,]+), checkpoint saved", logs)
    assert stopped and f"resumed from step {stopped[1]} " in logs
    made = members(sweep)
    assert len(made) == 4 and all(len(m) == 2 for m in made.values())
    assert (tmp_path / "multirun/.scratch/table1_protocol1/table1_protocol1.md").exists()  # narrowed: not results/
