"""Program evaluation (Trask et al. 2018, Section 4.4, Figure 4; Appendix E).

A text from ``tasks.programs`` (``"17+42"``, or a small program with a conditional) is read one
token at a time (``task.encoding``: ``chars``, one per character, or ``numbers``, where each
integer literal is one token carrying its value): a learned embedding per token, then a recurrent model (``model=``:
``ugrnn``, ``lstm``, ``dnc`` with a linear read-out, ``ugrnn_nalu``, ``lstm_nalu``, ``dnc_nalu``
with a NALU read-out, or ``nalu``, a recurrent NALU), whose output after the last character is the
answer. Squared error; fresh programs with operands below ``train_domain`` at every step.

Evaluation: for each operand domain in ``test_domains``, a fixed set of programs; mean absolute
error and exact-match accuracy (%) of the rounded answer. ``validation`` (MSE on held-out programs
of the training domain) picks each seed's best step.
"""

from __future__ import annotations

import torch
from omegaconf import DictConfig
from torch import Tensor, nn

from nalu.device import move
from nalu.ensemble import Embedding, in_chunks
from nalu.errors import ConfigError, check_choice
from nalu.scoring import rounded
from nalu.seeding import generator
from nalu.train import Metrics
from tasks.programs import generate as programs
from tasks import Task
from tasks.cell import model_factory, train_cell
from tasks import metrics
from tasks.metrics import VALIDATION


class CharsToNumber(nn.Module):
    """Token ids ``[B, T]`` (left-padded) -> ``[M, B, 1]``: the core's output after the last. In
    the ``numbers`` encoding the input is ``[B, T, 2]`` (``tasks.programs.generate.encode_numbers``): the
    core reads each token's embedding with its value appended (``embedding + 1`` features)."""

    def __init__(self, embedding: Embedding, core: nn.Module):
        super().__init__()
        self.embedding, self.core = embedding, core

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() == 2:
            return self.core(self.embedding(x))
        emb = self.embedding(x[..., 0].long())  # [M, B, T, E]
        value = x[..., 1:].unsqueeze(0).expand(emb.shape[0], -1, -1, -1)  # [M, B, T, 1]
        return self.core(torch.cat([emb, value], dim=-1))


class ProgramProblem:
    def __init__(self, cfg: DictConfig, seeds: list[int]):
        self.members, self.batch_size = len(seeds), cfg.batch_size
        self.kind = check_choice("program kind", cfg.kind, programs.KINDS)
        self.encoding = check_choice("program encoding", cfg.encoding, programs.ENCODINGS)
        if cfg.train_domain < 2 or not cfg.test_domains or min(cfg.test_domains) < 2:
            raise ConfigError(f"operand domains must be at least 2 (and at least one test domain), got "
                              f"train {cfg.train_domain}, test {list(cfg.test_domains)}")
        for key in ("batch_size", "validation_size", "test_size"):
            if cfg[key] < 1:
                raise ConfigError(f"task.{key} must be at least 1, got {cfg[key]}")
        self.train_domain = cfg.train_domain
        self.gen = generator("program_eval", self.kind, "train_data", cfg.data_seed)
        self.validation = self.fixed_set(cfg.validation_size, cfg.train_domain, "validation")
        self.tests = {int(d): self.fixed_set(cfg.test_size, int(d), f"test{d}") for d in cfg.test_domains}

    def to(self, device: torch.device) -> ProgramProblem:
        self.validation, self.tests = move((self.validation, self.tests), device)
        return self

    def fixed_set(self, n: int, domain: int, name: str) -> tuple[Tensor, Tensor]:
        return self.encode(programs.generate(self.kind, n, domain, generator("program_eval", self.kind, name)))

    def encode(self, texts: list[str]) -> tuple[Tensor, Tensor]:
        y = torch.tensor([programs.evaluate(t) for t in texts], dtype=torch.float32)
        x = programs.encode(texts) if self.encoding == "chars" else programs.encode_numbers(texts)
        return x, y.view(1, -1, 1)

    def batch(self) -> tuple[Tensor, Tensor]:
        return self.encode(programs.generate(self.kind, self.batch_size, self.train_domain, self.gen))

    @staticmethod
    def _predict(model: nn.Module, ids: Tensor, chunk: int = 250) -> Tensor:
        return in_chunks(lambda s: model(ids[s]), len(ids), chunk)

    def evaluate(self, model: nn.Module) -> Metrics:
        ids, y = self.validation
        out = {VALIDATION: (self._predict(model, ids) - y).square().mean((1, 2))}
        for domain, (ids, y) in self.tests.items():
            pred = self._predict(model, ids)
            out[metrics.mae(domain)] = (pred - y).abs().mean((1, 2))
            out[metrics.accuracy_on(domain)] = 100 * (rounded(pred) == y).float().mean((1, 2))
        return out


def run(cfg: DictConfig, log) -> dict:
    seeds, t = list(cfg.seeds), cfg.task
    problem = ProgramProblem(t, seeds)
    core_factory = model_factory(cfg.model)

    width = t.embedding + (problem.encoding == "numbers")  # the value rides beside the embedding

    def factory(in_features: int, out_features: int, members: int, recurrent: bool) -> nn.Module:
        core = core_factory(in_features=width, out_features=1, members=members, recurrent=True)
        return CharsToNumber(Embedding(programs.NUMBER + 1, t.embedding, members), core)

    summary, _ = train_cell(cfg, problem, width, 1, True, log, select=VALIDATION, factory=factory)
    return {**summary, "kind": problem.kind, "encoding": problem.encoding, "domains": sorted(problem.tests)}


TASK = Task(run=run, numerics=1)  # bump with any change to its numbers (tests/test_golden.py)
