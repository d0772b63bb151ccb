"""``hydra/launcher=fused``: a sweep's cells that can share one batched model train as one.

Cells of one *group* have the same ``suite.runner.group_key``: one architecture, one input stream,
and every config value alike but those their task lets differ (an arithmetic cell's op and
seeds). A group trains in one process as one model whose members are cells x seeds; each cell
still gets its own folder, ``.hydra/``, ``history.csv`` and ``metrics.json``, and is skipped,
redone or reported by a dry run on its own (``suite.runner.run_cells``).

Groups run ``n_jobs`` at a time on this machine (joblib's loky processes), or one per array task
of a submitit executor (``cluster: slurm``, or ``local`` for a test; ``configs/hydra/launcher/
fused_slurm.yaml`` holds the plain keys a cluster user sets). On a cluster the submitting machine
decides what has work: a dry run, and groups whose cells are all up to date, are handled there and
never submitted. The console names the array job, where its logs are, and which task trains which
group, then one line per group as it ends. A preempted or timed-out group (SLURM's SIGUSR2) saves
a checkpoint at its next step and is requeued by submitit; it resumes from there. ``scancel`` (SIGTERM)
saves the same way and stops.
"""

from __future__ import annotations

import copy
import logging
import os
import re
import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

log = logging.getLogger(__name__)

Job = tuple[int, DictConfig, str]  # (job number, its sweep config, its values of the swept keys)


