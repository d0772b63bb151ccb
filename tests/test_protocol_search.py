"""Table 1's protocol search (issue 35): the distance to the paper's printed baseline rows, and a
tiny search end to end, blind to the NALU."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from suite.tables.protocol_search import CAP, decades_outside, distances

from .conftest import ROOT, TINY_ARITHMETIC, build_table, cli, compose


@pytest.mark.parametrize("ours,printed,decades", [
    (0.04, "0.0", 0.0), (0.5, "0.0", 1.0), (20.9, "20.9", 0.0), (209.5, "20.9", 1.0), (2.085, "20.9", 1.0),
    (5000.0, ">999", 0.0), (99.9, ">999", 1.0), (math.inf, "0.0", CAP), (1e9, "0.0", CAP), (math.nan, "4.3", CAP)])
def test_decades_outside_the_interval_a_printed_value_stands_for(ours, printed, decades):
    assert decades_outside(ours, printed) == pytest.approx(decades)


def test_a_protocol_matching_every_printed_row_is_at_distance_zero_and_ranks_first():
    from suite.tables.protocol_search import paper_rows

    paper = paper_rows()
    exact = paper.assign(score=[(999.5 if p.startswith(">") else float(p)) for p in paper.paper])
    off = exact.assign(score=exact.score * 10 + 1)
    rows = []
    for name, frame in (("good", exact), ("bad", off)):
        rows.append(frame.assign(range=name, subset_ratio=0.25, overlap_ratio=0.5, interpolation="U",
                                 reference="mlp")[["range", "subset_ratio", "overlap_ratio", "interpolation",
                                                   "reference", "model", "function", "test_range", "score"]])
    ranked, _ = distances(pd.concat(rows))
    assert list(ranked["range"]) == ["good", "bad"] and ranked.distance.iloc[0] == 0.0
    assert ranked.cells.iloc[0] == 36 and ranked.exact.iloc[0] == 36 and ranked.distance.iloc[1] > 0.9


def test_tiny_protocol_search_end_to_end_never_runs_the_nalu(workdir):
    cli(["-m", "suite.run", "-m", "+experiment=protocol_search", "task.range=u1_2,u01_1", "task.subset_ratio=0.25",
         "task.overlap_ratio=0.5", "task.op=mul", *TINY_ARITHMETIC], workdir)
    out = workdir / "results"
    build_table("protocol_search", [workdir / "multirun/protocol_search"], workdir, out)
    ranked = pd.read_csv(out / "protocol_search.csv")
    assert len(ranked) == 2 * 3  # 2 protocols x 3 references
    assert set(ranked.reference) == {"mlp", "variance", "mean_square"} and (ranked.cells == 6).all()  # 3 models x 1 op x 2 ranges
    md = (out / "protocol_search.md").read_text()
    assert "Madsen & Johansen's protocol" in md and "| nalu " not in md
    assert not list((workdir / "multirun/protocol_search").glob("*model=nalu*"))


def test_the_recurrent_search_scores_the_lstm_and_relu_rnn_rows_per_range_and_state_width(workdir):
    cli(["-m", "suite.run", "-m", "+experiment=protocol_search_recurrent", "task.range=u01_1",
         "task.hidden.rnn=[2],[4]", "task.op=mul", "task.length=3", "task.extrapolation_length=40",
         *TINY_ARITHMETIC, "task.eval_every=10"], workdir)
    out = workdir / "results"
    build_table("protocol_search", [workdir / "multirun/protocol_search_recurrent"], workdir, out,
                name="protocol_search_recurrent")
    ranked = pd.read_csv(out / "protocol_search_recurrent.csv")
    assert len(ranked) == 2 * 3  # 2 widths x 3 references
    assert set(ranked.width) == {2, 4} and set(ranked.reference) == {"lstm", "variance", "mean_square"}
    assert (ranked.cells == 4).all()  # LSTM and ReLU RNN x 1 op x 2 test ranges
    md = (out / "protocol_search_recurrent.md").read_text()
    assert "| relu " in md and "| lstm " in md and "| nalu " not in md and "| nac " not in md
    assert "a state of 2) is not among the candidates." in md  # U[1, 2], the default, was not run
    assert not list((workdir / "multirun/protocol_search_recurrent").glob("*model=na*"))


def test_the_recurrent_search_matches_the_paper_rows_of_its_own_half_only():
    from suite.tables.protocol_search import RECURRENT, paper_rows

    rows = paper_rows(RECURRENT)
    assert len(rows) == 24 and set(rows.model) == {"lstm", "relu"}
    assert (rows[rows.test_range == "interpolation"].paper == "0.0").all()


@pytest.mark.parametrize("k", [1, 2, 3])
def test_table1_under_protocol_k_uses_the_kth_best_data_protocol_of_the_committed_search(k):
    """VARIANT=protocol<k> is chosen from the baselines alone: the k-th distinct (range, subsets,
    overlap) in the committed ranking, whichever reference ranked it; its seeds100 variant the same data."""
    ranked = pd.read_csv(ROOT / "results" / "protocol_search.csv")
    data = ranked.drop_duplicates(["range", "subset_ratio", "overlap_ratio"]).iloc[k - 1]
    names = [f"table1_static_protocol{k}", *(["table1_static_protocol1_seeds100", "units_protocol1"] if k == 1 else [])]
    for name in names:
        task = compose([f"+experiment={name}"]).task
        assert (task.range, task.subset_ratio, task.overlap_ratio) == (data["range"], data.subset_ratio,
                                                                         data.overlap_ratio), name
