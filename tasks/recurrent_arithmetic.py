"""Recurrent arithmetic (Table 1, right): ``op(a, b)`` of subset sums over a sequence ``x_1..x_T``.

Trained on sequences of length 10, extrapolation on length 1000 (Trask et al. 2018, Section 4.1).
"""

from omegaconf import DictConfig

from tasks import arithmetic


FUSES = arithmetic.FUSES  # what the cells of one fused group may differ in
check = arithmetic.check  # refusals known before any cell runs


def run(cfg: DictConfig, log) -> dict:
    return arithmetic.run(cfg, log, recurrent=True)


def run_group(cfgs: list[DictConfig], log) -> list[dict]:
    return arithmetic.run_group(cfgs, log, recurrent=True)
