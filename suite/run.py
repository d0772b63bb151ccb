"""The one runner: ``python -m suite.run task=<task> model=<model> [overrides]`` (or ``nalu-run``).

One Hydra job trains one *cell* (a task, a model, and every other config value) for all of its
seeds at once, and writes ``<run dir>/metrics.json`` atomically. It knows nothing task-specific:
the ``tasks.Task`` its task config names (``task.entry``) does the work and returns a JSON-able
dict. The pieces, by idea: this entry and its command-line checks; the config, its resolvers and
refusals (``suite.config``); the runner (``suite.runner``) and its time projections
(``suite.projection``); the record, what a cell's ``metrics.json`` holds and when it is up to
date (``suite.record``), the committed evidence built from it (``suite.evidence``) and the state
a target carries between sittings (``suite.inflight``).

A sweep (``-m``) writes each cell to ``multirun/<name>/<overrides>/``; rerunning the same sweep
skips every cell whose ``metrics.json`` is complete and was made by the same config at its task's
numerics version, and redoes cells that are missing, half-written or out of date.
``dry_run=true`` only reports, per cell, whether it is up to date (one ``status:`` line each).
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from nalu.errors import ConfigError, exit_with
from suite import runner
from suite.config import CONFIG_DIR, cell_name
from suite.runner import discard_if_untouched, label, run_job, shown_overrides

REFUSED: list[str] = []  # cells of this process's sweep refused so far (Hydra's basic launcher)
SEEN: list[str] = []  # every cell of it asked so far


@hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    """One job. In a sweep run in this process (``hydra/launcher=basic``), a refused cell does not
    stop the sweep: the valid cells run, and ``main`` exits non-zero naming the refused ones (the
    fused launcher refuses the whole sweep before any cell runs)."""
    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    overrides = shown_overrides(hc.overrides.task, runner.SWEPT) if hc.mode == RunMode.MULTIRUN else ""
    SEEN.append(overrides)
    try:
        run_job(cfg, out_dir, overrides)
    except ConfigError as e:
        discard_if_untouched(out_dir)
        if hc.mode != RunMode.MULTIRUN:
            exit_with(e)
        name = label(cell_name(cfg), overrides)
        print(f"refused {name}: {e}", file=sys.stderr)
        REFUSED.append(f"{name} ({e})")


def check_group_choices(argv: list[str], config_dir: Path = CONFIG_DIR) -> None:
    """Refuse ``group=name`` overrides that name no config file, in one line listing the valid ones.

    (Hydra's own message for this spans several lines and hides the list in the middle.)
    """
    groups = {p.name for p in config_dir.iterdir() if p.is_dir() and p.name != "hydra"}
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        key = key.lstrip("+~")
        if key not in groups or value.startswith(runner.SWEEP_FUNCTIONS):
            continue
        valid = sorted(p.stem for p in (config_dir / key).glob("*.yaml"))
        for choice in value.split(","):
            if choice and choice not in valid:
                raise ConfigError(f"unknown {key} '{choice}'; valid: {', '.join(valid)}")


def dotted_keys(node, prefix: str = "") -> list[str]:
    """Every key of a config, dotted (``task.steps``, ``task.success.epsilon``, ...)."""
    out = []
    for key in node:
        path = f"{prefix}{key}"
        out.append(path)
        value = node._get_node(key)
        if OmegaConf.is_dict(value):
            out += dotted_keys(value, f"{path}.")
    return out


def check_keys(argv: list[str], config_dir: Path = CONFIG_DIR) -> None:
    """Refuse, in one line naming the closest valid keys, overrides of keys the composed config
    does not have (a typo such as ``task.stpes=10`` would otherwise run the default budget), and
    ``+key=value`` additions that nothing reads: everything a task reads is declared in its
    config. ``+model.<arg>`` and ``+optimizer.<arg>`` stay open: they become constructor
    arguments, which the constructor refuses if it does not take them."""
    groups = {p.name for p in config_dir.iterdir() if p.is_dir() and p.name != "hydra"}
    choices: dict[str, list[str]] = {}
    values: list[tuple[str, str]] = []
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        bare = key.lstrip("+~")
        if bare == "hydra" or bare.startswith(("hydra.", "hydra/")) or key.startswith("~"):
            continue
        if bare in groups:
            choices[key] = value.split(",") if not value.startswith(runner.SWEEP_FUNCTIONS) else []
        else:
            values.append((key, bare))
    if not values:
        return
    from hydra import compose, initialize_config_dir

    base = {k: v[0] for k, v in choices.items() if v}
    variants = [base] + [{**base, k: c} for k, v in choices.items() for c in v[1:]]
    known: set[str] = set()
    with initialize_config_dir(str(config_dir), version_base="1.3"):
        for variant in variants:
            known.update(dotted_keys(compose("config", [f"{k}={v}" for k, v in variant.items()])))
    for key, bare in values:
        if bare in known or (key.startswith("+") and bare.startswith(("model.", "optimizer."))):
            continue
        close = difflib.get_close_matches(bare, sorted(known), n=3, cutoff=0.6)
        hint = f"; closest: {', '.join(close)}" if close else ""
        if key.startswith("+"):
            raise ConfigError(f"'{bare}' is not a config key and nothing reads it{hint}")
        raise ConfigError(f"unknown key '{bare}'{hint}")


def main() -> None:
    try:
        check_group_choices(sys.argv[1:])
        check_keys(sys.argv[1:])
    except ConfigError as e:
        exit_with(e)
    try:
        _hydra_main()
        if REFUSED:
            others = "none ran" if len(REFUSED) == len(SEEN) else f"the other {len(SEEN) - len(REFUSED)} ran"
            exit_with(ConfigError(f"{len(REFUSED)} of {len(SEEN)} cells of the sweep refused, {others}: {'; '.join(REFUSED)}"))
    except KeyboardInterrupt:
        print("interrupted: finished cells are kept and a cell in training resumes from its last checkpoint; "
              "rerun the same command to go on", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
