"""``hydra/sweeper=keeping`` (the suite's default): Hydra's basic sweeper, except that it tells the
runner which keys the sweep varies (``suite.runner.SWEPT``: they name a cell in messages), and
that a dry run (``dry_run=true``), and a sweep refused before any cell ran, leave the sweep's
``multirun.yaml`` and folders as they found them.

Hydra's sweeper writes ``<sweep dir>/multirun.yaml`` (the sweep's config and overrides) before any
job, so a dry run that touches nothing else would still replace the record of the command that
made the cells. Here the dry run's own record exists only while it runs: the one it found is set
aside under another name and put back, the same file with its modification time, when the sweep ends;
the folders Hydra made for the sweep and its jobs, and the empty job logs in them, are
removed again. A dry run that was
killed leaves the set-aside file, which the next sweep puts back first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

RECORD = "multirun.yaml"
SET_ASIDE = ".multirun.yaml.kept"


class KeepingSweeper(BasicSweeper):
    def sweep(self, arguments: list[str]) -> Any:
        from suite import runner

        runner.SWEPT.clear()
        runner.SWEPT.update(runner.swept_keys(arguments) | set(self.config.hydra.sweeper.get("params") or {}))
        sweep_dir = Path(self.config.hydra.sweep.dir)
        record, kept = sweep_dir / RECORD, sweep_dir / SET_ASIDE
        if kept.exists():  # a killed dry run's: the record it set aside is the true one
            os.replace(kept, record)
        found, before = record.exists(), existing(sweep_dir)
        if not self.config.get("dry_run"):
            saved = (record.read_bytes(), record.stat().st_mtime_ns) if found else None
            runner.SWEEP_REFUSED = False
            try:
                return super().sweep(arguments)
            except SystemExit:
                if runner.SWEEP_REFUSED:  # refused before any cell ran: the sweep as it was found
                    put_back(record, saved)
                    remove_what_it_made(sweep_dir, before)
                raise
        if found:
            os.replace(record, kept)
        try:
            return super().sweep(arguments)
        finally:
            if found:
                os.replace(kept, record)
            else:
                record.unlink(missing_ok=True)
            remove_what_it_made(sweep_dir, before)


def put_back(record: Path, saved: tuple[bytes, int] | None) -> None:
    """The record as it was (its bytes and modification time), or none where there was none."""
    if saved is None:
        record.unlink(missing_ok=True)
        return
    record.write_bytes(saved[0])
    os.utime(record, ns=(saved[1], saved[1]))


def existing(sweep_dir: Path) -> set[Path]:
    """Every path that exists now in ``sweep_dir``'s tree, and its ancestors."""
    sweep_dir = sweep_dir.resolve()
    inside = set(sweep_dir.rglob("*")) if sweep_dir.is_dir() else set()
    return inside | {p for p in [sweep_dir, *sweep_dir.parents] if p.exists()}


def remove_what_it_made(sweep_dir: Path, before: set[Path]) -> None:
    """Remove what the dry run left that was not there before: the folders Hydra makes for the
    sweep and each job, and the empty ``run.log`` its job logging opens in each, deepest first.
    A file with content, or a folder that holds one, stays."""
    sweep_dir = sweep_dir.resolve()
    made = [p for p in (sweep_dir.rglob("*") if sweep_dir.is_dir() else []) if p not in before]
    made += [p for p in [sweep_dir, *sweep_dir.parents] if p.exists() and p not in before]
    for path in sorted(made, key=lambda p: len(p.parts), reverse=True):
        if path.is_file() and path.stat().st_size == 0:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
