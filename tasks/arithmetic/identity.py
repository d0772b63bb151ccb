"""Identity function (Trask et al. 2018, Section 1.1 and Appendix A; Figure 1, Table 5).

A scalar -> scalar autoencoder (3 hidden layers of 8 by default) learns ``y = x`` on [-5, 5]
with squared error. Evaluated after training:
- Figure 1: the absolute error at each point of a grid on [-20, 20], averaged over seeds;
- Table 5: the mean absolute error on a grid over [-1000, 1000] (predicting 0 everywhere scores
  about 500).
"""

from __future__ import annotations

import torch
from omegaconf import DictConfig
from torch import Tensor, nn

from nalu.device import move
from nalu.errors import ConfigError
from nalu.seeding import training_streams
from nalu.train import Metrics
from tasks import Task
from tasks.cell import train_cell
from tasks.metrics import MAE_AT_MINUS20, MAE_AT_PLUS20, TABLE5_MAE


def grid(spec: DictConfig) -> Tensor:
    return torch.linspace(spec.low, spec.high, spec.points).view(1, -1, 1)


class IdentityProblem:
    def __init__(self, cfg: DictConfig, seeds: list[int]):
        lo, hi = cfg.interpolation.low, cfg.interpolation.high
        if not lo < hi:
            raise ConfigError(f"interpolation range [{lo}, {hi}] is empty: low must be < high")
        for name in ("curve", "table5"):
            spec = cfg[name]
            if not (spec.low < lo and spec.high > hi):
                raise ConfigError(f"{name} range [{spec.low}, {spec.high}] must extend beyond the "
                                  f"training range [{lo}, {hi}] on both sides")
        self.members = len(seeds)
        self.low, self.high, self.batch_size = lo, hi, cfg.batch_size
        self.gens = training_streams("identity", list(seeds), cfg.shared_batches, cfg.data_seed)
        self.interp = torch.linspace(lo, hi, 1001).view(1, -1, 1)
        self.table5 = grid(cfg.table5)
        self.curve_x = grid(cfg.curve)

    def to(self, device: torch.device) -> IdentityProblem:
        self.interp, self.table5, self.curve_x = move((self.interp, self.table5, self.curve_x), device)
        return self

    def batch(self) -> tuple[Tensor, Tensor]:
        x = torch.empty(len(self.gens), self.batch_size, 1)
        for i, g in enumerate(self.gens):
            x[i].uniform_(self.low, self.high, generator=g)
        return x, x

    def evaluate(self, model: nn.Module) -> Metrics:
        return {
            "interpolation_mae": (model(self.interp) - self.interp).abs().mean((1, 2)),
            TABLE5_MAE: (model(self.table5) - self.table5).abs().mean((1, 2)),
        }

    def curve(self, model: nn.Module) -> Tensor:
        """Absolute error per member at every point of the Figure 1 grid, ``[M, points]``."""
        with torch.no_grad():
            return (model(self.curve_x) - self.curve_x).abs()[..., 0]


def run(cfg: DictConfig, log) -> dict:
    seeds = list(cfg.seeds)
    problem = IdentityProblem(cfg.task, seeds)
    summary, fit = train_cell(cfg, problem, 1, 1, False, log, select=None)
    err = problem.curve(fit.best_model)  # [M, points]; select=None: the final weights
    for i, member in enumerate(summary["members"]):
        member["final"][MAE_AT_MINUS20] = float(err[i, 0])
        member["final"][MAE_AT_PLUS20] = float(err[i, -1])
    finite = torch.isfinite(err).all(1)
    return {
        **summary,
        "activation": cfg.model.get("activation_name", cfg.model.name),
        "curve": {
            "x": problem.curve_x.flatten().tolist(),
            "mean": err[finite].mean(0).tolist() if finite.any() else None,
            "median": err[finite].median(0).values.tolist() if finite.any() else None,
            "finite_members": int(finite.sum()),
        },
    }


TASK = Task(run=run, numerics=1)  # bump with any change to its numbers (tests/test_golden.py)
