"""Figure 4: program evaluation, error and exact-match accuracy against the operand domain.

For every task (addition, program) and model: the mean over seeds of the MAE and of the accuracy
of the rounded answer at each test domain, with a band of two standard deviations (the paper's
2-sigma bands). Each seed is evaluated at its best validation step. A diverged seed is counted in
the legend and the CSV, and left out of the mean (its error is not a number).
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from suite.io import write_text_atomic
from suite.tables.common import load_cells, require, save_figure, to_markdown
from tasks import metrics

MODELS = {"ugrnn": "UGRNN", "lstm": "LSTM", "dnc": "DNC", "ugrnn_nalu": "UGRNN + NALU",
          "lstm_nalu": "LSTM + NALU", "dnc_nalu": "DNC + NALU", "nalu": "recurrent NALU",
          "nalu_builder": "recurrent NALU -> NAC cell"}
KINDS = {"addition": "addition of two integers", "program": "program with a conditional"}


def rows(cells: list[dict]) -> pd.DataFrame:
    out = []
    for c in cells:
        members = c["members"]
        diverged = np.array([m["diverged"] for m in members])
        for d in c["domains"]:
            for metric, key in (("mae", metrics.mae), ("accuracy", metrics.accuracy_on)):
                v = np.array([m["best"][key(d)] for m in members], dtype=float)
                ok = ~diverged & np.isfinite(v)
                mean = float(v[ok].mean()) if ok.any() else math.nan
                sd = float(v[ok].std()) if ok.sum() > 1 else 0.0
                out.append({"kind": c["kind"], "model": c["model"], "domain": d, "metric": metric,
                            "mean": mean, "two_sigma": 2 * sd, "seeds": len(members),
                            "diverged": int(diverged.sum()), "finite": int(ok.sum()),
                            "steps": c["steps"]})
    return pd.DataFrame(out, columns=["kind", "model", "domain", "metric", "mean", "two_sigma", "seeds",
                                      "diverged", "finite", "steps"])


def labels(df: pd.DataFrame) -> dict[str, str]:
    """The models' labels in the figure's order; one the figure has no label for (a unit from
    outside, make benchmark-unit PROTOCOL=tasks) after them, by its name."""
    return {**MODELS, **{m: m for m in sorted(set(df.model) - set(MODELS))}}


def plot(df: pd.DataFrame, path: Path, train_domain: int, caption: str) -> None:
    kinds = [k for k in KINDS if k in set(df.kind)] or list(KINDS)
    fig, axes = plt.subplots(2, len(kinds), figsize=(6 * len(kinds), 8), squeeze=False)
    cmap = plt.get_cmap("tab10")
    for j, kind in enumerate(kinds):
        for i, metric in enumerate(("mae", "accuracy")):
            ax = axes[i, j]
            for k, (model, label) in enumerate(labels(df).items()):
                f = df[(df.kind == kind) & (df.model == model) & (df.metric == metric)].sort_values("domain")
                if f.empty:
                    continue
                div = int(f.diverged.iloc[0])
                name = label + (f" ({div}/{int(f.seeds.iloc[0])} diverged)" if div else "")
                style = "--" if "nalu" in model else "-"
                ax.plot(f.domain, f["mean"], style, marker="o", ms=3, color=cmap(k), label=name)
                lo, hi = f["mean"] - f.two_sigma, f["mean"] + f.two_sigma
                if metric == "accuracy":
                    lo, hi = lo.clip(0, 100), hi.clip(0, 100)
                else:
                    lo = lo.clip(lower=1e-3)
                ax.fill_between(f.domain, lo, hi, color=cmap(k), alpha=0.12, lw=0)
            ax.axvline(train_domain, color="0.5", ls=":", lw=1)
            ax.set_xscale("log")
            if metric == "mae":
                ax.set_yscale("log")
            ax.set(xlabel="operand domain (operands below)", title=KINDS[kind],
                   ylabel="mean absolute error" if metric == "mae" else "exact match of rounded answer (%)")
        axes[0, j].legend(fontsize=7)
    # wrapped to the figure's width, about 14 characters an inch at 9 pt: one line overflows it
    fig.suptitle(textwrap.fill(caption, round(14 * fig.get_figwidth())), fontsize=9)
    fig.tight_layout()
    save_figure(fig, path)


def build(evidence: Path | list[Path], out: Path, name: str = "figure4") -> list[Path]:
    """Figure 4 from the evidence files ``evidence`` as ``<out>/<name>.png|csv|md`` (a variant's:
    ``figure4_numbers``, ``figure4_builder``)."""
    evidence = [evidence] if isinstance(evidence, Path | str) else list(evidence)
    cells = require([c for c in load_cells(*evidence) if c["task"] == "program_eval"], "program evaluation", evidence,
                    "reproduce-figure4")
    df = rows(cells)
    caption = "no cells were run"
    train_domain = 100
    if cells:
        c0 = cells[0]
        t, o = c0["config"]["task"], c0["config"]["optimizer"]
        train_domain = t["train_domain"]
        steps = ", ".join(f"{k} {s:,}" for k, s in sorted({(c["kind"], c["steps"]) for c in cells}))
        encoding = {"chars": "read one character at a time", "numbers": "read with each integer literal as "
                    "one token carrying its value (operators, names and keywords one character each)"}.get(t.get("encoding", "chars"), t.get("encoding"))
        caption = (f"Programs {encoding}. "
                   f"Trained on operands below {train_domain} (steps of Adam: {steps}; lr {o['lr']}, "
                   f"batch {t['batch_size']}); {len(c0['seeds'])} seeds per model, mean and 2-sigma band; "
                   f"{t['test_size']} programs per domain")
    png, csv, md = out / f"{name}.png", out / f"{name}.csv", out / f"{name}.md"
    plot(df, png, train_domain, caption)
    write_text_atomic(csv, df.to_csv(index=False))
    wide = df.assign(value=[f"{m:.1f} +- {s:.1f}" if np.isfinite(m) else "n/a" for m, s in zip(df["mean"], df.two_sigma)])
    lines = ["# Figure 4: program evaluation", caption + ". The dotted line marks the training domain. "
             f"![figure 4]({png.name})"]
    for (kind, metric), f in wide.groupby(["kind", "metric"], sort=False):
        named = labels(f)
        table = f.pivot(index="model", columns="domain", values="value").reindex([m for m in named if m in set(f.model)])
        table.index = [named[m] for m in table.index]
        lines += [f"## {KINDS.get(kind, kind)}: {'MAE' if metric == 'mae' else 'exact match (%)'}",
                  to_markdown(table.reset_index().rename(columns={"index": "model"}).rename(columns=str))]
    write_text_atomic(md, "\n\n".join(lines) + "\n")
    return [png, csv, md]
