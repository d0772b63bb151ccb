"""How long each make target took here, from the runs' own wall times (``python -m suite.timings``).

    python -m suite.timings [--results results]    -> results/timings.md, results/timings.csv,
                                                      results/rates.csv, and the timings block
                                                      of README.md

Read from the committed evidence alone (``results/evidence/<name>.jsonl``): every cell records
``wall_s``, the seconds its training group spent in the runner (the cells fused into one batched
model share one group and one wall time), and ``sittings``, when each sitting of it started and,
where its runner recorded it, how long it trained (``wall_s``: the last sitting's is the cell's).
Per entry:

- ``busy_min``: the time during which at least one of its groups was training, gaps of more
  than ``GAP_S`` between groups left out (a target run in two halves on two days counts the two
  halves). This is the wall time of its make target, less start-up, evidence and table building,
  at whatever ``JOBS`` it ran with;
- ``group_min``: its groups' wall times summed: the time on one core at ``JOBS=1``;
- ``sittings``: the most sittings any of its groups took. A group resumed from a checkpoint counts
  every sitting's time, each until its last checkpoint (the runner notes it at every checkpoint);
  where an earlier sitting's time went unrecorded (a runner before that note), the group counts
  its last sitting only, both times are lower bounds and ``complete`` is false.

Every figure comes from a committed file, so it is the time of the run the tables show, on the
machine ``cpu`` and ``cores`` name. ``rates.csv`` holds, per task, model, what it compiled and group size, the training
speed its groups reached (member-steps per second, the median over groups that trained in one sitting):
the runner projects a new run's time from it before it starts.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pandas as pd

from suite.evidence import EVIDENCE_DIR, load
from suite.io import fill_block, generated_main, write_text_atomic
from suite.targets import BUILT

GAP_S = 600  # groups more than ten minutes apart belong to separate sittings of the target


def command(name: str) -> str:
    """The make command that writes evidence ``name``: ``table1_paper`` -> ``make reproduce-table1 BUDGET=paper``,
    ``table3_paper_grid`` -> ``make reproduce-table3 BUDGET=paper VARIANT=grid``."""
    target, _, rest = name.partition("_")
    if name.startswith("protocol_search"):
        target, rest = "protocol-search", name.removeprefix("protocol_search").lstrip("_")
    budget = rest == "paper" or rest.startswith("paper_")
    variant = rest.removeprefix("paper").lstrip("_") if budget else rest
    return f"make reproduce-{target}" + (" BUDGET=paper" if budget else "") + (f" VARIANT={variant}" if variant else "")


def started(cell: dict) -> float | None:
    """When the cell's last sitting started (seconds since the epoch), or None where unrecorded."""
    return stamp((cell.get("sittings") or [{}])[-1])


def stamp(sitting: dict) -> float | None:
    when = sitting.get("started")
    return dt.datetime.strptime(when, "%Y-%m-%dT%H:%M:%S%z").timestamp() if when else None


def spans(group: dict) -> tuple[list[tuple[float | None, float]], bool]:
    """Each sitting of a group as (start, seconds trained), and whether every sitting's time is
    recorded; where one is not, the last sitting alone (its time is the cell's ``wall_s``)."""
    sittings = group.get("sittings") or [{}]
    earlier = sittings[:-1]
    last = (stamp(sittings[-1]), group["wall_s"])
    if all("wall_s" in s for s in earlier):
        return [*((stamp(s), s["wall_s"]) for s in earlier), last], True
    return [last], False


def groups(cells: list[dict]) -> list[dict]:
    """One cell per training group: a cell and those it was fused with (same sweep) are one group.
    A cell copied from its identical twin in other evidence (``reused_from``) trained nowhere here
    and is in no group: its time is its twin's target's."""
    seen, out = set(), []
    for c in cells:
        if "reused_from" in c:
            continue
        sweep = c["run"].split("/", 1)[0]
        key = frozenset((sweep, name) for name in (c["cell"], *c.get("fused_with", [])))
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def busy_seconds(intervals: list[tuple[float, float]], gap: float = GAP_S) -> float:
    """The length of the union of ``intervals`` once those less than ``gap`` apart are joined."""
    total, current = 0.0, None
    for a, b in sorted(intervals):
        if current and a <= current[1] + gap:
            current[1] = max(current[1], b)
        else:
            total += current[1] - current[0] if current else 0.0
            current = [a, b]
    return total + (current[1] - current[0] if current else 0.0)


