"""Batched seeds: a seed trains the same alone or in an ensemble; a diverged member is isolated."""

from __future__ import annotations

import math

import pytest
import torch

from nalu.cell import build_model, model_factory
from nalu.ensemble import init_members
from nalu.run import run_job
from nalu.train import fit
from tasks.arithmetic import ArithmeticProblem

from .conftest import TINY_ARITHMETIC, compose

LONGER = ["task.steps=300", "task.eval_every=100"]


def member(metrics: dict, seed: int) -> dict:
    return next(m for m in metrics["members"] if m["seed"] == seed)


def assert_same_member(m1: dict, m2: dict, rtol: float) -> None:
    for when in ("init", "final", "best"):
        for k, v in m1[when].items():
            assert math.isclose(v, m2[when][k], rel_tol=rtol, abs_tol=1e-9), (when, k, v, m2[when][k])
    assert m1["best_step"] == m2["best_step"] and m1["diverged"] == m2["diverged"]


@pytest.mark.parametrize("model", ["nalu", "relu6"])
@pytest.mark.parametrize("shared", ["true", "false"])
def test_seed_in_ensemble_matches_seed_alone(tmp_path, model, shared):
    base = TINY_ARITHMETIC + LONGER + [f"model={model}", "task.op=mul", f"task.shared_batches={shared}"]
    together = run_job(compose(base + ["seeds=10"]), tmp_path / "ten")
    alone = run_job(compose(base + ["seeds=[3]"]), tmp_path / "one")
    assert_same_member(member(together, 3), member(alone, 3), rtol=1e-4)


def test_recurrent_seed_in_ensemble_matches_seed_alone(tmp_path):
    base = TINY_ARITHMETIC + ["task=recurrent_arithmetic", "model=lstm", "task.op=add"]
    together = run_job(compose(base + ["seeds=[0,1,2,3]"]), tmp_path / "four")
    alone = run_job(compose(base + ["seeds=[2]"]), tmp_path / "one")
    assert_same_member(member(together, 2), member(alone, 2), rtol=1e-4)


def train(nan_member: int | None):
    cfg = compose(TINY_ARITHMETIC + ["model=nalu", "task.op=add", "seeds=4"])
    seeds = [0, 1, 2, 3]
    problem = ArithmeticProblem(cfg.task, seeds, recurrent=False)
    model = build_model(model_factory(cfg.model), 100, 1, 4)
    init_members(model, seeds)
    if nan_member is not None:
        with torch.no_grad():
            model.layers[0].G[nan_member] = float("nan")
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    result = fit(model, problem, opt, steps=60, eval_every=20, select="validation", progress=False)
    return result, model


def test_member_forced_to_nan_is_diverged_and_isolated():
    clean, _ = train(None)
    broken, model = train(nan_member=2)
    assert broken.diverged_step.tolist() == [-1, -1, 1, -1]
    assert clean.diverged_step.tolist() == [-1, -1, -1, -1]
    others = [0, 1, 3]
    for when in ("final", "best"):
        for k in getattr(clean, when):
            torch.testing.assert_close(getattr(broken, when)[k][others], getattr(clean, when)[k][others],
                                       rtol=0, atol=0)  # fmt: skip
    # the diverged member is frozen: its finite weights never moved from initialisation
    fresh = build_model(model_factory(compose(["model=nalu"]).model), 100, 1, 4)
    init_members(fresh, [0, 1, 2, 3])
    torch.testing.assert_close(model.layers[1].nac.W_hat[2], fresh.layers[1].nac.W_hat[2])
    for p in model.parameters():
        assert torch.isfinite(p[others]).all()


def test_same_config_and_seed_give_same_metrics_twice(tmp_path):
    overrides = TINY_ARITHMETIC + ["model=nalu", "task.op=div"]
    first = run_job(compose(overrides), tmp_path / "a")
    second = run_job(compose(overrides), tmp_path / "b")
    assert first["members"] == second["members"]
