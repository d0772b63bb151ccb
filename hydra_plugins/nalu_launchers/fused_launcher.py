"""``hydra/launcher=fused``: a sweep's cells that can share one batched model train as one.

Cells of one *group* have the same ``suite.runner.group_key``: one architecture, one input stream,
and every config value alike but those their task lets differ (an arithmetic cell's op and
seeds). A group trains in one process as one model whose members are cells x seeds; each cell
still gets its own folder, ``.hydra/``, ``history.csv`` and ``metrics.json``, and is skipped,
redone or reported by a dry run on its own (``suite.runner.run_cells``).

Groups run ``n_jobs`` at a time on this machine (joblib's loky processes), or one per array task
of a submitit executor (``submitit.cluster: slurm``, or ``local`` for a test), whose
preemption or timeout requeues the group: it resumes from its checkpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

log = logging.getLogger(__name__)

Job = tuple[int, DictConfig, str]  # (job number, its sweep config, its values of the swept keys)


def execute_group(hydra_context: HydraContext, jobs: list[Job], singleton_state: dict) -> list[JobReturn]:
    """Set up every cell of a group as Hydra would for a job (folder, ``.hydra/``), then train
    them together (``suite.runner.run_group_main``)."""
    from suite.runner import CellJob, run_group_main

    setup_globals()
    Singleton.set_state(singleton_state)
    cells, returns = [], []
    for idx, sweep_config, shown in jobs:
        with open_dict(sweep_config):
            sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
            sweep_config.hydra.job.num = idx
        HydraConfig.instance().set_config(sweep_config)

        def collect(cfg: DictConfig, shown: str = shown) -> None:
            cells.append(CellJob(cfg, Path(HydraConfig.get().runtime.output_dir), shown))

        returns.append(run_job(hydra_context=hydra_context, task_function=collect, config=sweep_config,
                               job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir"))
    run_group_main(cells)
    return returns


class GroupCall:
    """``execute_group`` as a submitit callable: requeued on preemption or timeout (the group
    then resumes from its checkpoint)."""

    def __init__(self, hydra_context: HydraContext):
        self.hydra_context = hydra_context

    def __call__(self, jobs: list[Job], singleton_state: dict) -> list[JobReturn]:
        return execute_group(self.hydra_context, jobs, singleton_state)

    def checkpoint(self, *args: Any) -> Any:
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args)


class FusedLauncher(Launcher):
    def __init__(self, n_jobs: int = 1, submitit: dict | None = None) -> None:
        self.n_jobs = int(n_jobs)
        self.submitit = OmegaConf.to_container(submitit, resolve=True) if OmegaConf.is_config(submitit) else submitit
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def groups(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[list[Job]]:
        """The jobs, grouped by ``group_key`` in order of first appearance, once every cell has
        passed ``suite.config.validate`` (a bad value refuses the sweep before any cell runs). Each
        job carries its values of the keys the sweep varies, for messages."""
        from nalu.errors import ConfigError, exit_with
        from suite import runner
        from suite.config import validate

        by_key: dict[str, list[Job]] = {}
        cfgs = []
        for idx, overrides in enumerate(job_overrides, initial_job_idx):
            sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            task_cfg = OmegaConf.masked_copy(sweep_config, [k for k in sweep_config if k != "hydra"])
            cfgs.append(task_cfg)
            shown = runner.shown_overrides(overrides, runner.SWEPT)
            by_key.setdefault(runner.group_key(task_cfg), []).append((idx, sweep_config, shown))
        try:
            validate(cfgs)
        except ConfigError as e:
            exit_with(e)
        return list(by_key.values())

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        groups = self.groups(job_overrides, initial_job_idx)
        log.info(f"Fused launcher: {len(job_overrides)} cells in {len(groups)} groups, sweep output dir: {sweep_dir}")
        for group in groups:
            log.info("\t" + " | ".join(" ".join(filter_overrides(c.hydra.overrides.task)) for _, c, _ in group))
        state = Singleton.get_state()
        if self.submitit:
            results = self.launch_submitit(groups, state, sweep_dir)
        elif self.n_jobs > 1 and len(groups) > 1:
            from joblib import Parallel, delayed

            results = Parallel(n_jobs=self.n_jobs, backend="loky")(
                delayed(execute_group)(self.hydra_context, g, state) for g in groups)
        else:
            results = [execute_group(self.hydra_context, g, state) for g in groups]
        by_idx = {idx: ret for group, rets in zip(groups, results, strict=True)
                  for (idx, _, _), ret in zip(group, rets, strict=True)}
        return [by_idx[idx] for idx in sorted(by_idx)]

    def launch_submitit(self, groups: list[list[Job]], state: dict, sweep_dir: Path) -> list[list[JobReturn]]:
        import submitit

        settings = dict(self.submitit)
        executor = submitit.AutoExecutor(folder=settings.pop("folder", str(sweep_dir / ".submitit/%j")),
                                         cluster=settings.pop("cluster", None))
        executor.update_parameters(**settings.pop("parameters", {}))
        jobs = executor.map_array(GroupCall(self.hydra_context), groups, [state] * len(groups))
        return [j.results()[0] for j in jobs]