def timing(name: str, cells: list[dict]) -> dict:
    gs = groups(cells)
    timed = [spans(g) for g in gs]
    every = [span for spans_, _ in timed for span in spans_]
    intervals = [(t, t + w) for t, w in every if t is not None]
    sittings = max((len(g.get("sittings") or [None]) for g in gs), default=1)
    env = cells[0].get("environment") or {}
    last = max((b for _, b in intervals), default=None)
    return {
        "evidence": name,
        "command": command(name),
        "cells": len(cells),
        "groups": len(gs),
        "busy_min": round(busy_seconds(intervals) / 60, 1) if len(intervals) == len(every) else float("nan"),
        "group_min": round(sum(w for _, w in every) / 60, 1),
        "sittings": sittings,
        "complete": all(whole for _, whole in timed),
        "finished": dt.datetime.fromtimestamp(last, dt.UTC).strftime("%Y-%m-%d") if last else "",
        "cpu": env.get("cpu", ""),
        "cores": env.get("cores", ""),
    }


def table(evidence: Path = EVIDENCE_DIR) -> pd.DataFrame:
    """One row per built entry whose evidence is committed, in ``suite.targets`` order."""
    rows = [timing(b.name, load(path)) for b in BUILT if (path := Path(evidence) / f"{b.name}.jsonl").is_file()]
    return pd.DataFrame(rows)


def rates(evidence: Path = EVIDENCE_DIR) -> pd.DataFrame:
    """Per task, model, what it compiled (``compiled``) and group size (members), the median speed
    of its one-sitting groups in member-steps per second (steps x the members of the group / its
    training time)."""
    rows = []
    for b in BUILT:
        path = Path(evidence) / f"{b.name}.jsonl"
        for g in groups(load(path)) if path.is_file() else []:
            wall, steps = g.get("train_wall_s") or g.get("wall_s"), g.get("steps")
            if not (wall and steps) or len(g.get("sittings") or [None]) > 1:
                continue
            members = len(g["seeds"]) * (1 + len(g.get("fused_with", [])))
            rows.append({"task": g["task"], "model": g["model"], "compile": compiled(g.get("config") or {}, g.get("train_step")),
                         "members": members, "member_steps_per_s": steps * members / wall})
    df = pd.DataFrame(rows, columns=["task", "model", "compile", "members", "member_steps_per_s"])
    return (df.groupby(["task", "model", "compile", "members"], sort=True)
            .agg(groups=("members", "size"), member_steps_per_s=("member_steps_per_s", "median"))
            .round({"member_steps_per_s": 1}).reset_index())


def compiled(config, train_step: str | None = None) -> str:
    """What of a cell's model ran through torch.compile beyond the default training step: ``cells``
    (``compile_cells``: the DNC's time steps), ``forward`` (``compile_forward``, which acts on the
    autograd path only: ``train_step``, the step a finished cell trained with, where known) or
    ``none``; each trains at its own speed, so ``rates.csv`` and the projections keep them apart.
    ``config``: a cell's, as a dict or a DictConfig; before a run (a projection) the flags are all
    there is to go by."""
    cells = (config.get("model") or {}).get("compile_step")  # the DNC's: ${compile_cells}, where a model has it
    forward = config.get("compile_forward") and train_step in (None, "autograd")
    return "cells" if cells else "forward" if forward else "none"


def minutes(x: float) -> str:
    if math.isnan(x):
        return "unrecorded"
    return f"{x:.0f} min" if x < 90 else f"{x / 60:.1f} h"


def glance(df: pd.DataFrame) -> str:
    lines = ["| command | cells | busy | on one core | sittings | finished |", "|---|---|---|---|---|---|"]
    for r in df.itertuples():
        bound = "" if r.complete else " (last sitting)"
        lines.append(f"| `{r.command}` | {r.cells} | {minutes(r.busy_min)}{bound} | {minutes(r.group_min)}{bound} "
                     f"| {r.sittings} | {r.finished} |")
    pending = [b.name for b in BUILT if b.name not in set(df.evidence)]
    if pending:
        lines += ["", "Not yet timed (evidence pending): " + ", ".join(f"`{command(n)}`" for n in pending) + "."]
    return "\n".join(lines)


def markdown(df: pd.DataFrame) -> str:
    return "\n\n".join(["# Time per make target, from the runs' own wall times", __doc__.split("\n\n", 2)[2].strip(),
                        glance(df)]) + "\n"


BEGIN, END = "<!-- timings: generated by suite/timings.py; do not edit -->", "<!-- /timings -->"


def write(results: Path, readme: Path | None) -> list[Path]:
    df = table(results / "evidence")
    md, csv = results / "timings.md", results / "timings.csv"
    write_text_atomic(md, markdown(df))
    write_text_atomic(csv, df.to_csv(index=False))
    write_text_atomic(results / "rates.csv", rates(results / "evidence").to_csv(index=False))
    paths = [md, csv, results / "rates.csv"]
    if readme is not None:
        write_text_atomic(readme, fill_block(readme.read_text(), BEGIN, END, glance(df)))
        paths.append(readme)
    return paths


def main(argv: list[str] | None = None) -> None:
    generated_main(argv, "python -m suite.timings", __doc__, "timings", write)

if __name__ == "__main__":
    main()
