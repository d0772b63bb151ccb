"""Result tables and figures, built from the committed evidence (``results/evidence/<name>.jsonl``,
written by ``python -m suite.evidence``) alone: ``python -m suite.tables <what> [--evidence FILE...]``.

    python -m suite.tables table1 [--evidence FILE...] [--out results] [--name table1]
    python -m suite.tables table2 [--evidence FILE...] [--out results] [--name table2]
    python -m suite.tables table3 [--evidence FILE...] [--out results] [--name table3]   (also Figure 3)
    python -m suite.tables table4 [--evidence FILE...] [--out results] [--name table4]
    python -m suite.tables table5 [--evidence FILE...] [--out results]                   (also Figure 1)
    python -m suite.tables figure4 [--evidence FILE...] [--out results] [--name figure4]
    python -m suite.tables figure5 [--evidence FILE...] [--out results] [--name figure5]
    python -m suite.tables protocol_search [--evidence FILE...] [--out results]
    python -m suite.tables primer [--evidence FILE...] [--out results] [--name units_primer]
    python -m suite.tables places --evidence FILE [--out results/benchmarks] [--name <class>_tasks]
    python -m suite.tables units [--evidence FILE...] [--long units_long] [--out results] [--name units]
    python -m suite.tables scorecard FILE [--out <its folder>]          (one, beside its reference)
    python -m suite.tables scorecards [--folder results/benchmarks]     (each beside its reference)
    python -m suite.tables curves <run or sweep dir> [--out file.png]
    python -m suite.tables build <name> [--out results] [--evidence-dir results/evidence]
                                                             (as its make target: suite.targets)

``--evidence`` defaults to ``results/evidence/<name>.jsonl``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # the one place the backend is set: every builder writes files, none shows a window

# the tables built from one sweep folder: command -> (module in suite.tables, help)
SIMPLE = {
    "table2": ("table2", "Table 2 (MNIST counting and addition)"),
    "table3": ("table3", "Table 3 and Figure 3 (number words to number)"),
    "table4": ("table4", "Table 4 (MNIST parity, final-layer ablation)"),
    "table5": ("table5", "Table 5 and Figure 1 (identity function)"),
    "figure4": ("figure4", "Figure 4 (program evaluation)"),
    "figure5": ("figure5", "Figure 5 (grid-world time tracking)"),
    "protocol_search": ("protocol_search", "Table 1's protocol searched against the paper's baseline rows"),
    "primer": ("primer", "the units under the Primer benchmark's protocol, its nine input ranges"),
    "places": ("places", "a unit from outside in the paper's other places, each in its table (make benchmark-unit PROTOCOL=tasks)"),
}


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m suite.tables``."""
    p = argparse.ArgumentParser(prog="python -m suite.tables", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)

    def table(name: str, help_text: str) -> argparse.ArgumentParser:
        t = sub.add_parser(name, help=help_text)
        t.add_argument("--evidence", type=Path, nargs="+", default=None,
                       help="evidence files (default: results/evidence/<name>.jsonl)")
        t.add_argument("--out", type=Path, default=Path("results"))
        t.add_argument("--name", default=name, help=f"the files' stem (a variant's: {name}_<variant>)")
        return t

    t1 = table("table1", "Table 1 (static + recurrent arithmetic)")
    t1.add_argument("--checkpoint", choices=["best", "final"], default="best",
                    help="each seed's weights at its best validation step, or its final weights")
    t1.add_argument("--reference", choices=["random", "init", "variance", "mean_square"], default="random",
                    help="scale by random reference models, each model's own initial state, or the "
                         "test targets' variance or mean square")
    t1.add_argument("--solved-below", type=float, default=0.05)
    for name, (_, help_text) in SIMPLE.items():
        table(name, help_text)
    un = table("units", "every arithmetic unit, success rates (Madsen & Johansen 2020)")
    un.add_argument("--long", default="units_long",
                    help="the sweep whose cells are the same with longer budgets ('none': there is none)")
    from suite.targets import BY_NAME

    b = sub.add_parser("build", help="one table or figure of results/, as its make target builds it")
    b.add_argument("target", choices=sorted(BY_NAME), metavar="name", help=", ".join(BY_NAME))
    b.add_argument("--out", type=Path, default=Path("results"))
    b.add_argument("--evidence-dir", type=Path, default=None,
                   help="its evidence folder (default: results/evidence; a narrowed run's scratch folder)")
    one = sub.add_parser("scorecard", help="one scorecard (make benchmark-unit's last step), built from its evidence "
                                           "beside the reference evidence its name calls for (suite.tables.scorecards)")
    one.add_argument("evidence", type=Path, help="results/benchmarks/<class>[_told][_paper|_primer|_tasks].jsonl")
    one.add_argument("--out", type=Path, default=None, help="default: the evidence file's folder")
    sc = sub.add_parser("scorecards", help="every scorecard of a folder (make benchmark-unit's), rebuilt from its "
                                           "evidence beside today's reference evidence")
    sc.add_argument("--folder", type=Path, default=None, help="default: results/benchmarks")
    cv = sub.add_parser("curves", help="plot a run folder's history.csv, or every cell of a sweep folder")
    cv.add_argument("run_dir", type=Path)
    cv.add_argument("--out", type=Path, default=None)
    return p


