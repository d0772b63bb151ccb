"""Number words to number: the words, the split, the model's per-token read-out, a tiny Table 3."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from baselines.rnn import GatedRNN
from nalu.ensemble import Embedding, init_members
from nalu.errors import ConfigError
from tasks.language import number_words as nw
from tasks.language.translation import TranslationProblem, WordsToNumber

from .conftest import build_table, cli, compose


def test_words_match_an_independent_library_for_every_number():
    num2words = pytest.importorskip("num2words").num2words
    for n in range(1000):
        assert " ".join(nw.words(n)) == num2words(n, lang="en").replace("-", " "), n


def test_words_examples_and_range():
    assert nw.words(721) == ["seven", "hundred", "and", "twenty", "one"]
    assert nw.words(900) == ["nine", "hundred"] and nw.words(40) == ["forty"]
    with pytest.raises(ValueError):
        nw.words(1000)


def test_paper_split_sizes_cover_and_seed():
    numbers = list(range(1000))
    s = nw.split(numbers, 169, 200, seed=0)
    assert (len(s.train), len(s.validation), len(s.test)) == (169, 200, 631)
    assert set(s.train) | set(s.validation) | set(s.test) == set(numbers)
    assert not set(s.train) & set(s.validation) and not set(s.train) & set(s.test)
    assert not set(s.validation) & set(s.test)
    assert set(range(20)) <= set(s.train)
    assert {w for n in s.train for w in nw.words(n)} == set(nw.vocabulary(numbers)[1:])
    assert nw.split(numbers, 169, 200, seed=0) == s
    assert nw.split(numbers, 169, 200, seed=1).test != s.test


def test_split_adjusts_a_sample_that_misses_tokens():
    # 25 training numbers: 0..19 plus 5; "hundred", "and" and the 8 tens words need adjusting
    # in most draws, and 5 numbers can hold at most 5 tens words: refused, with the reason
    with pytest.raises(ConfigError, match="cannot hold every token"):
        nw.split(list(range(1000)), 25, 200, seed=0)
    # over 0..99 the 8 tens words fit in 8 sampled numbers whatever the draw
    for seed in range(20):
        s = nw.split(list(range(100)), 28, 20, seed=seed)
        assert {w for n in s.train for w in nw.words(n)} == set(nw.vocabulary(list(range(100)))[1:])


@pytest.mark.parametrize("bad", [(0, 1000), (-1, 10), (50, 10)])
def test_range_outside_0_999_is_refused(bad):
    with pytest.raises(ConfigError, match="0..999"):
        nw.check_range(*bad)


def test_bad_translation_config_gives_one_line_errors(workdir):
    for override in ["task.numbers=[0,1200]", "task.split.train=10"]:
        p = cli(["-m", "suite.run", "task=translation", override, "progress=false"], workdir, check=False)
        assert p.returncode == 2, p.stderr
        line, = p.stderr.strip().splitlines()
        assert line.startswith("error:")
    p = cli(["-m", "suite.run", "task=translation", "model=nac", "progress=false"], workdir, check=False)
    assert p.returncode == 2 and "lstm_nalu" in p.stderr


def model(readout: str, readout_state: str = "last", members: int = 2) -> WordsToNumber:
    core = GatedRNN(6, 1, members, [5], "lstm", readout_state, True, readout)
    m = WordsToNumber(Embedding(9, 6, members), core)
    init_members(m, list(range(members)))
    return m


@pytest.mark.parametrize("readout", ["linear", "nac", "nalu"])
@pytest.mark.parametrize("readout_state", ["last", "sum"])
def test_running_read_out_matches_the_plain_model(readout, readout_state):
    """The vocabulary-projected per-token read-out equals running the LSTM on the embeddings,
    and the training output is the read-out after each sequence's own last token."""
    m = model(readout, readout_state)
    tokens = torch.tensor([[3, 1, 4, 0, 0], [2, 7, 1, 8, 2], [5, 0, 0, 0, 0]])
    run = m.running(tokens)
    plain = m.core.per_step(m.embedding(tokens))[..., 0]
    torch.testing.assert_close(run, plain)
    out = m(tokens)
    assert out.shape == (2, 3, 1)
    torch.testing.assert_close(out[:, :, 0], torch.stack([run[:, 0, 2], run[:, 1, 4], run[:, 2, 0]], 1))
    torch.testing.assert_close(m.core(m.embedding(tokens[1:2]))[:, 0, 0], run[:, 1, -1])


def test_problem_batches_the_whole_training_set():
    cfg = compose(["task=translation"])
    p = TranslationProblem(cfg.task, [0, 1])
    tokens, y = p.batch()
    assert tokens.shape[0] == 169 and y.shape == (1, 169, 1)
    assert sorted(y.flatten().long().tolist()) == p.split.train
    for row in (0, 50, 168):
        n = int(y[0, row, 0])
        assert [p.vocabulary[i] for i in tokens[row].tolist() if i] == nw.words(n)


