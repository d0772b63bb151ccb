"""Plot a run's CSV history (``<run dir>/history.csv``) without wandb: one panel per metric."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from suite.tables.common import save_figure


def plot(run_dir: Path, out: Path | None = None) -> Path:
    run_dir = Path(run_dir)
    path = run_dir / "history.csv"
    if not path.exists():
        raise SystemExit(f"error: {path} not found; give a run directory made by suite.run")
    h = pd.read_csv(path)
    if h.empty:
        raise SystemExit(f"error: {path} holds no evaluation yet; plot it once the run has evaluated")
    out = Path(out) if out else run_dir / "curves.png"
    return save_figure(draw(h, str(run_dir)), out, dpi=110)


def draw(h: pd.DataFrame, title: str) -> plt.Figure:
    """One panel per metric, one line per seed; points marked where a line has few of them (a run
    evaluated once is a point, not an invisible line of length zero)."""
    metrics = list(dict.fromkeys(h.metric))
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.4), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        d = h[h.metric == metric].pivot_table(index="step", columns="seed", values="value")
        marker = "o" if len(d.index) <= 20 else None
        for seed in d.columns:
            ax.plot(d.index, d[seed], lw=1, marker=marker, ms=3, label=f"seed {seed}")
        ax.set(title=metric, xlabel="step")
        if (d.values[pd.notna(d.values)] > 0).all():
            ax.set_yscale("log")
    axes[0][-1].legend(fontsize=6, ncol=2)
    fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    return fig
