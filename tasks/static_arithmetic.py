"""Static arithmetic (Table 1, left): ``op(a, b)`` of two subset sums of one vector ``x`` in R^100."""

from omegaconf import DictConfig

from tasks import arithmetic


FUSES = arithmetic.FUSES  # what the cells of one fused group may differ in
check = arithmetic.check  # refusals known before any cell runs


def run(cfg: DictConfig, log) -> dict:
    return arithmetic.run(cfg, log, recurrent=False)


def run_group(cfgs: list[DictConfig], log) -> list[dict]:
    return arithmetic.run_group(cfgs, log, recurrent=False)
