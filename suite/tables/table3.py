"""Table 3 and Figure 3: number words to number, LSTM against LSTM + NAC and LSTM + NALU.

Model selection follows the paper's Appendix D: for each model, the grid point (state size,
learning rate) and seed with the lowest validation MSE, at that seed's best validation step;
its train, validation and test MAE are the row. Figure 3 shows that chosen LSTM + NALU's
prediction after every token of test numbers it never saw.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from suite.io import write_text_atomic
from suite.tables.common import fmt, load_cells, paper, quantiles, require, save_figure, to_markdown, write_table
from tasks import metrics
from tasks.metrics import VALIDATION

# our model name -> (row label, the paper's row)
MODELS = {
    "lstm_sum": ("LSTM (summed state)", "lstm"),
    "lstm": ("LSTM (last state)", None),
    "lstm_nac": ("LSTM + NAC", "lstm_nac"),
    "lstm_nalu": ("LSTM + NALU", "lstm_nalu"),
}
SPLITS = ["train", VALIDATION, "test"]


def candidates(cells: list[dict]) -> pd.DataFrame:
    """One row per (cell, seed): its grid point and its metrics at its best step."""
    rows = []
    for c in cells:
        t, o = c["config"]["task"], c["config"]["optimizer"]
        for i, m in enumerate(c["members"]):
            rows.append({
                "model": c["model"], "lstm_size": t["lstm_size"], "lr": o["lr"], "seed": m["seed"],
                "member": i, "diverged": m["diverged"], "best_step": m["best_step"],
                "validation_mse": m["best"][VALIDATION] if not m["diverged"] else math.nan,
                **{f"mae_{s}": m["best"][metrics.mae(s)] for s in SPLITS}, "cell": c,
            })
    return pd.DataFrame(rows)


def choose(df: pd.DataFrame) -> dict[str, pd.Series]:
    """Per model, the candidate with the lowest validation MSE among those that did not diverge."""
    out = {}
    for model, g in df.groupby("model"):
        ok = g[~g.diverged & np.isfinite(g.validation_mse)]
        if len(ok):
            out[model] = ok.loc[ok.validation_mse.idxmin()]
    return out


def table(df: pd.DataFrame, chosen: dict[str, pd.Series]) -> pd.DataFrame:
    ref = paper("table3")
    rows = []
    extra = {m: (m, None) for m in sorted(set(df.model) - set(MODELS))} if len(df) else {}  # a unit from outside
    for model, (label, paper_row) in {**MODELS, **extra}.items():
        if model not in chosen and paper_row is None:
            continue
        r = chosen.get(model)
        g = df[df.model == model] if len(df) else df
        row = {"model": model, "label": label}
        for s in SPLITS:
            p = ref[(ref.model == paper_row) & (ref.split == s)].mae if paper_row else []
            row[f"ours_{s}"] = float(r[f"mae_{s}"]) if r is not None else math.nan
            row[f"paper_{s}"] = p.iloc[0] if len(p) else ""  # as printed
        test = g.mae_test.where(~g.diverged, np.inf) if len(g) else pd.Series(dtype=float)
        q25, median, q75 = quantiles(test.to_numpy(dtype=float))  # over every candidate, diverged as +inf
        row.update({
            "mae_median": median, "mae_q25": q25, "mae_q75": q75,
            "candidates": len(g), "diverged": int(g.diverged.sum()) if len(g) else 0,
            "chosen_lstm_size": r.lstm_size if r is not None else None,
            "chosen_lr": r.lr if r is not None else None,
            "chosen_seed": r.seed if r is not None else None,
            "chosen_step": r.best_step if r is not None else None,
        })
        rows.append(row)
    return pd.DataFrame(rows)


def figure(chosen: pd.Series | None, png: Path, md: Path, csv: Path) -> None:
    """The chosen LSTM + NALU's running prediction after every token (Figure 3)."""
    fig3 = chosen.cell["figure3"] if chosen is not None else {"numbers": []}
    records = [
        {"number": n, "position": k + 1, "token": tok, "prediction": fig3["running"][chosen.member][j][k]}
        for j, n in enumerate(fig3["numbers"]) for k, tok in enumerate(fig3["tokens"][j])
    ]
    frame = pd.DataFrame(records, columns=["number", "position", "token", "prediction"])
    write_text_atomic(csv, frame.to_csv(index=False))
    shown = fig3["numbers"][:6]
    fig, axes = plt.subplots(2, 3, figsize=(11, 6), squeeze=False)
    for ax, n in zip(axes.flat, shown):
        f = frame[frame.number == n]
        ax.plot(f.position, f.prediction, "o-", color="tab:blue", label="prediction after token")
        ax.axhline(n, color="0.4", ls="--", lw=1, label="target")
        ax.set_xticks(list(f.position), list(f.token), rotation=30, fontsize=8)
        ax.set_title(str(n), fontsize=10)
    for ax in list(axes.flat)[len(shown):]:
        ax.axis("off")
    if shown:
        axes.flat[0].legend(fontsize=7)
    where = (f"state size {chosen.lstm_size}, lr {chosen.lr}, seed {chosen.seed}, step {chosen.best_step}"
             if chosen is not None else "no LSTM + NALU run")
    fig.suptitle(f"LSTM + NALU, prediction after every token of unseen test numbers ({where})", fontsize=10)
    fig.tight_layout()
    save_figure(fig, png)
    lines = [
        "# Figure 3: the LSTM + NALU's running prediction on unseen numbers",
        f"The model chosen for Table 3 ({where}); each number is in the test split. ![figure 3]({png.name})",
        to_markdown(pd.DataFrame([
            {"number": n, "tokens": " ".join(fig3["tokens"][j]),
             "prediction after each token": " -> ".join(f"{v:.1f}" for v in fig3["running"][chosen.member][j])}
            for j, n in enumerate(fig3["numbers"])
        ], columns=["number", "tokens", "prediction after each token"])),
    ]
    write_text_atomic(md, "\n\n".join(lines) + "\n")


