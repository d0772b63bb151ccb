"""One answer per claim: every reading's verdict on every table of its family, the registered
primary among them (``suite/primaries.csv``), each verdict's stability under seed resampling
(``suite.stability``), and the claim's class."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from suite.claims.catalogue import CLAIMS
from suite.claims.rules import Claim, Lever, Reading, numbers, verdict
from suite.evidence import load
from suite.provenance import ROOT
from suite.targets import BUILT

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
