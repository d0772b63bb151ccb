"""The units table: every arithmetic unit on the static task, under the success criterion of
Madsen & Johansen (ICLR 2020, "Neural Arithmetic Units", Section 4.1).

A seed is *solved* when its extrapolation MSE, at the step with its lowest interpolation-validation
MSE, is below the extrapolation MSE of a near-perfect model whose first-layer weights are off by
epsilon (``tasks.arithmetic.ArithmeticProblem.success_threshold``). Per function and unit: the
success rate with its 95% Wilson interval, the median step at which solved seeds first fell below
the threshold (``solved_at``, recorded from the run's history: at the evaluation interval's resolution), the mean
sparsity error of solved seeds (the largest distance of a weight from {-1, 0, 1}), and the number
of diverged seeds (never solved). Beside it, the count under the threshold behind Madsen &
Johansen's published rates, whose near-perfect model had subsets one input wider than the task's
(26 overlapping by 13, from R's inclusive ranges): looser than ours by 8-17% for +, /, sqrt, the
same to 0.3% otherwise; compare their rates with that column. Where Madsen & Johansen report the same setting
(``results/paper/units.csv``: 5e6 steps, 100 seeds), their rate, median solved-at step and mean
sparsity error are printed beside ours.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from nalu.scoring import wilson_interval
from suite.io import write_text_atomic
from suite.tables.common import PRINTS_ZERO as ZERO
from suite.tables.common import load_cells, machines, paper, paper_float, require, save_figure, to_markdown
from tasks.metrics import EXTRAPOLATION

FUNCTIONS = ["a+b", "a-b", "a*b", "a/b", "a^2", "sqrt(a)"]
UNITS = {"nac": "NAC", "nalu": "NALU", "nau": "NAU", "nmu": "NAU + NMU", "inalu": "iNALU", "npu": "NAU + NPU",
         "realnpu": "NAU + RealNPU", "relu6": "ReLU6 MLP", "none": "linear"}


def unit_label(cell: dict) -> str:
    """The unit's name in the table: the suite's own by ``UNITS``, one from outside by its class
    (marked "benchmarked" where it shares a name with one of the suite's own: its NAU, say; "told
    the function" where it was given the task's function, ``model=unit_told``)."""
    if cell["model"] in ("unit", "unit_told"):
        name = str(cell["config"]["model"]["unit"]).rpartition(":")[2]
        name = f"{name} (benchmarked)" if name in UNITS.values() else name
        return f"{name}, told the function" if cell["model"] == "unit_told" else name
    return UNITS.get(cell["model"], cell["model"])


def rows(cells: list[dict]) -> pd.DataFrame:
    out = []
    for c in cells:
        members = [m for m in c["members"] if "solved" in m]
        if not members:
            continue
        n, k = len(members), sum(m["solved"] for m in members)
        # under the threshold behind Madsen & Johansen's published rates (cells since it was recorded)
        k_pub = sum(m["solved_published"] for m in members) if all("solved_published" in m for m in members) else -1
        lo, hi = wilson_interval(k, n)
        # Trask et al.'s reading of the same seeds: the scaled extrapolation score prints 0.0
        printed = (sum(not m["diverged"] and 100 * m["best"][EXTRAPOLATION] / m["reference"][EXTRAPOLATION] < ZERO
                       for m in members) if all("reference" in m for m in members) else -1)
        at = {m["seed"]: m["solved_at"] for m in members if m["solved"] and m.get("solved_at") is not None}
        sparsity = [m["sparsity_error"] for m in members if m["solved"] and m["sparsity_error"] is not None]
        # the extrapolation horizon (cells run with task.horizon on): the median seed's last rung
        horizon = {p: float(np.median([m["horizon"][p] for m in members])) if all("horizon" in m for m in members)
                   else math.nan for p in ("float32", "float64")}
        out.append({"function": c["label"], "model": c["model"], "unit": unit_label(c), "solved": k, "solved_published": k_pub,
                    "printed_zero": printed, "seeds": n, "rate": k / n,
                    "rate_lo": lo, "rate_hi": hi,
                    "solved_at_median": float(np.median(list(at.values()))) if at else math.nan,
                    "sparsity_mean": float(np.mean(sparsity)) if sparsity else math.nan,
                    "diverged": sum(m["diverged"] for m in members), "steps": c["steps"],
                    "epsilon": c["config"]["task"]["success"]["epsilon"],
                    "horizon_float32": horizon["float32"], "horizon_float64": horizon["float64"]})
    df = pd.DataFrame(out, columns=["function", "model", "unit", "solved", "solved_published", "printed_zero", "seeds", "rate", "rate_lo", "rate_hi",
                                    "solved_at_median", "sparsity_mean", "diverged", "steps", "epsilon",
                                    "horizon_float32", "horizon_float64"])
    return df if df.horizon_float32.notna().any() else df.drop(columns=["horizon_float32", "horizon_float64"])


def paper_number(value, spec: str = ".2g") -> str:
    """A reported number as printed in the table: blank where the paper has none."""
    v = paper_float(value) if isinstance(value, str) else math.nan
    return format(v, spec) if math.isfinite(v) else ""


def theirs(task: dict) -> bool:
    """Whether ``task`` is Madsen & Johansen's protocol (their rates apply): inputs U[1, 2], ``a``
    and ``b`` each a sum of a quarter of them, overlapping by half."""
    i = task["interpolation"]
    return (i["low"], i["high"], task.get("subset_ratio"), task.get("overlap_ratio")) == (1.0, 2.0, 0.25, 0.5)


def with_paper(df: pd.DataFrame, apply: bool = True) -> pd.DataFrame:
    """``df`` with Madsen & Johansen's columns (empty where ``apply`` is false: another protocol)."""
    if not apply:
        return df.assign(paper=math.nan, paper_solved_at=math.nan, paper_sparsity=math.nan)
    ref = paper("units").rename(columns={"success_rate": "paper", "solved_at_median": "paper_solved_at",
                                         "sparsity_error_mean": "paper_sparsity"})
    ref = ref[["function", "model", "paper", "paper_solved_at", "paper_sparsity"]]
    return df.merge(ref, on=["function", "model"], how="left")


def plot(df: pd.DataFrame, path: Path, caption: str) -> None:
    fig, ax = plt.subplots(figsize=(11, 4.5))
    df = df.assign(unit_key=np.where(df.model == "unit", df.unit, df.model))  # a unit from outside: its class
    models = [m for m in UNITS if m in set(df.unit_key)] + sorted(set(df.unit_key) - set(UNITS))
    width = 0.8 / max(len(models), 1)
    cmap = plt.get_cmap("tab10")
    for j, model in enumerate(models):
        f = df[df.unit_key == model].set_index("function").reindex(FUNCTIONS)
        x = np.arange(len(FUNCTIONS)) + (j - (len(models) - 1) / 2) * width
        rate = 100 * f.rate.to_numpy(dtype=float)
        err = 100 * np.stack([f.rate - f.rate_lo, f.rate_hi - f.rate]).astype(float).clip(min=0)  # rounding
        ax.bar(x, rate, width, color=cmap(j), label=UNITS.get(model, model), yerr=err, capsize=2, error_kw={"lw": 0.8})
        paper_rate = 100 * pd.to_numeric(f.paper, errors="coerce").to_numpy(dtype=float)
        if np.isfinite(paper_rate).any():  # Madsen & Johansen's protocol only
            ax.scatter(x, paper_rate, marker="_", s=120, color="black", zorder=3,
                       label="Madsen & Johansen (2020)" if j == 0 else None)
    ax.set_xticks(np.arange(len(FUNCTIONS)), FUNCTIONS)
    ax.set(ylabel="success rate (%), 95% Wilson interval", ylim=(0, 105),
           title="Static arithmetic: seeds solved under the criterion of Madsen & Johansen (2020)")
    ax.legend(fontsize=7, ncol=5, loc="upper right")
    fig.text(0.01, 0.01, caption, fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    save_figure(fig, path)


def ordered(df: pd.DataFrame) -> pd.DataFrame:
    df = df.assign(function=pd.Categorical(df.function, FUNCTIONS, ordered=True),
                   order=df.model.map({m: i for i, m in enumerate(UNITS)}))
    return df.sort_values(["function", "order", "steps"]).drop(columns="order")


def shown(df: pd.DataFrame) -> pd.DataFrame:
    """The markdown columns: ours beside Madsen & Johansen's."""
    return pd.DataFrame({
        "function": df.function.astype(str),
        "unit": df.unit,
        "steps": [f"{s:,}" for s in df.steps],
        "success": [f"{k}/{n} ({100 * r:.0f}%, {100 * lo:.0f}-{100 * hi:.0f}%)"
                    for k, n, r, lo, hi in zip(df.solved, df.seeds, df.rate, df.rate_lo, df.rate_hi)],
        "success, published threshold": [f"{k}/{n}" if k >= 0 else "n/a" for k, n in zip(df.solved_published, df.seeds)],
        "prints 0.0 (Trask)": [f"{k}/{n}" if k >= 0 else "n/a" for k, n in zip(df.printed_zero, df.seeds)],
        "paper": [f"{100 * float(p):.0f}%" if isinstance(p, str) and p else "" for p in df.paper],
        "solved at (median step)": [f"{s:,.0f}" if math.isfinite(s) else "-" for s in df.solved_at_median],
        "paper solved at": [paper_number(p, ",.0f") for p in df.paper_solved_at],
        "sparsity error (mean, solved)": [f"{s:.2g}" if math.isfinite(s) else "-" for s in df.sparsity_mean],
        "paper sparsity error": [paper_number(p) for p in df.paper_sparsity],
        "diverged": [f"{d}/{n}" for d, n in zip(df.diverged, df.seeds)],
        **({"horizon (median seed), float32 / float64": [
            f"{a:g}x / {b:g}x" if math.isfinite(a) else "n/a" for a, b in zip(df.horizon_float32, df.horizon_float64)]}
           if "horizon_float32" in df else {}),
    })


def frame(cells: list[dict]) -> pd.DataFrame:
    """The table's rows from its static arithmetic cells, a sweep of longer budgets aside (what the
    claims' rules read: their rates at 5,000,000 steps)."""
    return ordered(with_paper(rows(cells), theirs(cells[0]["config"]["task"]))) if cells else pd.DataFrame()


def build(evidence: Path | list[Path], out: Path, long: str | None = None, name: str = "units") -> list[Path]:
    """The table and figure from the static arithmetic cells of the ``evidence`` files; cells of
    the sweep named ``long`` (the same cells with longer budgets) get a table of their own below.
    Files are ``<out>/<name>.md|csv|png``."""
    evidence = [evidence] if isinstance(evidence, Path | str) else list(evidence)
    static = [c for c in load_cells(*evidence) if c["task"] == "static_arithmetic"]
    is_long = [bool(long) and c["run"].split("/")[0] == long for c in static]
    cells = [c for c, x in zip(static, is_long, strict=True) if not x]
    long_cells = [c for c, x in zip(static, is_long, strict=True) if x]
    require(cells, "static arithmetic", evidence, "reproduce-units")
    c = cells[0]
    t = c["config"]["task"]
    apply = theirs(t)
    df, df_long = ordered(with_paper(rows(cells), apply)), ordered(with_paper(rows(long_cells), apply))
    caption = (f"x in R^{t['input_size']}, train on U[{t['interpolation']['low']:g}, {t['interpolation']['high']:g}], "
               f"extrapolate on U[{t['extrapolation']['low']:g}, {t['extrapolation']['high']:g}]; "
               f"{c['steps']:,} Adam steps (lr {c['config']['optimizer']['lr']}, batch {t['batch_size']}), "
               f"{len(c['seeds'])} seeds per cell, epsilon {t['success']['epsilon']:g}. "
               + (f"a and b each a sum of {t['subset_ratio']:g} of the inputs, overlapping by {t['overlap_ratio']:g} "
                  "(not Madsen & Johansen's protocol: their rates are not shown). " if not apply else "")
               + f"Madsen & Johansen ran 5e6 steps and 100 seeds. {machines(cells + long_cells)}")
    out.mkdir(parents=True, exist_ok=True)
    png, csv, md = out / f"{name}.png", out / f"{name}.csv", out / f"{name}.md"
    plot(df, png, caption)
    write_text_atomic(csv, pd.concat([df, df_long]).to_csv(index=False))
    text = ["# Arithmetic units under one protocol: success rates", caption + f" ![units]({name}.png)",
            __doc__.split("\n\n", 1)[1].replace("\n", " ").replace("``", "`").strip(), to_markdown(shown(df))]
    if len(df_long):
        text += ["## Longer budgets",
                 "The same protocol with more steps, for cells whose median solved-at step in Madsen & Johansen "
                 "lies beyond the budget above (`configs/experiment/units_long.yaml`; still below their 5e6).",
                 to_markdown(shown(df_long))]
    text += ["## The criteria side by side", criteria_text(pd.concat([df, df_long]))]
    if t.get("horizon"):
        text += [horizon_text(df, t["horizon"])]
    write_text_atomic(md, "\n\n".join(text) + "\n")
    return [png, csv, md]


def criteria_text(df: pd.DataFrame) -> str:
    """Where the same seeds pass under one criterion and not under another: Madsen & Johansen's
    epsilon (ours, and the one behind their published rates) and Trask et al.'s printed 0.0."""
    both = df[(df.solved_published >= 0) & (df.printed_zero >= 0)]
    apart = both[(both.solved != both.printed_zero) | (both.solved != both.solved_published)]
    lines = [f"- {r.function} {r.unit} ({r.steps:,} steps): success {r.solved}, published threshold "
             f"{r.solved_published}, prints 0.0 {r.printed_zero} of {r.seeds}" for r in apart.itertuples()]
    return "\n".join([
        "The same seeds counted three ways: `success` (Madsen & Johansen's epsilon threshold, as this suite "
        "computes it), `success, published threshold` (the threshold behind their published rates), and "
        "`prints 0.0 (Trask)` (the scaled extrapolation score of Table 1 below 0.05, which the NALU paper "
        f"prints as 0.0). They agree on {len(both) - len(apart)} of {len(both)} cells; where they do not:",
        *(lines or ["- nowhere."]),
    ])


def horizon_text(df: pd.DataFrame, horizon: dict) -> str:
    """What the horizon column means, and where float32 and float64 part."""
    rungs = ", ".join(f"{r:g}" for r in horizon["rungs"])
    apart = df[df.horizon_float32.notna() & (df.horizon_float32 != df.horizon_float64)]
    lines = [f"- {r.function} {r.unit}: {r.horizon_float32:g}x in float32, {r.horizon_float64:g}x in float64"
             for r in apart.itertuples()]
    return "\n".join([
        f"An extrapolation horizon, the fourth criterion: for each seed's selected weights, the largest multiple "
        f"r of the extrapolation range's values (r in {rungs}; {horizon['samples']:,} inputs each) up to which "
        "every multiple is solved (its MSE below the epsilon-perturbed model's at that range), 0x where the first "
        "is not; once with the weights as trained (float32) and once cast to float64. The table shows the median "
        "seed's (n/a: a cell run without it). Where the two precisions part:", *(lines or ["- nowhere."])])
