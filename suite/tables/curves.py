"""Plot training curves from CSV histories (``history.csv``) without wandb: one panel per metric.

    python -m suite.tables curves <run dir>      one cell: one line per seed
    python -m suite.tables curves <sweep dir>    every cell of a sweep (multirun/<name>): one line
                                                 per cell, its median over seeds, the band from its
                                                 worst to its best seed

The values are what ``history.csv`` records: raw errors (MSE, or what the task logs), not the
tables' scaled scores. A value that is infinite or NaN (a diverged seed, an overflow) cannot be
drawn: it is marked with an ``x`` on the panel's top edge, at its step, and counted in the legend.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from suite.tables.common import save_figure


def histories(folder: Path) -> dict[str, pd.DataFrame]:
    """``{label: history}``: the folder's own history (label ``""``), or those of the cells under it."""
    own = folder / "history.csv"
    paths = [own] if own.exists() else sorted(folder.glob("*/history.csv"))
    out = {}
    for path in paths:
        h = pd.read_csv(path)
        if not h.empty:
            out["" if path == own else path.parent.name] = h
    return out


def plot(run_dir: Path, out: Path | None = None) -> Path:
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or not ((run_dir / "history.csv").exists() or any(run_dir.glob("*/history.csv"))):
        raise SystemExit(f"error: no history.csv in {run_dir} or its cells; give a run or sweep folder made by "
                         "suite.run")
    found = histories(run_dir)
    if not found:
        raise SystemExit(f"error: {run_dir} holds no evaluation yet; plot it once the run has evaluated")
    out = Path(out) if out else run_dir / "curves.png"
    fig = draw(found[""], str(run_dir)) if "" in found else draw_cells(found, str(run_dir))
    return save_figure(fig, out, dpi=110)


def _panels(metrics: list[str]) -> tuple[plt.Figure, np.ndarray]:
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.4), squeeze=False)
    return fig, axes[0]


def _finish(ax, metric: str, values: np.ndarray, bad_steps: list) -> None:
    """Axis labels, a log scale where every drawn value is positive, non-finite points marked."""
    ax.set(title=metric, xlabel="step", ylabel=f"{metric} (raw, as logged)")
    finite = values[np.isfinite(values)]
    if len(finite) and (finite > 0).all():
        ax.set_yscale("log")
    if bad_steps:
        top = ax.get_ylim()[1]
        ax.plot(bad_steps, [top] * len(bad_steps), "x", color="k", ms=6, clip_on=False,
                label=f"inf or NaN ({len(bad_steps)} points)")


def draw(h: pd.DataFrame, title: str) -> plt.Figure:
    """One panel per metric, one line per seed; points marked where a line has few of them (a run
    evaluated once is a point, not an invisible line of length zero)."""
    metrics = list(dict.fromkeys(h.metric))
    fig, axes = _panels(metrics)
    for ax, metric in zip(axes, metrics):
        d = h[h.metric == metric].pivot_table(index="step", columns="seed", values="value", dropna=False)
        marker = "o" if len(d.index) <= 20 else None
        for seed in d.columns:
            ax.plot(d.index, d[seed].where(np.isfinite(d[seed])), lw=1, marker=marker, ms=3, label=f"seed {seed}")
        bad = [step for step, row in d.iterrows() for v in row if not np.isfinite(v)]
        _finish(ax, metric, d.values.ravel(), bad)
    axes[-1].legend(fontsize=6, ncol=2)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    return fig


def draw_cells(found: dict[str, pd.DataFrame], title: str) -> plt.Figure:
    """One panel per metric, one line per cell (median over its seeds, band from worst to best)."""
    metrics = list(dict.fromkeys(m for h in found.values() for m in h.metric))
    fig, axes = _panels(metrics)
    for ax, metric in zip(axes, metrics):
        values, bad = [], []
        for label, h in found.items():
            d = h[h.metric == metric].pivot_table(index="step", columns="seed", values="value", dropna=False)
            if d.empty:
                continue
            v = d.where(np.isfinite(d))
            line, = ax.plot(d.index, v.median(axis=1), lw=1.2, marker="o" if len(d.index) <= 20 else None,
                            ms=3, label=label)
            ax.fill_between(d.index, v.min(axis=1), v.max(axis=1), color=line.get_color(), alpha=0.15, lw=0)
            bad += [step for step, row in d.iterrows() for x in row if not np.isfinite(x)]
            values.append(d.values.ravel())
        _finish(ax, metric, np.concatenate(values) if values else np.array([]), bad)
    axes[-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))  # many cells: beside, not over
    fig.suptitle(f"{title}: median over seeds per cell, band from worst to best seed", fontsize=8)
    fig.tight_layout()
    return fig
