"""Result tables and figures, rebuilt from run directories (``python -m suite.tables ...``).

    python -m suite.tables table1 [--static DIR] [--recurrent DIR] [--out results] [--name table1]
    python -m suite.tables table2 [--runs DIR] [--out results]
    python -m suite.tables table3 [--runs DIR] [--out results] [--name table3]     (also Figure 3)
    python -m suite.tables table4 [--runs DIR] [--out results]
    python -m suite.tables table5 [--runs DIR] [--out results]
    python -m suite.tables figure4 [--runs DIR] [--out results] [--name figure4]
    python -m suite.tables figure5 [--runs DIR...] [--out results] [--name figure5]
    python -m suite.tables units [--runs DIR...] [--long DIR] [--out results] [--name units]
    python -m suite.tables curves <run dir> [--out file.png]
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
}


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m suite.tables``."""
    p = argparse.ArgumentParser(prog="python -m suite.tables", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    t1 = sub.add_parser("table1", help="Table 1 (static + recurrent arithmetic)")
    t1.add_argument("--static", type=Path, default=Path("multirun/table1_static"))
    t1.add_argument("--recurrent", type=Path, default=Path("multirun/table1_recurrent"))
    t1.add_argument("--out", type=Path, default=Path("results"))
    t1.add_argument("--checkpoint", choices=["best", "final"], default="best",
                    help="each seed's weights at its best validation step, or its final weights")
    t1.add_argument("--reference", choices=["random", "init"], default="random",
                    help="scale by random reference models, or by each model's own initial state")
    t1.add_argument("--solved-below", type=float, default=0.05)
    t1.add_argument("--name", default="table1", help="the files' stem: <out>/<name>.md, .csv (table1_paper)")
    for name, (_, help_text) in SIMPLE.items():
        t = sub.add_parser(name, help=help_text)
        if name == "figure5":  # a variant's figure draws the default agents too
            t.add_argument("--runs", type=Path, nargs="+", default=[Path(f"multirun/{name}")])
        else:
            t.add_argument("--runs", type=Path, default=Path(f"multirun/{name}"))
        t.add_argument("--out", type=Path, default=Path("results"))
        if "name" in inspect.signature(importlib.import_module(f"suite.tables.{SIMPLE[name][0]}").build).parameters:
            t.add_argument("--name", default=name, help=f"the files' stem (a variant's: {name}_<variant>)")
    un = sub.add_parser("units", help="every arithmetic unit, success rates (Madsen & Johansen 2020)")
    un.add_argument("--runs", type=Path, nargs="+", default=[Path("multirun/units")],
                    help="sweep folders whose static arithmetic cells make the table")
    un.add_argument("--long", type=Path, default=Path("multirun/units_long"),
                    help="the same cells with longer budgets (left out if absent; 'none': left out)")
    un.add_argument("--out", type=Path, default=Path("results"))
    un.add_argument("--name", default="units", help="the files' stem: <out>/<name>.md, .csv, .png (units_paper)")
    cv = sub.add_parser("curves", help="plot a run directory's history.csv")
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
    a = parser().parse_args(argv)
    out = a.out if a.what != "curves" else (a.out.parent if a.out else a.run_dir)
    writable(out)

    if a.what == "table1":
        from suite.tables import table1

        paths = table1.build(a.static, a.recurrent, a.out, a.checkpoint, a.reference, a.solved_below, a.name)
    elif a.what == "units":
        from suite.tables import units

        paths = units.build(a.runs, a.out, None if str(a.long) == "none" else a.long, a.name)
    elif a.what in SIMPLE:
        module = importlib.import_module(f"suite.tables.{SIMPLE[a.what][0]}")
        paths = module.build(a.runs, a.out, **({"name": a.name} if hasattr(a, "name") else {}))
    else:
        from suite.tables import curves

        paths = [curves.plot(a.run_dir, a.out)]
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
