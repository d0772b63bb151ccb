"""The units under the Primer benchmark's protocol (Mistry et al., "A Primer for Neural Arithmetic
Logic Modules"; ``make reproduce-units VARIANT=primer``): each unit alone on two inputs (a = x_1,
b = x_2), over the Primer's nine input ranges, scored by its criterion.

A seed is *solved* when its extrapolation MSE, at the step with its lowest interpolation-validation
MSE, is below the extrapolation MSE of the Primer's near-perfect model at epsilon 1e-4 (outputs
off by a relative epsilon: ``tasks.arithmetic.ArithmeticProblem.success_threshold``,
``kind="primer"``). Per function, unit and training range: seeds solved of those run, with the 95%
Wilson interval in the CSV, beside the median step at which solved seeds first fell below the
threshold and their mean sparsity error. The Primer's own rates are not printed here (none are
stored in ``results/paper/``).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from nalu.scoring import wilson_interval
from suite.io import write_text_atomic
from suite.tables.common import load_cells, machines, require, save_figure, to_markdown
from suite.tables.units import rows

FUNCTIONS = ["a+b", "a-b", "a*b", "a/b"]
# each unit alone (no NAU under the multiplicative ones, as in units.py's stacks)
UNITS = {"nac": "NAC", "nalu": "NALU", "nau": "NAU", "nmu": "NMU", "inalu": "iNALU", "npu": "NPU", "realnpu": "RealNPU"}


def ordered_units(names) -> list[str]:
    """The suite's units in their usual order, then any from outside (``make benchmark-unit``)."""
    names = set(names)
    return [u for u in UNITS.values() if u in names] + sorted(names - set(UNITS.values()))


def label(t: dict) -> str:
    """A training range as the table prints it, with its extrapolation range."""
    i, e = t["interpolation"], t["extrapolation"]
    ext = (f"+-[{e['low']:g}, {e['high']:g}]" if e.get("signed") else f"[{e['low']:g}, {e['high']:g}]")
    return f"U[{i['low']:g}, {i['high']:g}] -> {ext}"


def frame(cells: list[dict]) -> pd.DataFrame:
    """One row per cell: ``units.rows`` with the cell's range."""
    out = []
    for c in cells:
        r = rows([c])
        if len(r):
            t = c["config"]["task"]
            out.append(r.assign(unit=UNITS.get(c["model"], r.unit), range=t["range"], ranges=label(t),
                                low=t["interpolation"]["low"], high=t["interpolation"]["high"]))
    return pd.concat(out, ignore_index=True)


