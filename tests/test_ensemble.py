"""Batched seeds: a seed trains the same alone or in an ensemble; a diverged member is isolated."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from nalu.ensemble import init_members
from nalu.train import fit
from suite.runner import run_job
from tasks.arithmetic import ArithmeticProblem
from tasks.cell import build_model, model_factory

from .conftest import TINY_ARITHMETIC, compose

LONGER = ["task.steps=300", "task.eval_every=100"]


def member(metrics: dict, seed: int) -> dict:
    return next(m for m in metrics["members"] if m["seed"] == seed)


def validation(run_dir, seed: int) -> dict[int, float]:
    h = pd.read_csv(run_dir / "history.csv")
    h = h[(h.seed == seed) & (h.metric == "validation")]
    return dict(zip(h.step, h.value, strict=True))


def assert_same_member(m1: dict, m2: dict, rtol: float, curves: tuple[dict, dict] | None = None) -> None:
    """Equal metrics to ``rtol`` and the same best step, or, where ``curves`` (each run's
    validation per evaluated step) are given, best steps whose validation values tie to ``rtol``
    in both runs: which of two near-equal evaluations is lower is itself rounding."""
    for when in ("init", "final", "best"):
        for k, v in m1[when].items():
            assert math.isclose(v, m2[when][k], rel_tol=rtol, abs_tol=1e-9), (when, k, v, m2[when][k])
    assert m1["diverged"] == m2["diverged"]
    if m1["best_step"] == m2["best_step"] or curves is None:
        assert m1["best_step"] == m2["best_step"]
        return
    for curve in curves:
        a, b = curve[m1["best_step"]], curve[m2["best_step"]]
        assert math.isclose(a, b, rel_tol=rtol), (m1["best_step"], a, m2["best_step"], b)


@pytest.mark.parametrize("model,steps,rtol", [("nac", LONGER, 1e-4), ("relu6", LONGER, 1e-4),
                                              ("nalu", ["task.steps=10", "task.eval_every=5"], 1e-3)])
@pytest.mark.parametrize("shared", ["true", "false"])
def test_every_seed_in_ensemble_matches_seed_alone_up_to_rounding(tmp_path, model, steps, rtol, shared):
    """Alone and in a batch of five, a seed's matrix products round differently; the rest is the
    same. A NAC or an MLP ends equal to 1e-4 over 300 steps. A NALU amplifies the rounding
    (an Adam step follows the sign of a rounding-size gradient): 1e-3 after 10 steps, and after
    thousands its seeds alone and batched can end far apart; its best step may then be either
    of two evaluations whose validation values tie to 1e-3."""
    base = TINY_ARITHMETIC + steps + [f"model={model}", "task.op=mul", f"task.shared_batches={shared}"]
    together = run_job(compose(base + ["seeds=5"]), tmp_path / "five")
    for seed in range(5):
        alone = run_job(compose(base + [f"seeds=[{seed}]"]), tmp_path / f"one{seed}")
        curves = (validation(tmp_path / "five", seed), validation(tmp_path / f"one{seed}", seed))
        assert_same_member(member(together, seed), member(alone, seed), rtol=rtol,
                           curves=curves if model == "nalu" else None)


def test_members_never_interact(tmp_path):
    """Bit for bit, for a fixed member count: changing one member's weights changes no other's
    results (no shared normalisation, loss scale or early stop)."""
    cfg = compose(TINY_ARITHMETIC + ["model=nalu", "task.op=add", "seeds=4"])
    seeds = [0, 1, 2, 3]

    def train(perturb: bool):
        problem = ArithmeticProblem(cfg.task, seeds, recurrent=False)
        model = build_model(model_factory(cfg.model), 100, 1, 4)
        init_members(model, seeds)
        if perturb:
            with torch.no_grad():
                for p in model.parameters():
                    p[2] += 0.3
        opt = torch.optim.Adam(model.parameters(), lr=1e-2, fused=True)
        return fit(model, problem, opt, steps=60, eval_every=20, select="validation", progress=False)

    a, b = train(False), train(True)
    others = [0, 1, 3]
    for when in ("init", "final", "best"):
        for k in getattr(a, when):
            torch.testing.assert_close(getattr(a, when)[k][others], getattr(b, when)[k][others], rtol=0, atol=0)
            assert not torch.equal(getattr(a, when)[k][2], getattr(b, when)[k][2])


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
                                       rtol=0, atol=0)
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
