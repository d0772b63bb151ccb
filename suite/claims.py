"""The paper's claims as code: each claim, the cells that test it, and the rules that decide it,
evaluated on every budget and variant that has a table (``python -m suite.claims``).

    python -m suite.claims [--results results]     -> results/claims.md, results/claims.csv,
                                                      and the at-a-glance block of README.md

A claim names the family of tables that test it (``table1``: ``table1``, ``table1_paper``,
``table1_seeds100``; see ``suite.targets``). Each *reading* is one way of deciding it, written
once: where the paper's meaning is open (is its printed 0.0 the selected seed, the median seed, or
most seeds?) each reading is its own rule and all are shown. A reading's verdict for one table is

- ``reproduced`` when every cell it looks at agrees with the paper,
- ``not reproduced`` when none does,
- ``mixed`` when some do, and
- ``not run`` when no table has any of its cells (a table without them has no row),

with the counts and the numbers it rests on. The tables are built from the committed evidence
alone (``suite.evidence``); a table whose evidence is not committed yet is marked as such
("earlier run"). The rules read the tables, which carry, per cell, the selected seed's value,
the median and spread over seeds, success counts and the paper's value beside ours.
"""

from __future__ import annotations

import functools
import io
import math
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from nalu.scoring import wilson_interval
from suite.evidence import load
from suite.io import fill_block, generated_main, write_text_atomic
from suite.provenance import ROOT
from suite.tables.verify import within
from suite.tables.common import PRINTS_ZERO as ZERO  # below it, a score prints 0.0
from suite.targets import BUILT

VERDICTS = ("reproduced", "partial", "mixed", "not reproduced", "inconclusive", "not run")
CLASSES = ("reproduced", "refuted", "refuted with a lever", "untested")
# the thresholds the rules use (claims.md's header states each)
FAILS = 1.0  # Table 1: a score of at least this fails (the paper's failing rows print 1.0 and more)
IDENTITY_FAILS = 1.0  # Table 5: an MLP misses the identity when its median MAE on [-1000, 1000] is above this
MNIST_POINTS = 5.0  # Table 2: single-digit accuracy within this many points of the paper's
HALF_THE_CUT = 27.0  # Table 4: at least half the paper's 54% cut
EXACT = 90.0  # Figure 4: a model solves a domain at this mean exact-match accuracy (%)
TRAINED_REWARD = 0.9  # Figure 5: trained when its mean reward on every training command is at least this
PAPER = ROOT / "results" / "paper"


@dataclass(frozen=True)
class Check:
    """One cell's comparison: what it is, ours, the paper's, and whether they agree."""

    cell: str
    ours: float
    paper: float
    agrees: bool
    shown: str = ""  # how ours reads, where not a plain number ("3/10 solved")
    ran: bool = True  # False: a cell the rule asks for that the table has not got (its model not run there)
    inconclusive: bool = False  # the seeds cannot tell: their interval holds the paper's value and its opposite


Rule = Callable[[pd.DataFrame], list[Check]]


@dataclass(frozen=True)
class Reading:
    name: str
    rule: Rule
    table: str = ""  # the rule reads <table><table>.csv instead (``_best_of_k``); no row where it is absent
    # trained as the paper says, for this reading (the median seed's reading asks the median seed to fit
    # the training range); None: the claim's ``trained``
    trained: Rule | None = None


@dataclass(frozen=True)
class Lever:
    """What a claim's verdict could still hang on: a setting not tried yet, its cost here, and the
    evidence that pulls it (``results/evidence/<evidence>.jsonl``: once that exists, the lever is pulled)."""

    what: str
    cost: str
    evidence: str

    def pulled(self, results: Path) -> bool:
        return (results / "evidence" / f"{self.evidence}.jsonl").is_file()


@dataclass(frozen=True)
class Claim:
    id: str
    section: str
    sentence: str  # the paper's words, shortened
    family: str  # the tables that test it: <family>.csv and <family>_<budget|variant>.csv
    readings: tuple[Reading, ...]
    csv: str = ""  # the table file's stem when it is not the family's (Figure 1: figure1)
    # trained as the paper says? The model under test (or the baselines a claim compares with) at
    # the paper's level inside its training domain, from the same table; None: the claim is itself
    # about the training domain, or the paper gives no in-domain number to hold it to
    trained: Rule | None = None
    # the claims of a unit from outside (make benchmark-unit): its scorecards, <folder>/<family>*.csv
    # beside their evidence <folder>/<name>.jsonl, instead of suite.targets' tables
    folder: str = ""
    levers: tuple[Lever, ...] = ()


def num(x) -> float:
    try:
        return float(str(x).lstrip(">")) if not str(x).startswith(">") else math.inf
    except ValueError:
        return math.nan


# ---- Table 1: scaled scores, 0 perfect, 100 a random model ---------------------------------

@dataclass(frozen=True)
class Cells:
    """The cells of Table 1 a rule looks at: one task's range, some models, some functions (None: all).
    ``pick(df)`` gives those the table ran; ``missing(df)`` the models it asks for and the table has not
    run at all (a paper-budget table without the baselines), each a check that did not run."""

    task: str
    models: tuple[str, ...]
    functions: tuple[str, ...] | None
    rng: str

    def __call__(self, df: pd.DataFrame) -> pd.DataFrame:
        ran = df.ours.notna() if "ours" in df else True
        rows = df[(df.task == self.task) & (df.range == self.rng) & df.model.isin(self.models) & ran]
        return rows[rows.function.isin(self.functions)] if self.functions else rows

    def missing(self, df: pd.DataFrame) -> list[Check]:
        present = set(self(df).model)
        return [Check(f"{self.task} {m}", math.nan, math.nan, False, "not run", ran=False)
                for m in self.models if m not in present]


def table1_cells(task: str, models: tuple[str, ...], functions: tuple[str, ...] | None, rng: str) -> Cells:
    return Cells(task, models, functions, rng)


def not_run(pick, df: pd.DataFrame) -> list[Check]:
    return pick.missing(df) if isinstance(pick, Cells) else []


