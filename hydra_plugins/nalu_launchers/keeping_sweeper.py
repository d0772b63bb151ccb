"""``hydra/sweeper=keeping`` (the suite's default): Hydra's basic sweeper, except that a dry run
(``dry_run=true``) leaves the sweep's ``multirun.yaml`` as it found it.

Hydra's sweeper writes ``<sweep dir>/multirun.yaml`` (the sweep's config and overrides) before any
job, so a dry run that touches nothing else would still replace the record of the command that
made the cells, committed ones in ``results/cells/`` included. Here the dry run's own record
exists only while it runs (``suite.run.job_overrides`` reads it): the one it found is set aside
under another name and put back, the same file with its modification time, when the sweep ends.
A dry run that was killed leaves the set-aside file, which the next sweep puts back first.
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
        sweep_dir = Path(self.config.hydra.sweep.dir)
        record, kept = sweep_dir / RECORD, sweep_dir / SET_ASIDE
        if kept.exists():  # a killed dry run's: the record it set aside is the true one
            os.replace(kept, record)
        if not self.config.get("dry_run"):
            return super().sweep(arguments)
        found = record.exists()
        if found:
            os.replace(record, kept)
        try:
            return super().sweep(arguments)
        finally:
            if found:
                os.replace(kept, record)
            else:
                record.unlink(missing_ok=True)

