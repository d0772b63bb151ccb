"""The README's commands, as a user copies them: they call the project's environment, their
overrides compose into a config, their table commands parse, their make targets exist."""

from __future__ import annotations

import re
import shlex

import pytest
from omegaconf import OmegaConf

from suite import run
from suite import tables

from .conftest import ROOT, compose, make

README = ROOT / "README.md"
MANUAL = [README, *sorted((ROOT / "docs").glob("*.md"))]  # the README and the pages it links


def commands() -> list[str]:
    """Every command line of the manual's ``bash`` blocks (continuations joined, comments cut)."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", "".join(p.read_text() for p in MANUAL), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.split(r"\s+#\s", line)[0].strip()
            if line:
                out.append(line)
    return out


def of(prefix: str) -> list[str]:
    return [c for c in commands() if c.startswith(prefix)]


def test_python_commands_call_the_projects_environment():
    """`python` alone is not on a fresh clone's path with hydra installed: every command, in blocks
    and inline, names .venv/bin/python (which every make target builds)."""
    assert len(commands()) > 10
    for c in commands():
        assert not c.split()[0].endswith("python") or c.startswith(".venv/bin/python "), c
    for page in MANUAL:
        assert not re.findall(r"(?<![\w/.])python (?:-m (?:suite|nalu)|scripts/)", page.read_text()), page


@pytest.mark.parametrize("command", of(".venv/bin/python -m suite.run"))
def test_run_commands_compose(command):
    args = [a.replace("<partition>", "p") for a in shlex.split(command)[3:] if a != "-m" and not a.startswith("[")]
    run.check_group_choices(args)
    run.check_keys(args)
    overrides = [a.split(",")[0] if "=" in a and not a.startswith("hydra") else a for a in args
                 if not a.startswith(("hydra.", "hydra/"))]
    cfg = compose(overrides)
    OmegaConf.to_container(cfg, resolve=True)  # every interpolation resolves
    for a in args:
        if a.startswith("hydra/launcher="):
            assert (run.CONFIG_DIR / "hydra" / "launcher" / f"{a.split('=', 1)[1]}.yaml").exists(), a
    launcher = next((a.split("=", 1)[1] for a in args if a.startswith("hydra/launcher=")), None)
    for a in args:  # a launcher key the launcher does not have is Hydra's 7-line "not in struct" error
        if launcher and a.startswith("hydra.launcher."):
            assert a.split("=", 1)[0].removeprefix("hydra.launcher.") in launcher_keys(launcher), a


def launcher_keys(name: str) -> set[str]:
    """The keys of ``configs/hydra/launcher/<name>.yaml``, with those of the plugin preset it extends."""
    cfg = OmegaConf.load(run.CONFIG_DIR / "hydra" / "launcher" / f"{name}.yaml")
    keys = set(cfg) - {"defaults"}
    if "submitit_slurm" in list(cfg.get("defaults", [])):
        from hydra_plugins.hydra_submitit_launcher.config import SlurmQueueConf

        keys |= set(OmegaConf.structured(SlurmQueueConf))
    return keys


@pytest.mark.parametrize("command", of(".venv/bin/python -m suite.tables"))
def test_table_commands_parse(command):
    tables.parser().parse_args(shlex.split(command)[3:])


@pytest.mark.parametrize("command", of("make "))
def test_make_commands_name_targets_that_exist(command):
    p = make("-n", *shlex.split(command)[1:])
    assert p.returncode == 0, p.stderr


def test_testing_page_lists_every_test_file():
    """docs/testing.md, which the README points to, names each test module and no missing one."""
    page = (ROOT / "docs" / "testing.md").read_text()
    listed = set(re.findall(r"`(test_\w+\.py)`", page))
    present = {p.name for p in (ROOT / "tests").glob("test_*.py")}
    assert listed == present
