"""``device=``: names are checked in one line, and every task's tensors follow the model to it.

No GPU is at hand in CI, so the meta device (shapes without data; see ``conftest.on_meta``) stands
in for one: a tensor a task forgot to move meets the model's on another device and raises.
"""

from __future__ import annotations

import pytest
import torch

from nalu import device as devices
from nalu.errors import ConfigError
from tests.conftest import TINY, TINY_ARITHMETIC, TINY_IDENTITY, compose, on_meta


def test_device_names_are_checked_in_one_line():
    assert devices.resolve("cpu") == torch.device("cpu")
    with pytest.raises(ConfigError, match=r"unknown device 'gpu'; valid: cpu, cuda, cuda:<n>"):
        devices.resolve("gpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_where_there_is_none_says_so():
    with pytest.raises(ConfigError, match="CUDA is not available here"):
        devices.resolve("cuda")


def test_move_reaches_nested_tensors_and_leaves_the_rest():
    meta = torch.device("meta")
    moved = devices.move({"a": (torch.ones(2), [torch.zeros(1)]), "b": 3}, meta)
    assert moved["a"][0].device == meta and moved["a"][1][0].device == meta and moved["b"] == 3


@pytest.mark.parametrize(
    "task, model",
    [("static_arithmetic", m) for m in ("nalu", "nac", "nau", "nmu", "inalu", "npu", "realnpu", "mlp")]
    + [("recurrent_arithmetic", m) for m in ("nalu", "lstm", "gru", "ugrnn", "rnn_tanh")],
)
def test_arithmetic_runs_on_the_model_device(task, model, monkeypatch):
    from tasks import recurrent_arithmetic, static_arithmetic

    module = static_arithmetic if task == "static_arithmetic" else recurrent_arithmetic
    on_meta(module.run, compose([f"task={task}", f"model={model}", *TINY_ARITHMETIC]), monkeypatch)


def test_identity_runs_on_the_model_device(monkeypatch):
    from tasks import identity

    on_meta(identity.run, compose(["task=identity", "model=relu6", *TINY_IDENTITY]), monkeypatch)


@pytest.mark.parametrize("model", ["lstm_sum", "lstm_nalu"])
def test_translation_runs_on_the_model_device(model, monkeypatch):
    from tasks import translation

    on_meta(translation.run, compose(["task=translation", f"model={model}", *TINY]), monkeypatch)


@pytest.mark.parametrize("model", ["ugrnn_nalu", "dnc_nalu", "nalu"])
def test_program_evaluation_runs_on_the_model_device(model, monkeypatch):
    from tasks import program_eval

    on_meta(program_eval.run, compose(["task=program_eval", f"model={model}", *TINY]), monkeypatch)


def test_gridworld_refuses_a_device_other_than_the_cpu():
    from tasks import gridworld_time

    cfg = compose(["task=gridworld_time", "device=cuda"])
    with pytest.raises(ConfigError, match="runs on the CPU only"):
        gridworld_time.run(cfg, log=None)
