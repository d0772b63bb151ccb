"""Counting the even digits on an MNIST canvas: the task Table 4 of Trask et al. (2018, Section
4.6) defers to (Seguí, Pujol & Vitrià 2015), with the network's final layer under study.

A canvas (``tasks.mnist.canvas``) holds 0..5 MNIST digits without overlap; the target is how many
of them are even. A small counting CNN (``baselines.convnet.CanvasEncoder``) ends in the *final
layer* under study (``task.final_layer``, the seven variants of ``baselines.constrained``),
which outputs one number trained with squared error on the count; accuracy (%) is the share of
test canvases whose rounded output equals the count. Training canvases are drawn from the MNIST
training images at every step (their layouts from a fixed pool of ``layouts`` drawn once, their
digits fresh), validation canvases from the held-out training images, test canvases from the
MNIST test images; both fixed sets are drawn once from fixed seeds.

``final_layer=segui`` is Seguí et al.'s own head: the count cast as classification, a linear
layer to ``max_digits + 1`` logits trained with cross-entropy (the problem's ``loss``), the
answer the most likely count; its validation metric is the cross-entropy.
"""

from __future__ import annotations

from pathlib import Path

import torch
from omegaconf import DictConfig
from torch import Tensor, nn
from torch.nn import functional as F

from baselines.constrained import VARIANTS, ConstrainedLinear, is_unit
from baselines.convnet import INITS, CanvasEncoder
from nalu import ensemble
from nalu.ensemble import in_chunks
from nalu.errors import ConfigError, check_choice
from nalu.scoring import rounded
from nalu.seeding import generator
from nalu.train import Metrics, squared_error
from nalu.units import resolve
from tasks import Task
from tasks.cell import train_cell
from tasks.metrics import ACCURACY, VALIDATION
from tasks.mnist import canvas as mnist_canvas
from tasks.mnist import data as mnist_data

SEGUI = "segui"  # Seguí et al.'s softmax head, beside the final layers of baselines.constrained


def check_task(t: DictConfig) -> None:
    """Refuse a task config this problem cannot be built from."""
    if is_unit(t.final_layer):  # a unit from outside: imported and held to the unit protocol now
        resolve(t.final_layer)
    else:
        check_choice("final layer", t.final_layer, [*VARIANTS, SEGUI])
    check_choice("encoder init", t.encoder.init, INITS)
    if not 0 <= t.min_digits <= t.max_digits:
        raise ConfigError(f"need 0 <= min_digits <= max_digits, got {t.min_digits}, {t.max_digits}")


class CountEvenProblem(mnist_data.DigitsProblem):
    ON_DEVICE = ("val_canvases", "val_count", "test_canvases", "test_count")

    def __init__(self, cfg: DictConfig, seeds: list[int], data_root: Path):
        check_task(cfg)
        self.members, self.batch_size, self.size = len(seeds), cfg.batch_size, cfg.canvas
        self.digits = (cfg.min_digits, cfg.max_digits)
        self.classify = cfg.final_layer == SEGUI
        super().__init__(data_root, cfg.validation_images)
        self.gen = generator("mnist_count_even", "train_data", cfg.data_seed)
        self.layouts = mnist_canvas.layouts(cfg.layouts, self.gen, self.size, *self.digits)
        val = self._fixed(self.val_images, self.val_labels, cfg.validation_samples, "validation")
        test = self._fixed(self.test_images, self.test_labels, cfg.test_samples, "test")
        self.val_canvases, self.val_count, self.val_corners = val.images, val.even.float(), val.corners
        self.test_canvases, self.test_count, self.test_corners = test.images, test.even.float(), test.corners

    def _fixed(self, images: Tensor, labels: Tensor, n: int, name: str) -> mnist_canvas.Canvases:
        return mnist_canvas.draw(images, labels, n, generator("mnist_count_even", name), self.size, *self.digits)

    def batch(self) -> tuple[Tensor, Tensor]:
        which = torch.randint(0, len(self.layouts), (self.batch_size,), generator=self.gen)
        pick = torch.randint(0, len(self.train_images), (self.batch_size, self.digits[1]), generator=self.gen)
        c = mnist_canvas.render(self.train_images, self.train_labels, self.layouts[which], pick, self.size)
        return c.images.unsqueeze(0), c.even.float().view(1, -1, 1)

    def loss(self, output: Tensor, target: Tensor) -> Tensor:
        """Each member's training loss ``[M]``: squared error on the count, or, for Seguí's
        softmax head, cross-entropy over the counts."""
        if not self.classify:
            return squared_error(output, target)
        return cross_entropy(output, target[..., 0])

    @staticmethod
    def _predict(model: nn.Module, canvases: Tensor, chunk: int = 500) -> Tensor:
        """``[M, N, outputs]``: one number per canvas, or the logits of every count."""
        return in_chunks(lambda s: model(canvases[s].unsqueeze(0)), len(canvases), chunk)

    def evaluate(self, model: nn.Module) -> Metrics:
        val, test = self._predict(model, self.val_canvases), self._predict(model, self.test_canvases)
        if self.classify:
            answer = test.argmax(-1).float()
            out = {VALIDATION: cross_entropy(val, self.val_count[None].expand(len(val), -1))}
        else:
            val, test = val[..., 0], test[..., 0]
            answer = rounded(test)
            out = {VALIDATION: (val - self.val_count).square().mean(1)}
        out[ACCURACY] = 100 * (answer == self.test_count).float().mean(1)
        out["mae"] = (answer - self.test_count).abs().mean(1) if self.classify else (test - self.test_count).abs().mean(1)
        return out


def cross_entropy(logits: Tensor, count: Tensor) -> Tensor:
    """Mean cross-entropy per member: ``logits [M, N, classes]``, ``count [M|1, N]`` -> ``[M]``."""
    target = count.long().expand(logits.shape[0], -1)
    return F.cross_entropy(logits.flatten(0, 1), target.flatten(), reduction="none").view(target.shape).mean(1)


class CountingNet(nn.Module):
    """The counting CNN with the final layer under study: canvases ``[M|1, B, S, S]`` -> ``[M, B, 1]``."""

    def __init__(self, encoder: CanvasEncoder, final: nn.Module):
        super().__init__()
        self.encoder, self.final = encoder, final

    def forward(self, canvases: Tensor) -> Tensor:
        return self.final(self.encoder(canvases))


def factory_for(cfg: DictConfig):
    """Builds the counting network up to its last layer, then ``task.final_layer``."""
    t = cfg.task

    def factory(in_features: int, out_features: int, members: int, recurrent: bool) -> nn.Module:
        encoder = CanvasEncoder(t.canvas, t.encoder.features, members, tuple(t.encoder.channels), t.encoder.init,
                                bool(t.encoder.get("shared_first_conv", False)))
        if t.final_layer == SEGUI:  # the count as a class: logits over 0..max_digits
            return CountingNet(encoder, ensemble.Linear(t.encoder.features, t.max_digits + 1, members))
        return CountingNet(encoder, ConstrainedLinear(t.encoder.features, 1, members, t.final_layer))

    return factory


def run(cfg: DictConfig, log) -> dict:
    t = cfg.task
    problem = CountEvenProblem(t, list(cfg.seeds), Path(cfg.data_dir))
    summary, _ = train_cell(cfg, problem, t.canvas * t.canvas, 1, False, log, select=VALIDATION,
                            factory=factory_for(cfg))
    return {**summary, "final_layer": t.final_layer}


TASK = Task(run=run, check=lambda cfg: check_task(cfg.task), numerics=1)  # bump with any change to its numbers (tests/test_golden.py)
