"""Rerun a target's cells in a scratch copy of this tree and compare its table with the committed
one within seed-level noise (``make verify TARGET=table1``; rules in ``suite/tables/verify.py``).

    python scripts/verify.py TARGET [--budget paper] [--variant V] [--sample "model=nac"] [--jobs 2]
                                     [--against results] [--scratch DIR]

The scratch copy holds this tree's files (its code, configs and paper values) but no
cells, and its runs copy no committed twin (``reuse=null``): every cell of the target, or of the sample (overrides added to each of the target's
sweeps, which narrow them: ``--sample "model=nac task.op=add,sub"``), trains anew. Rows the sample
leaves out are not judged. Exits 0 when it judged at least one row and none moved beyond noise,
1 when some did (each printed) or when it judged none (a verification that compared nothing
cannot pass, nor one whose rerun trained no cell or copied any: ``untrained``), 2 on bad input.
The scratch folder is removed unless ``--scratch`` names it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from suite.evidence import load  # noqa: E402
from suite.tables.verify import compare  # noqa: E402
from scripts.reproduce_all import TARGETS  # noqa: E402


def copy_tree(scratch: Path) -> None:
    """This tree's files (tracked, or new and not ignored) into ``scratch`` (times kept, so make sees
    ``.venv`` as built), the committed evidence included (a target's rerun overwrites its own, and
    a target that reads another's, units_paper or figure5_wirings, reads it); ``.venv`` and ``data``
    linked, not copied; not a target's carried state (``results/inflight/``: its cells would be
    resumed, not rerun). A scratch kept from an earlier rerun (``--scratch``) is refreshed: its
    cells that are up to date are not trained again."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, files.split("\0")):
        src = ROOT / name
        if not src.is_file() or name.startswith("results/inflight/"):  # a rerun trains every cell itself
            continue
        (scratch / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, scratch / name)
    for shared in (".venv", "data"):
        if (ROOT / shared).exists() and not (scratch / shared).is_symlink():
            (scratch / shared).symlink_to((ROOT / shared).resolve())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", help=", ".join(t.name for t in TARGETS))
    p.add_argument("--budget", default="default", choices=["default", "paper"])
    p.add_argument("--variant", default="")
    p.add_argument("--sample", default="", help="overrides added to every sweep of the target")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--against", type=Path, default=ROOT / "results", help="the folder of the committed tables")
    p.add_argument("--scratch", type=Path, default=None, help="rerun here and keep it (default: a temporary folder)")
    a = p.parse_args(argv)
    if a.target not in {t.name for t in TARGETS}:
        p.error(f"unknown target '{a.target}'; valid: {', '.join(t.name for t in TARGETS)}")
    stem = a.target + ("_paper" if a.budget == "paper" else "") + (f"_{a.variant}" if a.variant else "")
    committed = a.against / f"{stem}.csv"
    if not committed.exists():
        p.error(f"{committed} does not exist: nothing to verify against")

    scratch = a.scratch or Path(tempfile.mkdtemp(prefix=f"verify-{stem}-"))
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        copy_tree(scratch)
        log = scratch / "verify.log"
        evidence = scratch / "results" / "evidence" / f"{stem}.jsonl"
        evidence.unlink(missing_ok=True)  # the committed copy: what is there after the rerun, the rerun wrote
        # -o: the linked .venv is this tree's, built already (make must not rebuild it from the copy)
        # reuse=null, whatever the default: the scratch holds the committed evidence, whose cells could otherwise be copied
        # as identical twins (suite.evidence.identical) instead of trained, and compared with themselves
        command = ["make", "-o", ".venv/.installed", f"reproduce-{a.target}", f"BUDGET={a.budget}", f"VARIANT={a.variant}",
                   f"SAMPLE={a.sample} reuse=null".strip(), f"JOBS={a.jobs}", "REPLACE=1"]  # the scratch tree's results are its own
        print(f"verify {stem}: {' '.join(command)} in {scratch} (log: {log})", file=sys.stderr, flush=True)
        with open(log, "w") as f:
            rc = subprocess.run(command, cwd=scratch, stdout=f, stderr=subprocess.STDOUT).returncode
        if rc != 0:
            tail = log.read_text(errors="replace").splitlines()[-15:]
            print("\n".join(tail), file=sys.stderr)
            print(f"error: the rerun failed (exit {rc}); log above", file=sys.stderr)
            return 2
        if untrained(evidence, stem):
            return 1
        return judge(scratch / "results" / f"{stem}.csv", committed, stem)
    finally:
        if a.scratch is None:
            shutil.rmtree(scratch, ignore_errors=True)


def untrained(evidence: Path, stem: str) -> bool:
    """Whether the rerun failed to train its cells (each said on stderr): it wrote no evidence, no
    cell, or a cell copied from a committed twin (``reused_from``), whose table would be judged
    against itself. A recipe that drops verify's ``reuse=null`` shows up here."""
    if not evidence.is_file():
        print(f"error: the rerun wrote no evidence ({evidence}): nothing was verified", file=sys.stderr)
        return True
    cells = load(evidence)
    copied = [c["run"] for c in cells if "reused_from" in c]
    if copied:
        print(f"error: {len(copied)} of {len(cells)} cells of {stem} were copied from committed twins, not "
              f"trained (e.g. {copied[0]}): the rerun did not pass reuse=null on", file=sys.stderr)
    elif not cells:
        print(f"error: the rerun of {stem} trained no cell: nothing was verified", file=sys.stderr)
    return bool(copied) or not cells


def judge(rerun: Path, committed: Path, stem: str) -> int:
    """Print each statistic of ``rerun`` that moved beyond seed-level noise from ``committed`` and
    return the exit status: 0 when at least one row was judged and none moved, else 1."""
    judged, moved = compare(rerun, committed)
    for m in moved:
        print(f"moved: {m.row}: {m.statistic} {m.ours} rerun vs {m.committed} committed")
    rows = len({m.row for m in moved})
    print(f"{stem}: {judged} rows judged against {committed}, {rows} moved beyond seed-level noise")
    if not judged:
        print(f"error: no row of {stem} was judged (no row of the rerun and of the committed table shares "
              "a statistic over seeds): nothing was verified", file=sys.stderr)
    return 1 if moved or not judged else 0


if __name__ == "__main__":
    raise SystemExit(main())
