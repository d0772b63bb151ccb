"""Shared test helpers: compose the real Hydra config, run real cells on tiny budgets."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

os.environ.setdefault("WANDB_MODE", "disabled")
torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[1]

# budgets that keep one cell to about a second; the autograd step, since compiling the step
# (nalu.fast, the default) costs seconds per cell: tests of the compiled path ask for it
TINY = [
    "progress=false", "task.steps=30", "task.eval_every=10", "seeds=2", "train_step=autograd",
]
TINY_ARITHMETIC = TINY + [
    "task.test_samples=200", "task.extrapolation_samples=20", "task.reference.members=4",
]
TINY_IDENTITY = TINY + ["task.table5.points=101"]


# make test hands whole files to its workers (--dist loadfile) in collection order. xdist's default
# order (--loadscope-reorder: most tests first) put the files of a few long tests last (test_fused,
# test_checkpoint, test_dnc, test_cluster: 12, 12, 9 and 6 tests, among the longest in all), where one
# can keep a worker busy after the other has run out of files. So make test keeps this order
# (--no-loadscope-reorder) and this hook puts the files whose tests take longest in all first. The
# order is from `pytest -n 1 --durations=60` (one worker, on a machine busy with two training runs),
# summed per file; a file not named keeps its place after these.
LONGEST_FIRST = ("test_fused.py", "test_cli.py", "test_checkpoint.py", "test_gridworld.py", "test_fast.py",
                 "test_cluster.py", "test_dnc.py", "test_evidence.py", "test_mnist_series.py",
                 "test_translation.py", "test_byo_unit.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's own order is kept


TRAIN, VAL, TEST = 10, 20, 30  # first pixel of every fake MNIST image tells its split


def make_fake_mnist(root: Path) -> Path:
    """A small MNIST in IDX files under ``root`` whose first pixel marks the split (the last 40
    training images are the ones the task holds out for validation)."""
    import numpy as np

    from tasks.mnist import data as mnist_data

    rng = np.random.default_rng(0)

    def split(n, mark):
        x = rng.integers(0, 256, size=(n, 784)).astype(np.float64)
        x[:, 0] = mark
        return (x / 256).astype(np.float32), rng.integers(0, 10, size=n)

    (tx, ty), (vx, vy), (sx, sy) = split(160, TRAIN), split(40, VAL), split(60, TEST)
    raw = mnist_data.raw_dir(root)
    raw.mkdir(parents=True)
    for name, content in mnist_data.to_idx(((tx, ty), (vx, vy), (sx, sy))).items():
        (raw / name).write_bytes(content)
    return root


def compose(overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from suite.config import CONFIG_DIR

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        return hydra_compose("config", overrides)


def cli(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``python <args>`` as a user would, in ``cwd``: a ``-m`` command forked from a process
    that imported the suite once (``tests/forked.py``), where that runs it as a new interpreter would."""
    env = {**os.environ, **COMMAND_ENV}
    if forked().forks(args, cwd, env):
        p = forked().run(args, cwd, timeout=600)
    else:
        p = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def build_table(what: str, sweeps: list[Path], cwd: Path, out: Path, name: str | None = None,
                extra: list[str] = ()) -> Path:
    """A make target's last two steps, as its recipe runs them: the sweeps' evidence into
    ``<cwd>/evidence/<name>.jsonl`` (``suite.evidence``), then the table from that alone."""
    name = name or what
    evidence = cwd / "evidence"
    cli(["-m", "suite.evidence", name, *map(str, sweeps), "--out", str(evidence)], cwd)
    cli(["-m", "suite.tables", what, "--evidence", str(evidence / f"{name}.jsonl"), "--out", str(out),
         "--name", name, *extra], cwd)
    return evidence / f"{name}.jsonl"


_FORKED = []
COMMAND_ENV = {"WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "0"}  # what cli() sets over the tests' environment
# the environment the fork server starts in, as the worker started: a test that changes the
# environment around its first command does not start the server in that test's environment
FORK_ENV = {**os.environ, **COMMAND_ENV}


def forked():
    """The worker's fork server (``tests/forked.py``), started at its first command."""
    if not _FORKED:
        from .forked import Forked

        _FORKED.append(Forked(ROOT, FORK_ENV))
        atexit.register(_FORKED[0].close)
    return _FORKED[0]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty folder to run the CLI in (its runs/ and multirun/ land here)."""
    return tmp_path


class SameDevice(torch.overrides.TorchFunctionMode):
    """Refuse any torch op whose tensor operands (beyond 0-d scalars) sit on different devices,
    except moves and indexing (``x.to``, ``copy_``, ``x[cpu_index]``), which CUDA allows too."""

    ALLOWED = {"to", "copy_", "__getitem__", "__setitem__", "cpu", "cuda", "__get__"}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") not in self.ALLOWED:
            from torch.utils._pytree import tree_flatten

            tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor) and t.dim() > 0]
            found = {t.device for t in tensors}
            if len(found) > 1:
                raise RuntimeError(f"{getattr(func, '__name__', func)} mixes devices {sorted(map(str, found))}")
        return func(*args, **kwargs)


class Stepped(Exception):
    """Raised by ``on_meta`` once a task's model and problem have taken a step on the meta device."""


def on_meta(task_run, cfg, monkeypatch) -> None:
    """Run a task's real ``run(cfg, log)`` with the device resolved to ``meta``, and in place of
    training one step (loss, backward, Adam, regularisers, post-step actions) and one evaluation.
    The step is the budget's last, where ramped regularisers are on. Not covered: ``fit``'s own
    bookkeeping and the scoring after it (``tests/test_device.py`` runs whole cells on CUDA where it exists).

    The meta device stands in for a GPU here: tensors on it carry shapes but no data. Since some
    meta kernels (matmul) accept a CPU operand where CUDA would refuse it, every op of the step also
    runs under ``SameDevice``, which refuses what CUDA refuses: a tensor a task forgot to move fails.
    """
    import types

    import tasks.cell
    from nalu import device as devices

    meta = torch.device("meta")

    def one_step(model, problem, optimizer, **_):
        with SameDevice():
            step(model, problem, optimizer)

    def step(model, problem, optimizer):
        assert all(p.device == meta for p in model.parameters())
        x, y = (t.to(meta) for t in problem.batch())
        loss = (model(x) - y).square().flatten(1).mean(1)
        assert loss.device == meta
        regularized = [m.regularizer(last, loss.detach()) for m in model.modules() if hasattr(m, "regularizer")]
        (loss + sum(regularized)).sum().backward()
        optimizer.step()
        for m in model.modules():
            if hasattr(m, "after_step"):
                m.after_step(last, loss.detach())
        with torch.no_grad():
            metrics = problem.evaluate(model)
        assert metrics and all(v.device == meta for v in metrics.values()), {k: v.device for k, v in metrics.items()}
        raise Stepped

    cfg.seeds = list(range(cfg.seeds))  # (the runner's job)
    last = cfg.task.steps
    if "fused" in cfg.optimizer:
        cfg.optimizer.fused = False  # fused Adam has no meta kernel (it has CPU and CUDA ones)
    monkeypatch.setattr(devices, "resolve", lambda name: meta)
    monkeypatch.setattr(tasks.cell, "fit", one_step)
    with pytest.raises(Stepped):
        task_run(cfg, types.SimpleNamespace(metrics=None, name="meta"))


def make(*args: str) -> subprocess.CompletedProcess:
    """``make <args>`` in the repository as a user types it, not as a sub-make of ``make test``
    (whose MAKEFLAGS and MAKELEVEL would add its variables and "Entering directory" lines)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    return subprocess.run(["make", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