def writable(folder: Path) -> None:
    """Refuse, in one line and before any table is built, an output folder this process cannot
    make or write to (a read-only place, a path through a file). Nothing is created here."""
    existing = folder.absolute()
    while not existing.exists():
        existing = existing.parent
    try:
        if not existing.is_dir():
            raise NotADirectoryError(20, "Not a directory")
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as e:
        raise SystemExit(f"error: cannot write to {folder}: {e.strerror or e}") from None


def main(argv: list[str] | None = None) -> None:
    """The command line; a refusal (a torn evidence file, a missing column) is one line, exit 2."""
    from nalu.errors import ConfigError, exit_with

    try:
        run(argv)
    except ConfigError as e:
        exit_with(e)


def run(argv: list[str] | None = None) -> None:
    a = parser().parse_args(argv)
    if a.what == "build":
        from suite.targets import BY_NAME

        from suite.evidence import EVIDENCE_DIR

        return run(BY_NAME[a.target].command(a.out, a.evidence_dir or EVIDENCE_DIR))
    if a.what == "scorecard":
        from suite.tables import scorecards

        out = a.out or a.evidence.parent
        writable(out)
        scorecards.rebuild(a.evidence, out)
        return
    if a.what == "scorecards":
        from suite.tables import scorecards

        folder = a.folder or scorecards.BENCHMARKS
        writable(folder)
        names = [e.stem for e in sorted(folder.glob("*.jsonl"))]
        scorecards.build(folder)
        print(f"rebuilt {len(names)} scorecard{'s' * (len(names) != 1)} in {folder}: {', '.join(names)}" if names
              else f"no scorecard in {folder}", file=sys.stderr)
        return
    out = a.out if a.what != "curves" else (a.out.parent if a.out else a.run_dir)
    writable(out)
    if a.what != "curves" and a.evidence is None:
        from suite.evidence import EVIDENCE_DIR

        a.evidence = [EVIDENCE_DIR / f"{a.name}.jsonl"]

    if a.what == "table1":
        from suite.tables import table1

        paths = table1.build(a.evidence, a.out, a.checkpoint, a.reference, a.solved_below, a.name)
    elif a.what == "units":
        from suite.tables import units

        paths = units.build(a.evidence, a.out, None if a.long == "none" else a.long, a.name)
    elif a.what in SIMPLE:
        module = importlib.import_module(f"suite.tables.{SIMPLE[a.what][0]}")
        kwargs = {"name": a.name} if "name" in inspect.signature(module.build).parameters else {}
        paths = module.build(a.evidence, a.out, **kwargs)
    else:
        from suite.tables import curves

        paths = [curves.plot(a.run_dir, a.out)]
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