def as_good_as_paper(column: str, pick) -> Rule:
    """Ours (``column``: the selected seed's ``ours`` or the ``median`` seed's) at the paper's level
    or better: below 0.05 where the paper prints 0.0, at most twice the paper's score elsewhere."""
    def rule(df: pd.DataFrame) -> list[Check]:
        out = []
        for _, r in pick(df).iterrows():
            ours, theirs = num(r[column]), num(r.paper)
            ok = ours < ZERO if theirs < ZERO else ours <= 2 * theirs
            out.append(Check(f"{r.task} {r.model} {r.function}", ours, theirs, bool(ok)))
        return out + not_run(pick, df) if out else out
    return rule


def most_seeds_solve(pick) -> Rule:
    """Where the paper prints 0.0: more than half of the seeds score below 0.05."""
    def rule(df: pd.DataFrame) -> list[Check]:
        out = []
        for _, r in pick(df).iterrows():
            if num(r.paper) >= ZERO:
                continue
            solved, seeds = num(r.solved), num(r.seeds)
            out.append(Check(f"{r.task} {r.model} {r.function}", solved / seeds, num(r.paper), bool(2 * solved > seeds),
                             f"{solved:.0f}/{seeds:.0f} seeds below 0.05"))
        return out + not_run(pick, df) if out else out
    return rule


def fails_like_paper(column: str, pick) -> Rule:
    """Where the paper's model fails (prints 1.0 or more): ours fails too (1.0 or more)."""
    def rule(df: pd.DataFrame) -> list[Check]:
        out = [Check(f"{r.task} {r.model} {r.function}", num(r[column]), num(r.paper), bool(num(r[column]) >= FAILS))
               for _, r in pick(df).iterrows() if num(r.paper) >= FAILS]
        return out + not_run(pick, df) if out else out
    return rule


def both(*rules: Rule) -> Rule:
    """Every check of each rule, as one rule."""
    return lambda df: [c for rule in rules for c in rule(df)]


def best_of_k(k: int, pick) -> Rule:
    """Where the paper prints 0.0 (``suite.tables.best_of_k``): the best of ``k`` seeds chosen by
    validation prints 0.0 at least half the time."""
    def rule(df: pd.DataFrame) -> list[Check]:
        out = [Check(f"{r.task} {r.model} {r.function}", r.p_validation, 0.0, bool(r.p_validation >= 0.5),
                     f"P(best of {k} prints 0.0) {r.p_validation:.2f}") for _, r in pick(df[df.k == k]).iterrows()]
        return out + not_run(pick, df) if out else out
    return rule


def table1_readings(pick: Cells, fit: Cells) -> tuple[Reading, ...]:
    """The four readings of a Table 1 claim on the cells ``pick``, each with its own test of the
    training range on the cells ``fit`` (the same seed, statistic or odds, on the interpolation rows)."""
    return (Reading("selected seed", as_good_as_paper("ours", pick), trained=as_good_as_paper("ours", fit)),
            Reading("median seed", as_good_as_paper("median", pick), trained=as_good_as_paper("median", fit)),
            Reading("most seeds solve", most_seeds_solve(pick), trained=most_seeds_solve(fit)),
            Reading("best of 10 by validation, even odds", best_of_k(10, pick), table="_best_of_k",
                    trained=best_of_k(10, fit)))


# ---- Table 2: % exact at length 1, MAE beyond ------------------------------------------------

def table2_rule(column: str, models: tuple[str, ...], lengths: tuple[int, ...], agree) -> Rule:
    def rule(df: pd.DataFrame) -> list[Check]:
        rows = df[df.model.isin(models) & df.length.isin(lengths) & df.ours.notna()]
        return [Check(f"{r.task} {r.model} length {r.length}", num(r[column]), num(r.paper),
                      bool(agree(num(r[column]), num(r.paper)))) for _, r in rows.iterrows()]
    return rule


def within_points(points: float):
    return lambda ours, theirs: abs(ours - theirs) <= points


def at_most_twice(ours: float, theirs: float) -> bool:
    return ours <= 2 * theirs


# ---- Table 3, Table 4, Table 5, Figures 4 and 5, the units table ---------------------------

def table3_rule(column: str) -> Rule:
    """The LSTM + NALU's test MAE at most twice the paper's 0.41."""
    def rule(df: pd.DataFrame) -> list[Check]:
        if column not in df.columns:  # a table made before it had the column
            return []
        rows = df[(df.model == "lstm_nalu") & df[column].notna()]
        return [Check("lstm_nalu test MAE", num(r[column]), num(r.paper_test),
                      bool(num(r[column]) <= 2 * num(r.paper_test))) for _, r in rows.iterrows()]
    return rule


def table3_trained(df: pd.DataFrame, models: tuple[str, ...] = ("lstm_nalu",)) -> list[Check]:
    """Trained as the paper says: the model under test's training MAE (the LSTM + NALU's; ``models``)
    at most twice the paper's (0.12: it fits its training words). The summed-state LSTM's fit (0.003)
    is a question about the comparison, not about the claim's model."""
    rows = df[df.model.isin(models) & df.ours_train.notna()]
    return [Check(f"{r.model} train MAE", num(r.ours_train), num(r.paper_train),
                  bool(num(r.ours_train) <= 2 * num(r.paper_train))) for _, r in rows.iterrows()]


@functools.cache
def segui_reference() -> float:
    """% exact of Seguí et al.'s head as the reference reimplementation trains it
    (fomorians/counting-mnist, 100,000 steps: results/paper/counting_mnist.csv)."""
    df = pd.read_csv(PAPER / "counting_mnist.csv")
    return float(df[df.model == "segui"].accuracy.iloc[0])


def table4_trained(df: pd.DataFrame) -> list[Check]:
    """Trained as the reference says: Seguí et al.'s head (the previous best, on the even-digit
    count; the parity variant has none) at the reference reimplementation's accuracy
    (``segui_reference``) or above it, 5 points of slack: a head trained better than the reference's
    is trained as well as the paper's, not unlike it."""
    rows = df[(df.layer == "previous_best_wx_plus_b") & df.ours.notna()]
    return [Check("Seguí et al.'s head, % exact", num(r.ours), segui_reference(),
                  bool(num(r.ours) >= segui_reference() - 5)) for _, r in rows.iterrows()]


