"""Static arithmetic (Table 1, left): ``op(a, b)`` of two subset sums of one vector ``x`` in R^100."""

from omegaconf import DictConfig

from tasks import arithmetic


def run(cfg: DictConfig, log) -> dict:
    return arithmetic.run(cfg, log, recurrent=False)
