"""Which data did the paper use? Table 1's protocol searched against the paper's own baseline rows,
blind to the NALU (``make reproduce-protocol-search``).

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
converged linear fit beside the trained None, as a check of its training.
"""

from __future__ import annotations

import math
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

MODELS = ("none", "relu6", "nac")
REFERENCES = ("mlp", "variance", "mean_square")
CAP = 3.0  # decades: one cell's largest term
PROTOCOL = ["range", "subset_ratio", "overlap_ratio"]


def reference_mse(member: dict, kind: str, rng: str) -> float:
    """``suite.tables.table1.reference_mse``, whose random ReLU6 MLPs are this table's ``mlp``."""
    return table1.reference_mse(member, "random" if kind == "mlp" else kind, rng)


def madsen_johansen(ranked: pd.DataFrame) -> pd.DataFrame:
    """The rows of Madsen & Johansen's protocol (this suite's default), one per reference."""
    return ranked[(ranked["range"] == "u1_2") & (ranked.subset_ratio == 0.25) & (ranked.overlap_ratio == 0.5)]


def scores(cells: list[dict]) -> pd.DataFrame:
    """One row per (protocol, model, function, range, reference): the median scaled score over
    seeds (diverged seeds as +inf), and the least-squares linear fit's."""
    rows = []
    for c in cells:
        t = c["config"]["task"]
        protocol = {"range": t["range"], "subset_ratio": t["subset_ratio"], "overlap_ratio": t["overlap_ratio"],
                    "interpolation": f"U[{t['interpolation']['low']:g}, {t['interpolation']['high']:g}]"}
        for rng in (INTERPOLATION, EXTRAPOLATION):
            for kind in REFERENCES:
                score = [math.inf if m["diverged"] else 100 * m["best"][rng] / reference_mse(m, kind, rng)
                         for m in c["members"]]
                lsq = [100 * m["least_squares"][rng] / reference_mse(m, kind, rng) for m in c["members"]]
                rows.append({**protocol, "model": c["model"], "function": c["label"], "range_": rng,
                             "reference": kind, "score": float(np.median(np.nan_to_num(score, nan=math.inf))),
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


def paper_rows() -> pd.DataFrame:
    ref = paper("table1")
    return ref[(ref.task == "static") & ref.model.isin(MODELS)].rename(columns={"range": "test_range",
                                                                                 "score": "paper"})


def distances(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per protocol and reference with its distance and cells, ranked; every cell's term)."""
    merged = paper_rows().merge(df, on=["test_range", "function", "model"], how="inner")
    merged["decades"] = [decades_outside(o, p) for o, p in zip(merged.score, merged.paper, strict=True)]
    keys = [*PROTOCOL, "interpolation", "reference"]
    ranked = (merged.groupby(keys).agg(distance=("decades", lambda d: float(np.sqrt(np.mean(np.square(d))))),
                                       cells=("decades", "size"), exact=("decades", lambda d: int((d == 0).sum())),
                                       median=("decades", "median"), q25=("decades", lambda d: d.quantile(0.25)),
                                       q75=("decades", lambda d: d.quantile(0.75)))
              .reset_index().sort_values(["distance", *keys]).reset_index(drop=True))
    ranked.insert(0, "rank", range(1, len(ranked) + 1))
    return ranked, merged


def plot(ranked: pd.DataFrame, path: Path, caption: str) -> None:
    fig, ax = plt.subplots(figsize=(9, 4.5))
    colours = {"mlp": "tab:blue", "variance": "tab:orange", "mean_square": "tab:green"}
    for kind, g in ranked.groupby("reference"):
        ax.scatter(g["rank"], g.distance, s=14, color=colours[kind], label=f"reference: {kind}")
    mj = madsen_johansen(ranked)
    mj = mj[mj.reference == "mlp"]
    if len(mj):
        ax.scatter(mj["rank"], mj.distance, s=80, facecolors="none", edgecolors="k",
                   label="Madsen & Johansen's protocol (this suite's default)")
    ax.set_xlabel("candidate protocol, by rank")
    ax.set_ylabel("distance to the paper's baseline rows (RMS decades)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.set_title("Table 1's protocol, searched against the paper's None, ReLU6 and NAC rows", fontsize=10)
    fig.text(0.01, 0.01, caption, fontsize=6, wrap=True)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    save_figure(fig, path)


def build(evidence: Path | list[Path], out: Path, name: str = "protocol_search") -> list[Path]:
    evidence = [evidence] if isinstance(evidence, Path | str) else list(evidence)
    cells = require([c for c in load_cells(*evidence) if c["task"] == "static_arithmetic"
                     and "range" in c["config"]["task"]], "protocol-search", evidence, "reproduce-protocol-search")
    df = scores(cells)
    ranked, merged = distances(df)
    c = cells[0]
    caption = (f"{len(ranked) // len(REFERENCES)} protocols x {len(REFERENCES)} references; {c['steps']:,} Adam "
               f"steps (lr {c['config']['optimizer']['lr']}, batch {c['config']['task']['batch_size']}), "
               f"{len(c['seeds'])} seeds per cell, x in R^{c['config']['task']['input_size']}. {machines(cells)}")
    best = ranked.iloc[0]
    mine = merged[(merged[PROTOCOL + ["reference"]] == best[PROTOCOL + ["reference"]]).all(axis=1)]
    beside = mine[["test_range", "function", "model", "paper", "score", "least_squares", "decades"]].sort_values(
        ["test_range", "model", "function"])
    worst_everywhere = (merged.groupby(["test_range", "function", "model"]).decades.min().reset_index()
                        .query("decades > 0.30103"))  # no protocol within a factor of 2
    fmt = lambda x: "inf" if not math.isfinite(x) else f"{x:.3g}"  # noqa: E731
    top = ranked.head(12).drop(columns=["q25", "q75"]).assign(distance=lambda d: d.distance.map(lambda x: f"{x:.3f}"),
                                                              median=lambda d: d["median"].map(lambda x: f"{x:.2f}"))
    mj = madsen_johansen(ranked).rename(columns={"rank": "at_rank"})
    text = ["# Table 1's protocol, calibrated against the paper's baseline rows", caption,
            __doc__.split("\n\n", 1)[1].replace("\n", " ").strip(),
            "## The closest candidates", to_markdown(top),
            f"Madsen & Johansen's protocol (this suite's default: U[1, 2], subsets of 25% overlapping by half) "
            f"ranks {', '.join(f'{int(r.at_rank)} ({r.reference}, {r.distance:.3f})' for r in mj.itertuples())}.",
            f"## The best candidate's rows beside the paper's (rank 1: {best['range']}, subsets "
            f"{best.subset_ratio:g}, overlap {best.overlap_ratio:g}, reference {best.reference})",
            to_markdown(beside.assign(score=beside.score.map(fmt), least_squares=beside.least_squares.map(fmt),
                                      decades=beside.decades.map(lambda x: f"{x:.2f}"))),
            "## Rows no candidate matches within a factor of 2",
            to_markdown(worst_everywhere.assign(decades=worst_everywhere.decades.map(lambda x: f"{x:.2f}")))
            if len(worst_everywhere) else "None: every paper row is matched within a factor of 2 by some candidate.",
            f"![distances]({name}.png)"]
    out.mkdir(parents=True, exist_ok=True)
    png = out / f"{name}.png"
    plot(ranked, png, caption)
    paths = write_table(out, name, "\n\n".join(text) + "\n", ranked)
    return [*paths, png]