def table4_rule(df: pd.DataFrame) -> list[Check]:
    """The NAC cuts the error of the base layer (Seguí et al.'s head, or Wx + b in the parity
    variant) by at least half the paper's 54%."""
    column = next((c for c in df.columns if c.startswith("error_cut_vs_")), None)
    rows = df[df.layer == "nac"] if column else df.iloc[:0]
    return [Check(f"nac, median error cut ({column.removeprefix('error_cut_vs_').removesuffix('_pct')})",
                  num(r[column]), 54.0, bool(num(r[column]) >= HALF_THE_CUT)) for _, r in rows.iterrows()]


NAC_HEADS = ("nac", "nac_plus_b")


def table4_beats_other_heads(df: pd.DataFrame) -> list[Check]:
    """The NAC's median error cut is larger than that of every head that is not a NAC (the base layer,
    whose cut is 0 by definition, aside): the paper credits the NAC, not any new head."""
    column = next((c for c in df.columns if c.startswith("error_cut_vs_")), None)
    if column is None or not (df.layer == "nac").any():
        return []
    base = column.removeprefix("error_cut_vs_").removesuffix("_pct")
    base = "previous_best_wx_plus_b" if base == "previous_best" else base  # its cut is 0 by definition
    nac = num(df.loc[df.layer == "nac", column].iloc[0])
    others = df[~df.layer.isin((*NAC_HEADS, base)) & df[column].notna()]
    return [Check(f"nac against {r.layer}", nac, math.nan, bool(nac > num(r[column])),
                  f"cuts {show(nac)}% vs {show(num(r[column]))}%") for _, r in others.iterrows()]


MLP = ("threshold", "hardtanh", "tanh", "tanhshrink", "sigmoid", "relu6", "hardshrink", "softsign", "leakyrelu",
       "prelu", "softplus", "softshrink", "relu", "elu", "selu")


def identity_rule(df: pd.DataFrame) -> list[Check]:
    """Every MLP misses the identity on [-1000, 1000] (median MAE above 1; predicting 0 scores 500)."""
    rows = df[df.nonlinearity.isin(MLP)]
    return [Check(f"{r.nonlinearity} MLP, median MAE", num(r.mae_median), math.nan, bool(num(r.mae_median) > IDENTITY_FAILS))
            for _, r in rows.iterrows()]


def figure4_rule(kind: str, models: tuple[str, ...], domain: int, solved: bool) -> Rule:
    """On the task ``kind`` at ``domain``, each model's mean exact-match accuracy is 90% or more
    (``solved``) or below it."""
    def rule(df: pd.DataFrame) -> list[Check]:
        rows = df[(df.kind == kind) & df.model.isin(models) & (df.domain == domain) & (df.metric == "accuracy")]
        return [Check(f"{r.kind} {r.model} at {domain}", num(r["mean"]), math.nan, bool((num(r["mean"]) >= EXACT) == solved))
                for _, r in rows.iterrows()]
    return rule


FIGURE4_BASELINES = ("lstm", "ugrnn", "dnc")
FIGURE4_NALU = ("lstm_nalu", "ugrnn_nalu", "dnc_nalu", "nalu")


def figure5_trained(df: pd.DataFrame) -> list[Check]:
    """Trained as the paper says: each agent's mean reward at least 0.9 on every command of its
    training range (the paper plots no training command; its curves start at 1.0 at command 13,
    the range's edge)."""
    rows = df[df.in_training.astype(str) == "True"]
    return [Check(f"{r.agent} command {r.command}", num(r["mean"]), math.nan, bool(num(r["mean"]) >= TRAINED_REWARD))
            for _, r in rows.iterrows()]


def figure5_rule(agent: str, commands: range, holds: bool) -> Rule:
    """The agent's mean reward is at or above 0 (``holds``) or below it at each command in ``commands``."""
    def rule(df: pd.DataFrame) -> list[Check]:
        rows = df[(df.agent == agent) & df.command.isin(list(commands))]
        return [Check(f"{agent} command {r.command}", num(r["mean"]), math.nan, bool((num(r["mean"]) >= 0) == holds))
                for _, r in rows.iterrows()]
    return rule


def power(rate: float, seeds: int) -> float:
    """The chance that ``seeds`` seeds succeeding at ``rate`` give an interval that tells ``rate`` from
    the nearer of 0 and 1: at least one success (against 0), at least one failure (against 1)."""
    return 1 - (1 - rate) ** seeds if rate <= 0.5 else 1 - rate ** seeds


def units_rule(solved: str) -> Rule:
    """At their budget (5,000,000 steps), Madsen & Johansen's success rate lies within the 95%
    Wilson interval of ours (``solved``: under our threshold, or the one behind their published
    rates). Where that interval also holds 0 while their rate is above 0 (or 1 while it is below 1),
    the seeds cannot tell their rate from none (or all): *inconclusive*, with the power ``seeds``
    seeds had at their rate. Tables at other budgets, or under a protocol with no published rates
    (the Primer's), have no cell for it."""
    def rule(df: pd.DataFrame) -> list[Check]:
        if "paper" not in df.columns:  # units_primer: the Primer's rates are not stored
            return []
        out = []
        for _, r in df[df.paper.notna() & (df[solved] >= 0) & (df.steps == 5_000_000)].iterrows():
            k, n = int(r[solved]), int(r.seeds)
            lo, hi = wilson_interval(k, n)
            theirs = num(r.paper)
            agrees = within(theirs, lo, hi)
            blind = agrees and ((theirs > 0 and within(0.0, lo, hi)) or (theirs < 1 and within(1.0, lo, hi)))
            out.append(Check(f"{r.function} {r.model}", k / n, theirs, agrees,
                             f"{k}/{n}" + (f", inconclusive (power {100 * power(theirs, n):.0f}%)" if blind else ""),
                             inconclusive=blind))
        return out
    return rule


