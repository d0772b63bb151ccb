"""Every task x model in configs/ composes, and builds a model that fits the task or says why not."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from nalu.ensemble import init_members
from nalu.errors import ConfigError
from suite.config import CONFIG_DIR
from suite.record import config_hash
from tasks.cell import build_model, model_factory

from .conftest import compose

TASKS = sorted(p.stem for p in (CONFIG_DIR / "task").glob("*.yaml"))
MODELS = sorted(p.stem for p in (CONFIG_DIR / "model").glob("*.yaml"))
EXPERIMENTS = sorted(p.stem for p in (CONFIG_DIR / "experiment").glob("*.yaml"))
SEQUENCE_ONLY = {m for m in MODELS if m.startswith(("lstm", "gru", "ugrnn", "dnc"))}
# (input features, recurrent) of the model each task builds; MNIST tasks build a recurrent core
# over 10 encoder features, translation and program_eval one over their token embeddings
INPUTS = {"identity": (1, False), "static_arithmetic": (100, False), "recurrent_arithmetic": (10, True),
          "mnist_counting": (10, True), "mnist_addition": (10, True), "translation": (256, True),
          "program_eval": (16, True)}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("model", MODELS)
def test_every_task_model_pair_composes_and_builds(task, model):
    cfg = compose([f"task={task}", f"model={model}"])
    OmegaConf.resolve(cfg)  # every interpolation resolves
    if not cfg.task.get("uses_model", True):
        return  # the task builds its own model (mnist_parity: the final-layer ablation)
    in_features, recurrent = INPUTS[task]
    factory = model_factory(cfg.model)
    if model in SEQUENCE_ONLY and not recurrent:
        with pytest.raises(ConfigError, match="sequence model"):
            build_model(factory, in_features, 1, 2, recurrent)
        return
    net = build_model(factory, in_features, 1, 2, recurrent)
    init_members(net, [0, 1])
    x = torch.rand(1, 5, 3, in_features) if recurrent else torch.rand(1, 5, in_features)
    assert net(x).shape == (2, 5, 1)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes(experiment):
    cfg = compose([f"+experiment={experiment}"])
    OmegaConf.resolve(cfg)
    assert cfg.name in experiment or cfg.name == experiment.replace("_stacks", "")  # stacks share table2's sweep


def test_config_hash_ignores_only_presentation_keys():
    base = compose([])
    assert config_hash(base) == config_hash(compose(["progress=false", "logger=wandb", "threads=2",
                                                     "flush_denormal=false"]))
    assert config_hash(base) != config_hash(compose(["optimizer.lr=0.1"]))
    assert config_hash(base) != config_hash(compose(["seeds=3"]))


def test_make_targets_name_existing_experiments():
    """Every experiment file is swept by a make target: by name, as the ``_paper`` variant that
    ``BUDGET=paper`` selects (``+experiment=<name>$(PAPER)``), or as a ``VARIANT=`` of a target."""
    makefile = (Path(CONFIG_DIR).parent / "Makefile").read_text()
    for experiment in EXPERIMENTS:
        base = experiment.removesuffix("_paper")
        parts = experiment.split("_")
        targets = ["_".join(parts[:k]) for k in range(1, len(parts) + 1)]  # a variant's name may hold "_" too
        assert (f"+experiment={experiment} " in makefile or f"+experiment={base}$(PAPER) " in makefile
                or f"+experiment={base}_paper " in makefile or f"+experiment={base}$(PAPER)$(V) " in makefile
                or any(f"+experiment={t}$(V) " in makefile or f"+experiment={t}$(PAPER)$(V) " in makefile
                       for t in targets)), experiment
