"""How long cells will train here, before they start: the speed committed runs of their task and
model, compiled as they are (``suite.timings.compiled``), reached in groups of the nearest size
(``results/rates.csv``, which ``suite.timings`` rebuilds from the evidence), times their steps and
members. The runner says it before a group
trains (and a dry run per cell, as its share of the group it would train in); ``make
reproduce-all DRY_RUN=1`` sums it per target."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import NamedTuple

from omegaconf import DictConfig, OmegaConf

from suite.config import resolve_seeds

RATES = Path(__file__).resolve().parent.parent / "results" / "rates.csv"  # suite.timings writes it
PROJECT_FROM_S, WARN_PAST_S = 60, 86400


@functools.cache
def committed_rates(rates: Path, mtime_ns: int) -> list[dict]:
    """The rows of ``rates`` as they were at ``mtime_ns`` (read once per process: a dry run asks per cell)."""
    import csv

    with open(rates) as f:
        return list(csv.DictReader(f))


class Rate(NamedTuple):
    """What a group's projection rests on: its steps and members, the committed speed in member-steps/s,
    how the runs behind that speed were compiled (``mode``) and how this group is (``ours``)."""

    steps: int
    members: int
    rate: float
    mode: str
    ours: str


def rate_of(cfgs: list[DictConfig], rates: Path = RATES) -> Rate | None:
    """The ``Rate`` of these cells (one group): the speed committed runs of their task and model
    reached on this suite's machine in groups of the nearest size (``results/rates.csv``), compiled as
    these are (``suite.timings.compiled``) where such runs are committed, else as the runs that are;
    None without a committed rate or a step count."""
    from suite.timings import compiled

    cfg = cfgs[0]
    steps = OmegaConf.select(cfg, "task.steps")
    if not isinstance(steps, int | float) or not rates.is_file():
        return None
    members = sum(len(resolve_seeds(c.seeds)) for c in cfgs)
    mode = compiled(cfg)
    # the speed of the committed group size nearest this one's, compiled alike first
    known = [(r.get("compile", "none") != mode, abs(math.log(int(r["members"]) / members)),
              float(r["member_steps_per_s"]), r.get("compile", "none"))
             for r in committed_rates(rates, rates.stat().st_mtime_ns)
             if (r["task"], r["model"]) == (cfg.task.name, cfg.model.name)]
    return Rate(steps, members, *min(known)[2:], ours=mode) if known else None


def projected_s(cfgs: list[DictConfig], rates: Path = RATES, done: int = 0) -> float | None:
    """The seconds these cells (one group) will train (``rate_of``); ``done``: the steps a resumed
    run has behind it."""
    known = rate_of(cfgs, rates)
    return None if known is None else (known.steps - done) * known.members / known.rate


def duration(seconds: float) -> str:
    """``36 min``, ``1.5 h``, ``12 days``."""
    return (f"{seconds / 60:.0f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h" if seconds < 3 * 86400
            else f"{seconds / 86400:,.0f} days")


def projection(cfgs: list[DictConfig], rates: Path = RATES, done: int = 0) -> str | None:
    """How long these cells (one group) will train (``projected_s``): a line from a minute on, a
    warning past a day; None below a minute or without a committed rate."""
    seconds = projected_s(cfgs, rates, done)
    if seconds is None or seconds < PROJECT_FROM_S:
        return None
    steps, members, rate, mode, ours = rate_of(cfgs, rates)
    cfg = cfgs[0]

    def ran(m: str) -> str:
        return "without compile_cells or compile_forward" if m == "none" else f"with compile_{m}"

    unlike = f", which ran {ran(mode)} (this one {ran(ours)})" if ours != mode else ""
    line = (f"projected {duration(seconds)} here ({steps - done:,.0f} steps x {members} members at {rate:,.0f} "
            f"member-steps/s, the speed of committed {cfg.task.name}/{cfg.model.name} runs{unlike}; "
            "another machine differs)")
    if seconds > WARN_PAST_S:
        line = f"warning: {line}; Ctrl-C stops it, and the same command resumes from its checkpoint"
    return line


def share(group: list[DictConfig], rates: Path = RATES) -> tuple[float | None, str]:
    """A cell's share of its group's training time (``group``: the configs of the cells that train
    together, its own among them) in seconds, and as a dry run's status says it (from a minute on)."""
    whole = projected_s(group, rates)
    seconds = None if whole is None else whole / len(group)
    return seconds, f"projected {duration(seconds)} here" if seconds and seconds >= PROJECT_FROM_S else ""
