"""scripts/restamp.py: a cell whose code changed is re-stamped only when running proves the change
computes the same; a real change leaves it out of date."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from suite.provenance import CODE_TREE

from .conftest import ROOT

COPIED = (*CODE_TREE, "scripts")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def python(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(repo), "WANDB_MODE": "disabled"}
    p = subprocess.run([sys.executable, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} failed:\n{p.stdout}\n{p.stderr}")
    return p


def commit_edit(repo: Path, path: str, old: str, new: str) -> None:
    f = repo / path
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new, 1))
    git(repo, "commit", "-qam", f"edit {path}")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A clone of this repository whose last commit is the working tree's code, with one finished cell."""
    clone = tmp_path / "repo"
    git(tmp_path, "clone", "-q", str(ROOT), str(clone))
    for part in COPIED:
        shutil.rmtree(clone / part, ignore_errors=True)
        shutil.copytree(ROOT / part, clone / part, ignore=shutil.ignore_patterns("__pycache__"))
    git(clone, "add", "-A")
    git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the working tree", "--allow-empty")
    git(clone, "config", "user.name", "t")
    git(clone, "config", "user.email", "t@t")
    python(clone, "-m", "suite.run", "-m", "model=nac", "task.op=add", "seeds=2", "task.steps=30",
           "task.eval_every=10", "train_step=autograd", "progress=false", "task.test_samples=200",
           "task.extrapolation_samples=20", "task.reference.members=4", "hydra.sweep.dir=cells")
    return clone


def status(repo: Path) -> str:
    p = python(repo, "-m", "suite.run", "-m", "model=nac", "task.op=add", "seeds=2", "task.steps=30",
               "task.eval_every=10", "train_step=autograd", "progress=false", "task.test_samples=200",
               "task.extrapolation_samples=20", "task.reference.members=4", "hydra.sweep.dir=cells",
               "dry_run=true", "hydra/job_logging=disabled")
    return next(line for line in p.stderr.splitlines() if line.startswith("status:"))


def test_an_edit_that_computes_the_same_is_restamped(repo):
    metrics_path = next((repo / "cells").rglob("metrics.json"))
    before = json.loads(metrics_path.read_text())
    commit_edit(repo, "nalu/train.py", "Metrics = dict[str, Tensor]", "UNUSED = 0\nMetrics = dict[str, Tensor]")
    assert "its code changed (nalu/train.py)" in status(repo)
    p = python(repo, "scripts/restamp.py", "cells")
    assert "re-stamped 1, kept 0" in p.stdout, p.stdout + p.stderr
    after = json.loads(metrics_path.read_text())
    assert after["members"] == before["members"] and after["code"] != before["code"]
    assert after["restamped"][0]["modules"] == ["nalu/train.py"]
    assert status(repo).startswith("status: up to date")


def test_an_edit_that_changes_the_numbers_is_not(repo):
    metrics_path = next((repo / "cells").rglob("metrics.json"))
    before = metrics_path.read_text()
    commit_edit(repo, "nalu/units/nac.py", "return torch.tanh(self.W_hat) * torch.sigmoid(self.M_hat)",
                "return 0.9 * torch.tanh(self.W_hat) * torch.sigmoid(self.M_hat)")
    p = python(repo, "scripts/restamp.py", "cells")
    assert "keep" in p.stdout and "the tiny runs differ (nalu/units/nac.py)" in p.stdout and "re-stamped 0, kept 1" in p.stdout
    assert metrics_path.read_text() == before
    assert "its code changed (nalu/units/nac.py)" in status(repo)


def test_code_not_in_history_is_not_restamped(repo):
    metrics_path = next((repo / "cells").rglob("metrics.json"))
    m = json.loads(metrics_path.read_text())
    m["code"]["nalu/train.py"] = "0000000000000000"  # a version no commit holds
    metrics_path.write_text(json.dumps(m))
    p = python(repo, "scripts/restamp.py", "cells")
    assert "its recorded code is not in git history" in p.stdout and "re-stamped 0, kept 1" in p.stdout


def test_a_moved_module_that_computes_the_same_is_restamped(repo):
    """A module moved (its recorded path gone, its importers edited): the record's code is found
    as a whole commit, the tiny runs agree, and the record names the new path."""
    metrics_path = next((repo / "cells").rglob("metrics.json"))
    before = json.loads(metrics_path.read_text())
    assert "nalu/seeding.py" in before["code"]
    git(repo, "mv", "nalu/seeding.py", "nalu/seeds.py")
    for f in repo.rglob("*.py"):
        text = f.read_text()
        if "nalu.seeding" in text:
            f.write_text(text.replace("nalu.seeding", "nalu.seeds"))
    git(repo, "commit", "-qam", "move nalu/seeding.py")
    assert "its code changed (" in status(repo) and "nalu/seeding.py" in status(repo)
    p = python(repo, "scripts/restamp.py", "cells")
    assert "re-stamped 1, kept 0" in p.stdout, p.stdout + p.stderr
    after = json.loads(metrics_path.read_text())
    assert after["members"] == before["members"]
    assert "nalu/seeds.py" in after["code"] and "nalu/seeding.py" not in after["code"]
    assert status(repo).startswith("status: up to date")
