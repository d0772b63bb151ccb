"""Compare a rebuilt table with the committed one within seed-level noise (``make verify``).

Runs repeat bit for bit on one machine only: another CPU takes another BLAS code path, and a
seed's number moves. What should survive a change of machine is the statistics over seeds, so a
row *moved beyond noise* when, for a statistic its table keeps:

- median and interquartile range (``median``/``q25``/``q75``): neither median lies within the
  other run's interquartile range;
- success count (``solved`` of ``seeds``): neither rate lies within the other's 95% Wilson interval;
- mean and two standard deviations (``mean``/``two_sigma``): the means differ by more than the
  two spreads together;
- mean, min and max over seeds (``mean``/``min``/``max``): neither mean lies within the other's range.

A row that only one table has, or whose statistic one of them lacks (a cell not rerun), is not
judged. The selected seed's own number (``ours``) is not compared: it is one seed, and which seed
wins a selection can change with the machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from nalu.scoring import wilson_interval

# each table's identifying columns (a row is one cell of the paper's table)
KEYS = {
    "table1": ["range", "function", "task", "model"],
    "table2": ["task", "model", "length", "metric"],
    "table3": ["model"],
    "table4": ["layer"],
    "table5": ["nonlinearity"],
    "figure4": ["kind", "model", "domain", "metric"],
    "figure5": ["agent", "command"],
    "units": ["function", "model", "steps"],
    "units_primer": ["function", "model", "range"],  # the Primer's nine training ranges
    "protocol": ["range", "subset_ratio", "overlap_ratio", "reference"],  # protocol_search: its cells' decades
    "protocol_search_recurrent": ["range", "width", "reference"],  # the recurrent half's protocols
}


@dataclass
class Moved:
    row: str  # its keys, "static a+b nalu"
    statistic: str
    ours: str
    committed: str


def _f(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def within(x: float, lo: float, hi: float) -> bool:
    """``lo <= x <= hi``, up to rounding (a Wilson interval of 10/10 ends at 0.9999999999999999)."""
    return lo - 1e-9 <= x <= hi + 1e-9


def judge(a: pd.Series, b: pd.Series) -> list[tuple[str, str, str]]:
    """The statistics on which rows ``a`` (rerun) and ``b`` (committed) differ beyond noise:
    (statistic, a's value, b's value)."""
    out = []
    for median, lo, hi in (("median", "q25", "q75"), ("mae_median", "mae_q25", "mae_q75")):
        if median in a and lo in a and hi in a:
            va, vb = (tuple(_f(r[k]) for k in (median, lo, hi)) for r in (a, b))
            if not any(math.isnan(v) for v in va + vb) and not (within(va[0], vb[1], vb[2])
                                                                   or within(vb[0], va[1], va[2])):
                out.append((median, f"{va[0]:.4g} [{va[1]:.4g}, {va[2]:.4g}]", f"{vb[0]:.4g} [{vb[1]:.4g}, {vb[2]:.4g}]"))
    if "solved" in a and "seeds" in a:
        (sa, na), (sb, nb) = ((_f(r["solved"]), _f(r["seeds"])) for r in (a, b))
        if not any(math.isnan(v) for v in (sa, na, sb, nb)) and na > 0 and nb > 0:
            ia, ib = wilson_interval(int(sa), int(na)), wilson_interval(int(sb), int(nb))
            if not (within(sa / na, *ib) or within(sb / nb, *ia)):
                out.append(("solved", f"{int(sa)}/{int(na)}", f"{int(sb)}/{int(nb)}"))
    if "mean" in a and "two_sigma" in a:
        (ma, ta), (mb, tb) = ((_f(r["mean"]), _f(r["two_sigma"])) for r in (a, b))
        if not any(math.isnan(v) for v in (ma, ta, mb, tb)) and abs(ma - mb) > ta + tb:
            out.append(("mean", f"{ma:.4g} ± {ta:.3g}", f"{mb:.4g} ± {tb:.3g}"))
    elif "mean" in a and "min" in a and "max" in a:
        va, vb = (tuple(_f(r[k]) for k in ("mean", "min", "max")) for r in (a, b))
        if not any(math.isnan(v) for v in va + vb) and not (within(va[0], vb[1], vb[2]) or within(vb[0], va[1], va[2])):
            out.append(("mean", f"{va[0]:.4g} [{va[1]:.4g}, {va[2]:.4g}]", f"{vb[0]:.4g} [{vb[1]:.4g}, {vb[2]:.4g}]"))
    return out


def compare(ours: Path, committed: Path) -> tuple[int, list[Moved]]:
    """(rows judged, rows moved beyond noise) between two CSVs of one table (``<stem>.csv``)."""
    stem = Path(committed).stem  # its rule: the longest name of KEYS that begins it (table1_protocol1: table1's)
    table = next((k for k in sorted(KEYS, key=len, reverse=True) if stem == k or stem.startswith(k + "_")), None)
    if table is None:
        raise SystemExit(f"error: no comparison rule for {committed}; tables: {', '.join(KEYS)}")
    keys = KEYS[table]
    a, b = pd.read_csv(ours, dtype={k: str for k in keys}), pd.read_csv(committed, dtype={k: str for k in keys})
    merged = a.merge(b, on=keys, suffixes=("", "@committed"))
    judged, moved = 0, []
    for _, row in merged.iterrows():
        theirs = pd.Series({c.removesuffix("@committed"): row[c] for c in merged.columns if c.endswith("@committed")})
        mine = row[[c for c in a.columns if c not in keys]]
        comparable = judge(mine, theirs)
        stats = [c for c in ("median", "mae_median", "solved", "mean") if c in mine and not math.isnan(_f(mine[c]))
                 and not math.isnan(_f(theirs.get(c)))]
        judged += bool(stats)
        moved += [Moved(" ".join(str(row[k]) for k in keys), *m) for m in comparable]
    return judged, moved
