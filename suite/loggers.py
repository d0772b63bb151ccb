"""Where training curves go: always a CSV history in the run directory, optionally wandb.

``history.csv`` is in long format (``step, seed, metric, value``), one row per seed and metric at
every evaluation; ``python -m suite.tables curves <run dir>`` plots it.

With ``logger=wandb`` every seed of a cell becomes one wandb run (named ``<cell>/seed<k>``,
grouped by the experiment), logged in offline mode unless ``logger.mode`` says otherwise, so no
account and no network are needed; the ``wandb sync`` command is printed at the end.
"""

from __future__ import annotations

import csv
import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

from torch import Tensor

from nalu.errors import ConfigError, check_choice


def reachable_or_refuse(timeout_s: float = 5.0) -> None:
    """For ``logger.mode=online``: refuse in one line, within ``timeout_s``, when wandb's server
    (``WANDB_BASE_URL``, by default https://api.wandb.ai) cannot be reached, instead of wandb's
    minute-long wait and its traceback after the run folder is made."""
    url = urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai")
    host, port = url.hostname or "api.wandb.ai", url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as e:
        raise ConfigError(f"logger.mode=online but {host}:{port} cannot be reached ({e.strerror or e}); "
                          "log offline (logger.mode=offline, the default) and upload later with `wandb sync`") from None


class RunLogger:
    def __init__(
        self,
        out_dir: Path,
        name: str,
        seeds: list[int],
        group: str,
        wandb_cfg: dict | None = None,
        config: dict | None = None,
        resume: bool = False,
    ):
        """``resume``: the run picks up from a checkpoint, so the history it logged so far is
        kept (``rewind`` then cuts it back to the checkpoint's step)."""
        self.name, self.seeds, self.out_dir = name, seeds, out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        self._path = out_dir / "history.csv"
        if resume and self._path.exists():
            self._open("a")
        else:
            self._open("w")
            self._csv.writerow(["step", "seed", "metric", "value"])
        self._wandb_runs: list = []
        if wandb_cfg:
            self._open_wandb(wandb_cfg, group, config or {})

    def _open_wandb(self, cfg: dict, group: str, config: dict) -> None:
        import wandb

        mode = check_choice("logger mode", cfg.get("mode") or "offline", ("offline", "online", "disabled"))
        if mode == "online":
            reachable_or_refuse()
        os.environ.setdefault("WANDB_SILENT", "true")
        for seed in self.seeds:
            try:
                self._wandb_runs.append(wandb.init(
                    project=cfg.get("project", "nalu-suite"), entity=cfg.get("entity"), group=group,
                    job_type=self.name, name=f"{self.name}/seed{seed}", mode=mode,
                    dir=str(self.out_dir), config={**config, "seed": seed}, reinit="create_new",
                ))
            except (wandb.errors.Error, TimeoutError, OSError) as e:  # no API key, no answer, ...
                first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                raise ConfigError(f"wandb could not start its run (logger.mode={mode}): {first}; log offline (logger.mode=offline, "
                                  "the default) and upload later with `wandb sync`") from None

    def _open(self, mode: str) -> None:
        self._file = open(self._path, mode, newline="")
        self._csv = csv.writer(self._file)

    def rewind(self, step: int) -> None:
        """Drop the rows logged after ``step`` (a run resumed from its checkpoint at ``step``
        logs them again)."""
        self._file.close()
        with open(self._path, newline="") as f:
            rows = list(csv.reader(f))
        kept = [rows[0], *(r for r in rows[1:] if r and r[0].isdigit() and int(r[0]) <= step)]
        with open(self._path, "w", newline="") as f:
            csv.writer(f).writerows(kept)
        self._open("a")

    def metrics(self, step: int, metrics: dict[str, Tensor]) -> None:
        for i, seed in enumerate(self.seeds):
            row = {k: float(v[i]) for k, v in metrics.items()}
            for k, value in row.items():
                self._csv.writerow([step, seed, k, repr(value)])
            if self._wandb_runs:
                self._wandb_runs[i].log(row, step=step)
        self._file.flush()

    def close(self) -> None:
        self._file.close()
        if not self._wandb_runs:
            return
        offline = [r for r in self._wandb_runs if r.settings.mode == "offline"]
        for run in self._wandb_runs:
            run.finish()
        if offline:
            print(f"wandb: {len(offline)} offline runs in {self.out_dir / 'wandb'}; to upload:\n"
                  f"  wandb sync {self.out_dir / 'wandb'}/offline-run-*", file=sys.stderr)
        self._wandb_runs = []