def test_tiny_table3_end_to_end(workdir):
    tiny = ["progress=false", "task.steps=6", "task.eval_every=3", "seeds=2", "task.lstm_size=4"]
    cli(["-m", "suite.run", "-m", "+experiment=table3", "model=lstm_sum,lstm_nalu"] + tiny, workdir)
    out = workdir / "results"
    build_table("table3", [workdir / "multirun/table3"], workdir, out)
    md = (out / "table3.md").read_text()
    assert "| LSTM + NALU " in md and "/ 0.41" in md and "6 full-batch Adam steps" in md
    df = pd.read_csv(out / "table3.csv")
    row = df[df.model == "lstm_nalu"].iloc[0]
    assert row.candidates == 4 and row.chosen_lstm_size == 4  # 2 learning rates x 2 seeds
    assert (out / "figure3.png").stat().st_size > 0
    fig = pd.read_csv(out / "figure3.csv")
    test = nw.split(list(range(1000)), 169, 200, seed=0).test
    assert len(fig) and set(fig.number) <= set(test)
    assert fig.groupby("number").size().to_dict() == {n: len(nw.words(n)) for n in set(fig.number)}


def test_tiny_table3_paper_end_to_end(workdir):
    """The paper-budget sweep (cut down): its two models at their one grid point, into the folder
    the experiment names, then table3_paper.* and figure3_paper.* beside the default ones."""
    tiny = ["progress=false", "task.steps=6", "task.eval_every=3", "task.eval_late_from=3",
            "task.eval_late_every=3", "seeds=2", "task.lstm_size=4", "hydra.sweep.dir=cells/table3_paper"]
    cli(["-m", "suite.run", "-m", "+experiment=table3_paper"] + tiny, workdir)
    cells = [json.loads(p.read_text()) for p in (workdir / "cells/table3_paper").glob("*/metrics.json")]
    assert sorted((c["model"], c["config"]["optimizer"]["lr"], c["config"]["budget"]) for c in cells) == [
        ("lstm_nalu", 0.01, "paper"), ("lstm_sum", 0.01, "paper")]
    out = workdir / "results"
    build_table("table3", [workdir / "cells/table3_paper"], workdir, out, "table3_paper")
    assert sorted(p.name for p in out.iterdir()) == ["figure3_paper.csv", "figure3_paper.md", "figure3_paper.png",
                                                     "table3_paper.csv", "table3_paper.md"]
    assert "![figure 3](figure3_paper.png)" in (out / "figure3_paper.md").read_text()


@pytest.mark.parametrize("readout", ["nac", "nalu"])
def test_a_compiled_forward_trains_as_the_eager_forward_does(readout):
    """compile_forward: the autograd path's forward through torch.compile, in float64, follows the
    eager path step for step (losses and final weights), over Table 3's full batch, for the read-outs
    of Table 3's models. With inductor's in-place buffers (``nalu.train.SAFE_INDUCTOR`` turns them
    off) the NALU read-out's W_h gradient was wrong, and this test failed."""
    from nalu.train import fit
    from tasks.metrics import VALIDATION

    cfg = compose(["task=translation", "seeds=2"])
    problem = TranslationProblem(cfg.task, [0, 1])
    problem.sets = {k: (tokens, y.double()) for k, (tokens, y) in problem.sets.items()}
    runs = []
    for compiled in (False, True):
        m = WordsToNumber(Embedding(len(problem.vocabulary), 6, 2), GatedRNN(6, 1, 2, [3], "lstm", "sum", True, readout))
        init_members(m, [0, 1])
        m = m.double()
        optimizer = torch.optim.Adam(m.parameters(), lr=1e-2)
        losses = []
        fit(m, problem, optimizer, steps=4, eval_every=2, progress=False, compile_forward=compiled,
            log=lambda step, metrics: losses.append(metrics[VALIDATION].clone()))
        runs.append((torch.stack(losses), [p.detach().clone() for p in m.parameters()]))
    (eager_losses, eager_weights), (losses, weights) = runs
    torch.testing.assert_close(losses, eager_losses, rtol=1e-9, atol=0)
    for a, b in zip(eager_weights, weights):
        torch.testing.assert_close(b, a, rtol=1e-9, atol=1e-12)


def test_cells_of_two_learning_rates_train_as_one_model_each_seed_as_it_would_alone():
    """A grid point's two rates share a group key (the fused launcher trains them as one model,
    members at their cell's rate: nalu.optim.MemberAdam); each cell's seeds end as they do
    trained alone, up to the rounding of matrix products of another member count."""
    from suite.runner import group_key
    from tasks.language.translation import run, run_group

    class Log:
        name = "test"

        def metrics(self, step, metrics):
            pass

    base = ["task=translation", "model=lstm_nalu", "progress=false", "task.steps=6", "task.eval_every=3",
            "seeds=[0,1]", "task.lstm_size=4", "task.embedding=8"]
    fast, slow = compose(base + ["optimizer.lr=1e-2"]), compose(base + ["optimizer.lr=1e-3"])
    assert group_key(fast) == group_key(slow) != group_key(compose(base + ["task.lstm_size=5"]))
    together = run_group([fast, slow], Log())
    for cfg, cell in zip((fast, slow), together, strict=True):
        alone = run(cfg, Log())
        assert [m["seed"] for m in cell["members"]] == [0, 1] and len(cell["figure3"]["running"]) == 2
        for mine, theirs in zip(cell["members"], alone["members"], strict=True):
            assert mine["best_step"] == theirs["best_step"]
            for k, v in theirs["best"].items():
                assert mine["best"][k] == pytest.approx(v, rel=1e-6), (cfg.optimizer.lr, k)
    assert together[0]["members"][0]["best"] != together[1]["members"][0]["best"]  # the rates did differ
    scheduled = [compose(base + [f"optimizer.lr={lr}", "lr_schedule=cosine"]) for lr in (1e-2, 1e-3)]
    with pytest.raises(ConfigError, match="lr_schedule=cosine rescales one rate"):
        run_group(scheduled, Log())  # refused before any step
