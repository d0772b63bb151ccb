"""Table 2: MNIST digit counting and addition at series lengths 1, 10, 100, 1000."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from suite.tables.common import (
    choose_seed, describe_encoder, fmt, load_cells, not_in_paper, paper, quantiles, require, to_markdown, write_table,
)
from tasks import metrics

MODELS = ["lstm", "gru", "rnn_tanh", "rnn_relu", "nac", "nalu"]
HEADERS = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN-tanh", "rnn_relu": "RNN-ReLU",
           "nac": "NAC", "nalu": "NALU"}
LENGTHS = [1, 10, 100, 1000]


def cell_rows(cell: dict) -> list[dict]:
    members = cell["members"]
    diverged = np.array([m["diverged"] for m in members])
    chosen = choose_seed(members, "best")
    rows = []
    for L in LENGTHS:
        v = np.array([m["best"][metrics.series_metric(L)] for m in members], dtype=float)
        # accuracy: higher is better, so a diverged seed counts as 0; errors count as +inf
        v = np.where(diverged | np.isnan(v), 0.0 if L == 1 else np.inf, v)
        q25, median, q75 = quantiles(v)
        rows.append({
            "task": cell["kind"], "model": cell["model"], "length": L,
            "metric": "accuracy_pct" if L == 1 else "mae",
            "ours": float(v[chosen]) if chosen is not None else math.nan,
            "median": median, "q25": q25, "q75": q75,
            "diverged": int(diverged.sum()), "seeds": len(members),
            "chosen_seed": members[chosen]["seed"] if chosen is not None else None,
            # None: no evaluation had a finite validation error, so the untrained model was kept
            "chosen_step": members[chosen].get("best_step") if chosen is not None else None,
        })
    return rows


def validation_of(cell: dict) -> float:
    """The validation MSE of the seed a cell would be represented by (inf where none is eligible)."""
    chosen = choose_seed(cell["members"], "best")
    return math.inf if chosen is None else float(cell["members"][chosen]["best"][metrics.VALIDATION])


def select(cells: list[dict]) -> tuple[list[dict], dict[tuple[str, str], str]]:
    """One cell per task and model: where a variant ran a model over a grid (several cells), the
    one whose chosen seed has the lowest validation MSE, as Table 3 selects (the paper selects by
    validation there); with, per selected cell of a grid, its run folder (the grid point) and how
    many it was chosen from."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for c in cells:
        groups.setdefault((c["kind"], c["model"]), []).append(c)
    picked, grid = [], {}
    for key, group in groups.items():
        best = min(group, key=validation_of)  # ties: the first in evidence order
        picked.append(best)
        if len(group) > 1:
            grid[key] = f"{best['run'].split('/', 1)[1]} (1 of {len(group)})"
    return picked, grid


def selected_frame(cells: list[dict]) -> tuple[pd.DataFrame, list[dict], dict[tuple[str, str], str]]:
    """The csv frame (the paper's rows with ours beside, then models the paper has no row for), the
    cells selected from a grid, and where each was selected from."""
    cells, grid = select(cells)
    ours = pd.DataFrame([r for c in cells for r in cell_rows(c)],
                        columns=["task", "model", "length", "metric", "ours", "median", "q25", "q75",
                                 "diverged", "seeds", "chosen_seed", "chosen_step"])
    ref = paper("table2").assign(length=lambda d: d.length.astype(int))
    # a model the paper has no row for (a unit from outside, make benchmark-unit PROTOCOL=tasks): rows of its own
    extra = not_in_paper(ours, ref, ["model"]).assign(value="-")
    df = pd.concat([ref.merge(ours, on=["task", "model", "length", "metric"], how="left"), extra], ignore_index=True)
    return df.rename(columns={"value": "paper"}), cells, grid


def frame(cells: list[dict]) -> pd.DataFrame:
    """The table's csv frame from its cells (what the claims' rules read)."""
    return selected_frame(cells)[0]


