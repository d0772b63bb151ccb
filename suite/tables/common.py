"""Shared pieces of the result tables: reading the evidence, seed statistics, formatting."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from suite.io import write_text_atomic
from tasks.metrics import VALIDATION

PRINTS_ZERO = 0.05  # a scaled score below this prints as 0.0 at the paper's one-decimal precision

PAPER_DIR = Path(__file__).resolve().parents[2] / "results" / "paper"


def load_cells(*evidence: Path) -> list[dict]:
    """Every cell of the evidence files ``evidence`` (``suite.evidence``), in order."""
    from suite.evidence import load

    return load(*evidence)


def require(cells: list[dict], what: str, roots, target: str) -> list[dict]:
    """``cells``, or exit with one line (writing nothing) when there are none: a table built from
    no runs would overwrite the committed one with blanks."""
    if not cells:
        where = ", ".join(str(r) for r in (roots if isinstance(roots, list | tuple) else [roots]))
        raise SystemExit(f"error: no finished {what} cells in {where}; nothing written "
                         f"(run `make {target}` first)")
    return cells


def machines(cells: list[dict]) -> str:
    """Where the cells ran, one line: results repeat bit for bit on one machine only (a run
    resumed from a checkpoint may have had several sittings, on several machines)."""
    from suite.machine import describe

    seen: dict[str, int] = {}
    for c in cells:
        envs = [s.get("environment") for s in c.get("sittings", [])] or [c.get("environment")]
        for env in envs:
            text = describe(env)
            seen[text] = seen.get(text, 0) + 1
    return "Run on: " + "; ".join(seen) + "."


def paper(name: str) -> pd.DataFrame:
    return pd.read_csv(PAPER_DIR / f"{name}.csv", dtype=str, keep_default_na=False)


def not_in_paper(ours: pd.DataFrame, ref: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The rows of ``ours`` whose ``keys`` name no row of the paper's table ``ref``: a model it has
    no row or column for (a unit from outside, ``make benchmark-unit PROTOCOL=tasks``), which a
    table shows after the paper's and keeps out of its counts against the paper."""
    listed = pd.MultiIndex.from_frame(ref[keys].drop_duplicates().astype(str))
    return ours[~pd.MultiIndex.from_frame(ours[keys].astype(str)).isin(listed)]


def paper_float(value: str) -> float:
    """The paper's printed value as a number (``>999`` -> inf, empty -> nan)."""
    if value.startswith(">"):
        return math.inf
    try:
        return float(value)
    except ValueError:
        return math.nan


def fmt(x: float, digits: int = 1, cap: float = 999.0) -> str:
    """Like the paper prints scores: one decimal, ``>999`` above the cap."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if x > cap:
        return f">{cap:.0f}"
    return f"{x:.{digits}f}"


def quantiles(values: np.ndarray) -> tuple[float, float, float]:
    """(q25, median, q75); non-finite values (diverged seeds) take part as +inf."""
    if not len(values):
        return math.nan, math.nan, math.nan
    big = 1e300  # stands for +inf, so that interpolating towards it stays "infinite"
    q = np.quantile(np.where(np.isfinite(values), values, big), [0.25, 0.5, 0.75])
    return tuple(float(x) if x < big / 10 else math.inf for x in q)


def to_markdown(df: pd.DataFrame) -> str:
    return df.to_markdown(index=False, disable_numparse=True)


def save_figure(fig, path: Path, dpi: int = 120) -> Path:
    """Write a matplotlib figure atomically (a temporary name, then renamed), making its folder
    first, and close it."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, dpi=dpi)
    plt.close(fig)
    tmp.replace(path)
    return path


def write_table(out: Path, stem: str, markdown: str, frame: pd.DataFrame) -> list[Path]:
    md, csv = out / f"{stem}.md", out / f"{stem}.csv"
    write_text_atomic(md, markdown)
    write_text_atomic(csv, frame.to_csv(index=False))
    return [md, csv]


def choose_seed(members: list[dict], checkpoint: str = "best") -> int | None:
    """Index of the seed with the lowest validation error among seeds that did not diverge
    (what a practitioner would pick without looking at the test sets), or None if none is left."""
    diverged = np.array([m["diverged"] for m in members])
    validation = np.array([m[checkpoint][VALIDATION] for m in members], dtype=float)
    eligible = ~diverged & np.isfinite(validation)
    return int(np.argmin(np.where(eligible, validation, np.inf))) if eligible.any() else None


def describe_encoder(enc: dict) -> str:
    """The MNIST digit encoder of a run config, in words (``baselines.convnet.DigitEncoder``)."""
    hidden = f", a ReLU layer of {enc['hidden']}," if enc.get("hidden") else ""
    convolutions = ("5x5 convolutions, each followed by a 2x2 max-pool (the PyTorch MNIST example's layout),"
                    if enc.get("pool") else "5x5 stride-2 convolutions")
    return (f"two {convolutions} with {list(enc['channels'])} channels{hidden} and a linear "
            f"map to {enc['features']} features")
