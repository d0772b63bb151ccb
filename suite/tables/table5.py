"""Table 5 and Figure 1: how MLPs with 15 nonlinearities (and NAC, NALU) extrapolate the identity."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from suite.io import write_text_atomic
from suite.tables.common import fmt, load_cells, paper, quantiles, require, save_figure, to_markdown, write_table
from tasks.metrics import MAE_AT_MINUS20, MAE_AT_PLUS20, TABLE5_MAE


def rows(cells: list[dict]) -> pd.DataFrame:
    order = [r.lower() for r in paper("figure1").nonlinearity] + ["nac", "nalu"]
    out = []
    for c in cells:
        name = str(c["activation"]).lower()
        members = c["members"]
        div = np.array([m["diverged"] for m in members])
        mae = np.array([m["final"][TABLE5_MAE] for m in members])
        mae = np.where(div, np.nan, mae)
        ok = np.isfinite(mae)
        q25, median, q75 = quantiles(np.where(ok, mae, np.inf))
        at = {k: np.array([m["final"][k] for m in members]) for k in (MAE_AT_MINUS20, MAE_AT_PLUS20)}
        out.append({
            "nonlinearity": name,
            "mae_mean": float(mae[ok].mean()) if ok.any() else math.nan,
            "mae_median": median, "mae_q25": q25, "mae_q75": q75,
            "non_finite": int((~ok).sum()), "diverged": int(div.sum()), "seeds": len(members),
            "at_minus20": float(np.nanmean(np.where(ok, at[MAE_AT_MINUS20], np.nan))),
            "at_plus20": float(np.nanmean(np.where(ok, at[MAE_AT_PLUS20], np.nan))),
            "steps": c["steps"], "lr": c["config"]["optimizer"]["lr"],
            "curve_x": c["curve"]["x"], "curve_mean": c["curve"]["mean"],
        })
    df = pd.DataFrame(out)
    if df.empty:
        return df
    df["order"] = [order.index(n) if n in order else len(order) for n in df.nonlinearity]
    return df.sort_values("order").drop(columns="order").reset_index(drop=True)


def frame(cells: list[dict]) -> pd.DataFrame:
    """The table's csv frame from its cells (what the claims' rules read)."""
    return rows(cells).drop(columns=["curve_x", "curve_mean"])


def plot(df: pd.DataFrame, path: Path, train: tuple[float, float]) -> None:
    fig, ax = plt.subplots(figsize=(9.5, 5.5))
    cmap = plt.get_cmap("tab20")
    for i, r in df.iterrows():
        if r.curve_mean is None:
            continue
        style = "-" if r.nonlinearity not in ("nac", "nalu") else "--"
        ax.plot(r.curve_x, r.curve_mean, style, color=cmap(i % 20), lw=1.4, label=r.nonlinearity)
    ax.axvspan(*train, color="0.85", zorder=0, label="training range")
    ax.set(xlabel="input x", ylabel="mean absolute error", ylim=(0, 20),
           title="Identity function: MAE against input (mean over seeds)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    save_figure(fig, path)


def build(evidence: Path | list[Path], out: Path) -> list[Path]:
    evidence = [evidence] if isinstance(evidence, Path | str) else list(evidence)
    cells = require([c for c in load_cells(*evidence) if c["task"] == "identity"], "identity", evidence, "reproduce-table5")
    df = rows(cells)
    if df.empty:
        raise SystemExit(f"error: no complete identity cells in {evidence}; run `make reproduce-table5`")
    c0 = cells[0]["config"]
    t = c0["task"]
    train = (t["interpolation"]["low"], t["interpolation"]["high"])
    protocol = (
        f"Scalar autoencoders with hidden layers {t['hidden']['mlp']}, trained on U{list(train)} "
        f"with squared error, Adam lr {c0['optimizer']['lr']}, batch {t['batch_size']}, "
        f"{cells[0]['steps']:,} iterations, {len(cells[0]['seeds'])} seeds each; "
        "NAC and NALU rows are stacks of units of the same shape. Non-finite outputs count apart "
        "and are left out of the mean."
    )
    t5 = df.assign(
        mean=df.mae_mean.map(lambda v: fmt(v, 1, 1e12)), median=df.mae_median.map(lambda v: fmt(v, 1, 1e12)),
        spread=[f"{fmt(a, 1, 1e12)}-{fmt(b, 1, 1e12)}" for a, b in zip(df.mae_q25, df.mae_q75)],
        non_finite=[f"{n}/{s}" for n, s in zip(df.non_finite, df.seeds)],
    )[["nonlinearity", "mean", "median", "spread", "non_finite"]]
    ref = paper("figure1").assign(nonlinearity=lambda d: d.nonlinearity.str.lower())
    f1 = df[["nonlinearity", "at_minus20", "at_plus20"]].merge(ref, on="nonlinearity", how="left")
    f1_md = f1.assign(
        at_minus20=f1.at_minus20.map(lambda v: fmt(v, 2)), at_plus20=f1.at_plus20.map(lambda v: fmt(v, 2)),
    ).fillna("-").rename(columns={
        "at_minus20": "ours x=-20", "mae_at_minus20": "paper x=-20",
        "at_plus20": "ours x=+20", "mae_at_plus20": "paper x=+20"})
    f1_md = f1_md[["nonlinearity", "ours x=-20", "paper x=-20", "ours x=+20", "paper x=+20"]]
    lo, hi = t["table5"]["low"], t["table5"]["high"]
    md = "\n\n".join([
        f"# Table 5: identity function, mean absolute error on [{lo:g}, {hi:g}]",
        protocol + f" Predicting 0 everywhere scores {abs(lo) / 2:g}. The paper gives no "
        "numbers for this table.",
        to_markdown(t5),
        "## Figure 1 values: MAE at x = -20 and x = +20 (mean over seeds)",
        "The paper's values are read off its Figure 1 (+-0.3). Plot: `results/figure1.png`.",
        to_markdown(f1_md),
    ]) + "\n"
    paths = write_table(out, "table5", md, frame(cells))
    f1_csv = f1.rename(columns={"mae_at_minus20": "paper_at_minus20", "mae_at_plus20": "paper_at_plus20"})
    write_text_atomic(out / "figure1.csv", f1_csv.to_csv(index=False))
    write_text_atomic(out / "figure1.md", "\n\n".join([
        "# Figure 1: identity function, MAE at the edges of [-20, 20]", protocol,
        to_markdown(f1_md)]) + "\n")
    plot(df, out / "figure1.png", train)
    return [*paths, out / "figure1.csv", out / "figure1.md", out / "figure1.png"]
