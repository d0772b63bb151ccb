"""Pre-registrations: a long run's reading and prediction, committed before its evidence.

Each ``results/preregistered/<run>.md`` opens with a front matter naming the run's evidence, its
make command, the claim and the reading that decide it (``results/preregistered/README.md``). The
order is read from git: the commit that adds a pre-registration must come strictly before the one
that adds its evidence, and every evidence file added after the folder was begun must have one.

    python -m suite.preregistered        -> one line per run: registered, evidence, in order or not
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from suite.provenance import ROOT

FOLDER = Path("results/preregistered")
EVIDENCE = Path("results/evidence")
FIELDS = ("evidence", "command", "claim", "reading")


@dataclass(frozen=True)
class Registration:
    path: Path
    evidence: str
    command: str
    claim: str
    reading: str


def parse(path: Path) -> Registration:
    """The front matter of one pre-registration; a ValueError naming the file and what is missing."""
    lines = path.read_text().splitlines()
    if not lines or lines[0] != "---" or "---" not in lines[1:]:
        raise ValueError(f"{path}: no front matter (a '---' line, then {', '.join(FIELDS)}, then '---')")
    head = lines[1:lines.index("---", 1)]
    fields = dict(line.split(": ", 1) for line in head if ": " in line)
    missing = [f for f in FIELDS if not fields.get(f, "").strip()]
    if missing:
        raise ValueError(f"{path}: front matter lacks {', '.join(missing)}")
    return Registration(path, *(fields[f].strip() for f in FIELDS))


def registrations(root: Path = ROOT) -> list[Registration]:
    return [parse(p) for p in sorted((root / FOLDER).glob("*.md")) if p.name != "README.md"]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def added_in(root: Path, path: Path) -> str | None:
    """The commit that first added ``path`` (relative to ``root``), None where git has not got it."""
    out = git(root, "log", "--diff-filter=A", "--format=%H", "--", str(path)).split()
    return out[-1] if out else None


def strictly_before(root: Path, a: str, b: str) -> bool:
    return a != b and subprocess.run(["git", "-C", str(root), "merge-base", "--is-ancestor", a, b]).returncode == 0


def problems(root: Path = ROOT) -> list[str]:
    """Every run out of order: evidence committed before (or with) its pre-registration, a
    pre-registration not committed while its evidence exists, and evidence added after the folder
    was begun with no pre-registration at all."""
    out: list[str] = []
    begun = added_in(root, FOLDER / "README.md")
    registered = {r.evidence: r for r in registrations(root)}
    for r in registered.values():
        evidence = EVIDENCE / f"{r.evidence}.jsonl"
        reg, ev = added_in(root, r.path.relative_to(root)), added_in(root, evidence)
        if (root / evidence).exists() and reg is None:
            out.append(f"{r.path.name}: {evidence} exists but its pre-registration is not committed")
        elif ev is not None and (reg is None or not strictly_before(root, reg, ev)):
            out.append(f"{r.path.name}: {evidence} was committed in {ev[:8]}, not after its pre-registration"
                       f"{f' ({reg[:8]})' if reg else ''}")
    if begun:
        later = git(root, "log", "--diff-filter=A", "--name-only", "--format=", f"{begun}..HEAD", "--", str(EVIDENCE))
        for name in sorted({Path(p).stem for p in later.split()}):
            if name not in registered:
                out.append(f"{EVIDENCE / name}.jsonl was added after {FOLDER}/ was begun and has no pre-registration")
    return out


def main() -> None:
    found = problems()
    for r in registrations():
        print(f"{r.evidence}: {r.claim}, {r.reading} ({r.path.relative_to(ROOT)})")
    for p in found:
        print(p, file=sys.stderr)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
