"""scripts/reproduce_all.py: which targets are up to date, asked of the real make targets."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from .conftest import ROOT, make

SCRIPT = ROOT / "scripts" / "reproduce_all.py"


def expected_status() -> str:
    """What the check must say of table5, from the disk: its cells to run are those of its evidence
    with no finished, same-config cell in multirun/; with none to run, whether its outputs are current."""
    sys.path.insert(0, str(SCRIPT.parent))
    from reproduce_all import TARGETS, current_outputs

    from suite.evidence import EVIDENCE_DIR, load
    from suite.record import out_of_date

    cells = load(EVIDENCE_DIR / "table5.jsonl")
    missing = sum(out_of_date(ROOT / "multirun" / c["run"], c["config_hash"], c["numerics"]) is not None for c in cells)
    if missing:  # and what they would take alone, from results/rates.csv (a pattern: the rates change)
        return re.escape(f"to run: {missing} of {len(cells)} cells to run") + r"(, projected (\d+h)?\d+m\d\ds at JOBS=1)?( \(\d+ without a rate\))?"
    why = current_outputs(next(t for t in TARGETS if t.name == "table5"))
    return re.escape(f"to run: {why}" if why else "up to date")


def test_check_asks_every_cell_of_a_target_and_runs_nothing():
    def cell_files() -> dict:  # the sweep's files, its multirun.yaml included
        files = (ROOT / "multirun" / "table5").rglob("*")
        return {p: p.stat().st_mtime_ns for p in files if p.is_file()}

    before, folders = cell_files(), sorted((ROOT / "multirun").glob("*")) if (ROOT / "multirun").exists() else []
    p = subprocess.run([sys.executable, SCRIPT, "--check", "--only", "table5"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    line = p.stdout.splitlines()[0]
    assert re.fullmatch(r"\[1/1\] make reproduce-table5 +" + expected_status(), line), line
    assert "| `make reproduce-table5` |" in p.stdout and "results/table5.md" in p.stdout
    assert cell_files() == before  # no cell was run or touched
    # and nothing was left behind (no sweep folder, no .reproduce/ logs) in a tree that had none
    after = sorted((ROOT / "multirun").glob("*")) if (ROOT / "multirun").exists() else []
    assert after == folders


def test_unknown_target_lists_the_valid_ones():
    p = subprocess.run([sys.executable, SCRIPT, "--only", "table9"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2 and "unknown target table9; valid: table1, table5, table2" in p.stderr


def test_a_targets_outputs_are_current_only_when_its_run_folders_and_builders_agree(tmp_path, monkeypatch):
    """Evidence is compared with what the run folders hold now, tables with what the builders
    make of the evidence (table3_paper: its evidence is committed; here its run folders are
    stand-ins holding one cell, or none)."""
    sys.path.insert(0, str(SCRIPT.parent))
    import reproduce_all
    from reproduce_all import Target, current_outputs

    target = Target("table3_paper", ("table3_paper.md", "table3_paper.csv", "figure3_paper.md"))
    assert current_outputs(Target("table3_paper", ("absent.md",))) == "outputs missing"
    monkeypatch.setattr(reproduce_all, "ROOT", tmp_path)  # no run folder there: the evidence is not theirs
    (tmp_path / "results").symlink_to(ROOT / "results")
    assert current_outputs(target) == "evidence to rewrite"


@pytest.mark.parametrize("seconds,text", [(59.6, "1m00s"), (3725, "1h02m05s")])
def test_clock(seconds, text):
    sys.path.insert(0, str(SCRIPT.parent))
    from reproduce_all import clock

    assert clock(seconds) == text


def test_a_dry_run_of_reproduce_all_is_its_check_and_a_real_run_never_inherits_dry_run(tmp_path, monkeypatch):
    """make reproduce-all DRY_RUN=1 only reports (it said every target 'ran ... done' though nothing
    ran); a real run starts each target without the caller's DRY_RUN."""
    p = make("-n", "reproduce-all", "DRY_RUN=1")
    assert p.returncode == 0 and p.stdout.strip().splitlines()[-1].endswith("scripts/reproduce_all.py --jobs 2 --check")
    sys.path.insert(0, str(SCRIPT.parent))
    import reproduce_all

    started = []

    class Make:
        def __init__(self, args, **kw):
            started.append((args, kw["env"]))

        def wait(self):
            return 0

    monkeypatch.setenv("DRY_RUN", "1")
    monkeypatch.setattr(reproduce_all, "STATE", tmp_path)
    monkeypatch.setattr(reproduce_all.subprocess, "Popen", Make)
    rc, _ = reproduce_all.run(reproduce_all.TARGETS[0], "head", 1, 2)
    ((args, env),) = started
    assert rc == 0 and args[-1] == "DRY_RUN=" and "DRY_RUN" not in env and "JOBS=2" in args