def solves_the_most(functions: tuple[str, ...], unit: str) -> Rule:
    """Per function, summed over every training range of a scorecard: the share of seeds ``unit``
    solves (its rows' ``unit`` starts with it: told or not) is at least every other unit's. No
    check where no other unit ran beside it."""
    def rule(df: pd.DataFrame) -> list[Check]:
        out = []
        for fn in functions:
            g = df[df.function == fn].groupby("unit")[["solved", "seeds"]].sum()
            ours, others = g[g.index.str.startswith(unit)], g[~g.index.str.startswith(unit)]
            if ours.empty or others.empty:
                continue
            share, shares = ours.solved.sum() / ours.seeds.sum(), others.solved / others.seeds
            best = shares.idxmax()
            out.append(Check(f"{fn} {ours.index[0]}", share, math.nan, bool(share >= shares.max()),
                             f"{ours.solved.sum():.0f}/{ours.seeds.sum():.0f} solved; the best other unit, "
                             f"{best}, {others.solved[best]:.0f}/{others.seeds[best]:.0f}"))
        return out
    return rule


STATIC_UNITS = table1_cells("static", ("nac", "nalu"), ("a+b", "a-b"), "extrapolation")
STATIC_UNITS_FIT = table1_cells("static", ("nac", "nalu"), ("a+b", "a-b"), "interpolation")
STATIC_NALU = table1_cells("static", ("nalu",), ("a*b", "a/b", "a^2", "sqrt(a)"), "extrapolation")
STATIC_NALU_FIT = table1_cells("static", ("nalu",), ("a*b", "a/b", "a^2", "sqrt(a)"), "interpolation")
RECURRENT_UNITS = table1_cells("recurrent", ("nac", "nalu"), None, "extrapolation")
RECURRENT_UNITS_FIT = table1_cells("recurrent", ("nac", "nalu"), None, "interpolation")
STATIC_BASELINES, RECURRENT_BASELINES = (table1_cells(task, models, None, "extrapolation") for task, models in
                                         (("static", ("relu6", "none")), ("recurrent", ("lstm", "rnn_relu"))))
STATIC_BASELINES_FIT, RECURRENT_BASELINES_FIT = (table1_cells(task, models, None, "interpolation") for task, models in
                                                 (("static", ("relu6", "none")), ("recurrent", ("lstm", "rnn_relu"))))
FIGURE4_LEVER = Lever("the recurrent NALU fitted to its training range first (numeric tokens, a decayed rate, a longer "
                      "budget, its state size; issue 62, lever 3)", "about 1-1.5 h here", "figure4_nalu_fit")
