"""Table 1: static and recurrent arithmetic, scaled error, ours beside the paper's."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from nalu.scoring import wilson_interval
from suite.tables import best_of_k
from suite.tables.common import PRINTS_ZERO as ZERO
from suite.tables.common import (
    choose_seed, fmt, load_cells, machines, not_in_paper, paper, paper_float, quantiles, require, to_markdown,
    write_table,
)
from tasks.metrics import EXTRAPOLATION, INTERPOLATION

FUNCTIONS = ["a+b", "a-b", "a*b", "a/b", "a^2", "sqrt(a)"]
RANGES = [INTERPOLATION, EXTRAPOLATION]
# (task in the paper's CSV, our task name, our model name, the paper's column header)
COLUMNS = [
    ("static", "static_arithmetic", "relu6", "ReLU6"),
    ("static", "static_arithmetic", "none", "None"),
    ("static", "static_arithmetic", "nac", "NAC"),
    ("static", "static_arithmetic", "nalu", "NALU"),
    ("recurrent", "recurrent_arithmetic", "lstm", "LSTM"),
    ("recurrent", "recurrent_arithmetic", "rnn_relu", "ReLU"),
    ("recurrent", "recurrent_arithmetic", "nac", "NAC"),
    ("recurrent", "recurrent_arithmetic", "nalu", "NALU"),
]


def verdict(ours: float, theirs: float) -> str:
    """Coarse agreement at the paper's one-decimal precision: ``match`` (both print 0.0, or both
    >999), ``worse`` (the paper prints 0.0 and we do not), ``better`` (we print 0.0, or stay below
    its >999), else ``xK``, ours K times the paper's (``x>1000`` beyond, ours infinite included)."""
    if math.isnan(ours) or math.isnan(theirs):
        return "n/a"
    zero_ours, zero_theirs = ours < ZERO, theirs < ZERO
    if zero_ours and zero_theirs:
        return "match"
    if zero_theirs:
        return "worse"
    if zero_ours:
        return "better"
    if math.isinf(theirs):
        return "match (>999)" if ours > 999 else "better"
    ratio = ours / theirs
    return f"x{ratio:.2g}" if ratio < 1000 else "x>1000"


REFERENCES = {  # what a scaled score is relative to (--reference)
    "random": "a randomly initialised reference model",
    "init": "the same model at initialisation",
    "variance": "predicting the test targets' mean (their variance)",
    "mean_square": "predicting 0 (the test targets' mean square)",
}


def reference_mse(member: dict, reference: str, rng: str) -> float:
    if reference == "random":
        return member["reference"][rng]
    if reference == "init":
        return member["init"][rng]
    return member["targets"][reference][rng]  # recorded since 2026-12-05


def scores(cell: dict, checkpoint: str, reference: str) -> dict[str, np.ndarray]:
    """Per range, each seed's scaled score (``+inf`` where it diverged or is undefined)."""
    members = cell["members"]
    diverged = np.array([m["diverged"] for m in members])
    out = {}
    for rng in RANGES:
        ref = np.array([reference_mse(m, reference, rng) for m in members])
        score = 100 * np.array([m[checkpoint][rng] for m in members]) / ref
        out[rng] = np.where(diverged | np.isnan(score), np.inf, score)
    return out


def cell_rows(cell: dict, checkpoint: str, reference: str, solved_below: float) -> list[dict]:
    """One row per range: the chosen seed's score and the seed statistics of one cell."""
    members = cell["members"]
    diverged = np.array([m["diverged"] for m in members])
    chosen = choose_seed(members, checkpoint)
    # Madsen & Johansen's criterion (cells run before it existed have no "solved")
    success = sum(m["solved"] for m in members) if all("solved" in m for m in members) else math.nan
    rows = []
    for rng, score in scores(cell, checkpoint, reference).items():
        q25, median, q75 = quantiles(score)
        finite = score[np.isfinite(score)]
        rows.append({
            "task": cell["task"].split("_")[0],
            "range": rng,
            "function": cell["label"],
            "model": cell["model"],
            "ours": float(score[chosen]) if chosen is not None else math.nan,
            # the seed with the lowest error on this very range: what no practitioner can choose
            "oracle": float(finite.min()) if len(finite) else math.inf,
            "median": median,
            "q25": q25,
            "q75": q75,
            "solved": int((score < solved_below).sum()),
            "success": success if rng == EXTRAPOLATION else math.nan,
            "diverged": int(diverged.sum()),
            "seeds": len(members),
            "chosen_seed": members[chosen]["seed"] if chosen is not None else None,
            "chosen_step": members[chosen]["best_step"] if chosen is not None else None,
        })
    return rows


