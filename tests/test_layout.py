"""The layering: ``nalu/`` is a torch library that knows nothing of the suite around it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import ROOT

APPLICATION = ("hydra", "omegaconf", "pandas", "matplotlib", "wandb", "suite", "tasks", "baselines")
LIBRARY = sorted(p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
                 for p in (ROOT / "nalu").rglob("*.py"))


@pytest.mark.parametrize("module", LIBRARY)
def test_a_library_module_imports_nothing_of_the_application(module):
    code = (f"import sys, {module}; bad = sorted({{m.split('.')[0] for m in sys.modules}} & {set(APPLICATION)!r}); "
            "print(','.join(bad))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "", f"{module} imports {p.stdout.strip()}"


def test_every_task_config_names_a_task():
    """Tasks are found through their config (``entry: module:attribute``), never by file name."""
    from omegaconf import OmegaConf

    from suite.config import task_of
    from tasks import Task

    configs = sorted((ROOT / "configs" / "task").glob("*.yaml"))
    assert len(configs) >= 10
    for path in configs:
        cfg = OmegaConf.create({"task": OmegaConf.load(path)})
        assert isinstance(task_of(cfg), Task), path.name
    assert not (ROOT / "tasks" / "static_arithmetic.py").exists()  # the alias modules are gone


def test_the_task_entry_is_not_hashed():
    """Moving a task's code changes its entry, not the cells' identity (the code is digested apart)."""
    from suite.record import config_hash

    from .conftest import compose

    cfg = compose(["task=identity"])
    moved = cfg.copy()
    moved.task.entry = "tasks.elsewhere:TASK"
    assert config_hash(cfg) == config_hash(moved)


def test_the_test_files_make_test_starts_first_are_there():
    """A test file renamed or removed would fall silently out of LONGEST_FIRST's order."""
    from .conftest import LONGEST_FIRST

    assert [n for n in LONGEST_FIRST if not (ROOT / "tests" / n).is_file()] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
