"""The committed record of a make target: ``results/evidence/<name>.jsonl``, one line per cell.

    python -m suite.evidence <name> <sweep dir> [<sweep dir> ...] [--out results/evidence]
    python -m suite.evidence <name> --restore [--runs multirun]

A line is the cell's ``metrics.json`` (its evidence and provenance, ``suite.record``) with
``run``, where its folder was (``<sweep>/<cell>``), in the order the sweeps are given and, within
one, by folder. Every table, figure and claim is built from these files alone
(``suite.tables``), so the run folders (curves, checkpoints, wandb files) stay out of git.
A cell made before cells recorded ``solved_at`` gets it here from its own ``history.csv``.

A line stores its ``members`` by column (``columns``): one list per field, in member order, where
``metrics.json`` has one record per member. It is the same record without the field names repeated
for every seed (a 100-seed file is half the size), and ``load`` gives back the records exactly,
field order and all. A file of the older form, ``members`` as a list, loads as it did.

Asked to (``reuse=results/evidence``; the default, null, trains every cell), a cell whose identical
twin (same hashed config, same numerics version) was trained by another sweep and committed is not
trained again: the runner copies its record, with ``reused_from`` naming where it came from
(``identical``). The cell's own committed record is not a twin.

``--restore`` does the reverse, for a machine that has the evidence but not the run folders (a
fresh clone, the next sitting of a sweep spread over several): it writes each cell's
``metrics.json`` back into ``multirun/<run>/`` where none is there, so that the runner finds the
cell complete and up to date (same config, same numerics version) and its sweep goes on with
the cells still missing. The curves are not restored: they were never committed.
"""

from __future__ import annotations

import argparse
import functools
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
        folders = {p.parent for name in ("history.csv", "metrics.json") for p in sweep.rglob(name)}
        for folder in sorted(folders):
            history = folder / "history.csv"
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


def columns(records: list) -> list | dict:
    """Records to columns, level by level: a list of dicts that have the same keys in the same
    order (one key at least) becomes a dict of those keys, each the columns of its values; anything
    else (numbers, ``None``, dicts whose keys differ) stays the list it is. ``rows`` undoes it."""
    if records and all(isinstance(r, dict) and r and list(r) == list(records[0]) for r in records):
        return {k: columns([r[k] for r in records]) for k in records[0]}
    return records


def rows(column: list | dict) -> list:
    """``columns``' inverse: a list is a column of values as they are; a dict zips its keys' columns."""
    if isinstance(column, list):
        return column
    keys, values = list(column), [rows(c) for c in column.values()]
    return [dict(zip(keys, vs)) for vs in zip(*values)]


def dumps(cells: list[dict]) -> str:
    """One line per cell, its members by column."""
    return "".join(json.dumps({k: columns(v) if k == "members" and v else v for k, v in c.items()},
                              separators=(",", ":"), allow_nan=True) + "\n" for c in cells)


def committed(path: Path) -> bool:
    """Whether git tracks ``path`` (the suite's committed evidence, or a scorecard's)."""
    import subprocess

    return subprocess.run(["git", "-C", str(ROOT), "ls-files", "--error-unmatch", str(Path(path).resolve())],
                          capture_output=True).returncode == 0


def differs(cells: list[dict], path: Path) -> str:
    """How ``cells`` differ from the evidence at ``path`` as a target's run: cells it lacks or adds
    (by run folder) and cells of other settings (config hash); '' when they are the same run."""
    old = {c["run"]: c["config_hash"] for c in load(path)}
    new = {c["run"]: c["config_hash"] for c in cells}
    lacks, adds = len(old.keys() - new.keys()), len(new.keys() - old.keys())
    other = sum(old[r] != new[r] for r in old.keys() & new.keys())
    parts = [f"{lacks} of its {len(old)} cells missing" if lacks else "", f"{adds} cells it has not" if adds else "",
             f"{other} cells with other settings" if other else ""]
    return ", ".join(p for p in parts if p)


def write(name: str, sweeps: list[Path], out: Path = EVIDENCE_DIR, replace: bool = False) -> Path:
    """Collect ``sweeps`` into ``<out>/<name>.jsonl``; refuses (writing nothing) when they hold no cell,
    and when the file is committed and these cells are not the same run of its target (a narrowed
    run, other settings) unless ``replace``."""
    cells = collect(*sweeps)
    if not cells:
        raise SystemExit(f"error: no finished cells under {', '.join(map(str, sweeps))}; {out / name}.jsonl "
                         "not written (run the target's sweeps first)")
    path = Path(out) / f"{name}.jsonl"
    if not replace and path.is_file() and committed(path) and (how := differs(cells, path)):
        raise SystemExit(f"error: these cells are not the committed run of {path} ({how}); nothing replaced, the "
                         "run folders kept: run the whole target, or REPLACE=1 (--replace) to replace it on purpose")
    write_text_atomic(path, dumps(cells))
    return path


