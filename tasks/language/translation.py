"""Number words to number (Trask et al. 2018, Section 4.3, Table 3 and Figure 3).

An English number ("seven hundred and twenty one", see ``tasks.language.number_words``) is read one token
at a time: a learned embedding per token, then a single LSTM layer whose read-out is linear
(``model=lstm_sum``: the paper's summed-state LSTM; ``model=lstm``: the last state), a NAC
(``model=lstm_nac``) or a NALU (``model=lstm_nalu``). The model is trained with squared error on
its output after the last token, on the whole training set at every step (as in the paper's
Appendix D), and scored by mean absolute error on the train, validation and test numbers.

The read-out after *every* token is what Figure 3 shows: for ``figure_numbers`` that fall in the
test split, each seed's running prediction (at its best validation step) goes to metrics.json.
"""

from __future__ import annotations

import torch
from omegaconf import DictConfig
from torch import Tensor, nn

from nalu.device import move, of
from nalu.ensemble import Embedding
from nalu.errors import ConfigError
from nalu.train import Metrics
from tasks.language import number_words as nw
from tasks import Task
from tasks.cell import model_factory, train_cell
from tasks import metrics
from tasks.metrics import VALIDATION


class WordsToNumber(nn.Module):
    """``[B, T]`` token ids (0 pads the end) -> ``[M, B, 1]``, the read-out after the last token."""

    def __init__(self, embedding: Embedding, core: nn.Module):
        super().__init__()
        if not hasattr(core, "per_step_from_gates"):
            raise ConfigError("the translation task needs a gated recurrent model with a per-token "
                              "read-out: lstm, lstm_sum, lstm_nac, lstm_nalu, gru or ugrnn")
        self.embedding, self.core = embedding, core

    def running(self, tokens: Tensor) -> Tensor:
        """``[M, B, T]``: the prediction after every token. The LSTM's input projection is computed
        once per vocabulary entry and looked up, not once per position (the same arithmetic)."""
        gates = self.core.cell.project(self.embedding.weight)  # [M, vocabulary, gates * H]
        return self.core.per_step_from_gates(gates[:, tokens])[..., 0]

    def forward(self, tokens: Tensor) -> Tensor:
        last = (tokens != 0).sum(1) - 1
        run = self.running(tokens)
        return run.gather(2, last.view(1, -1, 1).expand(run.shape[0], -1, 1))


class TranslationProblem:
    def __init__(self, cfg: DictConfig, seeds: list[int]):
        self.members = len(seeds)
        if len(cfg.numbers) != 2:
            raise ConfigError(f"task.numbers is [lowest, highest], got {list(cfg.numbers)}")
        numbers = nw.check_range(*cfg.numbers)
        self.split = nw.split(numbers, cfg.split.train, cfg.split.validation, cfg.split.seed)
        self.vocabulary = nw.vocabulary(numbers)
        self.ids = {w: i for i, w in enumerate(self.vocabulary)}
        self.sets = {name: self.encode(getattr(self.split, name)) for name in ("train", "validation", "test")}

    def to(self, device: torch.device) -> TranslationProblem:
        self.sets = move(self.sets, device)
        return self

    def encode(self, numbers: list[int]) -> tuple[Tensor, Tensor]:
        """Token ids ``[N, T]`` (padded with 0) and targets ``[1, N, 1]``."""
        T = max(len(nw.words(n)) for n in numbers)
        tokens = torch.zeros(len(numbers), T, dtype=torch.long)
        for row, n in enumerate(numbers):
            ids = [self.ids[w] for w in nw.words(n)]
            tokens[row, : len(ids)] = torch.tensor(ids)
        return tokens, torch.tensor(numbers, dtype=torch.float32).view(1, -1, 1)

    def batch(self) -> tuple[Tensor, Tensor]:
        return self.sets["train"]

    def evaluate(self, model: nn.Module) -> Metrics:
        out = {}
        for name, (tokens, y) in self.sets.items():
            err = model(tokens) - y
            if name == "validation":
                out[VALIDATION] = err.square().mean((1, 2))
            out[metrics.mae(name)] = err.abs().mean((1, 2))
        return out


def run(cfg: DictConfig, log) -> dict:
    return run_group([cfg], log)[0]


# config values in which the cells of one fused group may differ (``suite.runner.group_key``): the
# grid's two learning rates train as one model of members = cells x seeds, each at its own rate
FUSES = ("optimizer.lr", "seeds")


def run_group(cfgs: list[DictConfig], log) -> list[dict]:
    """Train cells that differ only in ``FUSES`` as one batched model, each member at its cell's
    learning rate (``nalu.optim.MemberAdam``: bitwise the update of Adam at that rate), and return
    each cell's metrics. Members never interact, so a cell's seeds train as they would alone, up
    to the rounding of matrix products of another member count."""
    cfg, t = cfgs[0], cfgs[0].task
    seeds = [s for c in cfgs for s in c.seeds]
    lrs = [float(c.optimizer.lr) for c in cfgs for _ in c.seeds]
    problem = TranslationProblem(t, seeds)
    core_factory = model_factory(cfg.model)

    def factory(in_features: int, out_features: int, members: int, recurrent: bool) -> nn.Module:
        core = core_factory(in_features=t.embedding, out_features=1, members=members, recurrent=True)
        return WordsToNumber(Embedding(len(problem.vocabulary), t.embedding, members), core)

    summary, result = train_cell(cfg, problem, t.embedding, 1, True, log, select=VALIDATION, factory=factory,
                                 seeds=seeds, lrs=lrs)
    test = set(problem.split.test)
    shown = [n for n in t.figure_numbers if n in test]
    running: list = []
    if shown:
        tokens, _ = problem.encode(shown)
        with torch.no_grad():
            best = result.best_model.running(tokens.to(of(result.best_model))).cpu()  # [M, len(shown), T]
        running = [[r[: len(nw.words(n))].tolist() for r, n in zip(member, shown)] for member in best]
    sizes = {k: len(getattr(problem.split, k)) for k in ("train", "validation", "test")}
    members = summary.pop("members")
    out, start = [], 0
    for c in cfgs:
        cell = slice(start, start + len(c.seeds))
        figure = {"numbers": shown, "tokens": [nw.words(n) for n in shown], "running": running[cell]}
        out.append({**summary, "members": members[cell], "split": sizes, "figure3": figure})
        start += len(c.seeds)
    return out


TASK = Task(run=run, run_group=run_group, fuses=FUSES, numerics=1)  # bump with any change to its numbers (tests/test_golden.py)
