"""Table 1 arithmetic on hand-made metrics: seed choice, divergence counting, scaled scores."""

from __future__ import annotations

import math

import numpy as np

from nalu.tables.common import quantiles
from nalu.tables.table1 import cell_rows, verdict


def member(seed, validation, interp, extrap, diverged=False, ref=100.0):
    m = {"validation": validation, "interpolation": interp, "extrapolation": extrap}
    return {"seed": seed, "diverged": diverged, "best_step": 10 * seed, "best": m, "final": m,
            "init": {"interpolation": 50.0, "extrapolation": 50.0},
            "reference": {"interpolation": ref, "extrapolation": ref}}  # fmt: skip


def test_chosen_seed_is_lowest_validation_among_non_diverged():
    cell = {"task": "static_arithmetic", "label": "a*b", "model": "nalu", "members": [
        member(0, validation=5.0, interp=5.0, extrap=50.0),
        member(1, validation=0.1, interp=0.1, extrap=1e9, diverged=True),  # best but diverged
        member(2, validation=1.0, interp=1.0, extrap=2.0),
        member(3, validation=float("nan"), interp=float("nan"), extrap=float("nan")),
    ]}  # fmt: skip
    interp, extrap = cell_rows(cell, "best", "random", solved_below=3.0)
    assert interp["chosen_seed"] == 2 and interp["ours"] == 1.0
    assert extrap["ours"] == 2.0
    assert extrap["diverged"] == 1 and extrap["seeds"] == 4
    assert extrap["solved"] == 1  # seed 2 only: diverged and NaN seeds are never solved
    assert extrap["median"] == math.inf  # two of four seeds are non-finite
    own = cell_rows(cell, "best", "init", solved_below=3.0)[1]
    assert own["ours"] == 4.0  # scaled by the model's own initial MSE (50) instead of 100


def test_quantiles_treat_non_finite_as_infinite():
    assert quantiles(np.array([1.0, 2.0, 3.0])) == (1.5, 2.0, 2.5)
    assert quantiles(np.array([1.0, np.nan, np.inf]))[1] == math.inf


def test_verdict():
    assert verdict(0.01, 0.0) == "match"
    assert verdict(3.0, 0.0) == "worse"
    assert verdict(0.0, 5.3) == "better"
    assert verdict(2000.0, math.inf) == "match (>999)"
    assert verdict(27.0, math.inf) == "better"
    assert verdict(20.0, 10.0) == "x2"