CLAIMS = [
    Claim("identity", "1.1, Table 5", "MLPs with common nonlinearities fail to extrapolate the identity function",
          "table5", (Reading("every MLP fails on [-1000, 1000]", identity_rule),)),
    Claim("static-add", "4.1, Table 1", "NAC and NALU extrapolate addition and subtraction (printed 0.0)",
          "table1", table1_readings(STATIC_UNITS, STATIC_UNITS_FIT), trained=as_good_as_paper("ours", STATIC_UNITS_FIT)),
    Claim("static-mul", "4.1, Table 1", "the NALU extrapolates a*b, a/b, a^2 and sqrt(a) (0.0, 0.7, 0.0, 0.0)",
          "table1", table1_readings(STATIC_NALU, STATIC_NALU_FIT), trained=as_good_as_paper("ours", STATIC_NALU_FIT)),
    Claim("recurrent", "4.1, Table 1", "recurrent NAC and NALU extrapolate from length 10 to 1000",
          "table1", table1_readings(RECURRENT_UNITS, RECURRENT_UNITS_FIT),
          trained=as_good_as_paper("ours", RECURRENT_UNITS_FIT),
          levers=(Lever("the recurrent NAC and NALU as wide as their baselines (state 8; issue 62, lever 1)",
                        "about 5 h here at JOBS=2", "table1_paper_wide"),)),
    Claim("baselines-fail", "4.1, Table 1", "ReLU6, linear, LSTM and ReLU RNN fail outside their training range",
          "table1", (Reading("static and recurrent, selected seed",
                             both(fails_like_paper("ours", STATIC_BASELINES), fails_like_paper("ours", RECURRENT_BASELINES))),
                     Reading("selected seed", fails_like_paper("ours", STATIC_BASELINES),
                             trained=as_good_as_paper("ours", STATIC_BASELINES_FIT)),
                     Reading("recurrent, selected seed", fails_like_paper("ours", RECURRENT_BASELINES),
                             trained=as_good_as_paper("ours", RECURRENT_BASELINES_FIT))),
          trained=both(as_good_as_paper("ours", STATIC_BASELINES_FIT), as_good_as_paper("ours", RECURRENT_BASELINES_FIT)),
          levers=(Lever("the protocol search at the tables' budget, widened where the paper allows (input count, "
                        "subset sizes, input distributions), for a protocol under which the baselines fit their "
                        "printed interpolation rows (issue 62, lever 5)", "about 3-4 h here", "protocol_search_paper"),)),
    Claim("recurrent-interpolation", "4.1, Table 1", "all models interpolate successfully (recurrent, printed 0.0)",
          "table1", (Reading("selected seed", as_good_as_paper("ours", table1_cells(
              "recurrent", ("lstm", "rnn_relu", "nac", "nalu"), None, "interpolation"))),)),
    Claim("mnist-extrapolation", "4.2, Table 2", "NAC and NALU cores count and add series of 100 and 1000 digits",
          "table2", (Reading("selected seed, at most twice the paper's MAE", table2_rule("ours", ("nac", "nalu"), (100, 1000), at_most_twice)),
                     Reading("median seed, at most twice the paper's MAE", table2_rule("median", ("nac", "nalu"), (100, 1000), at_most_twice),
                             trained=table2_rule("median", ("nac", "nalu"), (1,), within_points(MNIST_POINTS)))),
          trained=table2_rule("ours", ("nac", "nalu"), (1,), within_points(MNIST_POINTS)),
          levers=(Lever("the NALU core trained until its validation curve levels, the 1.2M-weight encoder, 5 seeds "
                        "(issue 62, lever 4)", "about 6-8 h here in sittings", "table2_nalu_long"),)),
    Claim("mnist-length1", "4.2, Table 2", "accuracy on single digits (length 1) as printed",
          "table2", (Reading("selected seed, within 5 points", table2_rule("ours", ("lstm", "gru", "rnn_tanh", "rnn_relu", "nac", "nalu"), (1,), within_points(MNIST_POINTS))),)),
    Claim("number-words", "4.3, Table 3", "LSTM + NALU reads number words with test MAE 0.41 (LSTM 29.4)",
          "table3", (Reading("selected model", table3_rule("ours_test")), Reading("median candidate", table3_rule("mae_median"))),
          trained=table3_trained,
          levers=(Lever("TensorFlow's LSTM initialisation over the paper's grid at 300,000 steps, the last lever the "
                        "authors named (issue 62, lever 2)", "about 7 h here at JOBS=2", "table3_paper_grid_tf_init"),)),
    *(Claim(f"programs-{name}", "4.4, Figure 4", f"all models solve {task} inside the training range; only the "
            "recurrent NALU extrapolates", "figure4",
            (Reading("beyond (10,000): the recurrent NALU 90% exact", figure4_rule(kind, ("nalu",), 10000, True)),
             Reading("in range (100): every model 90% exact", figure4_rule(kind, FIGURE4_BASELINES + FIGURE4_NALU, 100, True),
                     trained=lambda df: []),
             Reading("beyond (10,000): every NALU model 90% exact", figure4_rule(kind, FIGURE4_NALU, 10000, True),
                     trained=figure4_rule(kind, FIGURE4_NALU, 100, True))),
            trained=figure4_rule(kind, ("nalu",), 100, True), levers=(FIGURE4_LEVER,))
      for kind, name, task in (("addition", "addition", "the addition of two integers"),
                               ("program", "conditional", "the program with a conditional"))),
    Claim("grid-world", "4.5, Figure 5", "A3C + NAC holds its reward to commands of about 19; A3C degrades above 13",
          "figure5", (Reading("A3C + NAC at or above 0 for commands 13-19", figure5_rule("a3c_nac", range(13, 20), True)),
                      Reading("the NAC as the agent's only clock, at or above 0 for commands 13-19",
                              figure5_rule("a3c_nac:clock_only", range(13, 20), True)),
                      Reading("A3C below 0 for commands 15-19", figure5_rule("a3c", range(15, 20), False))),
          trained=figure5_trained,
          levers=(Lever("the A3C tuned alone under the paper's scoring (entropy, workers, frames) until it reaches 0.9 "
                        "on every training command, then the NAC agents with its settings (issue 62, lever 6)",
                        "several hours here; the budget is stated in its pre-registration", "figure5_late_zero_tuned"),)),
    Claim("final-layer", "4.6, Table 4", "a NAC as the final layer cuts the previous best error by 54%",
          "table4", (Reading("at least half the paper's cut, and above every other head's",
                             both(table4_rule, table4_beats_other_heads)),
                     Reading("at least half the paper's cut", table4_rule),
                     Reading("the NAC's cut beats every other head's", table4_beats_other_heads)),
          trained=table4_trained),
    Claim("units-rates", "Madsen & Johansen 2020, Table 2", "success rates of NAC, NALU, NAU, NMU on the static task",
          "units", (Reading("at 5e6 steps, their rate within our 95% interval, their threshold", units_rule("solved_published")),
                    Reading("at 5e6 steps, their rate within our 95% interval, our threshold", units_rule("solved"))),
          levers=(Lever("the NMU on a-b under Madsen & Johansen's own configuration (issue 62, lever 7)",
                        "minutes here", "units_nmu_mj"),)),
    Claim("dmu-mul-div", "Curry 2025, arXiv 2509.08180", "the Domain Mixed Unit solves the highest share of all seeds "
          "on multiplication and division of the NALM benchmark (the Primer's protocol)",
          "dmu", (Reading("over the 9 ranges, its share solved at least every other unit's",
                          solves_the_most(("a*b", "a/b"), "DMU")),), folder="benchmarks",
          levers=(Lever("the NMU and NPU under the Primer's own per-unit settings beside the DMU, its commit pinned "
                        "(issue 62, lever 7)", "about 1 h here", "units_primer_tuned"),)),
]


def verdict(checks: list[Check]) -> str:
    """``reproduced`` when every check that ran agrees (``partial`` when some asked-for cells did not
    run), ``not reproduced`` when none does, ``mixed`` otherwise; the inconclusive checks are left out
    while any other remains (``inconclusive`` when none does); ``not run`` without a check that ran."""
    ran = [c for c in checks if c.ran]
    if not ran:
        return "not run"
    judged = [c for c in ran if not c.inconclusive]
    if not judged:
        return "inconclusive"
    agree = sum(c.agrees for c in judged)
    if agree == len(judged):
        return "partial" if len(ran) < len(checks) else "reproduced"
    return "not reproduced" if agree == 0 else "mixed"


def show(x: float) -> str:
    if math.isnan(x):
        return "-"
    if math.isinf(x) or abs(x) >= 1e4:
        return f"{x:.2g}"
    return f"{x:.3g}"


def numbers(checks: list[Check]) -> str:
    """``3 of 4 agree; against: static nalu a*b 1.4 (paper 0.0)``: the count and each cell that
    does not agree (or, when all do, the first); the cells not run and the inconclusive ones, counted."""
    if not checks:
        return ""
    ran = [c for c in checks if c.ran]
    judged = [c for c in ran if not c.inconclusive]
    against = [c for c in judged if not c.agrees]
    listed = against or judged[:1] or ran[:1]
    cells = "; ".join(f"{c.cell} {c.shown or show(c.ours)}" + (f" (paper {show(c.paper)})" if not math.isnan(c.paper) else "")
                      for c in listed[:4])
    more = f"; {len(listed) - 4} more" if len(listed) > 4 else ""
    missing = [c.cell for c in checks if not c.ran]
    unsure = len(ran) - len(judged)
    tail = (f"; {unsure} inconclusive" if unsure else "") + (f"; not run: {', '.join(missing)}" if missing else "")
    return f"{len(judged) - len(against)} of {len(judged)} agree; {'against' if against else 'e.g.'}: {cells}{more}{tail}"