def restore(name: str, runs: Path, evidence: Path = EVIDENCE_DIR) -> list[Path]:
    """Write each cell of ``<evidence>/<name>.jsonl`` back as ``<runs>/<run>/metrics.json`` where
    the folder has none; returns the files written."""
    from suite.io import write_json_atomic

    path = Path(evidence) / f"{name}.jsonl"
    if not path.is_file():
        raise SystemExit(f"error: {path} does not exist; nothing restored")
    written = []
    for cell in load(path):
        target = Path(runs) / cell["run"] / "metrics.json"
        if not target.exists():
            write_json_atomic(target, {k: v for k, v in cell.items() if k != "run"})
            written.append(target)
    return written


@functools.lru_cache(maxsize=4)
def identical_index(evidence: Path = EVIDENCE_DIR) -> dict[tuple[str, int], list[tuple[str, dict]]]:
    """(config hash, numerics version) -> [(evidence file's stem, cell), ...] for every committed
    cell that was trained (a copy, ``reused_from``, points at its original, which is listed)."""
    index: dict[tuple[str, int], list[tuple[str, dict]]] = {}
    for f in sorted(Path(evidence).glob("*.jsonl")):
        for cell in load(f):
            if cell.get("complete") and "config_hash" in cell and "reused_from" not in cell:
                index.setdefault((cell["config_hash"], cell.get("numerics")), []).append((f.stem, cell))
    return index


def identical(digest: str, numerics: int, evidence: Path = EVIDENCE_DIR,
              cell_dir: Path | None = None) -> tuple[str, dict] | None:
    """A committed cell made with the same hashed config and numerics version as ``digest`` (so the
    same numbers, ``suite.record``), as (where: ``<evidence stem>: <run>``, its record); None if none.
    The cell's own record (its ``run`` is ``cell_dir``'s ``<sweep>/<cell>``) is not its twin: a
    make target run from a fresh clone trains its cells; only a twin committed by another sweep is
    copied."""
    for stem, cell in identical_index(Path(evidence)).get((digest, numerics), []):
        if cell_dir is None or not ("/" + Path(cell_dir).as_posix()).endswith("/" + cell["run"]):
            return f"{stem}: {cell['run']}", {k: v for k, v in cell.items() if k != "run"}
    return None


def load(*files: Path) -> list[dict]:
    """The cells of evidence ``files``, in order; a missing file is named and skipped."""
    cells = []
    for f in map(Path, files):
        if not f.is_file():
            print(f"warning: {f} does not exist (make its target first)", file=sys.stderr)
            continue
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                cell = json.loads(line)
            except json.JSONDecodeError as e:  # a torn or hand-edited file: name it, build nothing from it
                from nalu.errors import ConfigError

                raise ConfigError(f"{f}, line {n}, is not JSON ({e.msg}); `git checkout {f}` restores the "
                                  "committed one, or its make target writes it again") from None
            if isinstance(cell.get("members"), dict):
                cell["members"] = rows(cell["members"])
            cells.append(cell)
    return cells


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m suite.evidence", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="the evidence file's stem: table1, table1_paper, figure4_builder, ...")
    p.add_argument("sweeps", type=Path, nargs="*", help="the target's sweep folders (multirun/<sweep>)")
    p.add_argument("--out", type=Path, default=EVIDENCE_DIR)
    p.add_argument("--replace", action="store_true",
                   help="replace committed evidence with cells that are not the same run (make's REPLACE=1)")
    p.add_argument("--restore", action="store_true", help="write the evidence's cells back into --runs")
    p.add_argument("--runs", type=Path, default=ROOT / "multirun")
    a = p.parse_args(argv)
    if a.restore:
        written = restore(a.name, a.runs, a.out)
        print(f"restored {len(written)} cells of {a.out / a.name}.jsonl into {a.runs}", file=sys.stderr)
        return
    if not a.sweeps:
        p.error("give the target's sweep folders (or --restore)")
    path = write(a.name, a.sweeps, a.out, a.replace)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
