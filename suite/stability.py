"""How often a verdict holds when its seeds are drawn again (a bootstrap over seeds).

For one table and one reading: draw each cell's seeds with replacement (as many as it ran), rebuild
the table's frame from those draws with the table's own builder (``frame``: a seed chosen by
validation is chosen again inside each draw, a grid is selected again), apply the reading's rule,
and count the draws whose verdict equals the one observed. ``RESAMPLES`` draws, from a generator
seeded by the table's name, so a rebuild gives the same figure. A verdict that holds in fewer than
``FRAGILE`` of the draws is *fragile*: another machine, whose rounding moves seeds as a new draw
does (``make verify`` calls such moves noise), can flip it.

The figures are cached in ``results/stability.csv`` with a digest of the table's evidence and of
the code that judges it (the claims' rules, this module, the table's builder): a figure is
recomputed only when one of them changed.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from suite.evidence import load
from suite.provenance import ROOT, source_digest
from suite.tables import figure4, figure5, table1, table2, table3, table4, table5, units

RESAMPLES = 200
FRAGILE = 0.8
CACHE = "stability.csv"


def only(tasks: tuple[str, ...], frame: Callable[[list[dict]], pd.DataFrame]) -> Callable[[list[dict]], pd.DataFrame]:
    return lambda cells: frame([c for c in cells if c["task"] in tasks])


# a builder's frame from cells (what its csv holds), by the builder's name (suite.targets: Built.what);
# a table of another builder has no figure yet ("not resampled")
FRAMES: dict[str, Callable[[list[dict]], pd.DataFrame]] = {
    "table1": only(("static_arithmetic", "recurrent_arithmetic"), table1.frame),
    "table1_best_of_k": only(("static_arithmetic", "recurrent_arithmetic"), table1.best_of_k_frame),
    "table2": only(("mnist_counting", "mnist_addition"), table2.frame),
    "table3": only(("translation",), table3.frame),
    "table4": only(("mnist_count_even", "mnist_parity"), table4.frame),
    "figure4": only(("program_eval",), figure4.rows),
    "figure5": only(("gridworld_time",), figure5.rows),
    "table5": only(("identity",), table5.frame),
    "units": only(("static_arithmetic",), units.frame),
}
MODULES = {"table1": table1, "table1_best_of_k": table1, "table2": table2, "table3": table3, "table4": table4,
           "figure4": figure4, "figure5": figure5, "table5": table5, "units": units}


def resample(cells: list[dict], rng: np.random.Generator) -> list[dict]:
    """Each cell with its seeds drawn again, with replacement, as many as it ran."""
    out = []
    for c in cells:
        n = len(c["members"])
        out.append({**c, "members": [c["members"][i] for i in rng.integers(0, n, n)]})
    return out


def draws(kind: str, evidence: list[Path], name: str, resamples: int = RESAMPLES) -> list[pd.DataFrame]:
    """``resamples`` frames of the table, each from one draw of every cell's seeds."""
    cells = load(*evidence)
    rng = np.random.default_rng(int(hashlib.sha256(name.encode()).hexdigest()[:8], 16))
    return [FRAMES[kind](resample(cells, rng)) for _ in range(resamples)]


def digest(kind: str, evidence: list[Path]) -> str:
    """The evidence's bytes and the judging code's digests, as one short digest."""
    h = hashlib.sha256()
    for p in evidence:
        h.update(p.read_bytes())
    judging = sorted((ROOT / "suite" / "claims").glob("*.py"))
    for code in (*judging, ROOT / "suite" / "stability.py", Path(MODULES[kind].__file__)):
        h.update(source_digest(code).encode())
    return h.hexdigest()[:16]


def holds(verdicts: list[str], observed: str) -> float:
    return sum(v == observed for v in verdicts) / len(verdicts) if verdicts else math.nan


def describe(share: float) -> str:
    """``holds in 64% of seed resamples (fragile)``, or ``not resampled``."""
    if math.isnan(share):
        return "not resampled"
    return f"holds in {100 * share:.0f}% of seed resamples" + (" (fragile)" if share < FRAGILE else "")