def tables_of(family: str, results: Path, folder: str = "") -> list[str]:
    """The built tables of a family that exist: the family's own, then its budgets and variants;
    in a ``folder`` (scorecards), ``<folder>/<name>`` for each ``<family>*.csv`` there."""
    if folder:  # a scorecard's _totals.csv sums the scorecard beside it: not a table of its own
        return [f"{folder}/{p.stem}" for p in sorted((results / folder).glob(f"{family}*.csv"))
                if not p.stem.endswith("_totals")]
    names = [b.name for b in BUILT if b.name == family or b.name.startswith(f"{family}_")]
    return [n for n in names if (results / f"{n}.csv").is_file()]


@functools.cache
def protocol(evidence: Path) -> str:
    """The arithmetic data protocol of a table's evidence: the static task's ('U[1, 2], subsets 0.25,
    overlap 0.5': the training range of the inputs, the share of them that ``a`` and ``b`` each sum,
    and how much the two subsets overlap), then the recurrent task's ('recurrent U[1, 2], state 2': its
    input range and the baselines' state), each where the evidence has a cell of it; '' where neither.
    Static cells over several training ranges (the Primer's nine) read '9 input ranges, subsets 0.5,
    overlap 0'."""
    if not evidence.is_file():
        return ""
    found: dict[str, str] = {}
    ranges: set[tuple[float, float]] = set()
    for cell in load(evidence):
        task = cell["config"]["task"]
        if task["name"] not in ("static_arithmetic", "recurrent_arithmetic"):
            continue
        lo, hi = task["interpolation"]["low"], task["interpolation"]["high"]
        if task["name"] == "static_arithmetic":
            ranges.add((lo, hi))
            where = f"U[{lo:g}, {hi:g}]" if len(ranges) == 1 else f"{len(ranges)} input ranges"
            found[task["name"]] = f"{where}, subsets {task['subset_ratio']:g}, overlap {task['overlap_ratio']:g}"
        else:
            found.setdefault(task["name"],
                             f"recurrent U[{lo:g}, {hi:g}], state {', '.join(map(str, task['hidden']['rnn']))}")
    return "; ".join(found[t] for t in ("static_arithmetic", "recurrent_arithmetic") if t in found)


@dataclass(frozen=True)
class Primary:
    """A claim's registered primary verdict: one table and one reading, when and why (suite/primaries.csv)."""

    table: str
    reading: str
    date: str
    reason: str


PRIMARIES = ROOT / "suite" / "primaries.csv"


def registered(path: Path = PRIMARIES) -> dict[str, Primary]:
    """Each claim's primary: the last line of the append-only register that names it."""
    reg = pd.read_csv(path, dtype=str)
    return {r.claim: Primary(r.table, r.reading, r.date, r.reason) for r in reg.itertuples()}


def evaluate(results: Path, resample: bool = True) -> pd.DataFrame:
    """Every claim's verdict under every reading on every table that has its cells, the registered
    primary marked, each verdict's stability under seed resampling (``suite.stability``; NaN where
    ``resample`` is off or the table's builder has no frame), and the claim's class on its primary row."""
    primaries = registered()
    rows, judged = [], []
    for claim in CLAIMS:
        for name in tables_of(claim.family, results, claim.folder):
            df = pd.read_csv(results / f"{name}.csv")
            evidence = results / (f"{name}.jsonl" if claim.folder else f"evidence/{name}.jsonl")
            source = "evidence" if evidence.is_file() else "earlier run"
            for reading in claim.readings:
                if reading.table and not (results / f"{name}{reading.table}.csv").is_file():
                    continue
                frame = pd.read_csv(results / f"{name}{reading.table}.csv") if reading.table else df
                checks = reading.rule(frame)
                if not any(c.ran for c in checks):  # the table has none of the reading's cells
                    continue
                p = primaries.get(claim.id)
                judged.append((len(rows), claim, reading, name))
                rows.append({"claim": claim.id, "section": claim.section, "paper_says": claim.sentence,
                             "table": name, "protocol": protocol(evidence), "reading": reading.name,
                             "primary": p is not None and (p.table, p.reading) == (name, reading.name),
                             "verdict": verdict(checks), "agree": sum(c.agrees for c in checks),
                             "cells": len(checks), "numbers": numbers(checks), "source": source,
                             **trained_as_paper(claim, frame, reading)})
    out = pd.DataFrame(rows)
    out["stability"], out.attrs["stability"] = stabilities(results, judged, out) if resample else (math.nan, [])
    out["class"] = [klass(r, next(c for c in CLAIMS if c.id == r.claim), results) if r.primary else ""
                    for r in out.itertuples()]
    return out


def stabilities(results: Path, judged: list[tuple[int, Claim, Reading, str]],
                out: pd.DataFrame) -> tuple[list[float], list[dict]]:
    """Each row's share of seed resamples in which its verdict holds (``suite.stability``), from the
    cache where its evidence and judging code are unchanged; and the cache's rows, for ``write``."""
    from suite import stability
    from suite.targets import BY_NAME

    cache_path = results / stability.CACHE
    cache = pd.read_csv(cache_path, dtype={"digest": str}) if cache_path.is_file() else pd.DataFrame(
        columns=["table", "digest", "claim", "reading", "verdict", "resamples", "holds"])
    known = {(r.table, r.digest, r.claim, r.reading, r.verdict, int(r.resamples)): float(r.holds) for r in cache.itertuples()}
    share = [math.nan] * len(out)
    groups: dict[tuple[str, str], list[tuple[int, Claim, Reading]]] = {}
    for i, claim, reading, name in judged:
        groups.setdefault((name, reading.table), []).append((i, claim, reading))
    used = []
    for (name, suffix), members in groups.items():
        built = BY_NAME.get(name)
        kind = f"{built.what}{suffix}" if built else ""
        if kind not in stability.FRAMES or not all(p.is_file() for p in built.evidence(results / "evidence")):
            continue
        evidence = built.evidence(results / "evidence")
        digest = stability.digest(kind, evidence)
        keys = {i: (f"{name}{suffix}", digest, c.id, r.name, out.verdict[i], stability.RESAMPLES) for i, c, r in members}
        if not all(k in known for k in keys.values()):
            frames = stability.draws(kind, evidence, name)
            for i, _, reading in members:
                known[keys[i]] = stability.holds([verdict(reading.rule(f)) for f in frames], out.verdict[i])
        for i, key in keys.items():
            share[i] = known[key]
            used.append(dict(zip(["table", "digest", "claim", "reading", "verdict", "resamples"], key), holds=known[key]))
    return share, used


