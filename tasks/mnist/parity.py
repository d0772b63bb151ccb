"""MNIST parity with a final-layer ablation (Trask et al. 2018, Section 4.6, Table 4).

The paper defers the task to prior work (Segui et al. 2015) and gives no definition, so this one
is ours: an input is ``digits`` MNIST digits (a 2x2 canvas cut into its quadrants, by default);
the question is whether their sum is odd. Every digit goes through the same convolutional encoder
(``baselines.convnet``), the ``digits x features`` outputs are concatenated, and the *final
layer* under study maps them to one number ``s``, trained with squared error against a count:

- ``target=odd_count`` (default): the number of odd digits. The sum is odd exactly when that
  count is odd, and a sum of per-digit indicators is what an accumulator computes.
- ``target=sum``: the digit sum itself. Harder: the encoder must regress every digit's value
  exactly from one number's supervision (at chance within our budget; see the README).

The reported score is parity accuracy, ``round(s) mod 2`` against the parity of the true sum, and
``count_accuracy`` is the share where ``round(s)`` equals the target, both on inputs built from
the MNIST test images.

Final layers (``task.final_layer``, see ``baselines.constrained``): ``wx_plus_b``,
``sigmoid_w_x_plus_b``, ``sigmoid_w_x``, ``tanh_w_x_plus_b``, ``tanh_w_x``, ``nac_plus_b``, ``nac``.
"""

from __future__ import annotations

from pathlib import Path

import torch
from omegaconf import DictConfig
from torch import Tensor, nn

from baselines.constrained import ConstrainedLinear
from baselines.convnet import DigitEncoder, OverDigits
from nalu.ensemble import in_chunks
from nalu.errors import ConfigError, check_choice
from nalu.scoring import rounded
from nalu.seeding import generator
from nalu.train import Metrics
from tasks.mnist import data as mnist_data
from tasks import Task
from tasks.cell import train_cell
from tasks.metrics import ACCURACY, VALIDATION

TARGETS = ("odd_count", "sum")


class ParityProblem(mnist_data.DigitsProblem):
    def __init__(self, cfg: DictConfig, seeds: list[int], data_root: Path):
        self.members, self.batch_size, self.k = len(seeds), cfg.batch_size, cfg.digits
        self.odd = check_choice("parity target", cfg.target, TARGETS) == "odd_count"
        if self.k < 1:
            raise ConfigError(f"digits must be >= 1, got {self.k}")
        super().__init__(data_root, cfg.validation_images)
        self.gen = generator("mnist_parity", "train_data", cfg.data_seed)
        g_val, g_test = generator("mnist_parity", "val"), generator("mnist_parity", "test")
        self.val_index = torch.randint(0, len(self.val_images), (cfg.validation_samples, self.k), generator=g_val)
        self.test_index = torch.randint(0, len(self.test_images), (cfg.test_samples, self.k),
                                        generator=g_test)

    def target(self, labels: Tensor) -> Tensor:
        """What ``s`` is trained to output for digit labels ``[N, digits]``: ``[N]``."""
        return (labels % 2 if self.odd else labels).sum(-1)

    def batch(self) -> tuple[Tensor, Tensor]:
        idx = torch.randint(0, len(self.train_images), (self.batch_size, self.k), generator=self.gen)
        idx = idx.to(self.train_images.device)  # drawn on the CPU on every device: the same stream
        return self.train_images[idx].unsqueeze(0), self.target(self.train_labels[idx]).unsqueeze(1).float()[None]

    @staticmethod
    def _predict(model: nn.Module, images: Tensor, index: Tensor, chunk: int = 1000) -> Tensor:
        return in_chunks(lambda s: model(images[index[s]].unsqueeze(0)), len(index), chunk)[..., 0]

    def evaluate(self, model: nn.Module) -> Metrics:
        val_target = self.target(self.val_labels[self.val_index]).float()
        out = {VALIDATION: (self._predict(model, self.val_images, self.val_index) - val_target).square().mean(1)}
        test_target = self.target(self.test_labels[self.test_index])
        s = self._predict(model, self.test_images, self.test_index)
        answer = rounded(s)
        out[ACCURACY] = 100 * (answer.remainder(2) == test_target.remainder(2)).float().mean(1)
        out["count_accuracy"] = 100 * (answer == test_target).float().mean(1)
        return out


def run(cfg: DictConfig, log) -> dict:
    seeds = list(cfg.seeds)
    t = cfg.task
    problem = ParityProblem(t, seeds, Path(cfg.data_dir))

    def factory(in_features: int, out_features: int, members: int, recurrent: bool) -> nn.Module:
        encoder = DigitEncoder(t.encoder.features, members, tuple(t.encoder.channels), t.encoder.hidden)
        final = ConstrainedLinear(t.digits * t.encoder.features, 1, members, t.final_layer)
        return OverDigits(encoder, final, flatten=True)

    summary, _ = train_cell(cfg, problem, 28 * 28, 1, False, log, select=VALIDATION, factory=factory)
    return {**summary, "final_layer": t.final_layer}


TASK = Task(run=run, numerics=1)  # bump with any change to its numbers (tests/test_golden.py)
