"""The arithmetic data generators: fixed subsets, real extrapolation, sequence lengths."""

from __future__ import annotations

import pytest
import torch

from nalu.errors import ConfigError
from tasks.arithmetic import OPS, ArithmeticProblem

from .conftest import compose

SMALL = ["task.test_samples=300", "task.extrapolation_samples=300"]


def problem(seeds, *overrides, task="static_arithmetic"):
    cfg = compose([f"task={task}", *SMALL, *overrides])
    return ArithmeticProblem(cfg.task, seeds, recurrent=task.startswith("recurrent"))


def test_subsets_are_fixed_per_seed():
    p, q = problem([0, 1, 2, 3]), problem([2, 9])
    assert torch.equal(p.mask_a[2], q.mask_a[0]) and torch.equal(p.mask_b[2], q.mask_b[0])
    masks = (p.mask_a.clone(), p.mask_b.clone())
    for _ in range(3):  # drawing batches never moves the subsets
        x, y = p.batch()
        a, b = p.operands(x)
        torch.testing.assert_close(y[..., 0], a + b)
    assert torch.equal(masks[0], p.mask_a) and torch.equal(masks[1], p.mask_b)
    # 25 inputs each, overlapping in 12, contiguous
    assert (p.mask_a.sum(1) == 25).all() and ((p.mask_a * p.mask_b).sum(1) == 12).all()
    assert len({int(m.argmax()) for m in problem(list(range(10))).mask_a}) > 1


@pytest.mark.parametrize("task", ["static_arithmetic", "recurrent_arithmetic"])
@pytest.mark.parametrize("op", list(OPS))
def test_every_extrapolation_sample_exceeds_training(task, op):
    p = problem([0, 1], f"task.op={op}", task=task)
    seen = [p.operands(x) + (y[..., 0],) for x, y in (p.batch() for _ in range(50))]
    max_a, max_b, max_y = (torch.stack([s[k] for s in seen]).amax((0, 2)) for k in range(3))
    x, y = p.sets["extrapolation"]
    a, b = p.operands(x)
    above = (a > max_a[:, None]) | (b > max_b[:, None]) | (y[..., 0] > max_y[:, None])
    assert above.all()


def test_recurrent_lengths():
    p = problem([0], task="recurrent_arithmetic")
    x, _ = p.batch()
    assert x.shape[2] == 10
    assert p.sets["extrapolation"][0].shape[2] == 1000
    assert p.sets["interpolation"][0].shape[2] == 10


def test_test_sets_are_identical_for_every_model_and_seed_set():
    p, q = problem([0]), problem([5, 6, 7], "model=relu6")
    for name in p.sets:
        assert torch.equal(p.sets[name][0], q.sets[name][0])


@pytest.mark.parametrize("overrides", [
    ["task.extrapolation.low=1.0", "task.extrapolation.high=2.0"],
    ["task.extrapolation.low=1.5", "task.extrapolation.high=6.0"],
    ["task.interpolation.low=2.0", "task.interpolation.high=1.0"],
])
def test_extrapolation_that_does_not_exceed_training_is_refused(overrides):
    with pytest.raises(ConfigError, match="extrapolation|empty"):
        problem([0], *overrides)


def test_recurrent_extrapolation_must_be_longer_or_larger():
    with pytest.raises(ConfigError, match="does not exceed"):
        problem([0], "task.extrapolation_length=10", task="recurrent_arithmetic")


def test_unknown_op_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="unknown op 'pow'; valid: add, div, mul, sqrt, square, sub"):
        problem([0], "task.op=pow")