def build(evidence: Path | list[Path], out: Path, name: str = "table2") -> list[Path]:
    """Table 2 from the evidence files ``evidence`` as ``<out>/<name>.md|csv`` (a variant's: ``table2_last``)."""
    evidence = [evidence] if isinstance(evidence, Path | str) else list(evidence)
    cells = require([c for c in load_cells(*evidence) if c["task"] in ("mnist_counting", "mnist_addition")],
                    "MNIST counting or addition", evidence, "reproduce-table2")
    df, cells, grid = selected_frame(cells)
    headers = {**HEADERS, **{m: m for m in df.model if m not in HEADERS}}

    def show(v: float, L: int) -> str:
        return fmt(v, 1 if L == 1 else 2, cap=1e6) if not math.isnan(v) else "-"

    table = []
    run = {c["model"] for c in cells}
    for model in [m for m in MODELS if m in run] + sorted(run - set(MODELS)):  # the models it ran
        row = {"model": headers[model]}
        for task in ("counting", "addition"):
            for L in LENGTHS:
                hit = df[(df.task == task) & (df.model == model) & (df.length == L)]
                row[f"{task} {L}"] = f"{show(hit.ours.iloc[0], L)} / {hit.paper.iloc[0]}" if len(hit) else "- / -"
        table.append(row)
    c0 = cells[0] if cells else None
    if c0:
        t, o = c0["config"]["task"], c0["config"]["optimizer"]
        identity = [headers[c["model"]] for c in cells if c["config"]["model"].get("state_init") == "identity"]
        init = (f"; {', '.join(sorted(set(identity)))} start{'s' if len(set(identity)) == 1 else ''} with the state carried unchanged "
                "(state_init=identity)") if identity else ""
        supervised = ("on the target after every digit (the mean over all prefixes)"
                      if t.get("supervise", "last") == "every_step" else "on the output after the last digit only")
        val = (f"; each seed's step picked on validation series of length {t['validation_length']}"
               if t.get("validation_length") else "")
        protocol = (
            f"Encoder: {describe_encoder(t['encoder'])}, trained end to end with the "
            f"recurrent core (hidden sizes {dict(t['hidden'])}{init}). Training: series of length "
            f"{t['length']} from the MNIST training images (the last {t['validation_images']:,} held "
            f"out for validation{val}), {t['batch_size']} series per step, {c0['steps']:,} steps of Adam "
            f"(lr {o['lr']}), squared error {supervised}; {len(c0['seeds'])} seeds per cell. Test series "
            f"from the MNIST test images: {dict(t['test_series'])} (length: count)."
        )
    else:
        protocol = "No cells were run."
    md = "\n\n".join([
        "# Table 2: MNIST digit counting and addition",
        "Length 1: classification accuracy (%, the rounded output equals the label; for counting "
        "all 10 counts); lengths 10, 100, 1000: mean absolute error (counting: averaged over the 10 "
        "classes). Each cell shows **ours / paper**; ours is the seed with the lowest validation MSE "
        "at its best step (the extended table gives that step). " + protocol,
        to_markdown(pd.DataFrame(table)),
        "## Extended: seed statistics per cell",
        to_markdown(df.dropna(subset=["ours"]).assign(
            ours=lambda d: [show(v, L) for v, L in zip(d.ours, d.length)],
            median=lambda d: [show(v, L) for v, L in zip(d["median"], d.length)],
            spread=lambda d: [f"{show(a, L)}-{show(b, L)}" for a, b, L in zip(d.q25, d.q75, d.length)],
            chosen_seed=lambda d: d.chosen_seed.astype("Int64"),
            diverged=lambda d: d.diverged.astype("Int64"), seeds=lambda d: d.seeds.astype("Int64"),
            chosen_step=lambda d: [f"{v:,.0f}" if pd.notna(v) else "none (untrained)" for v in d.chosen_step],
        )[["task", "model", "length", "metric", "ours", "paper", "median", "spread", "diverged",
           "seeds", "chosen_seed", "chosen_step"]]),
        *(["## Grid: the cell each model was selected from, by validation MSE",
           to_markdown(pd.DataFrame([{"task": k[0], "model": headers[k[1]], "selected": v} for k, v in grid.items()]))]
          if grid else []),
    ]) + "\n"
    return write_table(out, name, md, df)
