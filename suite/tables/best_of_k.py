"""How many seeds a printed 0.0 needs: the best of k seeds, from cells run with many seeds.

Papers print one number per cell without saying how many seeds it was the best of. From a cell of
``n`` seeds, the chance that the best of ``k`` of them (drawn without replacement) prints 0.0 (a
scaled score below 0.05, the paper's precision) is exact, with no resampling:

- **by validation** (what a practitioner can do): the seeds ranked by validation error, the
  diverged last; the best of ``k`` is the one of lowest rank, which is rank ``r`` with probability
  ``C(n - r, k - 1) / C(n, k)``; summed over the ranks whose seed prints 0.0;
- **by the oracle** (picking on the test range itself): at least one of the ``k`` prints 0.0,
  ``1 - C(n - g, k) / C(n, k)`` for ``g`` such seeds.

Only the cells where the paper prints 0.0 are asked, on both ranges. Written beside a Table 1 of
at least ``MIN_SEEDS`` seeds per cell: ``<name>_best_of_k.csv`` and ``.png``, and a section of
``<name>.md``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from suite.tables.common import PRINTS_ZERO as ZERO
from suite.tables.common import save_figure, to_markdown
from tasks.metrics import VALIDATION

MIN_SEEDS = 20
SHOWN_K = (1, 2, 5, 10, 20, 50, 100)


def by_validation(good: np.ndarray, k: int) -> float:
    """P(the best of k seeds by validation is good); ``good`` is in validation order, best first."""
    n = len(good)
    total = math.comb(n, k)
    return sum(math.comb(n - r, k - 1) for r in range(1, n + 1) if good[r - 1]) / total


def by_oracle(good: np.ndarray, k: int) -> float:
    """P(at least one of k seeds is good)."""
    n, g = len(good), int(np.sum(good))
    return 1 - math.comb(n - g, k) / math.comb(n, k)


def in_validation_order(members: list[dict], score: np.ndarray, checkpoint: str) -> np.ndarray:
    """Whether each seed prints 0.0, the seeds sorted by validation error (diverged and non-finite
    last, never good), ties kept in seed order."""
    validation = np.array([m[checkpoint][VALIDATION] for m in members], dtype=float)
    diverged = np.array([m["diverged"] for m in members])
    unchoosable = diverged | ~np.isfinite(validation)  # what Table 1's choice never picks
    order = np.argsort(np.where(unchoosable, np.inf, validation), kind="stable")
    return (np.isfinite(score) & (score < ZERO) & ~unchoosable)[order]


def curves(cells: list[tuple[dict, dict[str, np.ndarray]]], paper: pd.DataFrame, checkpoint: str) -> pd.DataFrame:
    """One row per (cell, range where the paper prints 0.0, k): both probabilities. ``cells``
    pairs each cell with its per-range scores; ``paper`` has task, range, function, model, paper."""
    zero = {(r.task, r.range, r.function, r.model) for r in paper.itertuples() if r.paper < ZERO}
    rows = []
    for cell, scores in cells:
        task = cell["task"].split("_")[0]
        for rng, score in scores.items():
            if (task, rng, cell["label"], cell["model"]) not in zero:
                continue
            good = in_validation_order(cell["members"], score, checkpoint)
            for k in range(1, len(good) + 1):
                rows.append({"task": task, "range": rng, "function": cell["label"], "model": cell["model"],
                             "seeds": len(good), "good_seeds": int(good.sum()), "k": k,
                             "p_validation": round(by_validation(good, k), 6), "p_oracle": round(by_oracle(good, k), 6)})
    return pd.DataFrame(rows, columns=["task", "range", "function", "model", "seeds", "good_seeds", "k",
                                       "p_validation", "p_oracle"])


def smallest_k(f: pd.DataFrame, column: str, p: float = 0.5) -> str:
    hit = f[f[column] >= p]
    return str(int(hit.k.min())) if len(hit) else f"none of {int(f.seeds.iloc[0])}"


def section(df: pd.DataFrame, name: str) -> str:
    """The markdown section for ``<name>.md``."""
    lines = []
    for (task, rng, fn, model), f in df.groupby(["task", "range", "function", "model"], sort=False):
        row = {"cell": f"{task} {model} {fn}", "range": rng, "seeds printing 0.0": f"{f.good_seeds.iloc[0]}/{f.seeds.iloc[0]}"}
        for k in SHOWN_K:
            hit = f[f.k == k]
            row[f"k={k}"] = f"{hit.p_validation.iloc[0]:.2f} ({hit.p_oracle.iloc[0]:.2f})" if len(hit) else ""
        row["k for even odds"] = smallest_k(f, "p_validation")
        lines.append(row)
    return "\n\n".join([
        "## Best of k: how many seeds a printed 0.0 needs",
        "Where the paper prints 0.0, the chance that the best of k of our seeds prints 0.0 too, chosen "
        "by validation error (in brackets: chosen by the test range itself, the oracle), exact over all "
        "k-subsets of the cell's seeds (`suite/tables/best_of_k.py`); `k for even odds` is the smallest k "
        f"at which the validation choice prints 0.0 at least half the time. Every k: [{name}_best_of_k.csv]"
        f"({name}_best_of_k.csv), drawn in [{name}_best_of_k.png]({name}_best_of_k.png).",
        to_markdown(pd.DataFrame(lines)) if lines else "No cell where the paper prints 0.0 was run.",
    ])


def plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib.pyplot as plt

    groups = list(df.groupby(["task", "range", "function", "model"], sort=False))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    cmap = plt.get_cmap("tab20")
    for j, ((task, rng, fn, model), f) in enumerate(groups):
        label = f"{task} {model} {fn}, {rng}"
        ax.plot(f.k, f.p_validation, color=cmap(j % 20), label=label)
        ax.plot(f.k, f.p_oracle, color=cmap(j % 20), ls="--", lw=0.8)
    ax.set(xscale="log", xlabel="k (seeds of which the best is printed)", ylabel="P(the best of k prints 0.0)",
           ylim=(-0.02, 1.02), title="Best of k seeds: by validation (solid), by the oracle (dashed)")
    ax.legend(fontsize=6, ncol=2, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path)


def write(df: pd.DataFrame, out: Path, name: str) -> list[Path]:
    from suite.io import write_text_atomic

    csv, png = out / f"{name}_best_of_k.csv", out / f"{name}_best_of_k.png"
    write_text_atomic(csv, df.to_csv(index=False))
    plot(df, png)
    return [csv, png]
