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
    from tasks.arithmetic import functions

    entry = functions.STATIC if task == "static_arithmetic" else functions.RECURRENT
    on_meta(entry.run, compose([f"task={task}", f"model={model}", *TINY_ARITHMETIC]), monkeypatch)


def test_identity_runs_on_the_model_device(monkeypatch):
    from tasks.arithmetic import identity

    on_meta(identity.run, compose(["task=identity", "model=relu6", *TINY_IDENTITY]), monkeypatch)


@pytest.mark.parametrize("model", ["lstm_sum", "lstm_nalu"])
def test_translation_runs_on_the_model_device(model, monkeypatch):
    from tasks.language import translation

    on_meta(translation.run, compose(["task=translation", f"model={model}", *TINY]), monkeypatch)


@pytest.mark.parametrize("model", ["ugrnn_nalu", "dnc_nalu", "nalu"])
def test_program_evaluation_runs_on_the_model_device(model, monkeypatch):
    from tasks.programs import evaluation as program_eval

    on_meta(program_eval.run, compose(["task=program_eval", f"model={model}", *TINY]), monkeypatch)


def test_gridworld_refuses_a_gpu_before_touching_its_cell(tmp_path, monkeypatch):
    """The A3C runs on the CPU only, and says so before the logger rewrites the cell's history."""
    import suite.runner

    monkeypatch.setattr(devices, "resolve", lambda name: torch.device("cuda"))  # as on a GPU machine
    monkeypatch.setattr(suite.runner, "full_float32", lambda: None)
    (tmp_path / "history.csv").write_text("step,seed,metric,value\n7,0,reward,1.0\n")
    cfg = compose(["task=gridworld_time", "device=cuda", "progress=false"])
    with pytest.raises(ConfigError, match="runs on the CPU only"):
        suite.runner.run_job(cfg, tmp_path)
    assert (tmp_path / "history.csv").read_text().endswith("7,0,reward,1.0\n")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("args", [
    ["task=static_arithmetic", "model=nalu", *TINY_ARITHMETIC],
    ["task=recurrent_arithmetic", "model=lstm", *TINY_ARITHMETIC],
    ["task=static_arithmetic", "model=inalu", "model.reinit=true", "model.reinit_every=2",
     "model.reinit_window=2", *TINY_ARITHMETIC],  # re-initialises within the test's three steps
    ["task=identity", "model=mlp", *TINY_IDENTITY],
    ["task=translation", "model=lstm_nalu", *TINY],
    ["task=program_eval", "model=dnc_nalu", *TINY],
])
def test_tiny_cells_train_on_cuda_as_on_the_cpu(args, workdir):
    """On a GPU machine: the whole pipeline (training, post-training scoring) runs on CUDA, and its
    numbers match the CPU's closely (not bit for bit: other kernels, other rounding). Before any
    step (``init``) only the summation order differs; after three steps the runs have drifted a
    little. Three, not more: on an H200 (2026-12-04) the 30-step runs drifted apart by 1-8% (the
    DNC's training loss most), as Adam's sign-like early steps flip where a gradient is rounding
    noise, and a looser tolerance would let a real difference through. Three steps move a metric
    by only 0.03-9% here, less than that tolerance, so the change itself is compared too: the
    metric each seed's training moved most must move alike on both devices (a GPU run whose
    optimiser never stepped fails there)."""
    import json
    import math

    from tests.conftest import cli

    out = {}
    for device in ("cpu", "cuda"):
        cli(["-m", "suite.run", *args, "task.steps=3", f"device={device}", f"hydra.run.dir=run_{device}"], workdir)
        out[device] = json.loads((workdir / f"run_{device}" / "metrics.json").read_text())["members"]
    for cpu, gpu in zip(out["cpu"], out["cuda"], strict=True):
        for key, value in cpu["init"].items():
            assert gpu["init"][key] == pytest.approx(value, rel=1e-4, abs=1e-5, nan_ok=True), f"init {key}"
        for key, value in cpu["final"].items():
            assert gpu["final"][key] == pytest.approx(value, rel=1e-2, abs=1e-4, nan_ok=True), f"final {key}"
        moved = {k: cpu["final"][k] - v for k, v in cpu["init"].items()
                 if math.isfinite(v) and math.isfinite(cpu["final"].get(k, math.nan))}
        key = max(moved, key=lambda k: abs(moved[k]) / max(abs(cpu["init"][k]), 1e-6))
        assert abs(moved[key]) > 1e-4 * abs(cpu["init"][key]), "three CPU steps moved no metric"
        assert gpu["final"][key] - gpu["init"][key] == pytest.approx(moved[key], rel=0.1), f"change of {key}"


def test_full_float32_turns_tensorfloat32_off():
    """What the runner does for a CUDA cell: no TF32 in matmuls, convolutions or cuDNN RNNs."""
    from torch.backends import cuda, cudnn

    import suite.runner

    if not hasattr(cuda.matmul, "fp32_precision"):
        pytest.skip("torch < 2.9: the legacy allow_tf32 flags")
    saved = (cuda.matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.rnn.fp32_precision)
    try:
        suite.runner.full_float32()
        assert (cuda.matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.rnn.fp32_precision) == ("ieee",) * 3
    finally:
        cuda.matmul.fp32_precision, cudnn.conv.fp32_precision, cudnn.rnn.fp32_precision = saved
