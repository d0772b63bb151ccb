"""Which data did the paper use? Table 1's protocol searched against the paper's own baseline rows,
blind to the NALU (``make reproduce-protocol-search``; ``VARIANT=recurrent``: the recurrent half).

Each search is a ``Search``: the task whose cells it reads, the paper's baseline columns it scores
(static: None, ReLU6, NAC; recurrent: LSTM, ReLU RNN), the readings of the paper's reference, and
the protocol knobs it varies. Its table's description is the ``Search``'s ``about``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from suite.tables import table1
from suite.tables.common import (
    load_cells,
    machines,
    paper,
    require,
    save_figure,
    to_markdown,
    write_table,
)
from tasks.metrics import EXTRAPOLATION, INTERPOLATION

STATIC_ABOUT = """\
Every candidate protocol (the input range, the subset size and the overlap of ``a`` and ``b``;
``configs/experiment/protocol_search.yaml``) trains the three static baseline columns, None,
ReLU6 and NAC, on all six functions. Each cell's score is the median over its seeds of the scaled
score ``100 * MSE / MSE(reference)`` at the seed's best validation step, under each reading of the
paper's "relative to a randomly initialized model": the mean MSE of random ReLU6 MLPs of the
baseline shape (``mlp``, this suite's default), the targets' variance (``variance``: the MSE of
predicting the test set's mean), or their mean square (``mean_square``: of predicting 0). A
protocol's *distance* is the root mean square, over the paper's 36 baseline cells (3 models x 6
functions x 2 ranges), of how many decades our score lies outside the interval the paper's
printed value stands for (0.0: below 0.05; 20.9: 20.85 to 20.95; >999: above 999), each cell's
term capped at 3 decades. The NALU never enters. ``least_squares`` columns give the exact
converged linear fit beside the trained None, as a check of its training."""

RECURRENT_ABOUT = """\
Every candidate protocol (the input range, the same for training and for the sequences of length
1,000, and the state width of both baselines; ``configs/experiment/protocol_search_recurrent.yaml``)
trains the paper's two recurrent baseline columns, the LSTM and the ReLU RNN, on all six functions.
Each cell's score is the median over its seeds of the scaled score ``100 * MSE / MSE(reference)`` at
the seed's best validation step, under each reading of the paper's "relative to a randomly
initialized model": the mean MSE of random LSTMs of the baseline shape (``lstm``, this suite's
default for the recurrent task), the targets' variance (``variance``) or their mean square
(``mean_square``). A protocol's *distance* is the root mean square, over the paper's 24 recurrent
baseline cells (2 models x 6 functions x 2 ranges), of how many decades our score lies outside the
interval the paper's printed value stands for (0.0: below 0.05), each cell's term capped at 3
decades. The paper says "all models interpolate successfully" (both baselines print 0.0 on every
function) and prints their extrapolation at length 1,000 between 34.1 and 863.5. The NALU and the
NAC never enter."""

CAP = 3.0  # decades: one cell's largest term


@dataclass(frozen=True)
class Search:
    """One half of Table 1's protocol search: which cells, scored against which paper rows."""

    task: str  # the evidence's task
    paper_task: str  # the paper's Table 1 half: static | recurrent
    models: dict[str, str]  # our baseline -> the paper's column
    references: tuple[str, ...]  # readings of "relative to a randomly initialized model"; the suite's first
    protocol: tuple[str, ...]  # the knobs a candidate sets
    default: dict  # the suite's default protocol
    default_name: str  # how the table names it
    title: str  # the figure's
    about: str  # the table's description

    def protocol_of(self, cell: dict) -> dict:
        t = cell["config"]["task"]
        if self.paper_task == "static":
            knobs = {"range": t["range"], "subset_ratio": t["subset_ratio"], "overlap_ratio": t["overlap_ratio"]}
        else:
            knobs = {"range": t["range"], "width": t["hidden"]["rnn"][0]}
        return {**knobs, "interpolation": f"U[{t['interpolation']['low']:g}, {t['interpolation']['high']:g}]"}

    def describe(self, row: pd.Series) -> str:
        if self.paper_task == "static":
            return f"{row['range']}, subsets {row.subset_ratio:g}, overlap {row.overlap_ratio:g}"
        return f"{row['range']}, state {int(row.width)}"

    def is_default(self, ranked: pd.DataFrame) -> pd.Series:
        return np.logical_and.reduce([ranked[k] == v for k, v in self.default.items()])


STATIC = Search(
    task="static_arithmetic", paper_task="static", models={"none": "none", "relu6": "relu6", "nac": "nac"},
    references=("mlp", "variance", "mean_square"), protocol=("range", "subset_ratio", "overlap_ratio"),
    default={"range": "u1_2", "subset_ratio": 0.25, "overlap_ratio": 0.5},
    default_name="Madsen & Johansen's protocol (this suite's default: U[1, 2], subsets of 25% overlapping by half)",
    title="Table 1's protocol, searched against the paper's None, ReLU6 and NAC rows",
    about=STATIC_ABOUT)

RECURRENT = Search(
    task="recurrent_arithmetic", paper_task="recurrent", models={"lstm": "lstm", "rnn_relu": "relu"},
    references=("lstm", "variance", "mean_square"), protocol=("range", "width"),
    default={"range": "u1_2", "width": 2},
    default_name="Madsen & Johansen's protocol (this suite's default: U[1, 2], a state of 2)",
    title="Table 1's recurrent protocol, searched against the paper's LSTM and ReLU RNN rows",
    about=RECURRENT_ABOUT)

SEARCHES = (STATIC, RECURRENT)


def reference_mse(member: dict, kind: str, rng: str) -> float:
    """``suite.tables.table1.reference_mse``, whose random models of the baseline shape (ReLU6 MLPs for
    the static task, LSTMs for the recurrent one) are this table's ``mlp`` and ``lstm``."""
    return table1.reference_mse(member, "random" if kind in ("mlp", "lstm") else kind, rng)


def scores(cells: list[dict], search: Search = STATIC) -> pd.DataFrame:
    """One row per (protocol, model, function, range, reference): the median scaled score over
    seeds (diverged seeds as +inf), and the least-squares linear fit's (static task; NaN otherwise)."""
    rows = []
    for c in cells:
        protocol = search.protocol_of(c)
        for rng in (INTERPOLATION, EXTRAPOLATION):
            for kind in search.references:
                score = [math.inf if m["diverged"] else 100 * m["best"][rng] / reference_mse(m, kind, rng)
                         for m in c["members"]]
                lsq = [100 * m["least_squares"][rng] / reference_mse(m, kind, rng) if "least_squares" in m
                       else math.nan for m in c["members"]]
                rows.append({**protocol, "model": search.models.get(c["model"], c["model"]), "function": c["label"],
                             "range_": rng, "reference": kind,
                             "score": float(np.median(np.nan_to_num(score, nan=math.inf))),
                             "least_squares": float(np.median(lsq))})
    return pd.DataFrame(rows).rename(columns={"range_": "test_range"})


def decades_outside(ours: float, printed: str) -> float:
    """How many decades ``ours`` lies outside the interval the paper's printed one-decimal value
    stands for (0 inside it), capped at ``CAP``."""
    if math.isnan(ours):
        return CAP
    if printed.startswith(">"):
        lo, hi = 999.0, math.inf
    else:
        p = float(printed)
        lo, hi = max(p - 0.05, 0.0), p + 0.05
    if lo <= ours < hi:
        return 0.0
    if ours < lo:
        return min(CAP, math.log10(lo / max(ours, 1e-12)))
    return min(CAP, math.log10(ours / hi)) if math.isfinite(ours) else CAP


def paper_rows(search: Search = STATIC) -> pd.DataFrame:
    ref = paper("table1")
    return ref[(ref.task == search.paper_task) & ref.model.isin(list(search.models.values()))].rename(
        columns={"range": "test_range", "score": "paper"})


def distances(df: pd.DataFrame, search: Search = STATIC) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per protocol and reference with its distance and cells, ranked; every cell's term)."""
    merged = paper_rows(search).merge(df, on=["test_range", "function", "model"], how="inner")
    merged["decades"] = [decades_outside(o, p) for o, p in zip(merged.score, merged.paper, strict=True)]
    keys = [*search.protocol, "interpolation", "reference"]
    ranked = (merged.groupby(keys).agg(distance=("decades", lambda d: float(np.sqrt(np.mean(np.square(d))))),
                                       cells=("decades", "size"), exact=("decades", lambda d: int((d == 0).sum())),
                                       median=("decades", "median"), q25=("decades", lambda d: d.quantile(0.25)),
                                       q75=("decades", lambda d: d.quantile(0.75)))
              .reset_index().sort_values(["distance", *keys]).reset_index(drop=True))
    ranked.insert(0, "rank", range(1, len(ranked) + 1))
    return ranked, merged


def plot(ranked: pd.DataFrame, path: Path, caption: str, search: Search = STATIC) -> None:
    fig, ax = plt.subplots(figsize=(9, 4.5))
    colours = dict(zip(search.references, ("tab:blue", "tab:orange", "tab:green"), strict=True))
    for kind, g in ranked.groupby("reference"):
        ax.scatter(g["rank"], g.distance, s=14, color=colours[kind], label=f"reference: {kind}")
    mj = ranked[search.is_default(ranked)]
    mj = mj[mj.reference == search.references[0]]
    if len(mj):
        ax.scatter(mj["rank"], mj.distance, s=80, facecolors="none", edgecolors="k",
                   label=search.default_name.split(" (")[0] + " (this suite's default)")
    ax.set_xlabel("candidate protocol, by rank")
    ax.set_ylabel("distance to the paper's baseline rows (RMS decades)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.set_title(search.title, fontsize=10)
    fig.text(0.01, 0.01, caption, fontsize=6, wrap=True)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    save_figure(fig, path)


def build(evidence: Path | list[Path], out: Path, name: str = "protocol_search") -> list[Path]:
    evidence = [evidence] if isinstance(evidence, Path | str) else list(evidence)
    cells = [c for c in load_cells(*evidence) if "range" in c["config"]["task"]]
    search = next((s for s in SEARCHES if any(c["task"] == s.task for c in cells)), STATIC)
    cells = require([c for c in cells if c["task"] == search.task], "protocol-search", evidence,
                    "reproduce-protocol-search")
    df = scores(cells, search)
    ranked, merged = distances(df, search)
    c = cells[0]
    t = c["config"]["task"]
    data = (f"x in R^{t['input_size']}" if search.paper_task == "static" else
            f"x_t in R^{t['input_size']}, length {t['length']} (extrapolation {t['extrapolation_length']:,}, "
            f"{t['extrapolation_samples']:,} sequences), evaluated every {t['eval_every']:,} steps, "
            f"{t['reference']['members']} random LSTMs")
    caption = (f"{len(ranked) // len(search.references)} protocols x {len(search.references)} references; "
               f"{c['steps']:,} Adam steps (lr {c['config']['optimizer']['lr']}, batch {t['batch_size']}), "
               f"{len(c['seeds'])} seeds per cell, {data}. {machines(cells)}")
    best = ranked.iloc[0]
    keys = [*search.protocol, "reference"]
    mine = merged[(merged[keys] == best[keys]).all(axis=1)]
    columns = ["test_range", "function", "model", "paper", "score",
               *(["least_squares"] if search.paper_task == "static" else []), "decades"]
    beside = mine[columns].sort_values(["test_range", "model", "function"])
    worst_everywhere = (merged.groupby(["test_range", "function", "model"]).decades.min().reset_index()
                        .query("decades > 0.30103"))  # no protocol within a factor of 2
    fmt = lambda x: "inf" if not math.isfinite(x) else f"{x:.3g}"  # noqa: E731
    top = ranked.head(12).drop(columns=["q25", "q75"]).assign(distance=lambda d: d.distance.map(lambda x: f"{x:.3f}"),
                                                              median=lambda d: d["median"].map(lambda x: f"{x:.2f}"))
    mj = ranked[search.is_default(ranked)].rename(columns={"rank": "at_rank"})
    shown = beside.assign(score=beside.score.map(fmt), decades=beside.decades.map(lambda x: f"{x:.2f}"))
    if "least_squares" in shown:
        shown = shown.assign(least_squares=beside.least_squares.map(fmt))
    title = ("# Table 1's protocol, calibrated against the paper's baseline rows" if search is STATIC else
             "# Table 1's recurrent protocol, calibrated against the paper's baseline rows")
    text = [title, caption, search.about.replace("\n", " ").strip(),
            "## The closest candidates", to_markdown(top),
            f"{search.default_name} "
            + (f"ranks {', '.join(f'{int(r.at_rank)} ({r.reference}, {r.distance:.3f})' for r in mj.itertuples())}."
               if len(mj) else "is not among the candidates."),
            f"## The best candidate's rows beside the paper's (rank 1: {search.describe(best)}, "
            f"reference {best.reference})",
            to_markdown(shown),
            "## Rows no candidate matches within a factor of 2",
            to_markdown(worst_everywhere.assign(decades=worst_everywhere.decades.map(lambda x: f"{x:.2f}")))
            if len(worst_everywhere) else "None: every paper row is matched within a factor of 2 by some candidate.",
            f"![distances]({name}.png)"]
    out.mkdir(parents=True, exist_ok=True)
    png = out / f"{name}.png"
    plot(ranked, png, caption, search)
    paths = write_table(out, name, "\n\n".join(text) + "\n", ranked)
    return [*paths, png]
