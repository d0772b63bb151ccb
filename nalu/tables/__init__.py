"""Result tables and figures, rebuilt from run directories (``python -m nalu.tables ...``).

    python -m nalu.tables table1 [--static DIR] [--recurrent DIR] [--out results]
    python -m nalu.tables table2 [--runs DIR] [--out results]
    python -m nalu.tables table3 [--runs DIR] [--out results]     (also Figure 3)
    python -m nalu.tables table4 [--runs DIR] [--out results]
    python -m nalu.tables table5 [--runs DIR] [--out results]
    python -m nalu.tables figure4 [--runs DIR] [--out results]
    python -m nalu.tables curves <run dir> [--out file.png]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m nalu.tables", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
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
    t2 = sub.add_parser("table2", help="Table 2 (MNIST counting and addition)")
    t2.add_argument("--runs", type=Path, default=Path("multirun/table2"))
    t2.add_argument("--out", type=Path, default=Path("results"))
    t3 = sub.add_parser("table3", help="Table 3 and Figure 3 (number words to number)")
    t3.add_argument("--runs", type=Path, default=Path("multirun/table3"))
    t3.add_argument("--out", type=Path, default=Path("results"))
    t4 = sub.add_parser("table4", help="Table 4 (MNIST parity, final-layer ablation)")
    t4.add_argument("--runs", type=Path, default=Path("multirun/table4"))
    t4.add_argument("--out", type=Path, default=Path("results"))
    t5 = sub.add_parser("table5", help="Table 5 and Figure 1 (identity function)")
    t5.add_argument("--runs", type=Path, default=Path("multirun/table5"))
    t5.add_argument("--out", type=Path, default=Path("results"))
    f4 = sub.add_parser("figure4", help="Figure 4 (program evaluation)")
    f4.add_argument("--runs", type=Path, default=Path("multirun/figure4"))
    f4.add_argument("--out", type=Path, default=Path("results"))
    cv = sub.add_parser("curves", help="plot a run directory's history.csv")
    cv.add_argument("run_dir", type=Path)
    cv.add_argument("--out", type=Path, default=None)
    a = p.parse_args(argv)

    if a.what == "table1":
        from nalu.tables import table1

        paths = table1.build(a.static, a.recurrent, a.out, a.checkpoint, a.reference, a.solved_below)
    elif a.what == "table2":
        from nalu.tables import table2

        paths = table2.build(a.runs, a.out)
    elif a.what == "table3":
        from nalu.tables import translation

        paths = translation.build(a.runs, a.out)
    elif a.what == "table4":
        from nalu.tables import table4

        paths = table4.build(a.runs, a.out)
    elif a.what == "table5":
        from nalu.tables import identity

        paths = identity.build(a.runs, a.out)
    elif a.what == "figure4":
        from nalu.tables import figure4

        paths = figure4.build(a.runs, a.out)
    else:
        from nalu.tables import curves

        paths = [curves.plot(a.run_dir, a.out)]
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