def success_text(successes: float, trials: float) -> str:
    """``k/n (lo-hi%)`` with the 95% Wilson interval; ``n/a`` where the criterion was not run."""
    if math.isnan(successes):
        return "n/a"
    lo, hi = wilson_interval(int(successes), int(trials))
    return f"{successes:.0f}/{trials:.0f} ({100 * lo:.0f}-{100 * hi:.0f}%)"


def caption(cells: list[dict], checkpoint: str, reference: str, solved_below: float) -> str:
    lines = []
    for task in ("static_arithmetic", "recurrent_arithmetic"):
        c = next((c for c in cells if c["task"] == task), None)
        if c is None:
            continue
        t, o = c["config"]["task"], c["config"]["optimizer"]
        ref = t["reference"]["model"]
        ref_name = (f"{ref['activation_name']} MLPs" if "activation_name" in ref
                    else f"{ref.get('cell', 'lstm').upper()}s")
        lo, hi = t["interpolation"]["low"], t["interpolation"]["high"]
        elo, ehi = t["extrapolation"]["low"], t["extrapolation"]["high"]
        if task.startswith("static"):
            data = (f"x in R^{t['input_size']}; train and interpolate on U[{lo:g}, {hi:g}], "
                    f"extrapolate on U[{elo:g}, {ehi:g}]")
        else:
            data = (f"x_t in R^{t['input_size']}, x_t ~ U[{lo:g}, {hi:g}]; train and interpolate on "
                    f"length {t['length']}, extrapolate on length {t['extrapolation_length']} "
                    f"(values U[{elo:g}, {ehi:g}])")
        lines.append(
            f"- **{task.split('_')[0]}**: {data}; {c['steps']:,} iterations of Adam (lr {o['lr']}, "
            f"batch {t['batch_size']}); {len(c['seeds'])} seeds per cell; test sets of "
            f"{t['test_samples']:,} (extrapolation {t['extrapolation_samples']:,}); layer sizes: "
            f"units {t['hidden']['unit']}, MLPs {t['hidden']['mlp']}, RNNs {t['hidden']['rnn']}; "
            f"reference = mean MSE of {t['reference']['members']} randomly initialised {ref_name} "
            "of the baseline shape."
        )
    sel = ("each seed's weights at its lowest interpolation-validation MSE (early stopping)"
           if checkpoint == "best" else "each seed's final weights")
    ref = REFERENCES[reference]
    return "\n".join([
        "Scaled error = 100 x MSE(model) / MSE(reference): 0 is perfect, 100 is as bad as "
        f"{ref}. Each cell shows **ours / paper**. Ours is {sel}, for the seed with the lowest "
        "interpolation-validation MSE among seeds that did not diverge (the paper does not say "
        "how it combined seeds). Diverged seeds count as +inf in the median and never as solved.",
        *lines,
        f"- solved = the row's score below {solved_below} (it prints as 0.0 at the paper's "
        "precision); the extrapolation rows are the ones that matter.",
        "- success = seeds whose extrapolation MSE at their best validation step is below that of a "
        "near-perfect model with first-layer weights off by epsilon (Madsen & Johansen 2020), with "
        "its 95% Wilson interval; judged on extrapolation, so n/a on every interpolation row (and on "
        "cells run before the suite recorded it).",
        "- columns: None is the MLP of the ReLU6 column without its nonlinearity (a product of linear "
        "maps, so a linear model); ReLU6 an MLP with ReLU6 activations; NAC and NALU stacks of those "
        "units; LSTM and ReLU the recurrent baselines.",
        f"- {machines(cells)} Another machine rounds matrix products otherwise, which moves NALU seeds "
        "(README, \"How seeds are batched\"): read the median, spread and success counts, not one seed.",
    ])


