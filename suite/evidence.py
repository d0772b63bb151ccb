"""The committed record of a make target: ``results/evidence/<name>.jsonl``, one line per cell.

    python -m suite.evidence <name> <sweep dir> [<sweep dir> ...] [--out results/evidence]

A line is the cell's ``metrics.json`` (its evidence and provenance, ``suite.record``) with
``run``, where its folder was (``<sweep>/<cell>``), in the order the sweeps are given and, within
one, by folder. Every table, figure and claim is built from these files alone
(``suite.tables``), so the run folders (curves, checkpoints, wandb files) stay out of git.
A cell made before cells recorded ``solved_at`` gets it here from its own ``history.csv``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from suite.io import read_json, write_text_atomic
from suite.record import with_solved_at
from tasks.metrics import EXTRAPOLATION

ROOT = Path(__file__).resolve().parent.parent
EVIDENCE_DIR = ROOT / "results" / "evidence"


def collect(*sweeps: Path) -> list[dict]:
    """Every complete cell under ``sweeps``, in order, each with ``run``; warns about incomplete ones."""
    cells, incomplete = [], []
    for sweep in map(Path, sweeps):
        if not sweep.is_dir():
            print(f"warning: {sweep} does not exist (run its sweep first)", file=sys.stderr)
            continue
        for history in sorted(sweep.rglob("history.csv")):
            folder = history.parent
            m = read_json(folder / "metrics.json")
            if not (m and m.get("complete")):
                incomplete.append(folder)
                continue
            if any("success_threshold" in s and "solved_at" not in s for s in m.get("members", [])):
                m["members"] = with_solved_at(m["members"], history, EXTRAPOLATION)
            cells.append({"run": f"{sweep.name}/{folder.relative_to(sweep).as_posix()}", **m})
    for d in incomplete:
        print(f"warning: {d} is incomplete and left out (rerun its sweep to finish it)", file=sys.stderr)
    return cells


def dumps(cells: list[dict]) -> str:
    return "".join(json.dumps(c, separators=(",", ":"), allow_nan=True) + "\n" for c in cells)


def write(name: str, sweeps: list[Path], out: Path = EVIDENCE_DIR) -> Path:
    """Collect ``sweeps`` into ``<out>/<name>.jsonl``; refuses (writing nothing) when they hold no cell."""
    cells = collect(*sweeps)
    if not cells:
        raise SystemExit(f"error: no finished cells under {', '.join(map(str, sweeps))}; {out / name}.jsonl "
                         "not written (run the target's sweeps first)")
    path = Path(out) / f"{name}.jsonl"
    write_text_atomic(path, dumps(cells))
    return path


def load(*files: Path) -> list[dict]:
    """The cells of evidence ``files``, in order; a missing file is named and skipped."""
    cells = []
    for f in map(Path, files):
        if not f.is_file():
            print(f"warning: {f} does not exist (make its target first)", file=sys.stderr)
            continue
        cells += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return cells


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m suite.evidence", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="the evidence file's stem: table1, table1_paper, figure4_builder, ...")
    p.add_argument("sweeps", type=Path, nargs="+", help="the target's sweep folders (multirun/<sweep>)")
    p.add_argument("--out", type=Path, default=EVIDENCE_DIR)
    a = p.parse_args(argv)
    path = write(a.name, a.sweeps, a.out)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
