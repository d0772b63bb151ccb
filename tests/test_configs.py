"""Every task x model in configs/ composes, and builds a model that fits the task or says why not."""

from __future__ import annotations

from pathlib import Path

import re

import pytest
import torch
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf, open_dict

from nalu.ensemble import init_members
from nalu.errors import ConfigError
from suite.config import CONFIG_DIR, cell_name, resolve_seeds, task_of, validate
from suite.record import config_hash
from tasks.cell import build_model, model_factory

from .conftest import ROOT, compose, make

TASKS = sorted(p.stem for p in (CONFIG_DIR / "task").glob("*.yaml"))
MODELS = sorted(p.stem for p in (CONFIG_DIR / "model").glob("*.yaml"))
EXPERIMENTS = sorted(p.stem for p in (CONFIG_DIR / "experiment").glob("*.yaml"))
MAKEFILE = (Path(CONFIG_DIR).parent / "Makefile").read_text()
SEQUENCE_ONLY = {m for m in MODELS if m.startswith(("lstm", "gru", "ugrnn", "dnc"))}
# (input features, recurrent) of the model each task builds; MNIST tasks build a recurrent core
# over 10 encoder features, translation and program_eval one over their token embeddings
INPUTS = {"identity": (1, False), "static_arithmetic": (100, False), "recurrent_arithmetic": (10, True),
          "mnist_counting": (10, True), "mnist_addition": (10, True), "translation": (256, True),
          "program_eval": (16, True)}
MODEL_TASKS = sorted(INPUTS)  # the others build their own model: uses_model: false


@pytest.mark.parametrize("task", MODEL_TASKS)
@pytest.mark.parametrize("model", MODELS)
def test_every_task_model_pair_composes_and_builds(task, model):
    given = {"unit": [f"model.unit={ROOT / 'examples/units/clipped_adder.py'}:ClippedAdder"],  # what it needs
             "unit_told": [f"model.unit={ROOT / 'examples/units/dmu.py'}:DMU"]}
    cfg = compose([f"task={task}", f"model={model}", *given.get(model, [])])
    OmegaConf.resolve(cfg)  # every interpolation resolves
    in_features, recurrent = INPUTS[task]
    if model == "unit_told":  # told a function only where the task has one, and the DMU's fixed selector reads 2 inputs
        with pytest.raises(ConfigError, match="reads 2 inputs" if "op" in cfg.task else "this task has none"):
            build_model(model_factory(cfg.model), in_features, 1, 2, recurrent)
        return
    factory = model_factory(cfg.model)
    if model in SEQUENCE_ONLY and not recurrent:
        with pytest.raises(ConfigError, match="sequence model"):
            build_model(factory, in_features, 1, 2, recurrent)
        return
    net = build_model(factory, in_features, 1, 2, recurrent)
    init_members(net, [0, 1])
    x = torch.rand(1, 5, 3, in_features) if recurrent else torch.rand(1, 5, in_features)
    assert net(x).shape == (2, 5, 1)


@pytest.mark.parametrize("task", TASKS)
def test_a_cell_is_named_by_its_model_only_where_the_task_uses_one(task):
    """Tasks that build their own model (the final-layer ablations, the A3C agent) keep one folder
    per task cell whatever ``model=`` says; the others one per model."""
    cfg = compose([f"task={task}", "model=nac"])
    assert callable(task_of(cfg).run)  # its entry names a tasks.Task
    assert cell_name(cfg) == (f"{cfg.task.cell_name}/nac" if task in MODEL_TASKS else cfg.task.cell_name)