def merged(cells: list[dict], checkpoint: str = "best", reference: str = "random",
           solved_below: float = ZERO) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The paper's rows with ours beside them (``df``, its ``paper`` parsed), and the rows of models
    the paper has no column for (``extra``)."""
    rows = [r for c in cells for r in cell_rows(c, checkpoint, reference, solved_below)]
    ours = pd.DataFrame(rows, columns=[
        "task", "range", "function", "model", "ours", "oracle", "median", "q25", "q75", "solved", "success",
        "diverged", "seeds", "chosen_seed", "chosen_step"])
    ref = paper("table1").assign(model=lambda d: d.model.replace({"relu": "rnn_relu"}))
    ref = ref.rename(columns={"score": "paper_printed"})
    df = ref.merge(ours, on=["task", "range", "function", "model"], how="left")
    # models the paper has no column for (a unit from outside, make benchmark-unit PROTOCOL=tasks): a
    # column of their own after the paper's, kept out of the counts against the paper
    extra = not_in_paper(ours, ref, ["task", "model"])
    df["paper"] = df.paper_printed.map(paper_float)
    df["verdict"] = [verdict(o, p) for o, p in zip(df.ours, df.paper)]
    df["oracle_verdict"] = [verdict(o, p) for o, p in zip(df.oracle, df.paper)]
    df["function"] = pd.Categorical(df.function, FUNCTIONS, ordered=True)
    df = df.sort_values(["task", "range", "function"], ascending=[False, False, True])
    return df, extra


def as_csv(df: pd.DataFrame, extra: pd.DataFrame) -> pd.DataFrame:
    """What ``<name>.csv`` holds: the paper's printed value as ``paper``, then the extra models."""
    csv = df.drop(columns=["paper"]).rename(columns={"paper_printed": "paper"})
    if len(extra):
        csv = pd.concat([csv, extra.assign(verdict="not in the paper")], ignore_index=True)
    return csv


def frame(cells: list[dict]) -> pd.DataFrame:
    """The table's csv frame from its cells (what the claims' rules read)."""
    return as_csv(*merged(cells))


def best_of_k_frame(cells: list[dict]) -> pd.DataFrame:
    """The ``_best_of_k`` csv frame from its cells (empty below ``best_of_k.MIN_SEEDS`` seeds)."""
    if not cells or max(len(c["members"]) for c in cells) < best_of_k.MIN_SEEDS:
        return pd.DataFrame()
    df, _ = merged(cells)
    return best_of_k.curves([(c, scores(c, "best", "random")) for c in cells], df, "best")


