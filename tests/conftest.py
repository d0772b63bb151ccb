"""Shared test helpers: compose the real Hydra config, run real cells on tiny budgets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

os.environ.setdefault("WANDB_MODE", "disabled")
torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[1]

# budgets that keep one cell to about a second
TINY = [
    "progress=false", "task.steps=30", "task.eval_every=10", "seeds=2",
]  # fmt: skip
TINY_ARITHMETIC = TINY + [
    "task.test_samples=200", "task.extrapolation_samples=20", "task.reference.members=4",
]  # fmt: skip
TINY_IDENTITY = TINY + ["task.table5.points=101"]


def compose(overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from nalu.run import CONFIG_DIR

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        return hydra_compose("config", overrides)


def cli(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``python <args>`` as a user would, in ``cwd``."""
    env = {**os.environ, "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "0"}
    p = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=600)  # fmt: skip
    if check and p.returncode != 0:
        raise AssertionError(f"{args} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty folder to run the CLI in (its runs/ and multirun/ land here)."""
    return tmp_path
