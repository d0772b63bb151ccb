"""The experiments: one task per paper table or figure, each a ``Task`` that its config names
(``entry: tasks.arithmetic.identity:TASK`` in ``configs/task/<task>.yaml``); the runner (``suite.run``) knows
nothing else of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from omegaconf import DictConfig


class Log(Protocol):
    """What a task reports to (``suite.loggers.RunLogger``, or a fused group's ``GroupLog``): each
    evaluation's per-seed metrics; ``checkpoint`` (a ``nalu.train.Checkpoint`` or None) and
    ``name`` (for the progress bar) are read by the training loop."""

    name: str
    checkpoint: Any

    def metrics(self, step: int, metrics: dict) -> None: ...


@dataclass(frozen=True)
class Task:
    """An experiment as the runner sees it.

    - ``run(cfg, log) -> dict``: train every seed of one cell (``cfg`` is the whole config, its
      seeds resolved to a list) and return what its ``metrics.json`` records beside the runner's
      own fields: JSON-able, with ``members``, one ``tasks.metrics.Member`` per seed (the metric
      names in it are defined in ``tasks.metrics``, which the table builders read them by);
    - ``check(cfg)``: refusals known from the config alone (a ``nalu.errors.ConfigError``), asked
      before any cell of a sweep runs or writes a file;
    - ``run_group(cfgs, log) -> [dict]``: several cells trained as one batched model (the fused
      launcher), which may differ only in the config keys of ``fuses``;
    - ``numerics``: the version of the numbers the task computes. A finished cell stays up to
      date while its config and this version are unchanged (``suite.record``): bump it by hand
      with any change that alters a cell's numbers (data, initialisation, training, scoring);
      the task's golden tiny run (``tests/test_golden.py``) fails until it is bumped.
    """

    run: Callable[[DictConfig, Log], dict]
    check: Callable[[DictConfig], None] | None = None
    run_group: Callable[[list[DictConfig], Log], list[dict]] | None = None
    fuses: tuple[str, ...] = ()
    numerics: int = 1
