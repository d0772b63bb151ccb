"""The units table: every arithmetic unit on the static task, under the success criterion of
Madsen & Johansen (ICLR 2020, "Neural Arithmetic Units", Section 4.1).

A seed is *solved* when its extrapolation MSE, at the step with its lowest interpolation-validation
MSE, is below the extrapolation MSE of a near-perfect model whose first-layer weights are off by
epsilon (``tasks.arithmetic.ArithmeticProblem.success_threshold``). Per function and unit: the
success rate with its 95% Wilson interval, the median step at which solved seeds first fell below
the threshold (from ``history.csv``, so at the evaluation interval's resolution), the median
sparsity error of solved seeds (the largest distance of a weight from {-1, 0, 1}), and the number
of diverged seeds (never solved). Where Madsen & Johansen report a rate for the same setting
(``results/paper/units.csv``), it is printed beside ours.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from nalu.io import write_text_atomic  # noqa: E402
from nalu.scoring import wilson_interval  # noqa: E402
from nalu.tables.common import load_cells, paper, to_markdown  # noqa: E402

FUNCTIONS = ["a+b", "a-b", "a*b", "a/b", "a^2", "sqrt(a)"]
UNITS = {"nac": "NAC", "nalu": "NALU", "nau": "NAU", "nmu": "NAU + NMU", "inalu": "iNALU", "npu": "NPU",
         "realnpu": "RealNPU", "relu6": "ReLU6 MLP", "none": "linear"}  # fmt: skip


def first_solved_steps(run_dir: Path, thresholds: dict[int, float]) -> dict[int, int]:
    """Per seed, the first evaluation step whose extrapolation MSE is below its threshold."""
    h = pd.read_csv(run_dir / "history.csv")
    h = h[h.metric == "extrapolation"]
    out = {}
    for seed, t in thresholds.items():
        below = h[(h.seed == seed) & (h.value < t)]
        if len(below):
            out[seed] = int(below.step.min())
    return out


def rows(cells: list[dict]) -> pd.DataFrame:
    out = []
    for c in cells:
        members = [m for m in c["members"] if "solved" in m]
        if not members:
            continue
        n, k = len(members), sum(m["solved"] for m in members)
        lo, hi = wilson_interval(k, n)
        solved_seeds = {m["seed"]: m["success_threshold"] for m in members if m["solved"]}
        at = first_solved_steps(Path(c["run_dir"]), solved_seeds)
        sparsity = [m["sparsity_error"] for m in members if m["solved"] and m["sparsity_error"] is not None]
        out.append({"function": c["label"], "model": c["model"], "solved": k, "seeds": n, "rate": k / n,
                    "rate_lo": lo, "rate_hi": hi,
                    "solved_at_median": float(np.median(list(at.values()))) if at else math.nan,
                    "sparsity_median": float(np.median(sparsity)) if sparsity else math.nan,
                    "diverged": sum(m["diverged"] for m in members), "steps": c["steps"],
                    "epsilon": c["config"]["task"]["success"]["epsilon"]})  # fmt: skip
    return pd.DataFrame(out, columns=["function", "model", "solved", "seeds", "rate", "rate_lo", "rate_hi",
                                      "solved_at_median", "sparsity_median", "diverged", "steps", "epsilon"])  # fmt: skip


def with_paper(df: pd.DataFrame) -> pd.DataFrame:
    ref = paper("units").rename(columns={"success_rate": "paper"})[["function", "model", "paper"]]
    return df.merge(ref, on=["function", "model"], how="left")


def plot(df: pd.DataFrame, path: Path, caption: str) -> None:
    fig, ax = plt.subplots(figsize=(11, 4.5))
    models = [m for m in UNITS if m in set(df.model)]
    width = 0.8 / max(len(models), 1)
    cmap = plt.get_cmap("tab10")
    for j, model in enumerate(models):
        f = df[df.model == model].set_index("function").reindex(FUNCTIONS)
        x = np.arange(len(FUNCTIONS)) + (j - (len(models) - 1) / 2) * width
        rate = 100 * f.rate.to_numpy(dtype=float)
        err = 100 * np.stack([f.rate - f.rate_lo, f.rate_hi - f.rate]).astype(float).clip(min=0)  # rounding
        ax.bar(x, rate, width, color=cmap(j), label=UNITS[model], yerr=err, capsize=2, error_kw={"lw": 0.8})
        paper_rate = 100 * pd.to_numeric(f.paper, errors="coerce").to_numpy(dtype=float)
        ax.scatter(x, paper_rate, marker="_", s=120, color="black", zorder=3,
                   label="Madsen & Johansen (2020)" if j == 0 else None)  # fmt: skip
    ax.set_xticks(np.arange(len(FUNCTIONS)), FUNCTIONS)
    ax.set(ylabel="success rate (%), 95% Wilson interval", ylim=(0, 105),
           title="Static arithmetic: seeds solved under the criterion of Madsen & Johansen (2020)")  # fmt: skip
    ax.legend(fontsize=7, ncol=5, loc="upper right")
    fig.text(0.01, 0.01, caption, fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def build(runs: Path, out: Path) -> list[Path]:
    cells = [c for c in load_cells(runs) if c["task"] == "static_arithmetic"]
    df = with_paper(rows(cells))
    caption = "no cells were run"
    if len(cells):
        c = cells[0]
        t = c["config"]["task"]
        caption = (f"x in R^{t['input_size']}, train on U[{t['interpolation']['low']:g}, {t['interpolation']['high']:g}], "
                   f"extrapolate on U[{t['extrapolation']['low']:g}, {t['extrapolation']['high']:g}]; "
                   f"{c['steps']:,} Adam steps (lr {c['config']['optimizer']['lr']}, batch {t['batch_size']}), "
                   f"{len(c['seeds'])} seeds per cell, epsilon {t['success']['epsilon']:g}. "
                   "Madsen & Johansen ran 5e6 steps and 100 seeds.")  # fmt: skip
    df["function"] = pd.Categorical(df.function, FUNCTIONS, ordered=True)
    df["order"] = df.model.map({m: i for i, m in enumerate(UNITS)})
    df = df.sort_values(["function", "order"]).drop(columns="order")
    out.mkdir(parents=True, exist_ok=True)
    png, csv, md = out / "units.png", out / "units.csv", out / "units.md"
    plot(df, png, caption)
    write_text_atomic(csv, df.to_csv(index=False))
    shown = pd.DataFrame({
        "function": df.function.astype(str),
        "unit": df.model.map(UNITS),
        "success": [f"{k}/{n} ({100 * r:.0f}%, {100 * lo:.0f}-{100 * hi:.0f}%)"
                    for k, n, r, lo, hi in zip(df.solved, df.seeds, df.rate, df.rate_lo, df.rate_hi)],
        "paper": [f"{100 * float(p):.0f}%" if isinstance(p, str) and p else "" for p in df.paper],
        "solved at (median step)": [f"{s:,.0f}" if math.isfinite(s) else "-" for s in df.solved_at_median],
        "sparsity error (median, solved)": [f"{s:.2g}" if math.isfinite(s) else "-" for s in df.sparsity_median],
        "diverged": [f"{d}/{n}" for d, n in zip(df.diverged, df.seeds)],
    })  # fmt: skip
    text = ["# Arithmetic units under one protocol: success rates", caption + " ![units](units.png)",
            __doc__.split("\n\n", 1)[1].replace("\n", " ").replace("``", "`").strip(), to_markdown(shown)]  # fmt: skip
    write_text_atomic(md, "\n\n".join(text) + "\n")
    return [png, csv, md]