def klass(row, claim: Claim, results: Path) -> str:
    """The class of a claim from its primary row: *untested* when the model under test was not
    trained as the paper says, or the reading could not judge (partial, inconclusive); *reproduced*;
    otherwise *refuted with a lever* while a lever of the claim is unpulled, else *refuted*."""
    if row.trained == "no" or row.verdict in ("partial", "inconclusive", "not run"):
        return "untested"
    if row.verdict == "reproduced":
        return "reproduced"
    return "refuted with a lever" if levers_left(claim, results) else "refuted"


def levers_left(claim: Claim, results: Path) -> list[Lever]:
    return [lever for lever in claim.levers if not lever.pulled(results)]


def trained_as_paper(claim: Claim, df: pd.DataFrame, reading: Reading | None = None) -> dict[str, str]:
    """``trained``: yes when every in-domain cell of the reading's ``trained`` rule (the claim's where
    the reading has none) is at the paper's level, no when any is not, n/a without a rule or cells;
    ``trained_numbers``: what it rests on."""
    rule = reading.trained if reading is not None and reading.trained is not None else claim.trained
    checks = [c for c in rule(df) if c.ran] if rule else []
    if not checks:
        return {"trained": "n/a", "trained_numbers": ""}
    return {"trained": "yes" if all(c.agrees for c in checks) else "no", "trained_numbers": numbers(checks)}


def sentence(row, claim: Claim) -> str:
    """The primary verdict in one sentence, from its numbers: where, what, and whether the model under
    test was trained as the paper says."""
    where = f"in `{row.table}`" + (f" ({row.protocol})" if row.protocol else "")
    trained = {"yes": "the model under test fits its training range as the paper says",
               "no": "the model under test does not fit its training range as the paper says, so this does "
                     "not test the claim", "n/a": ""}[row.trained]
    return f"{row.reading[:1].upper()}{row.reading[1:]} {where}: {row.numbers}" + (f"; {trained}" if trained else "") + "."


def glance(df: pd.DataFrame, results: Path | None = None) -> str:
    """One row per claim: its registered primary verdict with its stability, the claim's class, one
    sentence from the numbers, and the levers still unpulled; the sensitivity rows are in claims.md."""
    results = results or ROOT / "results"
    lines = ["| claim | the paper says | primary verdict (registered) | stability | class | in numbers | lever left |",
             "|---|---|---|---|---|---|---|"]
    for claim in CLAIMS:
        p = df[(df.claim == claim.id) & df.primary]
        if p.empty:
            lines.append(f"| {claim.id} ({claim.section}) | {claim.sentence} | not run | - | untested | - | - |")
            continue
        r = p.iloc[0]
        from suite.stability import describe
        left = "; ".join(f"{lv.what} ({lv.cost})" for lv in levers_left(claim, results)) or "-"
        lines.append(f"| {claim.id} ({claim.section}) | {claim.sentence} | **{r.verdict}** in `{r.table}`, "
                     f"{r.reading} (registered {registered()[claim.id].date}) | {describe(r.stability)} | "
                     f"**{r['class']}** | {sentence(r, claim)} | {left} |")
    return "\n".join(lines)


def found(rows: pd.DataFrame) -> str:
    """Each verdict among ``rows`` once, with the first table that reaches it."""
    r = rows.drop_duplicates("verdict")
    return ", ".join(f"**{v}** ({t})" for v, t in zip(r.verdict, r.table, strict=True))


def thresholds() -> str:
    """Every threshold the rules use, from the constants the rules read."""
    from suite.stability import FRAGILE, RESAMPLES

    return "\n".join([
        f"- **Prints 0.0** (Table 1): a scaled score below {ZERO:g}; where the paper prints a number, ours agrees at "
        f"most twice it. **Fails**: a score of at least {FAILS:g}.",
        f"- **Identity** (Table 5): an MLP fails when its median MAE on [-1000, 1000] is above {IDENTITY_FAILS:g} "
        "(predicting 0 scores 500).",
        f"- **Table 2**: single digits within {MNIST_POINTS:g} points of the paper's accuracy; lengths 100 and 1000 "
        "at most twice its MAE.",
        "- **Table 3**: the LSTM + NALU's test MAE at most twice the paper's 0.41; trained: its training MAE at "
        "most twice the paper's 0.12 (the summed-state LSTM's fit is the comparison's, not the claim's).",
        f"- **Table 4**: the NAC's median error cut at least {HALF_THE_CUT:g}% (half the paper's 54%), and above "
        "every head that is not a NAC; trained: Seguí et al.'s head at most 5 points below the "
        f"{segui_reference():g}% exact of the reference reimplementation (fomorians/counting-mnist).",
        f"- **Figure 4**: a model solves a domain at a mean of {EXACT:g}% exact; trained: the recurrent NALU "
        f"{EXACT:g}% exact below 100.",
        f"- **Figure 5**: a mean reward at or above 0 holds, below 0 degrades; trained: each agent's mean reward "
        f"at least {TRAINED_REWARD:g} on every training command.",
        "- **Success rates** (Madsen & Johansen): their rate within our 95% Wilson interval; *inconclusive* where "
        "that interval also holds 0 (or 1) while their rate does not, with the power our seeds had at their rate.",
        f"- **Stability**: the share of {RESAMPLES} draws of every cell's seeds (with replacement; the seed or "
        "model selected by validation selected again inside each draw) whose verdict equals the one shown; "
        f"*fragile* below {100 * FRAGILE:.0f}%.",
    ])


