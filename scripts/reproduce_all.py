"""Every table and figure target in turn, skipping those that are up to date (``make reproduce-all``).

    python scripts/reproduce_all.py [--only table1,units] [--jobs 2] [--check]

A target is up to date when every cell of its sweeps is complete and current (its config and its
task's numerics version: ``make <target> DRY_RUN=1`` asks each cell, running nothing, and the
runner hands back each cell's state as data, ``NALU_STATUS_FILE``), its evidence is what those
cells hold, and its tables and figures are what the builders make of that evidence (both
checked by building them afresh in a scratch folder and comparing bytes). Other targets run
through their own make target, so a half-done one resumes where it stopped, and one whose cells
are all current only rewrites its evidence and tables.
Each target's output goes to ``multirun/.reproduce/<target>.log``; the console shows one line per
target, and at the end a summary (also ``multirun/.reproduce/summary.md``): each target, its wall
time here, and its outputs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
STATE = ROOT / "multirun" / ".reproduce"


@dataclass(frozen=True)
class Target:
    name: str
    outputs: tuple[str, ...]  # in results/, besides its evidence (evidence/<name>.jsonl)

    @property
    def make(self) -> str:
        return f"reproduce-{self.name}"


TARGETS = [  # the order of the README: the main job first, the longest (A3C) late
    Target("table1", ("table1.md", "table1.csv")),
    Target("table5", ("table5.md", "table5.csv", "figure1.png", "figure1.md", "figure1.csv")),
    Target("table2", ("table2.md", "table2.csv")),
    Target("table3", ("table3.md", "table3.csv", "figure3.png", "figure3.md", "figure3.csv")),
    Target("table4", ("table4.md", "table4.csv")),
    Target("figure4", ("figure4.png", "figure4.md", "figure4.csv")),
    Target("figure5", ("figure5.png", "figure5.md", "figure5.csv")),
    Target("units", ("units.png", "units.md", "units.csv")),
]


def sweep_dirs() -> set[Path]:
    return {d for d in (ROOT / "multirun").glob("*") if d.is_dir()}


def only_scaffolding(folder: Path) -> bool:
    """Whether ``folder`` holds nothing but Hydra's ``multirun.yaml`` and empty job folders."""
    return all(p.is_dir() or p == folder / "multirun.yaml" for p in folder.rglob("*"))


def cell_status(target: Target) -> list[dict]:
    """Each cell of the target's sweeps (``cell``, ``state``, ``reason``), from a dry run. A dry
    run leaves nothing behind: a sweep folder it made that holds only what Hydra sets up
    (``multirun.yaml``, empty job folders) is removed again."""
    had_root, before = (ROOT / "multirun").exists(), sweep_dirs()
    with tempfile.NamedTemporaryFile("r", suffix=".jsonl") as status:
        p = subprocess.run(["make", "-s", target.make, "DRY_RUN=1"], cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "NALU_STATUS_FILE": status.name})
        cells = [json.loads(line) for line in status.read().splitlines() if line.strip()]
    for made in sweep_dirs() - before:
        if only_scaffolding(made):
            shutil.rmtree(made)
    if not had_root and (ROOT / "multirun").exists() and not any((ROOT / "multirun").iterdir()):
        (ROOT / "multirun").rmdir()
    if p.returncode != 0:
        raise SystemExit(f"error: make {target.make} DRY_RUN=1 failed:\n{p.stderr[-2000:]}")
    if not cells:
        raise SystemExit(f"error: make {target.make} DRY_RUN=1 reported no cells; its recipe may have changed")
    return cells


def current_outputs(target: Target) -> str:
    """'' when the target's evidence is what its run folders hold and its outputs are what the
    builders make of it; otherwise what is not."""
    from suite.evidence import EVIDENCE_DIR, collect, dumps, load

    evidence = EVIDENCE_DIR / f"{target.name}.jsonl"
    missing = [o for o in target.outputs if not (ROOT / "results" / o).is_file()]
    if missing or not evidence.is_file():
        return "outputs missing"
    sweeps = dict.fromkeys(c["run"].split("/")[0] for c in load(evidence))
    if dumps(collect(*(ROOT / "multirun" / s for s in sweeps))) != evidence.read_text():
        return "evidence to rewrite"
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([sys.executable, "-m", "suite.tables", "build", target.name, "--out", out], cwd=ROOT,
                           capture_output=True, text=True)
        if p.returncode != 0:
            return "tables to rebuild"
        if any((Path(out) / o).read_bytes() != (ROOT / "results" / o).read_bytes() for o in target.outputs):
            return "tables to rebuild"
    return ""


