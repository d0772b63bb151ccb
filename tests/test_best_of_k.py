"""Best of k seeds (suite/tables/best_of_k.py): the exact probabilities equal an enumeration of
every k-subset, and a Table 1 of many seeds writes them beside itself."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from suite.tables.best_of_k import by_oracle, by_validation, in_validation_order


@pytest.mark.parametrize("seed", range(5))
def test_the_exact_probabilities_are_those_of_every_k_subset(seed):
    rng = np.random.default_rng(seed)
    n = 8
    good = rng.random(n) < 0.4  # in validation order, best first
    for k in range(1, n + 1):
        subsets = list(itertools.combinations(range(n), k))
        by_val = sum(good[min(s)] for s in subsets) / len(subsets)  # the best-ranked of the k
        by_orc = sum(any(good[i] for i in s) for s in subsets) / len(subsets)
        assert math.isclose(by_validation(good, k), by_val) and math.isclose(by_oracle(good, k), by_orc)


def test_one_good_seed_ranked_first_is_chosen_k_times_in_n():
    good = np.array([True] + [False] * 9)
    assert [by_validation(good, k) for k in (1, 5, 10)] == [0.1, 0.5, 1.0]
    assert by_validation(np.array([False] * 9 + [True]), 9) == 0.0  # ranked last: the best of 9 never is it


def test_validation_order_puts_diverged_and_undefined_seeds_last_and_never_good():
    members = [{"best": {"validation": v}, "diverged": d}
               for v, d in [(0.3, False), (0.1, True), (math.nan, False), (0.2, False)]]
    score = np.array([0.0, 0.0, 0.0, 1.0])
    # ranked: seed 3 (0.2, scores 1.0), seed 0 (0.3, prints 0.0), then seeds 1 (diverged) and 2 (nan)
    assert in_validation_order(members, score, "best").tolist() == [False, True, False, False]