def markdown(df: pd.DataFrame, results: Path | None = None) -> str:
    text = ["# The paper's claims, decided from the evidence",
            "Generated by `python -m suite.claims` (every make target runs it after its tables) from the "
            "tables in this folder, which are built from `evidence/` alone (a unit's scorecards, from "
            "`benchmarks/`, each beside its evidence). Readings and rules: `suite/claims.py`; each claim's "
            "primary table and reading, registered with its date and reason: `suite/primaries.csv` "
            "(append-only); runs registered before they ran: `preregistered/`.",
            "## The answer: one primary verdict per claim",
            "A claim's *primary* verdict is one table and one reading, chosen by a rule written down before "
            "the model under test's numbers were read: the protocol the blind search ranks first, at the "
            "paper's budget where one ran, the paper's own selection rule (validation), in a table where the "
            "model under test is trained as the paper says. Its *class*: **reproduced**; **refuted** (the model "
            "under test trained as the paper says, no lever left); **refuted with a lever** (a setting not yet "
            "tried, named with its cost); **untested** (the model under test never fit its training range, or "
            "the reading cannot judge). Every other row below is a *sensitivity* reading.",
            glance(df, results),
            "## Thresholds", thresholds(),
            "## Every reading, budget and variant (sensitivity)",
            "A verdict is *reproduced* when every cell a reading looks at agrees with the paper, *not reproduced* "
            "when none does, *mixed* otherwise, *partial* when every cell it has agrees but the table lacks some "
            "model the reading asks for, *inconclusive* when the seeds cannot tell. *protocol*: for the static "
            "task the inputs' training range, the share of them that a and b each sum, and their overlap "
            "(Madsen & Johansen's U[1, 2], 0.25, 0.5 by default; the others from `protocol_search.md`), then for "
            "the recurrent task its input range and the baselines' state (`protocol_search_recurrent.md`). "
            "*trained*: whether the model under test, for that reading (the selected seed, the median seed, "
            "most seeds), is at the paper's level inside its training domain in the same table, so that a "
            "failure outside it tests extrapolation; n/a where the paper gives no in-domain number or the claim "
            "is itself about the training domain."]
    body = df.assign(primary=df.primary.map({True: "primary", False: "sensitivity"}),
                     stability=df.stability.map(lambda x: "-" if math.isnan(x) else f"{100 * x:.0f}%"))
    body = body[["claim", "table", "protocol", "reading", "primary", "verdict", "stability", "numbers", "trained",
                 "trained_numbers", "source"]]
    text.append(body.to_markdown(index=False, disable_numparse=True))
    return "\n\n".join(text) + "\n"


BEGIN, END = "<!-- claims: generated by suite/claims.py; do not edit -->", "<!-- /claims -->"


def write(results: Path, readme: Path | None) -> list[Path]:
    df = evaluate(results)
    if df.empty:
        from nalu.errors import ConfigError

        raise ConfigError(f"{results} holds no table that a claim reads; nothing written (a make reproduce-* "
                          "target writes them)")
    from suite import stability

    md, csv = results / "claims.md", results / "claims.csv"
    write_text_atomic(results / stability.CACHE, pd.DataFrame(df.attrs["stability"], columns=[
        "table", "digest", "claim", "reading", "verdict", "resamples", "holds"]).to_csv(index=False))
    write_text_atomic(md, markdown(df, results))
    write_text_atomic(csv, df.to_csv(index=False))
    paths = [md, csv, results / "stability.csv"]
    if readme is not None:
        write_text_atomic(readme, fill_block(readme.read_text(), BEGIN, END, glance(df, results)))
        paths.append(readme)
    return paths


def against_committed(results: Path, df: pd.DataFrame) -> list[str]:
    """What a rebuild changed against git's HEAD: one line saying the tables and verdicts equal the
    committed ones, or one line per file that differs and per verdict that moved (with its stability
    and the command that judges whether the move is noise)."""
    from suite.stability import describe

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)

    rel = results.resolve().relative_to(ROOT) if results.resolve().is_relative_to(ROOT) else None
    committed = git("show", f"HEAD:{rel}/claims.csv") if rel is not None else None
    if committed is None or committed.returncode:
        return [f"claims: {results} is not a committed results folder; nothing to compare"]
    changed = [line[3:] for line in git("status", "--porcelain", "--", str(rel)).stdout.splitlines()
               if line[3:].endswith((".csv", ".md")) and not line[3:].endswith(("claims.csv", "claims.md"))]
    old = pd.read_csv(io.StringIO(committed.stdout))
    key = ["claim", "table", "reading"]
    moved = df.merge(old[key + ["verdict"]], on=key, how="outer", suffixes=("", "_committed"), indicator=True)
    moved = moved[(moved.verdict.fillna("none") != moved.verdict_committed.fillna("none"))]
    lines = []
    from suite.timings import command

    for r in moved.itertuples():
        target = command(r.table).replace("make reproduce-", "make verify TARGET=") if "/" not in str(r.table) else None
        lines.append(f"claims: {r.claim} in {r.table}, {r.reading}: {r.verdict_committed if isinstance(r.verdict_committed, str) else 'none'}"
                     f" -> {r.verdict if isinstance(r.verdict, str) else 'none'}"
                     + (f" ({describe(r.stability)}; is the move noise? {target})" if isinstance(r.verdict, str) and target else ""))
    if changed:
        lines.append(f"claims: {len(changed)} table file(s) differ from the committed ones: {', '.join(changed[:6])}"
                     + (f" and {len(changed) - 6} more" if len(changed) > 6 else ""))
    return lines or ["claims: the rebuilt tables and every verdict equal the committed ones"]


def main(argv: list[str] | None = None) -> None:
    generated_main(argv, "python -m suite.claims", __doc__, "claims", write)
    args = argv if argv is not None else sys.argv[1:]
    results = Path(args[args.index("--results") + 1]) if "--results" in args else ROOT / "results"
    print("\n".join(against_committed(results, pd.read_csv(results / "claims.csv"))), file=sys.stderr)


if __name__ == "__main__":
    main()
