"""MNIST digit counting and digit addition (Trask et al. 2018, Section 4.2, Table 2).

A series of MNIST digits goes through a convolutional encoder (``baselines.convnet``), trained end
to end, and a recurrent core (any model of the suite run with ``recurrent=True``):
- counting: how many of each digit class were seen (10 outputs);
- addition: the sum of the digits seen (1 output).
Training series have length 10 and come from the MNIST training images (the last
``validation_images`` of them are held out to pick each seed's best step, on series of length
``validation_length``, by default the training length). ``supervise=every_step`` trains on the
target after every digit (the loss is the mean over all prefix outputs), as both public
reproductions do (AndreasMadsen/stable-nalu's and Hoedt et al.'s sequential MNIST);
``supervise=last`` on the output after the last digit only. test series have
lengths 1, 10, 100 and 1000 and come from the MNIST test images. Length 1 is scored as
classification accuracy (%: the rounded output equals the label, all 10 counts for counting),
the others as mean absolute error (averaged over the 10 classes for counting).

Series are never materialised as images: the encoder runs once over the test images, and a series
is a row of indices into its outputs.
"""

from __future__ import annotations

from pathlib import Path

import torch
from omegaconf import DictConfig
from torch import Tensor, nn
from torch.nn import functional as F

from baselines.convnet import DigitEncoder, OverDigits
from nalu.ensemble import in_chunks
from nalu.errors import ConfigError, check_choice
from nalu.seeding import generator
from nalu.train import Metrics
from tasks.mnist import data as mnist_data
from tasks import Task
from tasks.cell import model_factory, train_cell
from tasks import metrics
from tasks.metrics import VALIDATION

OUTPUTS = {"counting": 10, "addition": 1}


SUPERVISION = ("every_step", "last")


class SeriesProblem(mnist_data.DigitsProblem):
    def __init__(self, cfg: DictConfig, seeds: list[int], data_root: Path):
        self.kind = check_choice("series task", cfg.kind, OUTPUTS)
        self.every_step = check_choice("supervise", cfg.supervise, SUPERVISION) == "every_step"
        self.members, self.batch_size, self.length = len(seeds), cfg.batch_size, cfg.length
        super().__init__(data_root, cfg.validation_images)
        self.gen = generator("mnist_series", "train_data", cfg.data_seed)
        val_length = cfg.validation_length or self.length  # series that pick each seed's best step
        self.val_index = self._series(len(self.val_images), cfg.validation_series, val_length, "val")
        self.test_index = {int(L): self._series(len(self.test_images), int(n), int(L), f"test{L}")
                           for L, n in cfg.test_series.items()}

    @staticmethod
    def _series(pool: int, n: int, length: int, name: str) -> Tensor:
        return torch.randint(0, pool, (n, length), generator=generator("mnist_series", name))

    def label(self, digits: Tensor) -> Tensor:
        """Targets for series of digit labels ``[N, T]``: ``[N, 10]`` counts or ``[N, 1]`` sums."""
        return self.running(digits)[:, -1]

    def running(self, digits: Tensor) -> Tensor:
        """The target after every prefix: ``[N, T, 10]`` counts or ``[N, T, 1]`` sums."""
        if self.kind == "counting":
            return F.one_hot(digits, 10).cumsum(1).float()
        return digits.cumsum(1).unsqueeze(-1).float()

    def batch(self) -> tuple[Tensor, Tensor]:
        """Series of training images ``[1, B, T, 28, 28]`` and their targets: ``[1, B, out]`` after
        the last digit, or ``[1, B, T, out]`` after every digit (``supervise=every_step``: the
        loss is then the mean over every prefix's output)."""
        idx = torch.randint(0, len(self.train_images), (self.batch_size, self.length), generator=self.gen)
        idx = idx.to(self.train_images.device)  # drawn on the CPU on every device: the same stream
        labels = self.train_labels[idx]
        target = self.running(labels) if self.every_step else self.label(labels)
        return self.train_images[idx].unsqueeze(0), target.unsqueeze(0)

    def _predict(self, model: OverDigits, feats: Tensor, index: Tensor, chunk: int = 100) -> Tensor:
        """The core's outputs after the last digit, for series given as rows of indices into
        ``feats`` ``[M, pool, F]``."""
        core = model.head.core if isinstance(model.head, EveryStep) else model.head
        return in_chunks(lambda s: core(feats[:, index[s]]), len(index), chunk)

    def _encode(self, model: OverDigits, images: Tensor, chunk: int = 2500) -> Tensor:
        return in_chunks(lambda s: model.encoder(images[s].unsqueeze(0)), len(images), chunk)

    def evaluate(self, model: OverDigits) -> Metrics:
        val_feats = self._encode(model, self.val_images)
        pred = self._predict(model, val_feats, self.val_index)
        out = {VALIDATION: (pred - self.label(self.val_labels[self.val_index])).square().mean((1, 2))}
        test_feats = self._encode(model, self.test_images)
        for L, index in self.test_index.items():
            pred = self._predict(model, test_feats, index)
            target = self.label(self.test_labels[index])
            if L == 1:
                hit = (pred.round() == target).all(-1).float()
                out[metrics.series_metric(1)] = 100 * hit.mean(1)
            else:
                out[metrics.series_metric(L)] = (pred - target).abs().mean((1, 2))
        return out


class EveryStep(nn.Module):
    """A recurrent core's output after every step, ``[M|1, B, T, F] -> [M, B, T, out]`` (its
    ``per_step``), for training with ``supervise=every_step``."""

    def __init__(self, core: nn.Module):
        super().__init__()
        if not hasattr(core, "per_step"):
            raise ConfigError(f"{type(core).__name__} gives no per-step outputs; use task.supervise=last")
        self.core = core

    def forward(self, codes: Tensor) -> Tensor:
        return self.core.per_step(codes)


def factory_for(cfg: DictConfig):
    """Builds the digit encoder followed by ``cfg.model`` as the recurrent core (read after every
    digit when ``task.supervise=every_step``)."""
    core_factory = model_factory(cfg.model)

    def factory(in_features: int, out_features: int, members: int, recurrent: bool) -> nn.Module:
        encoder = DigitEncoder(cfg.task.encoder.features, members, tuple(cfg.task.encoder.channels),
                               cfg.task.encoder.hidden, bool(cfg.task.encoder.get("pool", False)),
                               bool(cfg.task.encoder.get("shared_first_conv", False)))
        core = core_factory(in_features=cfg.task.encoder.features, out_features=out_features,
                            members=members, recurrent=True)
        return OverDigits(encoder, EveryStep(core) if cfg.task.supervise == "every_step" else core)

    return factory


def run(cfg: DictConfig, log) -> dict:
    seeds = list(cfg.seeds)
    kind = cfg.task.kind
    problem = SeriesProblem(cfg.task, seeds, Path(cfg.data_dir))
    summary, _ = train_cell(cfg, problem, 28 * 28, OUTPUTS[kind], True, log, select=VALIDATION,
                            factory=factory_for(cfg))
    return {**summary, "kind": kind, "supervise": cfg.task.supervise}


TASK = Task(run=run, numerics=1)  # bump with any change to its numbers (tests/test_golden.py)
