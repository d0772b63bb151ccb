"""Table 1 and the units table on hand-made metrics: seed choice, the oracle view, divergence
counting, scaled scores, both success thresholds, refusals."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from suite.tables import units
from suite.tables.common import quantiles
from suite.tables.table1 import cell_rows, selection_text, verdict
from tasks.metrics import VALIDATION

from .conftest import cli


def member(seed, validation, interp, extrap, diverged=False, ref=100.0):
    m = {"validation": validation, "interpolation": interp, "extrapolation": extrap}
    return {"seed": seed, "diverged": diverged, "best_step": 10 * seed, "best": m, "final": m,
            "init": {"interpolation": 50.0, "extrapolation": 50.0},
            "reference": {"interpolation": ref, "extrapolation": ref}}


def test_chosen_seed_is_lowest_validation_among_non_diverged():
    cell = {"task": "static_arithmetic", "label": "a*b", "model": "nalu", "members": [
        member(0, validation=5.0, interp=5.0, extrap=50.0),
        member(1, validation=0.1, interp=0.1, extrap=1e9, diverged=True),  # best but diverged
        member(2, validation=1.0, interp=1.0, extrap=2.0),
        member(3, validation=float("nan"), interp=float("nan"), extrap=float("nan")),
    ]}
    interp, extrap = cell_rows(cell, "best", "random", solved_below=3.0)
    assert interp["chosen_seed"] == 2 and interp["ours"] == 1.0
    assert extrap["ours"] == 2.0
    assert extrap["diverged"] == 1 and extrap["seeds"] == 4
    assert extrap["solved"] == 1  # seed 2 only: diverged and NaN seeds are never solved
    assert extrap["median"] == math.inf  # two of four seeds are non-finite
    own = cell_rows(cell, "best", "init", solved_below=3.0)[1]
    assert own["ours"] == 4.0  # scaled by the model's own initial MSE (50) instead of 100


def test_quantiles_treat_non_finite_as_infinite():
    assert quantiles(np.array([1.0, 2.0, 3.0])) == (1.5, 2.0, 2.5)
    assert quantiles(np.array([1.0, np.nan, np.inf]))[1] == math.inf


def test_verdict():
    assert verdict(0.01, 0.0) == "match"
    assert verdict(3.0, 0.0) == "worse"
    assert verdict(0.0, 5.3) == "better"
    assert verdict(2000.0, math.inf) == "match (>999)"
    assert verdict(27.0, math.inf) == "better"
    assert verdict(20.0, 10.0) == "x2"
    assert verdict(math.inf, 97.9) == "x>1000"  # was "worse", a word kept for the paper's 0.0
    assert verdict(5.8e28, 100.0) == "x>1000"  # was "x5.8e+26"


def test_oracle_is_the_best_seed_on_the_range_itself():
    cell = {"task": "static_arithmetic", "label": "a+b", "model": "nalu", "members": [
        member(0, validation=5.0, interp=5.0, extrap=0.01),  # extrapolates, but validation does not pick it
        member(1, validation=0.1, interp=0.1, extrap=0.001, diverged=True),  # diverged seeds are no oracle
        member(2, validation=1.0, interp=1.0, extrap=2.0),
    ]}
    interp, extrap = cell_rows(cell, "best", "random", solved_below=0.05)
    assert (extrap["ours"], extrap["oracle"]) == (2.0, 0.01)
    assert (interp["ours"], interp["oracle"]) == (1.0, 1.0)


def test_selection_text_sorts_the_papers_zero_cells_by_what_prints_zero():
    df = pd.DataFrame([
        {"task": "static", "range": "extrapolation", "function": "a+b", "model": "nac", "ours": 0.0, "oracle": 0.0, "paper": 0.0},
        {"task": "static", "range": "extrapolation", "function": "a*b", "model": "nalu", "ours": 3.0, "oracle": 0.01, "paper": 0.0},
        {"task": "static", "range": "extrapolation", "function": "a^2", "model": "nalu", "ours": 9.0, "oracle": 4.0, "paper": 0.0},
        {"task": "static", "range": "extrapolation", "function": "a/b", "model": "nac", "ours": 9.0, "oracle": 4.0, "paper": 7.0},
        {"task": "static", "range": "interpolation", "function": "a^2", "model": "nalu", "ours": 9.0, "oracle": 4.0, "paper": 0.0},
    ])
    text = selection_text(df)
    assert "Of the 3 extrapolation cells" in text
    assert "prints 0.0 too in 1: static nac a+b;" in text
    assert "only the oracle seed prints 0.0 in 1, where the selection rule explains the difference: static nalu a*b (3.0; oracle 0.0);" in text
    assert "no seed prints 0.0 in 1, where selection cannot explain it: static nalu a^2 (9.0; oracle 4.0)." in text


@pytest.mark.parametrize("what", ["table1", "table2", "table3", "table4", "table5", "figure4", "figure5", "units"])
def test_tables_refuse_to_write_from_no_cells(tmp_path, what):
    """With no finished runs, a table command exits non-zero in one line and leaves the folder
    it would write (here holding an earlier table) untouched."""
    out = tmp_path / "out"
    out.mkdir()
    (out / f"{what}.md").write_text("the committed table")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    args = [what, "--out", str(out), "--evidence", str(empty), str(tmp_path / "absent.jsonl")]
    p = cli(["-m", "suite.tables", *args], cwd=tmp_path, check=False)
    assert p.returncode != 0
    assert p.stderr.strip().splitlines()[-1].startswith("error: no finished") and "nothing written" in p.stderr
    assert "Traceback" not in p.stderr
    assert sorted(f.name for f in out.iterdir()) == [f"{what}.md"] and (out / f"{what}.md").read_text() == "the committed table"


def test_units_count_seeds_under_both_thresholds(tmp_path):
    def seed(k, extrap, ours, published):
        return {"seed": k, "diverged": False, "best": {"extrapolation": extrap}, "solved": extrap < ours,
                "success_threshold": ours, "solved_published": extrap < published, "sparsity_error": 0.0}

    (tmp_path / "history.csv").write_text("step,seed,metric,value\n10,0,extrapolation,1.0\n10,1,extrapolation,1.0\n")
    cell = {"label": "a+b", "model": "nau", "steps": 10, "run_dir": str(tmp_path), "config": {"task": {"success": {"epsilon": 1e-5}}},
            "members": [seed(0, 1.05, 1.1, 1.0), seed(1, 0.5, 1.1, 1.0), seed(2, 2.0, 1.1, 1.0)]}
    row = units.rows([cell]).iloc[0]
    assert (row.solved, row.solved_published, row.seeds) == (2, 1, 3)
    assert units.shown(units.with_paper(units.rows([cell])))["success, published threshold"].iloc[0] == "1/3"


@pytest.mark.parametrize("what", ["table1", "figure4", "curves"])
def test_tables_refuse_an_output_folder_they_cannot_write(tmp_path, what):
    """An --out that cannot be made (here, a path through a file) is refused in one line before
    any table is built (a read-only folder is refused the same way; as root, chmod cannot show it)."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    out = blocker / "results"
    args = {"table1": ["table1", "--out", str(out)], "figure4": ["figure4", "--out", str(out)],
            "curves": ["curves", str(tmp_path), "--out", str(out / "curves.png")]}[what]
    p = cli(["-m", "suite.tables", *args], cwd=tmp_path, check=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [f"error: cannot write to {out}: Not a directory"], p.stderr


def test_figure5_sets_every_nac_wiring_beside_the_papers_nac_curve():
    from suite.tables.figure5 import paper_beside_ours, paper_points

    df = pd.DataFrame({"agent": ["a3c_nac:clock_only", "a3c_nac:feedback", "a3c"], "command": [15, 15, 15],
                       "mean": [0.5, -0.25, 0.125]})
    t = paper_beside_ours(paper_points(), df)
    assert list(t.columns) == ["paper's agent", "command", "paper", "ours", "ours, feedback", "ours, clock_only"]
    nac15, a3c15 = (t[(t["paper's agent"] == a) & (t.command == "15")].iloc[0] for a in ("A3C + NAC", "A3C"))
    assert (nac15["ours"], nac15["ours, feedback"], nac15["ours, clock_only"]) == ("n/a", "-0.25 (at 15)", "+0.50 (at 15)")
    assert (a3c15["ours"], a3c15["ours, feedback"], a3c15["ours, clock_only"]) == ("+0.12 (at 15)", "", "")


def test_table2_keeps_the_grid_point_whose_chosen_seed_validates_best_and_names_it():
    from suite.tables.table2 import select

    def cell(run, validations, diverged=()):
        return {"run": f"table2_nalu_grid/{run}", "kind": "counting", "model": "nalu",
                "members": [{"seed": i, "diverged": i in diverged, "best": {VALIDATION: v}}
                            for i, v in enumerate(validations)]}

    a, b = cell("model.gate_bias=null", [0.9, 0.5]), cell("model.gate_bias=3.0", [0.3, 0.8], diverged=(1,))
    lone = {**cell("model=nac", [0.1]), "model": "nac"}
    picked, grid = select([a, b, lone])
    assert picked == [b, lone]
    assert grid == {("counting", "nalu"): "model.gate_bias=3.0 (1 of 2)"}
    # a diverged seed never represents its cell, however low its last validation error
    assert select([cell("x", [0.4]), cell("y", [0.01, 0.5], diverged=(0,))])[0][0]["run"].endswith("x")


def test_the_units_table_counts_the_same_seeds_under_each_criterion_and_names_where_they_disagree():
    from suite.tables.units import criteria_text, rows

    def member(extrapolation, solved, diverged=False):
        return {"seed": 0, "diverged": diverged, "best": {"extrapolation": extrapolation},
                "reference": {"extrapolation": 1000.0}, "solved": solved, "solved_published": solved,
                "sparsity_error": 0.0, "solved_at": 100 if solved else None}

    # scaled scores 0.01 (prints 0.0, solved), 0.04 (prints 0.0, not solved), 1.0, and a diverged seed
    cell = {"label": "a+b", "model": "nac", "steps": 50_000, "config": {"task": {"success": {"epsilon": 1e-5}}},
            "members": [member(0.1, True), member(0.4, False), member(10.0, False), member(1e-6, False, True)]}
    df = rows([cell])
    assert (df.solved.item(), df.solved_published.item(), df.printed_zero.item(), df.seeds.item()) == (1, 1, 2, 4)
    text = criteria_text(df)
    assert "They agree on 0 of 1 cells" in text and "- a+b NAC (50,000 steps): success 1, published threshold 1, prints 0.0 2 of 4" in text
    assert "They agree on 1 of 1 cells" in criteria_text(df.assign(printed_zero=1))


def test_the_primer_totals_sum_each_units_seeds_over_its_ranges_with_a_wilson_interval():
    from nalu.scoring import wilson_interval
    from suite.tables.primer import totals

    df = pd.DataFrame([("a*b", "nmu", "NMU", 25, 25), ("a*b", "nmu", "NMU", 15, 25), ("a*b", "unit", "DMU", 0, 25),
                       ("a/b", "unit", "DMU", 3, 25)], columns=["function", "model", "unit", "solved", "seeds"])
    t = totals(df)
    assert t[["function", "unit", "solved", "seeds"]].values.tolist() == [["a*b", "NMU", 40, 50], ["a*b", "DMU", 0, 25],
                                                                          ["a/b", "DMU", 3, 25]]
    assert (t.rate_lo.iloc[0], t.rate_hi.iloc[0]) == wilson_interval(40, 50) and t.rate.iloc[0] == 0.8
