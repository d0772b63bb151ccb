"""Pack a target's run folders for sharing (``make archive TARGET=<name>``).

    python scripts/archive.py <name> [--runs multirun] [--out archives]

The cells are those of the target's evidence (``results/evidence/<name>.jsonl``, their ``run``
paths under ``--runs``); their folders (curves, configs, logs, checkpoints of unfinished runs)
and the evidence file go into ``<out>/<name>.tar.gz`` with ``MANIFEST.sha256`` (``sha256sum -c``
format) at its top. A cell whose folder is not on this machine is named and left out.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from suite.evidence import EVIDENCE_DIR, load  # noqa: E402


def sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def archive(name: str, runs: Path, out: Path, evidence_dir: Path = EVIDENCE_DIR) -> Path:
    evidence = evidence_dir / f"{name}.jsonl"
    if not evidence.is_file():
        raise SystemExit(f"error: {evidence} does not exist; make the target first (nothing written)")
    files = {f"evidence/{evidence.name}": evidence}
    missing = []
    for cell in load(evidence):
        folder = runs / cell["run"]
        if not folder.is_dir():
            missing.append(cell["run"])
            continue
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            files[f"runs/{path.relative_to(runs).as_posix()}"] = path
    if missing:
        print(f"warning: {len(missing)} cells have no run folder under {runs} and are left out "
              f"(e.g. {missing[0]})", file=sys.stderr)
    manifest = "".join(f"{sha256(p)}  {arc}\n" for arc, p in files.items()).encode()
    out.mkdir(parents=True, exist_ok=True)
    target, tmp = out / f"{name}.tar.gz", out / f".{name}.tar.gz.tmp"
    with tarfile.open(tmp, "w:gz") as tar:
        info = tarfile.TarInfo("MANIFEST.sha256")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        for arc, path in files.items():
            tar.add(path, arcname=arc)
    tmp.replace(target)
    return target


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="a target's evidence name: table1, table1_paper, units, ...")
    p.add_argument("--runs", type=Path, default=ROOT / "multirun")
    p.add_argument("--out", type=Path, default=ROOT / "archives")
    a = p.parse_args(argv)
    print(f"wrote {archive(a.name, a.runs, a.out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
