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