def plot(df: pd.DataFrame, path: Path, caption: str) -> None:
    ranges = df.sort_values(["low", "high"]).drop_duplicates("range")
    fig, axes = plt.subplots(1, len(FUNCTIONS), figsize=(14, 4.2), sharey=True)
    units = ordered_units(df.unit)
    for ax, fn in zip(axes, FUNCTIONS, strict=True):
        grid = (df[df.function == fn].pivot_table(index="unit", columns="range", values="rate")
                .reindex(index=units, columns=list(ranges.range)))
        ax.imshow(100 * grid.to_numpy(dtype=float), vmin=0, vmax=100, cmap="viridis", aspect="auto")
        ax.set_xticks(np.arange(len(ranges)), [r.split(" ->")[0] for r in ranges.ranges], rotation=70, fontsize=6)
        ax.set_yticks(np.arange(len(units)), units, fontsize=7)
        ax.set_title(fn, fontsize=9)
        for (y, x), v in np.ndenumerate(grid.to_numpy(dtype=float)):
            ax.text(x, y, "" if np.isnan(v) else f"{100 * v:.0f}", ha="center", va="center", fontsize=6,
                    color="white" if v < 0.6 else "black")
    fig.suptitle("Success rate (%) under the Primer's protocol, by training range", fontsize=10)
    fig.text(0.01, 0.01, caption, fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    save_figure(fig, path)


def totals(df: pd.DataFrame) -> pd.DataFrame:
    """Per function and unit, the seeds solved over every training range, with the 95% Wilson
    interval of the share: the number a "percentage solved over all seeds" claim reads."""
    g = df.groupby(["function", "model", "unit"], observed=True, sort=False)[["solved", "seeds"]].sum().reset_index()
    g = g[g.seeds > 0]
    bounds = [wilson_interval(int(k), int(n)) for k, n in zip(g.solved, g.seeds, strict=True)]
    return g.assign(solved=g.solved.astype(int), seeds=g.seeds.astype(int), rate=g.solved / g.seeds,
                    rate_lo=[lo for lo, _ in bounds], rate_hi=[hi for _, hi in bounds])


def build(evidence: Path | list[Path], out: Path, name: str = "units_primer") -> list[Path]:
    evidence = [evidence] if isinstance(evidence, Path | str) else list(evidence)
    cells = require([c for c in load_cells(*evidence) if c["task"] == "static_arithmetic"
                     and c["config"]["task"]["success"].get("kind") == "primer"], "Primer protocol", evidence,
                    "reproduce-units VARIANT=primer")
    df = frame(cells)
    df = df.assign(function=pd.Categorical(df.function, FUNCTIONS, ordered=True),
                   order=df.model.map({m: i for i, m in enumerate(UNITS)})).sort_values(
        ["function", "order", "low", "high"]).drop(columns="order")
    c, t = cells[0], cells[0]["config"]["task"]
    caption = (f"{t['input_size']} inputs, a = x_1, b = x_2; {c['steps']:,} Adam steps (lr "
               f"{c['config']['optimizer']['lr']}, batch {t['batch_size']}), {len(c['seeds'])} seeds per cell, "
               f"epsilon {t['success']['epsilon']:g} (the Primer's criterion). {machines(cells)}")
    ordered_ranges = df.sort_values(["low", "high"]).drop_duplicates("range").ranges.tolist()
    text = ["# Arithmetic units under the Primer benchmark's protocol", caption + f" ![primer]({name}.png)",
            __doc__.split("\n\n", 1)[1].replace("\n", " ").replace("``", "`").strip(),
            "Ranges, training -> extrapolation: " + "; ".join(ordered_ranges) + "."]
    for fn in FUNCTIONS:
        f = df[df.function == fn]
        if not len(f):
            continue
        grid = f.assign(cell=[f"{k}/{n}" for k, n in zip(f.solved, f.seeds, strict=True)]).pivot_table(
            index="unit", columns="ranges", values="cell", aggfunc="first")
        grid = grid.reindex(index=ordered_units(grid.index),
                            columns=[r for r in ordered_ranges if r in grid.columns])
        grid.columns = [r.split(" ->")[0] for r in grid.columns]
        text += [f"## {fn}: seeds solved", to_markdown(grid.fillna("-").reset_index())]
    overall = totals(df)
    grid = overall.assign(cell=[f"{k}/{n}" for k, n in zip(overall.solved, overall.seeds, strict=True)]).pivot_table(
        index="unit", columns="function", values="cell", aggfunc="first", observed=True)
    grid = grid.reindex(index=ordered_units(grid.index), columns=[f for f in FUNCTIONS if f in grid.columns])
    text += [f"## Over every range: seeds solved (the 95% Wilson intervals in {name}_totals.csv)",
             to_markdown(grid.fillna("-").reset_index())]
    out.mkdir(parents=True, exist_ok=True)
    png, csv, md = out / f"{name}.png", out / f"{name}.csv", out / f"{name}.md"
    total_csv = out / f"{name}_totals.csv"
    plot(df, png, caption)
    write_text_atomic(csv, df.drop(columns=["low", "high"]).to_csv(index=False))
    write_text_atomic(total_csv, overall.to_csv(index=False))
    write_text_atomic(md, "\n\n".join(text) + "\n")
    return [png, csv, md, total_csv]
