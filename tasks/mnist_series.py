"""MNIST digit counting and digit addition (Trask et al. 2018, Section 4.2, Table 2).

A series of MNIST digits goes through a convolutional encoder (``baselines.convnet``), trained end
to end, and a recurrent core (any model of the suite run with ``recurrent=True``):
- counting: how many of each digit class were seen (10 outputs);
- addition: the sum of the digits seen (1 output).
Training series have length 10 and come from the MNIST training images (the last
``validation_images`` of them are held out to pick each seed's best step); test series have
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
from nalu.cell import model_factory, train_cell
from nalu.ensemble import in_chunks
from nalu.errors import check_choice
from nalu.seeding import generator
from nalu.train import Metrics
from tasks import mnist_data

OUTPUTS = {"counting": 10, "addition": 1}


class SeriesProblem(mnist_data.DigitsProblem):
    def __init__(self, cfg: DictConfig, seeds: list[int], data_root: Path):
        self.kind = check_choice("series task", cfg.kind, OUTPUTS)
        self.members, self.batch_size, self.length = len(seeds), cfg.batch_size, cfg.length
        super().__init__(data_root, cfg.validation_images)
        self.gen = generator("mnist_series", "train_data", cfg.data_seed)
        self.val_index = self._series(len(self.val_images), cfg.validation_series, self.length, "val")
        self.test_index = {int(L): self._series(len(self.test_images), int(n), int(L), f"test{L}")
                           for L, n in cfg.test_series.items()}  # fmt: skip

    @staticmethod
    def _series(pool: int, n: int, length: int, name: str) -> Tensor:
        return torch.randint(0, pool, (n, length), generator=generator("mnist_series", name))

    def label(self, digits: Tensor) -> Tensor:
        """Targets for series of digit labels ``[N, T]``: ``[N, 10]`` counts or ``[N, 1]`` sums."""
        if self.kind == "counting":
            return F.one_hot(digits, 10).sum(1).float()
        return digits.sum(1, keepdim=True).float()

    def batch(self) -> tuple[Tensor, Tensor]:
        idx = torch.randint(0, len(self.train_images), (self.batch_size, self.length), generator=self.gen)
        idx = idx.to(self.train_images.device)  # drawn on the CPU on every device: the same stream
        return self.train_images[idx].unsqueeze(0), self.label(self.train_labels[idx]).unsqueeze(0)

    def _predict(self, model: OverDigits, feats: Tensor, index: Tensor, chunk: int = 100) -> Tensor:
        """The core's outputs for series given as rows of indices into ``feats`` ``[M, pool, F]``."""
        return in_chunks(lambda s: model.head(feats[:, index[s]]), len(index), chunk)

    def _encode(self, model: OverDigits, images: Tensor, chunk: int = 2500) -> Tensor:
        return in_chunks(lambda s: model.encoder(images[s].unsqueeze(0)), len(images), chunk)

    def evaluate(self, model: OverDigits) -> Metrics:
        val_feats = self._encode(model, self.val_images)
        pred = self._predict(model, val_feats, self.val_index)
        out = {"validation": (pred - self.label(self.val_labels[self.val_index])).square().mean((1, 2))}
        test_feats = self._encode(model, self.test_images)
        for L, index in self.test_index.items():
            pred = self._predict(model, test_feats, index)
            target = self.label(self.test_labels[index])
            if L == 1:
                hit = (pred.round() == target).all(-1).float()
                out["accuracy_1"] = 100 * hit.mean(1)
            else:
                out[f"mae_{L}"] = (pred - target).abs().mean((1, 2))
        return out


def factory_for(cfg: DictConfig):
    """Builds the digit encoder followed by ``cfg.model`` as the recurrent core."""
    core_factory = model_factory(cfg.model)

    def factory(in_features: int, out_features: int, members: int, recurrent: bool) -> nn.Module:
        encoder = DigitEncoder(cfg.task.encoder.features, members, tuple(cfg.task.encoder.channels),
                               cfg.task.encoder.hidden)
        core = core_factory(in_features=cfg.task.encoder.features, out_features=out_features,
                            members=members, recurrent=True)  # fmt: skip
        return OverDigits(encoder, core)

    return factory


def run(cfg: DictConfig, log) -> dict:
    seeds = list(cfg.seeds)
    kind = cfg.task.kind
    problem = SeriesProblem(cfg.task, seeds, Path(cfg.data_dir))
    summary, _ = train_cell(cfg, problem, 28 * 28, OUTPUTS[kind], True, log, select="validation",
                            factory=factory_for(cfg))  # fmt: skip
    return {**summary, "kind": kind}