def build(evidence: Path | list[Path], out: Path, checkpoint: str = "best",
          reference: str = "random", solved_below: float = ZERO, name: str = "table1") -> list[Path]:
    evidence = [evidence] if isinstance(evidence, Path | str) else list(evidence)
    cells = [c for c in load_cells(*evidence) if c["task"] in ("static_arithmetic", "recurrent_arithmetic")]
    require(cells, "Table 1", evidence, "reproduce-table1")
    df, extra = merged(cells, checkpoint, reference, solved_below)
    extra_columns = [(t, m) for t, m in extra[["task", "model"]].drop_duplicates().itertuples(index=False)]

    # the paper's layout: ranges x functions down, the eight model columns across
    table = []
    for rng in RANGES:
        for fn in FUNCTIONS:
            row = {"range": rng, "function": fn}
            for task, _, model, header in COLUMNS:
                hit = df[(df.task == task) & (df.range == rng) & (df.function == fn)
                         & (df.model == model)]
                r = hit.iloc[0]
                row[f"{task} {header}"] = (f"{fmt(r.ours)} / {r.paper_printed}"
                                           if not math.isnan(r.ours) else f"- / {r.paper_printed}")
            for task, model in extra_columns:
                hit = extra[(extra.task == task) & (extra.range == rng) & (extra.function == fn) & (extra.model == model)]
                row[f"{task} {model}"] = f"{fmt(hit.ours.iloc[0])} / -" if len(hit) else "- / -"
            table.append(row)
    missing = int(df.ours.isna().sum())
    ran = pd.concat([df, extra.assign(paper_printed="-", verdict="not in the paper")]).dropna(subset=["ours"])
    extended = ran.assign(
        ours=ran.ours.map(fmt), oracle=ran.oracle.map(fmt), median=ran["median"].map(fmt),
        spread=[f"{fmt(a)}-{fmt(b)}" for a, b in zip(ran.q25, ran.q75)],
        solved=[f"{s:.0f}/{n:.0f}" for s, n in zip(ran.solved, ran.seeds)],
        success=[success_text(k, n) for k, n in zip(ran.success, ran.seeds)],
        diverged=[f"{d:.0f}/{n:.0f}" for d, n in zip(ran.diverged, ran.seeds)],
        chosen_seed=ran.chosen_seed.astype("Int64"), chosen_step=ran.chosen_step.astype("Int64"),
    )[["task", "range", "function", "model", "ours", "paper_printed", "verdict", "oracle", "median",
       "spread", "solved", "success", "diverged", "chosen_seed", "chosen_step"]]
    agree = (df.verdict == "match").sum() + (df.verdict == "match (>999)").sum()
    budget = {c["task"].split("_")[0]: c["steps"] for c in cells}
    ext = df[df.range == EXTRAPOLATION]
    still = ext[(ext.chosen_step == ext.task.map(budget)) & (ext.ours >= solved_below)]
    still_improving = (f" In {len(still)} of the {int(ext.ours.notna().sum())} cells run, the chosen "
                       "seed had not solved extrapolation and its best validation step was the last "
                       "one: more iterations would likely change those cells.")
    many = max(len(c["members"]) for c in cells) >= best_of_k.MIN_SEEDS  # enough seeds to ask best-of-k
    if many:
        best = best_of_k.curves([(c, scores(c, checkpoint, reference)) for c in cells], df, checkpoint)
        best = best.assign(function=pd.Categorical(best.function, FUNCTIONS, ordered=True)).sort_values(
            ["task", "model", "function", "range", "k"], ascending=[False, True, True, False, True], kind="stable")
    md = "\n\n".join([
        "# Table 1: static and recurrent arithmetic (scaled error)",
        caption(cells, checkpoint, reference, solved_below),
        to_markdown(pd.DataFrame(table)),
        f"{agree} of {len(df)} entries match the paper at its printed precision "
        f"(both 0.0, or both >999); {missing} entries were not run." + still_improving,
        "## Selection, made visible",
        selection_text(df),
        "## Extended: seed statistics per cell",
        "`spread` is the inter-quartile range over seeds; `verdict` compares ours with the paper "
        "(`match`: both print 0.0, or both >999; `worse`: the paper prints 0.0 and we do not; `better`: "
        "we print 0.0 where it does not, or stay below its >999; `xK`: ours is K times the paper's, "
        "`x>1000` beyond); "
        "`oracle` is the lowest score of any seed on that very range, which a practitioner could "
        "not choose (it looks at the test set).",
        to_markdown(extended.rename(columns={"paper_printed": "paper"})),
        *([best_of_k.section(best, name)] if many else []),
    ]) + "\n"
    return write_table(out, name, md, as_csv(df, extra)) + (best_of_k.write(best, out, name) if many else [])


def selection_text(df: pd.DataFrame) -> str:
    """Cell by cell, where the paper prints 0.0 on extrapolation: does the seed validation picks
    print 0.0, does the best seed on the test range itself (the oracle), or neither."""
    zero = df[(df.range == EXTRAPOLATION) & (df.paper < ZERO) & df.ours.notna()]
    groups = {"validation": [], "oracle": [], "neither": []}
    for r in zero.itertuples():
        name = f"{r.task} {r.model} {r.function}"
        key = "validation" if r.ours < ZERO else "oracle" if r.oracle < ZERO else "neither"
        groups[key].append(f"{name} ({fmt(r.ours)}; oracle {fmt(r.oracle)})" if key != "validation" else name)
    return "\n".join([
        "The paper prints one number per cell and does not say how it combined seeds. Of the "
        f"{len(zero)} extrapolation cells where it prints 0.0 (and we ran):",
        f"- the validation-selected seed prints 0.0 too in {len(groups['validation'])}"
        + (f": {', '.join(groups['validation'])}" if groups["validation"] else "") + ";",
        f"- only the oracle seed prints 0.0 in {len(groups['oracle'])}, where the selection rule "
        "explains the difference" + (f": {', '.join(groups['oracle'])}" if groups["oracle"] else "") + ";",
        f"- no seed prints 0.0 in {len(groups['neither'])}, where selection cannot explain it"
        + (f": {', '.join(groups['neither'])}" if groups["neither"] else "") + ".",
    ])