INITS = {  # model.init (baselines/rnn.py), as the caption says it
    "torch": " (PyTorch's initialisation)",
    "tensorflow": " (TensorFlow's initialisation, as the paper's authors describe theirs: Glorot-uniform input "
                  "weights, orthogonal recurrent weights, forget-gate bias 1)",
}


def frame(cells: list[dict]) -> pd.DataFrame:
    """The table's csv frame from its cells: per model, the candidate chosen by validation across
    the grid (what the claims' rules read)."""
    df = candidates(cells)
    return table(df, choose(df) if len(df) else {})


def build(evidence: Path | list[Path], out: Path, name: str = "table3") -> list[Path]:
    """Table 3 as ``<out>/<name>.md|csv`` and Figure 3 beside it (``figure3`` followed by what
    follows ``table3`` in ``name``: ``table3_paper`` -> ``figure3_paper``)."""
    evidence = [evidence] if isinstance(evidence, Path | str) else list(evidence)
    cells = require([c for c in load_cells(*evidence) if c["task"] == "translation"], "number-word", evidence,
                    "reproduce-table3")
    df = candidates(cells)
    chosen = choose(df) if len(df) else {}
    t = table(df, chosen)

    def show(v: float) -> str:
        return "-" if math.isnan(v) else fmt(v, 2, cap=1e6)

    shown = pd.DataFrame([
        {"model": r.label, **{s: f"{show(r[f'ours_{s}'])} / {r[f'paper_{s}'] or '-'}" for s in SPLITS},
         "median test (all candidates)": show(r.mae_median), "diverged": f"{r.diverged}/{r.candidates}",
         "chosen (size, lr, seed, step)": (f"{r.chosen_lstm_size:.0f}, {r.chosen_lr:g}, {r.chosen_seed:.0f}, "
                                           f"{r.chosen_step:.0f}") if pd.notna(r.chosen_seed) else "-"}
        for _, r in t.iterrows()
    ])
    protocol = "No cells were run."
    if cells:
        c0 = cells[0]
        tc = c0["config"]["task"]
        sizes = sorted({c["config"]["task"]["lstm_size"] for c in cells})
        lrs = sorted({c["config"]["optimizer"]["lr"] for c in cells})
        protocol = (
            f"Numbers {tc['numbers'][0]}..{tc['numbers'][1]} in words, split {c0['split']['train']} / "
            f"{c0['split']['validation']} / {c0['split']['test']} (train / validation / test; 0..19 "
            f"and every token in train, split seed {tc['split']['seed']}). Token embedding "
            f"{tc['embedding']}, one LSTM layer{INITS[c0['config']['model'].get('init', 'torch')]}; "
            f"{c0['steps']:,} full-batch Adam steps (the paper: "
            f"300,000), squared error on the output after the last token. Grid: LSTM state size "
            f"{sizes} x learning rate {lrs} x {len(c0['seeds'])} seeds per model; the row is the "
            "candidate with the lowest validation MSE (at its best step), as in the paper's Appendix D."
        )
    md = "\n\n".join([
        "# Table 3: number words to number (mean absolute error)",
        "Each cell shows **ours / paper**. " + protocol,
        to_markdown(shown),
    ]) + "\n"
    paths = write_table(out, name, md, t)
    fig = "figure3" + name.removeprefix("table3") if name.startswith("table3") else f"{name}_figure3"
    png, fmd, fcsv = out / f"{fig}.png", out / f"{fig}.md", out / f"{fig}.csv"
    figure(chosen.get("lstm_nalu"), png, fmd, fcsv)
    return paths + [png, fmd, fcsv]
