"""The time each make target took (results/timings.{md,csv} and README.md's block) is what the
committed evidence records, counted once per training group."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pandas as pd
import pytest

from suite import timings
from suite.timings import busy_seconds, command, groups, timing

from .conftest import ROOT


@pytest.mark.parametrize("name,make", [("table1", "make reproduce-table1"),
                                       ("table1_paper", "make reproduce-table1 BUDGET=paper"),
                                       ("figure4_builder_long", "make reproduce-figure4 VARIANT=builder_long"),
                                       ("table3_paper_grid", "make reproduce-table3 BUDGET=paper VARIANT=grid"),
                                       ("protocol_search", "make reproduce-protocol-search"),
                                       ("protocol_search_recurrent", "make reproduce-protocol-search VARIANT=recurrent")])
def test_an_evidence_name_maps_to_the_make_command_that_writes_it(name, make):
    assert command(name) == make


def test_busy_time_joins_overlapping_and_near_groups_and_leaves_out_long_gaps():
    # two groups side by side (JOBS=2), one starting 5 min after them, one on another day
    intervals = [(0, 100), (10, 200), (500, 600), (100_000, 100_060)]
    assert busy_seconds(intervals, gap=600) == 600 + 60
    assert busy_seconds(intervals, gap=0) == 200 + 100 + 60
    assert busy_seconds([]) == 0


def cell(run, name, fused_with=(), wall=60.0, started="2026-12-05T10:00:00+0000", sittings=1):
    return {"run": f"{run}/{name}", "cell": name, "fused_with": list(fused_with), "wall_s": wall,
            "sittings": [{"started": started}] * sittings, "environment": {"cpu": "x", "cores": 2}}


def test_fused_cells_count_as_one_group_and_one_wall_time():
    cells = [cell("s", "a", ["b"], wall=120), cell("s", "b", ["a"], wall=120), cell("s", "c", wall=60,
                                                                                 started="2026-12-05T10:00:30+0000")]
    assert len(groups(cells)) == 2
    t = timing("table1", cells)
    assert (t["cells"], t["groups"], t["group_min"], t["busy_min"], t["complete"]) == (3, 2, 3.0, 2.0, True)


def test_a_cell_copied_from_its_identical_twin_took_no_time_here():
    reused = {**cell("s", "b", wall=3600), "reused_from": "table3_paper: table3_paper/b"}
    t = timing("table3_paper_grid", [cell("s", "a", wall=120), reused])
    assert (t["cells"], t["groups"], t["group_min"], t["busy_min"]) == (2, 1, 2.0, 2.0)
    alone = timing("table3_paper_grid", [reused])
    assert (alone["groups"], alone["group_min"], alone["sittings"]) == (0, 0.0, 1)


def test_a_resumed_group_whose_earlier_sittings_went_unrecorded_is_marked_as_its_last_sitting_only():
    t = timing("units_paper", [cell("s", "a", sittings=3), cell("s", "b", sittings=1)])
    assert t["sittings"] == 3 and not t["complete"] and t["group_min"] == 2.0
    assert "(last sitting)" in timings.glance(pd.DataFrame([t]))


def test_a_group_resumed_over_sittings_counts_each_sittings_time_until_its_last_checkpoint():
    # three sittings on two days: 40 min, one killed before its first checkpoint (0), then 20 min
    a = {**cell("s", "a", wall=1200.0), "sittings": [
        {"started": "2026-12-05T10:00:00+0000", "wall_s": 2400.0},
        {"started": "2026-12-06T09:00:00+0000", "wall_s": 0.0},
        {"started": "2026-12-06T09:05:00+0000", "wall_s": 1200.0}]}
    t = timing("table4_long", [a, cell("s", "b", wall=600.0, started="2026-12-06T09:05:00+0000")])
    assert (t["sittings"], t["group_min"], t["busy_min"], t["complete"]) == (3, 70.0, 65.0, True)
    assert "(last sitting)" not in timings.glance(pd.DataFrame([t]))


def test_a_group_without_a_recorded_start_leaves_the_busy_time_unknown():
    t = timing("table1_paper", [cell("s", "a", started=None), cell("s", "b")])
    assert math.isnan(t["busy_min"]) and t["group_min"] == 2.0


def test_the_committed_timings_and_the_readme_block_are_what_the_evidence_says():
    df = timings.table(ROOT / "results" / "evidence")
    assert len(df) >= 5
    committed = pd.read_csv(ROOT / "results" / "timings.csv")
    pd.testing.assert_frame_equal(committed, pd.read_csv(io.StringIO(df.to_csv(index=False))))
    assert (ROOT / "results" / "timings.md").read_text() == timings.markdown(df)
    rates = timings.rates(ROOT / "results" / "evidence")
    assert len(rates) >= 10
    pd.testing.assert_frame_equal(pd.read_csv(ROOT / "results" / "rates.csv"), pd.read_csv(io.StringIO(rates.to_csv(index=False))))
    readme = (ROOT / "README.md").read_text()
    assert f"{timings.BEGIN}\n{timings.glance(df)}\n{timings.END}" in readme


def test_rates_are_member_steps_per_second_of_one_sitting_groups_per_group_size(tmp_path):
    def timed(name, fused_with=(), wall=10.0, sittings=1, seeds=5):
        return {**cell("s", name, fused_with, wall=wall, sittings=sittings), "task": "t", "model": "m",
                "steps": 1000, "seeds": list(range(seeds)), "train_wall_s": wall}

    import json

    from suite.targets import BUILT

    cells = [timed("a", ["b"]), timed("b", ["a"]), timed("c", wall=5.0), timed("d", sittings=2)]
    (tmp_path / f"{BUILT[0].name}.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cells))
    r = timings.rates(tmp_path)
    # a+b: one group of 10 members, 1000 steps in 10 s; c alone: 5 members in 5 s; d resumed: left out
    assert r.to_dict("records") == [
        {"task": "t", "model": "m", "compile": "none", "members": 5, "groups": 1, "member_steps_per_s": 1000.0},
        {"task": "t", "model": "m", "compile": "none", "members": 10, "groups": 1, "member_steps_per_s": 1000.0}]
    compiled = {**timed("e", wall=2.5), "config": {"compile_cells": True, "model": {"compile_step": True}}}
    (tmp_path / f"{BUILT[0].name}.jsonl").write_text("".join(json.dumps(c) + "\n" for c in [*cells, compiled]))
    assert timings.rates(tmp_path).to_dict("records")[0] == {  # its own row: it trains at its own speed
        "task": "t", "model": "m", "compile": "cells", "members": 5, "groups": 1, "member_steps_per_s": 2000.0}
    # compile_forward acts on the autograd path only: a cell that trained through the compiled step is "none"
    assert timings.compiled({"compile_forward": True}, "autograd") == "forward"
    assert timings.compiled({"compile_forward": True}, "compiled") == "none"


def test_a_run_is_projected_from_the_nearest_group_size_and_warned_past_a_day(tmp_path):
    from suite.projection import projection

    from .conftest import compose

    rates = tmp_path / "rates.csv"
    rates.write_text("task,model,members,groups,member_steps_per_s\n"
                     "static_arithmetic,nalu,10,1,1000.0\nstatic_arithmetic,nalu,600,1,50000.0\n")
    cfg = compose(["model=nalu", "seeds=10", "task.steps=360000"])
    assert projection([cfg], rates) == ("projected 1.0 h here (360,000 steps x 10 members at 1,000 member-steps/s, "
                                        "the speed of committed static_arithmetic/nalu runs; another machine differs)")
    long = compose(["model=nalu", "seeds=10", "task.steps=100000000"])
    assert projection([long], rates).startswith("warning: projected 12 days here")
    assert projection([compose(["model=nalu", "seeds=10", "task.steps=5000"])], rates) is None  # under a minute
    assert projection([compose(["model=nalu", "seeds=10", "task.steps=120000"])], rates).startswith("projected 20 min here")
    assert projection([compose(["model=nac", "seeds=10", "task.steps=10000000"])], rates) is None  # no rate


def test_a_run_is_projected_from_runs_compiled_as_it_is_where_there_are_any(tmp_path):
    from suite.projection import projection

    from .conftest import compose

    def rates(name: str, rows: str) -> Path:  # a file each: the rates are read once per file and mtime
        (path := tmp_path / f"{name}.csv").write_text("task,model,compile,members,groups,member_steps_per_s\n" + rows)
        return path

    both = rates("both", "program_eval,dnc,none,10,1,50.0\nprogram_eval,dnc,cells,3,1,200.0\n")
    dnc = ["+experiment=figure4", "model=dnc", "task.kind=addition", "seeds=10", "task.steps=36000"]
    assert projection([compose([*dnc, "compile_cells=true"])], both).startswith(
        "projected 30 min here (36,000 steps x 10 members at 200 member-steps/s")  # not the nearer size's 50
    eager = projection([compose(dnc)], both)
    assert eager.startswith("projected 2.0 h here") and "which ran" not in eager
    lstm = [dnc[0], "model=lstm", *dnc[2:], "compile_cells=true"]  # the LSTM has no cells to compile: like for like
    assert projection([compose(lstm)], rates("lstm", "program_eval,lstm,none,10,1,50.0\n")) == (
        "projected 2.0 h here (36,000 steps x 10 members at 50 member-steps/s, the speed of committed "
        "program_eval/lstm runs; another machine differs)")
    assert projection([compose([*dnc, "compile_cells=true"])], rates("eager", "program_eval,dnc,none,10,1,50.0\n")) == (
        "projected 2.0 h here (36,000 steps x 10 members at 50 member-steps/s, the speed of committed "
        "program_eval/dnc runs, which ran without compile_cells or compile_forward (this one with "
        "compile_cells); another machine differs)")