def up_to_date(target: Target) -> tuple[bool, int, str]:
    """(whether to skip, how many cells, why it runs)."""
    cells = cell_status(target)
    stale = [c for c in cells if c["state"] != "up to date"]
    if stale:
        seconds = [c.get("projected_s") for c in stale]
        known = sum(s for s in seconds if s)
        took = f", projected {clock(known)} at JOBS=1" if known else ""
        unknown = f" ({seconds.count(None)} without a rate)" if None in seconds else ""
        return False, len(cells), f"{len(stale)} of {len(cells)} cells to run{took}{unknown}"
    why = current_outputs(target)
    return not why, len(cells), why


def clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def run(target: Target, head: str, cells: int, jobs: int) -> tuple[int, float]:
    """Run ``make <target>``, its output into its log; one console line, updated on a terminal."""
    log = STATE / f"{target.name}.log"
    start = time.perf_counter()
    with open(log, "a") as f:
        env = {k: v for k, v in os.environ.items() if k != "DRY_RUN"}  # a real run, whatever the caller's shell holds
        proc = subprocess.Popen(["make", target.make, f"JOBS={jobs}", "DRY_RUN="], cwd=ROOT, stdout=f,
                                stderr=subprocess.STDOUT, env=env)
        stop = threading.Event()

        def show() -> None:
            while not stop.wait(5):
                text = log.read_text(errors="replace")
                done = len(re.findall(r"^(?:done|skip) ", text, re.M))
                print(f"\r{head} running: {done}/{cells} cells, {clock(time.perf_counter() - start)}",
                      end="", flush=True)

        if sys.stdout.isatty():
            threading.Thread(target=show, daemon=True).start()
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            proc.wait()  # Ctrl-C reaches make and its sweeps too; let them stop cleanly
            raise
        finally:
            stop.set()
    return rc, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default="", help="comma-separated targets (default: all): "
                   + ", ".join(t.name for t in TARGETS))
    p.add_argument("--jobs", type=int, default=2, help="cells at a time within a target (make's JOBS)")
    p.add_argument("--check", action="store_true", help="only say which targets are up to date")
    a = p.parse_args(argv)
    names = [n for n in a.only.split(",") if n]
    unknown = sorted(set(names) - {t.name for t in TARGETS})
    if unknown:
        p.error(f"unknown target {', '.join(unknown)}; valid: {', '.join(t.name for t in TARGETS)}")
    targets = [t for t in TARGETS if not names or t.name in names]
    if not a.check:  # a check writes nothing
        STATE.mkdir(parents=True, exist_ok=True)

    rows, failed = [], False
    for i, t in enumerate(targets, 1):
        head = f"[{i}/{len(targets)}] make {t.make:<18}"
        skip, cells, why = up_to_date(t)
        if skip or a.check:
            print(f"{head} {'up to date' if skip else 'to run: ' + why}")
            rows.append((t, "up to date" if skip else "to run", "-"))
            continue
        print(f"{head} running ({why}); log: {(STATE / f'{t.name}.log').relative_to(ROOT)}", flush=True)
        rc, wall = run(t, head, cells, a.jobs)
        if rc != 0:
            print(f"\r{head} FAILED after {clock(wall)} (exit {rc}); see its log")
            rows.append((t, f"failed (exit {rc})", clock(wall)))
            failed = True
            break
        print(f"\r{head} done in {clock(wall)}" + " " * 30)
        rows.append((t, "ran", clock(wall)))

    table = ["| target | this run | wall time here | outputs |", "|---|---|---|---|"]
    table += [f"| `make {t.make}` | {state} | {wall} | "
              f"{', '.join('results/' + o for o in (*t.outputs, f'evidence/{t.name}.jsonl'))} |"
              for t, state, wall in rows]
    summary = "\n".join(table) + "\n"
    if not a.check:
        (STATE / "summary.md").write_text(summary)
    print("\n" + summary, end="")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\ninterrupted: finished cells are kept; `make reproduce-all` resumes", file=sys.stderr)
        sys.exit(130)