def execute_group(hydra_context: HydraContext, jobs: list[Job], singleton_state: dict,
                  busy: list[str] | None = None) -> list[JobReturn]:
    """Set up every cell of a group as Hydra would for a job (folder, ``.hydra/``), then train
    them together (``suite.runner.run_group_main``). Cells another process is making are left to
    it: named in ``busy`` where given (the sweep goes on and names them at its end), else the
    runner's one-line error (an array task, which the submitting machine reports)."""
    from nalu.errors import exit_with
    from suite.runner import CellJob, CellsBusy, run_group_main

    setup_globals()
    Singleton.set_state(singleton_state)
    cells, returns = [], []
    for idx, sweep_config, shown in jobs:
        # Hydra leaves ``hydra`` read-only once a job ran: a requeued group (submitit pickles these
        # configs after a first run) sets the same values again
        with read_write(sweep_config.hydra), open_dict(sweep_config.hydra):
            sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
            sweep_config.hydra.job.num = idx
        HydraConfig.instance().set_config(sweep_config)

        def collect(cfg: DictConfig, shown: str = shown) -> None:
            cells.append(CellJob(cfg, Path(HydraConfig.get().runtime.output_dir), shown))

        returns.append(run_job(hydra_context=hydra_context, task_function=collect, config=sweep_config,
                               job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir"))
    try:
        run_group_main(cells)
    except CellsBusy as e:
        if busy is None:
            exit_with(e)
        busy.extend(e.names)
    return returns


def cells_of(jobs: list[Job]) -> list[tuple[DictConfig, Path]]:
    """Each cell's task config and folder, as ``run_job`` would make them, without writing
    anything (the submitting machine asks these whether a group has work)."""
    out = []
    for idx, sweep_config, _ in jobs:
        config = copy.deepcopy(sweep_config)  # a copy: Hydra locks what it is given
        with read_write(config.hydra), open_dict(config.hydra):
            config.hydra.job.id, config.hydra.job.num = f"{config.hydra.job.name}_{idx}", idx
        HydraConfig.instance().set_config(config)
        folder = Path(str(OmegaConf.select(config, "hydra.sweep.dir"))) / str(OmegaConf.select(config, "hydra.sweep.subdir"))
        task_cfg = OmegaConf.masked_copy(config, [k for k in config if k != "hydra"])
        out.append((task_cfg, folder))
    return out


def describe(jobs: list[Job], cells: list[tuple[DictConfig, Path]]) -> str:
    """A group's cells (``cells_of(jobs)``) for messages: ``static/add/nalu, static/mul/nalu and 4 more``."""
    from suite import runner
    from suite.config import cell_name

    names = [runner.label(cell_name(cfg), shown) for (_, _, shown), (cfg, _) in zip(jobs, cells, strict=True)]
    return ", ".join(names) if len(names) <= 3 else f"{', '.join(names[:2])} and {len(names) - 2} more"


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
    """``n_jobs`` groups at a time here, or (``cluster``: ``slurm``, ``local``) one group per array
    task of a submitit executor with the plain settings below; ``parameters`` passes any other
    submitit parameter as is (``slurm_gres``, ``slurm_constraint``)."""

    def __init__(self, n_jobs: int = 1, cluster: str | None = None, folder: str | None = None,
                 partition: str | None = None, account: str | None = None, qos: str | None = None,
                 timeout_min: int = 180, mem_gb: float = 4, cpus_per_task: int | None = None,
                 name: str | None = None, array_parallelism: int = 64, setup: list | None = None,
                 poll_s: float = 15.0, parameters: dict | None = None) -> None:
        self.n_jobs = int(n_jobs)
        self.cluster, self.folder, self.poll_s = cluster, folder, float(poll_s)
        self.settings = {"partition": partition, "account": account, "qos": qos, "timeout_min": timeout_min,
                         "mem_gb": mem_gb, "cpus_per_task": cpus_per_task, "name": name,
                         "array_parallelism": array_parallelism, "setup": setup}
        self.parameters = OmegaConf.to_container(parameters, resolve=True) if OmegaConf.is_config(parameters) else dict(parameters or {})
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def groups(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list[list[Job]]:
        """The jobs, grouped by ``group_key`` in order of first appearance and cut into groups of at
        most ``group_cells`` cells where the config sets it, once every cell has passed
        ``suite.config.validate`` (a bad value refuses the sweep before any cell runs). Each job
        carries its values of the keys the sweep varies, for messages."""
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
            runner.SWEEP_REFUSED = True  # the sweeper puts the sweep folder back as it was
            exit_with(e)
        cap = (cfgs[0].get("group_cells") if cfgs else None) or len(job_overrides)
        return [group[i:i + cap] for group in by_key.values() for i in range(0, len(group), cap)]

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
        busy: list[str] = []  # cells another process was making, left to it
        if self.cluster:
            results = self.launch_submitit(groups, state, sweep_dir)
        elif self.n_jobs > 1 and len(groups) > 1:
            from joblib import Parallel, delayed

            # one group per free worker, none once a stop signal came (pre_dispatch: the generator
            # is read as workers free up); a stopped group returns GroupStopped, so the others are
            # waited for, each saving its checkpoint, before the sweep exits with the signal's status
            with terminating_workers() as stopping:
                results = Parallel(n_jobs=self.n_jobs, backend="loky", pre_dispatch="n_jobs")(
                    delayed(stoppable_group)(self.hydra_context, g, state) for g in groups if not stopping)
            stops = [r.status for r in results if isinstance(r, GroupStopped)]
            if stops or len(results) < len(groups):  # stopped, or stopped before every group started
                raise SystemExit(stops[0] if stops else 128 + stopping[0])
            busy = [name for r in results for name in r.busy]
            results = [r.returns for r in results]
        else:
            results = [execute_group(self.hydra_context, g, state, busy) for g in groups]
        by_idx = {idx: ret for group, rets in zip(groups, results, strict=True)
                  for (idx, _, _), ret in zip(group, rets, strict=True)}
        if busy:
            from nalu.errors import ConfigError, exit_with
            from suite.config import cells_text

            exit_with(ConfigError(f"left to another process that was making them: {cells_text(busy)}; the sweep's "
                                  "other cells ran; run this command again once it ends"))
        return [by_idx[idx] for idx in sorted(by_idx)]

    def launch_submitit(self, groups: list[list[Job]], state: dict, sweep_dir: Path) -> list[list[JobReturn]]:
        """Submit the groups that have work as one array job, wait for it, and say what happened;
        a dry run and groups whose cells are all up to date run here (they only print)."""
        from suite import runner

        results: list[list[JobReturn] | None] = [None] * len(groups)
        cells = [cells_of(g) for g in groups]
        todo = [i for i, cs in enumerate(cells) if any(not cfg.get("dry_run") and runner.why_run(cfg, d) for cfg, d in cs)]
        for i in sorted(set(range(len(groups))) - set(todo)):
            results[i] = execute_group(self.hydra_context, groups[i], state)
        if not todo:
            log.info("Fused launcher: nothing to submit (every cell is up to date, or this is a dry run)")
            return results
        threads = max(int(cfg.get("threads", 1)) for i in todo for cfg, _ in cells[i])
        executor = self.executor(sweep_dir, threads)
        names = {i: describe(groups[i], cells[i]) for i in todo}
        jobs = executor.map_array(GroupCall(self.hydra_context), [groups[i] for i in todo], [state] * len(todo))
        array, folder = jobs[0].job_id.split("_")[0], jobs[0].paths.folder.parent
        logs = f"{folder}/{array}_*/" if "_" in jobs[0].job_id else f"{folder}/"  # an array's tasks, or local jobs
        log.info(f"Fused launcher: submitted array job {array}: {len(todo)} array tasks, one per group with work"
                 f" ({len(groups) - len(todo)} up to date); logs in {logs}")
        for i, job in zip(todo, jobs, strict=True):
            log.info(f"\ttask {job.job_id}: {names[i]}")
        failed = self.wait(dict(zip(todo, jobs, strict=True)), names, results)
        if failed:
            log.error(f"Fused launcher: {len(failed)} of {len(todo)} groups failed ({', '.join(failed)}); "
                      "their cells resume from their checkpoints when this command runs again")
            raise SystemExit(2)
        return results

    def executor(self, sweep_dir: Path, threads: int) -> Any:
        """A submitit executor with the plain settings; the CPUs asked per task default to the
        groups' ``threads`` (a group trains on that many), the job name to the sweep's folder."""
        import submitit

        executor = submitit.AutoExecutor(folder=self.folder or str(sweep_dir / ".submitit/%j"), cluster=self.cluster)
        executor.update_parameters(**self.submitit_parameters(threads, sweep_dir.name))
        return executor

    def submitit_parameters(self, threads: int, sweep: str) -> dict:
        """The plain settings as submitit's parameters; those left null are the cluster's defaults."""
        s = self.settings
        given = {"timeout_min": s["timeout_min"], "mem_gb": s["mem_gb"], "cpus_per_task": s["cpus_per_task"] or threads,
                 "name": s["name"] or f"nalu-{sweep}", "slurm_array_parallelism": s["array_parallelism"],
                 "slurm_setup": list(s["setup"] or []), "slurm_partition": s["partition"],
                 "slurm_account": s["account"], "slurm_qos": s["qos"], **self.parameters}
        return {k: v for k, v in given.items() if v is not None}

    def wait(self, jobs: dict[int, Any], names: dict[int, str] | list[str], results: list) -> list[str]:
        """Wait for the array, one line per group as it ends; the groups that failed. Interrupted
        (Ctrl-C, SIGTERM), it says that the array runs on and how to stop it."""
        import signal

        import submitit

        array = next(iter(jobs.values())).job_id.split("_")[0]
        log.info(f"Fused launcher: waiting for {len(jobs)} array tasks (Ctrl-C stops waiting, not the job)")
        task_of = {job.job_id: i for i, job in jobs.items()}
        failed: list[str] = []
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            for n, job in enumerate(submitit.helpers.as_completed(list(jobs.values()), poll_frequency=self.poll_s), 1):
                i = task_of[job.job_id]
                try:
                    results[i] = job.results()[0]
                    log.info(f"Fused launcher: [{n}/{len(jobs)}] task {job.job_id} done: {names[i]}")
                except Exception as e:  # noqa: BLE001 - any failure of the task is reported in one line
                    failed.append(job.job_id)
                    log.error(f"Fused launcher: [{n}/{len(jobs)}] task {job.job_id} failed: {names[i]}: "
                              f"{last_line(job.paths.stderr, e)} (log: {job.paths.stderr})")
        except KeyboardInterrupt:
            log.error(f"Fused launcher: stopped waiting; array job {array} goes on on the cluster "
                      f"(`scancel {array}` stops it; its groups then save a checkpoint and resume when this command runs again)")
            raise SystemExit(130) from None
        finally:
            signal.signal(signal.SIGTERM, previous)
        return failed


ERROR_LINE = re.compile(r"^(error: |[\w.]*(Error|Exception|Interrupt)\b)")


def last_line(path: Path, error: Exception) -> str:
    """What a failed task says went wrong in one line: the last error line of its log (the
    runner's ``error: ...``, or a traceback's exception line), else the first line of the error
    submitit reports."""
    try:
        lines = [ln.strip() for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        lines = []
    errors = [ln for ln in lines if ERROR_LINE.match(ln)]
    return errors[-1] if errors else (str(error).strip().splitlines() or [type(error).__name__])[0]


class GroupRan(NamedTuple):
    """What a group returns from a worker process: its jobs' returns, and the cells it left to
    another process that was making them."""

    returns: list[JobReturn]
    busy: list[str]


class GroupStopped(NamedTuple):
    """What a group stopped by a signal returns from a worker process: the status to exit with."""

    status: int


def stoppable_group(hydra_context: HydraContext, jobs: list[Job],
                    singleton_state: dict) -> GroupRan | GroupStopped:
    """``execute_group`` in a worker process, a stop by SIGTERM or SIGUSR2 (its checkpoint saved,
    ``suite.runner.stopped``) returned as ``GroupStopped`` rather than raised: raised, it would end
    the pool at once, killing the other workers before they have saved theirs."""
    try:
        busy: list[str] = []
        return GroupRan(execute_group(hydra_context, jobs, singleton_state, busy), busy)
    except SystemExit as e:
        if e.code in (128 + signal.SIGTERM, 128 + signal.SIGUSR2):
            return GroupStopped(e.code)
        raise


@contextmanager
def terminating_workers() -> Iterator[list[int]]:
    """While groups train in joblib's loky processes, SIGTERM sent to this process alone (``kill``,
    a supervisor) is passed on to them: each saves a checkpoint at its step and stops
    (``suite.runner.stop_signals``; ``stoppable_group``), no further group starts, and the sweep
    exits with status 143 once every worker has saved: none trains on, orphaned, holding its cells.
    Yields the list that holds the signal once one came. (Ctrl-C reaches them already: the terminal
    signals the whole process group.)"""
    from joblib.externals.loky import reusable_executor

    stopping: list[int] = []  # the signal once one came: no group starts after it

    def forward(signum: int, frame: object) -> None:
        stopping.append(signum)
        executor = reusable_executor._executor
        for pid in list(executor._processes) if executor is not None else []:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    try:
        previous = signal.signal(signal.SIGTERM, forward)
    except ValueError:  # not the main thread
        yield stopping
        return
    try:
        yield stopping
    finally:
        signal.signal(signal.SIGTERM, previous)
