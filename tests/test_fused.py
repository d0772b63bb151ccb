"""The fused launcher: cells that share an architecture and an input stream train as one model,
and each still gets its own folder, history and metrics, resume and dry run."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from suite.runner import group_key

from .conftest import TINY_ARITHMETIC, cli, compose

RUN = ["-m", "suite.run", "-m"]
SWEEP = ["model=nac,nalu", "task.op=add,mul"] + TINY_ARITHMETIC


def cells(folder: Path) -> dict[str, dict]:
    return {m["cell"]: m for m in (json.loads(p.read_text()) for p in folder.glob("*/metrics.json"))}


def key(*overrides: str) -> str:
    return group_key(compose(list(overrides)))


def test_cells_group_by_everything_but_what_their_task_fuses():
    base = ("task=static_arithmetic", "model=nalu")
    assert key(*base, "task.op=add") == key(*base, "task.op=mul") == key(*base, "task.op=sqrt", "seeds=[4,5]")
    assert key(*base, "task.op=add", "progress=false", "threads=2") == key(*base, "task.op=add")
    assert key(*base) != key("task=static_arithmetic", "model=nac")
    assert key(*base) != key(*base, "task.batch_size=64")  # shapes split groups ...
    assert key(*base) != key(*base, "task.data_seed=1")  # ... and so do input streams
    assert key(*base) != key(*base, "optimizer.lr=1e-2")
    assert key(*base) != key("task=recurrent_arithmetic", "model=nalu")
    # a task without run_group trains every cell alone
    identity = ("task=identity", "model=mlp")
    assert key(*identity, "model.activation_name=ReLU") != key(*identity, "model.activation_name=Tanh")
    assert key(*identity).startswith("alone:")


def test_fused_sweep_gives_each_cell_its_own_outputs(workdir):
    p = cli(RUN + SWEEP + ["name=fused", "hydra/launcher=fused", "hydra.launcher.n_jobs=1"], workdir)
    assert "4 cells in 2 groups" in p.stdout
    cli(RUN + SWEEP + ["name=alone", "hydra/launcher=basic"], workdir)
    fused, alone = cells(workdir / "multirun/fused"), cells(workdir / "multirun/alone")
    assert set(fused) == set(alone) == {"static/add/nac", "static/mul/nac", "static/add/nalu", "static/mul/nalu"}
    assert fused["static/add/nac"]["fused_with"] == ["static/mul/nac"] and alone["static/add/nac"]["fused_with"] == []
    for name, m in fused.items():
        a = alone[name]
        assert (m["op"], m["label"], m["seeds"]) == (a["op"], a["label"], a["seeds"])
        assert m["config_hash"] == a["config_hash"]  # the same cell, whichever launcher made it
        for mf, ma in zip(m["members"], a["members"], strict=True):
            assert mf["seed"] == ma["seed"]
            assert math.isclose(mf["success_threshold"], ma["success_threshold"], rel_tol=1e-6)
            assert math.isclose(mf["reference"]["extrapolation"], ma["reference"]["extrapolation"], rel_tol=1e-5)
            if m["model"] == "nac":  # a NAC does not amplify the rounding of other GEMM shapes
                assert mf["best_step"] == ma["best_step"] and mf["solved"] == ma["solved"]
                for k, v in ma["best"].items():
                    assert math.isclose(mf["best"][k], v, rel_tol=1e-4, abs_tol=1e-9), (name, k)
        # its own history: its seeds, every evaluation, nothing of the other cell
        folder = next(p.parent for p in (workdir / "multirun/fused").glob("*/metrics.json")
                      if json.loads(p.read_text())["cell"] == name)
        with open(folder / "history.csv") as f:
            rows = list(csv.DictReader(f))
        assert {int(r["seed"]) for r in rows} == {0, 1}
        assert sorted({int(r["step"]) for r in rows}) == [0, 10, 20, 30]
        assert f"op: {m['op']}" in (folder / ".hydra" / "config.yaml").read_text()


def test_a_group_cap_cuts_a_long_group_into_groups_that_train_as_the_whole_one(workdir):
    """``group_cells=2``: three NAC cells that would fuse train as two groups (so two cores share
    them), the same cells with the same numbers; a cap below 1 is refused before any cell runs."""
    args = RUN + ["model=nac", "task.op=add,sub,mul", "hydra/launcher=fused", "hydra.launcher.n_jobs=1"] + TINY_ARITHMETIC
    assert "3 cells in 2 groups" in cli(args + ["name=capped", "group_cells=2"], workdir).stdout
    assert "3 cells in 1 groups" in cli(args + ["name=whole"], workdir).stdout
    capped, whole = cells(workdir / "multirun/capped"), cells(workdir / "multirun/whole")
    assert capped["static/mul/nac"]["fused_with"] == [] and len(whole["static/mul/nac"]["fused_with"]) == 2
    for name, m in whole.items():
        assert capped[name]["config_hash"] == m["config_hash"]
        for a, b in zip(capped[name]["members"], m["members"], strict=True):
            assert a["best_step"] == b["best_step"]
            assert all(math.isclose(a["best"][k], v, rel_tol=1e-4, abs_tol=1e-9) for k, v in b["best"].items())
    p = cli(args + ["name=bad", "group_cells=0"], workdir, check=False)
    assert p.returncode != 0 and "group_cells must be a positive integer (cells per fused group) or null, got 0" in p.stderr
    assert not (workdir / "multirun/bad").exists() or not any((workdir / "multirun/bad").glob("*/metrics.json"))


def test_fused_sweep_is_repeatable(workdir):
    args = RUN + ["model=nalu", "task.op=add,div", "hydra/launcher=fused"] + TINY_ARITHMETIC + ["train_step=compiled"]
    cli(args + ["name=one"], workdir)
    cli(args + ["name=two"], workdir)
    one, two = cells(workdir / "multirun/one"), cells(workdir / "multirun/two")
    for name in one:  # bit-identical for a fixed group on one machine, even for the NALU
        assert one[name]["train_step"] == "compiled"
        assert one[name]["members"] == two[name]["members"]


def test_fused_sweep_resumes_and_dry_runs_per_cell(workdir):
    args = RUN + SWEEP + ["name=resume", "hydra/launcher=fused", "hydra.launcher.n_jobs=1"]
    cli(args, workdir)
    paths = {json.loads(p.read_text())["cell"]: p for p in (workdir / "multirun/resume").glob("*/metrics.json")}
    broken = paths["static/mul/nalu"]
    broken.write_text(broken.read_text()[:50])
    mtimes = {n: p.stat().st_mtime_ns for n, p in paths.items()}
    dry = cli(args + ["dry_run=true"], workdir)
    status = sorted(line for line in dry.stderr.splitlines() if line.startswith("status: "))
    assert status == ["status: to run: static/mul/nalu (half-written)", "status: up to date: static/add/nac",
                      "status: up to date: static/add/nalu", "status: up to date: static/mul/nac"]
    assert {n: p.stat().st_mtime_ns for n, p in paths.items()} == mtimes
    again = cli(args, workdir)
    assert "skip static/add/nalu: complete" in again.stderr and "done static/mul/nalu" in again.stderr
    redone = json.loads(broken.read_text())
    assert redone["complete"] and redone["fused_with"] == []  # its group-mate was complete
    assert all(p.stat().st_mtime_ns == mtimes[n] for n, p in paths.items() if n != "static/mul/nalu")


def test_fused_sweep_on_submitit_runs_a_group_per_array_task(workdir):
    cli(RUN + SWEEP + ["name=slurmish", "hydra/launcher=fused_slurm", "hydra.launcher.cluster=local"],
        workdir)
    made = cells(workdir / "multirun/slurmish")
    assert len(made) == 4 and all(m["complete"] for m in made.values())
    assert made["static/add/nalu"]["fused_with"] == ["static/mul/nalu"]
    assert len(list((workdir / "multirun/slurmish/.submitit").rglob("*_result.pkl"))) == 2  # two array tasks


@pytest.mark.parametrize("launcher", ["fused", "basic"])
def test_cells_that_cannot_fuse_still_run_under_the_fused_launcher(workdir, launcher):
    cli(RUN + ["task=identity", "model=mlp", "model.activation_name=ReLU,Tanh", f"hydra/launcher={launcher}",
               "name=identity", "progress=false", "task.steps=20", "task.eval_every=10", "seeds=2", "train_step=autograd",
               "task.table5.points=101"], workdir)
    made = [json.loads(p.read_text()) for p in (workdir / "multirun/identity").glob("*/metrics.json")]
    assert len(made) == 2 and all(m["complete"] and m["fused_with"] == [] for m in made)
    assert all("tasks/arithmetic/identity.py" in m["code"] and m["numerics"] == 1 for m in made)  # its record


def test_a_bad_cell_refuses_the_sweep_before_any_cell_runs(workdir):
    """Every cell is asked first: one line names each refused cell, and none of the valid ones
    ran only to leave the sweep half done."""
    p = cli(RUN + ["model=nac", "task.op=pow,add,mul,root", "hydra/launcher=fused", "name=bad"] + TINY_ARITHMETIC,
            workdir, check=False)
    assert p.returncode == 2
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("error: 2 of 4 cells refused, none run: unknown op 'pow'; valid: add, div,")
    assert "(static/pow/nac); unknown op 'root'; valid: " in line and line.endswith("(static/root/nac)")
    assert not list(workdir.rglob("metrics.json")) and not list(workdir.rglob("history.csv"))


def test_a_nalu_trained_fused_has_the_outcomes_it_has_alone(workdir):
    """Over all 20 seeds, not one: NALU cells of a+b and a*b trained as one model and each alone
    reach the same number of seeds that fit their training range (interpolation MSE below 10 for
    a+b, 1e5 for a*b, about half of them at this budget), each count within the other's 95%
    Wilson interval (members never interact; only the rounding of products of another shape may
    differ)."""
    from nalu.scoring import wilson_interval

    args = ["task=static_arithmetic", "model=nalu", "task.op=add,mul", "seeds=20", "task.steps=3000",
            "task.eval_every=500", "optimizer.lr=0.01", "progress=false", "task.test_samples=1000",
            "task.extrapolation_samples=1000", "task.reference.members=4"]
    counts = {}
    for launcher in ("fused", "basic"):
        cli(RUN + args + [f"hydra/launcher={launcher}", f"name={launcher}"], workdir)
        for p in (workdir / "multirun" / launcher).glob("*/metrics.json"):
            m = json.loads(p.read_text())
            fits = 10.0 if m["op"] == "add" else 1e5
            counts[launcher, m["op"]] = sum(s["best"]["interpolation"] < fits for s in m["members"])
    for op in ("add", "mul"):
        fused, alone = counts["fused", op], counts["basic", op]
        assert 0 < alone < 20, (op, alone)  # the criterion tells seeds apart
        lo, hi = wilson_interval(alone, 20)
        flo, fhi = wilson_interval(fused, 20)
        assert lo <= fused / 20 <= hi and flo <= alone / 20 <= fhi, (op, fused, alone)


def test_a_refused_sweep_says_each_reason_once_and_leaves_its_folder_as_it_found_it(workdir):
    args = RUN + ["model=nac", "task.op=add,mul", "hydra/launcher=fused", "name=kept"] + TINY_ARITHMETIC
    cli(args, workdir)
    sweep = workdir / "multirun/kept"
    record = sweep / "multirun.yaml"
    before = (record.read_bytes(), record.stat().st_mtime_ns, sorted(sweep.rglob("*")))
    p = cli(args + ["optimizer.lr=-1"], workdir, check=False)
    assert p.returncode == 2
    line, = p.stderr.strip().splitlines()
    assert line.startswith("error: 2 of 2 cells refused, none run: ") and line.endswith("(every cell)")
    assert (record.read_bytes(), record.stat().st_mtime_ns, sorted(sweep.rglob("*"))) == before
    fresh = cli(RUN + ["model=nac", "task.op=add,mul", "name=never", "optimizer.lr=-1", "hydra/launcher=fused"]
                + TINY_ARITHMETIC, workdir, check=False)
    assert fresh.returncode == 2 and not (workdir / "multirun/never").exists()


def test_sigterm_to_the_sweep_alone_stops_its_worker_processes_with_a_checkpoint(workdir):
    """``kill <pid>`` of a fused sweep whose groups train in two worker processes: each worker
    saves its checkpoint and stops (the first to stop does not end the pool under the other), the
    group still waiting for a worker never starts, and the sweep exits 143; none trains on, orphaned."""
    import os
    import signal
    import subprocess
    import sys
    import time

    args = RUN + ["model=nac,nalu,nmu", "task.op=add", "name=killed", "hydra/launcher=fused", "hydra.launcher.n_jobs=2",
                  "task.steps=200000", "task.eval_every=1000", "checkpoint_every_s=0.5", "seeds=2",
                  "train_step=autograd", "progress=false", "task.test_samples=200", "task.extrapolation_samples=20",
                  "task.reference.members=4"]
    p = subprocess.Popen([sys.executable, *args], cwd=workdir, env={**os.environ, "WANDB_MODE": "disabled"},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sweep = workdir / "multirun/killed"
    end = time.monotonic() + 300
    while len(list(sweep.glob("*/checkpoint.pt"))) < 2 and time.monotonic() < end and p.poll() is None:
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert err.count("stopped by SIGTERM at step") == 2, err[-2000:]
    assert len(list(sweep.glob("*/checkpoint.pt"))) == 2 and not list(sweep.glob("model=nmu*/history.csv"))
