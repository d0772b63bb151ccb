"""The rules that decide a claim: a check per cell (``Check``), a rule per reading (``Rule``: a
table's frame -> checks), the verdict of a reading's checks, and the thresholds they use.

A reading's verdict for one table is ``reproduced`` when every cell it looks at agrees with the
paper, ``not reproduced`` when none does, ``mixed`` when some do, ``partial`` when every cell it has
agrees but the table lacks a model the reading asks for, ``inconclusive`` when the seeds cannot
tell, and ``not run`` when the table has none of its cells.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from nalu.scoring import wilson_interval
from suite.provenance import ROOT
from suite.tables.common import PRINTS_ZERO as ZERO  # below it, a score prints 0.0
from suite.tables.verify import within

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
