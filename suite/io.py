"""Atomic file output: write to a temporary name in the same folder, then rename; generated blocks
and the command line of the pages that fill them."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Callable

from suite.provenance import ROOT


def write_text_atomic(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes files private; results are for everyone to read
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json_atomic(path: Path, data: dict) -> None:
    write_text_atomic(path, json.dumps(data, indent=1) + "\n")


def read_json(path: Path) -> dict | None:
    """The JSON object in ``path``, or None if it is missing or unreadable (e.g. half-written)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def fill_block(text: str, begin: str, end: str, block: str) -> str:
    """``text`` with what lies between the markers ``begin`` and ``end`` replaced by ``block`` (a
    generated section of a hand-written page, such as README.md's claims and timings)."""
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"error: no generated block ({begin} ... {end}) to fill")
    return pattern.sub(lambda _: f"{begin}\n{block}\n{end}", text)


def generated_main(argv: list[str] | None, prog: str, doc: str, block: str,
                   write: Callable[[Path, Path | None], list[Path]]) -> None:
    """The command line of a page built from ``results/`` that also fills a block of README.md
    (``suite.claims``, ``suite.timings``): ``write(results, readme or None)`` returns what it wrote;
    a torn evidence file is one line and exit 2."""
    from nalu.errors import ConfigError, exit_with

    p = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=Path, default=ROOT / "results")
    p.add_argument("--readme", type=Path, default=ROOT / "README.md", help=f"whose {block} block to fill ('none')")
    a = p.parse_args(argv)
    try:
        print("wrote " + ", ".join(map(str, write(a.results, None if str(a.readme) == "none" else a.readme))),
              file=sys.stderr)
    except ConfigError as e:
        exit_with(e)
