"""make verify: a rerun's table against the committed one, judged within seed-level noise."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from suite.targets import BUILT
from scripts.verify import judge, untrained
from suite.tables.verify import compare

from .conftest import ROOT


def write(path, rows):
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_medians_within_each_others_spread_have_not_moved(tmp_path):
    row = {"range": "extrapolation", "function": "a+b", "task": "static", "model": "nalu", "ours": 1.0}
    committed = write(tmp_path / "table1.csv", [
        {**row, "median": 1.0, "q25": 0.5, "q75": 2.0, "solved": 9, "seeds": 10},
        {**row, "model": "nac", "median": 0.0, "q25": 0.0, "q75": 0.0, "solved": 10, "seeds": 10},
        {**row, "model": "relu6", "median": 50.0, "q25": 40.0, "q75": 60.0, "solved": 0, "seeds": 10},
    ])
    rerun = write(tmp_path / "rerun.csv", [
        {**row, "ours": 99.0, "median": 1.8, "q25": 1.5, "q75": 4.0, "solved": 7, "seeds": 10},  # overlaps; 7/10 in 9/10's interval
        {**row, "model": "nac", "median": 3.0, "q25": 2.0, "q75": 4.0, "solved": 0, "seeds": 10},  # apart; 0/10 vs 10/10
        {**row, "model": "none", "median": 1e9, "q25": 1e9, "q75": 1e9, "solved": 0, "seeds": 10},  # no committed row
    ])
    judged, moved = compare(rerun, committed)
    assert judged == 2  # the ReLU6 row was not rerun, the linear one is not committed
    assert [(m.row, m.statistic) for m in moved] == [("extrapolation a+b static nac", "median"),
                                                      ("extrapolation a+b static nac", "solved")]
    assert moved[1].ours == "0/10" and moved[1].committed == "10/10"


def test_means_apart_by_more_than_their_spreads_have_moved(tmp_path):
    key = {"kind": "addition", "model": "nalu", "domain": 100, "metric": "mae"}
    committed = write(tmp_path / "figure4.csv", [{**key, "mean": 1.0, "two_sigma": 0.2},
                                                 {**key, "domain": 1000, "mean": 1.0, "two_sigma": 0.2}])
    rerun = write(tmp_path / "rerun.csv", [{**key, "mean": 1.3, "two_sigma": 0.2},
                                           {**key, "domain": 1000, "mean": 1.5, "two_sigma": 0.2}])
    judged, moved = compare(rerun, committed)
    assert judged == 2 and [m.row for m in moved] == ["addition nalu 1000 mae"]


def test_verify_reruns_a_sample_in_scratch_and_compares(tmp_path, capsys):
    """A tiny sample of Table 5 rerun in a scratch copy, judged against a committed table whose
    median is far away: the row is named and the exit status is 1. The rerun's table is then
    judged as the script judges it (``judge``): against itself nothing moves (that a rerun repeats
    bit for bit is test_fused's); against a table without its row nothing is judged, which fails."""
    sample = ("model=mlp model.activation_name=ReLU task.steps=20 task.eval_every=10 seeds=3 "
              "task.table5.points=101 train_step=autograd progress=false")
    far = tmp_path / "far"
    far.mkdir()
    frame = pd.read_csv(ROOT / "results" / "table5.csv")
    frame.loc[frame.nonlinearity == "relu", ["mae_median", "mae_q25", "mae_q75"]] = [1e6, 1e6, 1e6]
    frame.to_csv(far / "table5.csv", index=False)
    moved = subprocess.run([sys.executable, "scripts/verify.py", "table5", "--sample", sample, "--jobs", "1",
                            "--against", str(far), "--scratch", str(tmp_path / "first")],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    made = tmp_path / "first" / "results" / "table5.csv"
    assert made.exists(), moved.stderr[-3000:]
    assert (tmp_path / "first" / "results" / "evidence" / "table5.jsonl").exists()  # the rerun's own evidence
    log = (tmp_path / "first" / "verify.log").read_text()
    assert "reuse=null" in log and "\nreuse " not in log and "done " in log  # trained, not copied from a twin
    assert moved.returncode == 1 and "moved: relu: mae_median" in moved.stdout, moved.stdout + moved.stderr[-3000:]
    assert "table5: 1 rows judged" in moved.stdout

    capsys.readouterr()
    assert judge(made, made, "table5") == 0
    out = capsys.readouterr().out
    assert "table5: 1 rows judged" in out and "0 moved beyond seed-level noise" in out
    frame[frame.nonlinearity != "relu"].to_csv(far / "table5.csv", index=False)  # the rerun's one row is not there
    assert judge(made, far / "table5.csv", "table5") == 1
    out, err = capsys.readouterr()
    assert "table5: 0 rows judged" in out and "nothing was verified" in err


def test_a_rerun_that_copied_a_cell_or_trained_none_verifies_nothing(tmp_path, capsys):
    """A cell copied from its committed twin would be judged against itself; so would a rerun
    that wrote no evidence (the committed file is removed from the scratch first)."""
    evidence = tmp_path / "t.jsonl"
    assert untrained(evidence, "t") and "wrote no evidence" in capsys.readouterr().err
    evidence.write_text("")
    assert untrained(evidence, "t") and "trained no cell" in capsys.readouterr().err
    trained = {"run": "t/a", "members": [{"seed": 0}]}
    evidence.write_text(json.dumps(trained) + "\n" + json.dumps({**trained, "run": "t/b", "reused_from": "x"}) + "\n")
    assert untrained(evidence, "t") and "1 of 2 cells of t were copied" in capsys.readouterr().err
    evidence.write_text(json.dumps(trained) + "\n")
    assert not untrained(evidence, "t") and capsys.readouterr().err == ""


REPRODUCE = sorted(set(re.findall(r"^(reproduce-[a-z0-9-]+):", (ROOT / "Makefile").read_text(), re.M)) - {"reproduce-all"})


def variants(target: str) -> list[str]:
    """The Makefile's own list of a target's variants (its ``variants_of``), which VARIANT= accepts."""
    rule = f"print-variants: ; @echo $(call variants_of,{target})"
    return subprocess.run(["make", "-s", "--no-print-directory", "--eval", rule, "print-variants"],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


def test_the_makefile_accepts_each_variant_the_readme_names_and_the_readme_names_each():
    """The README's targets table against the Makefile's ``variants_of``: each ``VARIANT=<v>`` it
    shows is accepted, and each accepted variant is shown (as ``VARIANT=<v>`` or a bare `<v>`)."""
    rows = [line for line in (ROOT / "README.md").read_text().split("## Time here")[0].splitlines()
            if line.startswith("| `make reproduce-")]
    for target in REPRODUCE:
        mine = [line for line in rows if re.match(rf"\| `make {target}[ `]", line)]
        shown = {v for line in mine for v in re.findall(r"VARIANT=(\w+)", line)}
        bare = {v for line in mine for v in re.findall(r"`(\w+)`", line)}
        accepted = set(variants(target))
        assert mine and shown <= accepted and accepted <= shown | bare, (target, shown, accepted)


@pytest.mark.parametrize("target, variant", [(t, v) for t in REPRODUCE for v in ["", *variants(t)]],
                         ids=lambda x: x or "default")
def test_every_run_of_a_make_target_takes_verifys_sample(target, variant):
    """make verify narrows a target and turns reuse off through SAMPLE; a run that dropped it would
    copy every committed cell and pass untrained (make -n prints the recipe, running nothing). Every
    variant too: some add a sweep of their own (figure5 late_zero's ``_a3c``)."""
    def recipe(budget: str) -> subprocess.CompletedProcess:
        return subprocess.run(["make", "-n", "-o", ".venv/.installed", target, f"VARIANT={variant}", f"BUDGET={budget}",
                               "SAMPLE=marker=1"], cwd=ROOT, capture_output=True, text=True)
    done = recipe("default")
    if done.returncode and "has no sweep at BUDGET=default" in done.stderr:  # a variant of the paper's budget alone
        done = recipe("paper")
    assert done.returncode == 0, done.stderr
    printed = done.stdout
    runs = [line for line in printed.splitlines() if "-m suite.run" in line]
    assert runs and all("marker=1" in line for line in runs), runs


@pytest.mark.parametrize("built", [b for b in BUILT if (ROOT / "results" / f"{b.name}.csv").exists()],
                         ids=lambda b: b.name)
def test_every_targets_committed_table_has_rows_the_judge_can_judge(built):
    """make verify compares statistics over seeds; a target whose table carries none could only
    pass vacuously (the judge against the table itself judges at least one row)."""
    csv = ROOT / "results" / f"{built.name}.csv"
    judged, moved = compare(csv, csv)
    assert judged >= 1 and not moved