def sweep(experiment: str) -> tuple[list[list[str]], DictConfig]:
    """The cells an experiment sweeps (each its list of overrides, as Hydra's basic sweeper, which
    the suite's keeping sweeper is, expands ``hydra.sweeper.params``) and its config."""
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = hydra_compose("config", [f"+experiment={experiment}"], return_hydra_config=True)
    params = cfg.hydra.sweeper.get("params") or {}
    overrides = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in params.items()])
    return [cell for batch in BasicSweeper.split_arguments(overrides, None) for cell in batch], cfg


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiments_sweep_expands_into_cells_the_runner_accepts(experiment):
    """Its first, middle and last cells pass every refusal the runner and the task make from the
    config alone (``suite.config.validate``), so no sweep stops on a value no run can use."""
    cells, cfg = sweep(experiment)
    assert cfg.name in experiment or cfg.name == experiment.replace("_stacks", "")  # stacks share table2's sweep
    sample = [cells[k] for k in sorted({0, len(cells) // 2, len(cells) - 1})]
    configs = [compose([f"+experiment={experiment}", *cell]) for cell in sample]
    validate(configs)
    assert len({cell_name(c) + str(cell) for c, cell in zip(configs, sample, strict=True)}) == len(sample)


# what `make help` (and the README) says a target sweeps, held to its experiments' cells and seeds
SWEEPS = {"table1": (["table1_static", "table1_recurrent"], "48 cells x 10 seeds", 48, 10),
          "table2": (["table2", "table2_stacks"], "12 cells x 3 seeds", 12, 3),
          "table3": (["table3"], "3 models x 4 grid points x 10 seeds", 3 * 4, 10),
          "table5": (["table5", "table5_units"], "17 models x 100 seeds", 17, 100),
          "figure4": (["figure4"], "7 models x 2 tasks x 3 seeds", 7 * 2, 3),
          "units": (["units"], "54 cells x 10 seeds", 54, 10),
          "protocol-search": (["protocol_search"], "30 protocols x None, ReLU6, NAC x 6 functions x 3 seeds",
                              30 * 3 * 6, 3)}


@pytest.mark.parametrize("target", SWEEPS)
def test_make_help_says_how_many_cells_and_seeds_a_target_sweeps(target):
    experiments, said, cells, seeds = SWEEPS[target]
    help_line = next(line for line in MAKEFILE.splitlines() if line.startswith(f"reproduce-{target}:") and "## " in line)
    assert said in help_line, help_line
    sweeps = [sweep(e) for e in experiments]
    assert sum(len(c) for c, _ in sweeps) == cells
    assert {len(resolve_seeds(cfg.seeds)) for _, cfg in sweeps} == {seeds}


def test_config_hash_ignores_only_presentation_keys():
    base = compose([])
    assert config_hash(base) == config_hash(compose(["progress=false", "logger=wandb", "threads=2",
                                                     "flush_denormal=false"]))
    assert config_hash(base) != config_hash(compose(["optimizer.lr=0.1"]))
    assert config_hash(base) != config_hash(compose(["seeds=3"]))


def test_make_targets_name_existing_experiments():
    """Every experiment file is swept by a make target: by name, as the ``_paper`` variant that
    ``BUDGET=paper`` selects (``+experiment=<name>$(PAPER)``), or as a ``VARIANT=`` of a target."""
    makefile = MAKEFILE
    for experiment in EXPERIMENTS:
        base = experiment.removesuffix("_paper")
        parts = experiment.split("_")
        targets = ["_".join(parts[:k]) for k in range(1, len(parts) + 1)]  # a variant's name may hold "_" too
        assert (f"+experiment={experiment} " in makefile or f"+experiment={base}$(PAPER) " in makefile
                or f"+experiment={base}_paper " in makefile or f"+experiment={base}$(PAPER)$(V) " in makefile
                or any(f"+experiment={t}$(V) " in makefile or f"+experiment={t}$(PAPER)$(V) " in makefile
                       for t in targets)), experiment


def test_a_knob_added_later_keeps_finished_cells_at_its_neutral_value():
    """A key of suite.record.NEUTRAL at the value that computes as before hashes like a config made
    before the key existed (finished cells stay up to date); any other value is a new cell."""
    def without(cfg, *path):
        cfg = cfg.copy()
        with open_dict(cfg):
            node = cfg
            for key in path[:-1]:
                node = node[key]
            del node[path[-1]]
        return cfg

    base = compose(["task=gridworld_time"])
    assert base.replicate == 0 and base.task.env.late_reward == -1.0
    before = without(without(base, "replicate"), "task", "env", "late_reward")  # as cells made earlier
    assert config_hash(base) == config_hash(before)
    assert config_hash(compose(["task=gridworld_time", "replicate=1"])) != config_hash(before)
    assert config_hash(compose(["task=gridworld_time", "task.env.late_reward=0.0"])) != config_hash(before)
    for unit in ("npu", "realnpu", "inalu"):  # the opt-in compiled step
        cfg = compose(["task=static_arithmetic", f"model={unit}"])
        assert cfg.model.compilable is False and config_hash(cfg) == config_hash(without(cfg, "model", "compilable"))
        assert config_hash(compose(["task=static_arithmetic", f"model={unit}", "model.compilable=true"])) != config_hash(cfg)
    cfg = compose(["task=translation", "model=lstm_nalu"])  # the opt-in compiled forward of the autograd path
    assert cfg.compile_forward is False and config_hash(cfg) == config_hash(without(cfg, "compile_forward"))
    assert config_hash(compose(["task=translation", "model=lstm_nalu", "compile_forward=true"])) != config_hash(cfg)
    for model in ("dnc", "dnc_nalu"):  # the opt-in compiled DNC step
        cfg = compose(["task=program_eval", f"model={model}"])
        assert cfg.compile_cells is False and cfg.model.compile_step is False
        assert config_hash(cfg) == config_hash(without(without(cfg, "compile_cells"), "model", "compile_step"))
        compiled = compose(["task=program_eval", f"model={model}", "compile_cells=true"])
        assert compiled.model.compile_step is True and config_hash(compiled) != config_hash(cfg)
    cfg = compose(["task=program_eval", "model=lstm"])  # the opt-in learning-rate schedule
    assert cfg.lr_schedule == "constant" and config_hash(cfg) == config_hash(without(cfg, "lr_schedule"))
    assert config_hash(compose(["task=program_eval", "model=lstm", "lr_schedule=cosine"])) != config_hash(cfg)


def test_an_unknown_variant_is_refused_in_one_line_listing_the_targets_own():
    p = make("-n", "reproduce-table2", "VARIANT=nonsense")
    assert p.returncode != 0 and not p.stdout
    (line,) = p.stderr.strip().splitlines()
    valid = line.split("its variants: ")[1].rstrip(". Stop").split()
    assert valid == ["last", "mnist_example", "nalu_grid", "select100"]  # Table 2's own, not its second sweep's name
    for variant in valid:  # each names a config the target runs
        assert list(CONFIG_DIR.glob(f"experiment/table2*_{variant}.yaml")), variant


@pytest.mark.parametrize("goal,variant,ok", [
    ("reproduce-table1", "recurrent", False),  # the protocol search's, not Table 1's
    ("reproduce-table4", "long", True), ("reproduce-units", "long", False),  # units_long is a second sweep
    ("reproduce-figure5", "late_zero_a3c", False), ("reproduce-units", "primer_div", False),
    ("reproduce-protocol-search", "recurrent", True)])
def test_a_variant_is_checked_against_its_own_targets_configs(goal, variant, ok):
    p = make("-n", goal, f"VARIANT={variant}")
    assert (p.returncode == 0) == ok, p.stderr
    if not ok:
        assert f"is not a variant of make {goal}" in p.stderr


@pytest.mark.parametrize("setting", ["JOBS=abc", "JOBS=0", "TEST_JOBS=-1"])
def test_make_refuses_a_job_count_that_is_not_a_positive_integer_in_one_line(setting):
    p = make("-n", "reproduce-table1", setting)
    (line,) = p.stderr.strip().splitlines()
    assert p.returncode != 0 and not p.stdout and f"must be a positive integer, got '{setting.split('=')[1]}'" in line


@pytest.mark.parametrize("told,model,name", [("", "unit", "dmu_primer"), ("TOLD=1", "unit_told", "dmu_told_primer")])
def test_make_benchmark_unit_told_runs_the_unit_told_its_function_into_files_of_their_own(told, model, name):
    p = make("-n", "benchmark-unit", "UNIT=examples.units.dmu:DMU", "PROTOCOL=primer", *([told] if told else []))
    runs = [line for line in p.stdout.splitlines() if "+experiment=benchmark_unit_primer" in line]
    assert p.returncode == 0 and len(runs) == 2, p.stderr  # a+b, a-b, a*b, then a/b
    assert all(f" model={model} " in line and f"name=benchmark_{name} " in line for line in runs)
    assert f"suite.tables scorecard results/benchmarks/{name}.jsonl" in p.stdout


@pytest.mark.parametrize("told,name", [("", "clippedadder_paper"), ("TOLD=1", "clippedadder_told_paper")])
def test_make_benchmark_unit_at_the_paper_budget_runs_5m_steps_beside_the_units_tables_paper_cells(told, name):
    p = make("-n", "benchmark-unit", "UNIT=examples.units.clipped_adder:ClippedAdder", "BUDGET=paper",
             *([told] if told else []))
    (run,) = [line for line in p.stdout.splitlines() if "suite.run" in line]
    assert p.returncode == 0 and " budget=paper " in run and f"name=benchmark_{name} " in run, p.stderr
    assert f"suite.tables scorecard results/benchmarks/{name}.jsonl" in p.stdout  # its references: test_byo_unit.py
    default = make("-n", "benchmark-unit", "UNIT=examples.units.clipped_adder:ClippedAdder").stdout
    assert "budget=paper" not in default and "suite.tables scorecard results/benchmarks/clippedadder.jsonl" in default
    for protocol in ("primer", "tasks"):
        refused = make("-n", "benchmark-unit", "UNIT=examples.units.clipped_adder:ClippedAdder", "BUDGET=paper",
                       f"PROTOCOL={protocol}")
        assert refused.returncode != 0 and not refused.stdout.strip()
        assert "BUDGET=paper is the units table's protocol only" in refused.stderr


def test_make_benchmark_unit_protocol_tasks_runs_each_papers_sweep_with_the_unit_in_its_place():
    p = make("-n", "benchmark-unit", "UNIT=examples.units.clipped_adder:ClippedAdder", "PROTOCOL=tasks")
    assert p.returncode == 0, p.stderr
    runs = [line for line in p.stdout.splitlines() if "suite.run" in line]
    places = {"table1_recurrent": "model=unit 'model.unit=", "table2_stacks": "model.state_init=random",
              "table3": "'+model.readout=", "figure4": "'+model.readout=", "table4": "'task.final_layer="}
    assert len(runs) == len(places)
    for run, (experiment, unit_there) in zip(runs, places.items(), strict=True):
        assert f"+experiment={experiment} " in run and unit_there in run
    assert "suite.tables scorecard results/benchmarks/clippedadder_tasks.jsonl" in p.stdout
    told = make("-n", "benchmark-unit", "UNIT=examples.units.dmu:DMU", "PROTOCOL=tasks", "TOLD=1")
    assert told.returncode != 0 and "PROTOCOL=tasks has tasks without one" in told.stderr


@pytest.mark.parametrize("goal,settings", [
    ("reproduce-table1", []), ("reproduce-table1", ["BUDGET=paper", "VARIANT=protocol1"]),
    ("reproduce-table2", ["VARIANT=nalu_grid"]), ("reproduce-table3", ["BUDGET=paper", "VARIANT=grid"]),
    ("reproduce-table4", ["VARIANT=long"]), ("reproduce-table5", []), ("reproduce-figure4", ["VARIANT=trained"]),
    ("reproduce-figure5", ["VARIANT=late_zero"]), ("reproduce-protocol-search", []), ("reproduce-units", []),
    ("reproduce-units", ["BUDGET=paper"]), ("reproduce-units", ["VARIANT=primer"])])
def test_a_target_begins_and_ends_its_carried_state_under_its_evidence_name_and_sweeps(goal, settings):
    """make carry packs what a target's first step recorded: the same name and sweep folders that
    its evidence is written from, and every sweep it runs among them; the last step drops it."""
    p = make("-n", goal, *settings)
    assert p.returncode == 0, p.stderr
    (begin,) = re.findall(r"-m suite\.inflight begin (\S+) (.+)", p.stdout)
    (evidence,) = re.findall(r"-m suite\.evidence (\S+) (.+?)\s*&& \S+ -m suite\.inflight drop (\S+)", p.stdout)
    name, swept = begin[0], begin[1].split()
    assert (evidence[0], evidence[1].split(), evidence[2]) == (name, swept, name)
    assert p.stdout.index("suite.inflight begin") < p.stdout.index("suite.run")
    for experiment in re.findall(r"\+experiment=(\S+)", p.stdout):  # each sweeps into multirun/<its name>
        assert f"multirun/{compose([f'+experiment={experiment}']).name}" in swept, experiment


@pytest.mark.parametrize("seeds,said", [(2.5, "got 2.5"), ("3", "got '3'"), ([0, 1.5], "got [0, 1.5]"),
                                        ([0, -1], "got [0, -1]"), (True, "got True")])
def test_seeds_of_the_wrong_type_are_refused_in_one_line_naming_the_value(seeds, said):
    from nalu.errors import ConfigError

    with pytest.raises(ConfigError, match=r"seeds must be a count \(a positive integer\) or a list of non-negative "
                                          rf"integers, {re.escape(said)}"):
        resolve_seeds(seeds)
    assert resolve_seeds(3) == [0, 1, 2] and resolve_seeds([4, 7]) == [4, 7]
