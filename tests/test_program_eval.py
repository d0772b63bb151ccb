"""Program evaluation: generated programs mean what their labels say, domains are as configured,
and a tiny Figure 4 is drawn from a real sweep."""

from __future__ import annotations

import contextlib
import json
import io

import pandas as pd
import pytest
import torch

from tasks.programs import generate as programs
from tasks.programs.evaluation import ProgramProblem

from .conftest import build_table, cli, compose


def to_python(text: str) -> str:
    """The same program as Python source, to check ``programs.evaluate`` against Python itself."""
    if not text.startswith("a="):
        return f"print({text})"
    assign_a, assign_b, branch, printed = text.split(";")
    cond, rest = branch.split(":", 1)
    then, otherwise = rest.split(" else:")
    return "\n".join([assign_a, assign_b, f"{cond}:", f"    {then}", "else:", f"    {otherwise}", printed])


TINY = ["progress=false", "task.steps=4", "task.eval_every=2", "seeds=2", "task.test_size=10",
        "task.validation_size=10", "task.test_domains=[100,1000]", "task.batch_size=8"]  # a sweep in seconds


def python_says(text: str) -> int:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(to_python(text), {})  # our own generated programs, nothing else
    return int(out.getvalue())


@pytest.mark.parametrize("kind", programs.KINDS)
def test_every_generated_program_evaluates_to_its_label_in_python(kind):
    g = torch.Generator().manual_seed(0)
    for domain in (2, 100, 10_000):
        for text in programs.generate(kind, 300, domain, g):
            assert programs.evaluate(text) == python_says(text), text
            assert set(text) <= set(programs.ALPHABET)


def test_program_grammar_example():
    text = "a=17;b=42;if a<b:c=a+b else:c=b-a;print(c)"
    assert programs.evaluate(text) == 59 == python_says(text)
    assert programs.evaluate("a=50;b=42;if a<b:c=a+b else:c=b-a;print(c)") == -8


@pytest.mark.parametrize("kind", programs.KINDS)
def test_domains_are_as_configured(kind):
    cfg = compose(["task=program_eval", f"task.kind={kind}", "task.test_domains=[10,1000]",
                   "task.test_size=200", "task.batch_size=300"])
    p = ProgramProblem(cfg.task, [0])
    ids, y = p.batch()
    assert ids.shape[0] == 300 and y.shape == (1, 300, 1)
    alphabet = {i + 1: ch for i, ch in enumerate(programs.ALPHABET)}

    def operands(row):
        text = "".join(alphabet[i] for i in row.tolist() if i)
        if kind == "addition":
            return [int(v) for v in text.split("+")]
        return [int(text.split(";")[0][2:]), int(text.split(";")[1][2:])]

    assert max(max(operands(r)) for r in ids) < 100
    assert max(max(operands(r)) for r in p.tests[10][0]) < 10
    big = [max(operands(r)) for r in p.tests[1000][0]]
    assert max(big) < 1000 and max(big) >= 900  # uses the whole domain
    assert (ids[:, -1] != programs.PAD).all()  # rows end on their last character


def test_no_branch_is_a_constant():
    g = torch.Generator().manual_seed(0)
    branches = {t.split(":c=")[k].split(" ")[0].split(";")[0]
                for t in programs.generate("program", 500, 100, g) for k in (1, 2)}
    assert branches == {"a+b", "b+a", "a-b", "b-a"}


def test_non_finite_answers_match_no_label():
    from nalu.scoring import rounded

    pred = torch.tensor([0.4, float("nan"), float("inf"), -float("inf"), 3e7, -2.6])
    labels = torch.tensor([0.0, 0.0, 0.0, 0.0, 3e7, -3.0])
    assert (rounded(pred) == labels).tolist() == [True, False, False, False, False, True]


@pytest.mark.parametrize("override", ["task.test_domains=[]", "task.test_size=0", "task.batch_size=0",
                                      "task.train_domain=1"])
def test_bad_sizes_are_refused(override):
    from nalu.errors import ConfigError

    with pytest.raises(ConfigError):
        ProgramProblem(compose(["task=program_eval", override]).task, [0])


def test_bad_kind_is_refused_with_the_valid_ones(workdir):
    p = cli(["-m", "suite.run", "task=program_eval", "task.kind=sorting", "progress=false"], workdir, check=False)
    assert p.returncode == 2 and "addition" in p.stderr and "program" in p.stderr


def test_tiny_figure4_end_to_end(workdir):
    cli(["-m", "suite.run", "-m", "+experiment=figure4", "model=ugrnn,dnc_nalu"] + TINY, workdir)
    out = workdir / "results"
    out.mkdir()
    build_table("figure4", [workdir / "multirun/figure4"], workdir, out)
    df = pd.read_csv(out / "figure4.csv")
    assert set(df.model) == {"ugrnn", "dnc_nalu"} and set(df.kind) == {"addition", "program"}
    assert set(df.domain) == {100, 1000} and (df.seeds == 2).all()
    assert (out / "figure4.png").stat().st_size > 0
    assert "DNC + NALU" in (out / "figure4.md").read_text()


def test_numbers_encoding_makes_each_literal_one_token_with_its_value():
    x = programs.encode_numbers(["17+42", "a=3;b=105;if a<b:c=a+b else:c=b-a;print(c)"])
    ids = programs.chars_to_ids()
    short = x[0, x[0, :, 0] != programs.PAD]  # the addition, left padding dropped
    assert short.tolist() == [[programs.NUMBER, 17.0], [ids["+"], 0.0], [programs.NUMBER, 42.0]]
    long = x[1]
    literals = long[long[:, 0] == programs.NUMBER, 1].tolist()
    assert literals == [3.0, 105.0]  # a=3, b=105; every other token is a character with value 0
    assert (long[long[:, 0] != programs.NUMBER, 1] == 0).all()
    assert len(long) == len("a=3;b=105;if a<b:c=a+b else:c=b-a;print(c)") - 2  # "105": 3 chars, 1 token


@pytest.mark.parametrize("model", ["nalu", "lstm_nalu"])
def test_numbers_encoding_trains_end_to_end(workdir, model):
    cli(["-m", "suite.run", "-m", "+experiment=figure4_numbers", f"model={model}", "task.kind=program"] + TINY, workdir)
    (metrics,) = [json.loads(p.read_text()) for p in (workdir / "multirun/figure4_numbers").rglob("metrics.json")]
    assert metrics["encoding"] == "numbers" and metrics["config"]["task"]["encoding"] == "numbers"
    out = workdir / "results"
    build_table("figure4", [workdir / "multirun/figure4_numbers"], workdir, out, "figure4_numbers")
    assert sorted(p.name for p in out.iterdir()) == ["figure4_numbers.csv", "figure4_numbers.md", "figure4_numbers.png"]
    assert "each integer literal as one token carrying its value" in (out / "figure4_numbers.md").read_text()


def builder_set_by_hand() -> torch.nn.Module:
    """A recurrent NALU -> NAC cell (``model=nalu_builder``'s layers, narrowed to what the solution
    needs) with weights that compute ``a + b`` from the characters of ``"a+b"``. The state is
    ``(s, v)``: the finished operands' sum and the number being read. A digit ``k`` makes
    ``v <- 10 * v + k``; ``+`` makes ``s <- s + v`` and ``v <- 0``; the read-out is ``s + v``.

    Embedding entries per token (``e``): two factors of the digit's scale (sqrt(10) each, 0 for
    other tokens: a product of two clears ``v`` to ``eps**2 * v``, one would leave ``eps * v``,
    which later digits multiply by 10 each), a flush flag (1 for ``+``), the digit's value, and a
    constant 40 that saturates the NALU's gates."""
    from nalu.stack import units
    from tasks.programs.evaluation import CharsToNumber
    from nalu.ensemble import Embedding

    big = 20.0  # tanh(20) * sigmoid(20) is 1.0 in float32
    stack = units(["nalu", "nac", "nac"], in_features=5, out_features=1, members=1, hidden=[4, 2],
                  recurrent=True, step_depth=2)
    emb = Embedding(programs.NUMBER + 1, 5, 1)
    ids = programs.chars_to_ids()
    table = torch.zeros(programs.NUMBER + 1, 5)
    table[:, 4] = 40.0
    for k in range(10):
        table[ids[str(k)], :2] = 10 ** 0.5
        table[ids[str(k)], 3] = k
    table[ids["+"], 2] = 1.0
    #            e0 e1 e2 e3 e4  s  v
    mult = [[1, 1, 0, 0, 0, 0, 1],   # u1 = e0 * e1 * v: 10 v after a digit, ~0 after "+"
            [0, 0, 1, 0, 0, 0, 1],   # u2 = e2 * v: v after "+", ~0 after a digit
            [0, 0, 0, 0, 0, 1, 0],   # u3 = s (additive path)
            [0, 0, 0, 1, 0, 0, 0]]   # u4 = the digit's value (additive path)
    gate = [-1, -1, 1, 1]            # per output, times e4 = 40: multiplicative for u1, u2
    cell_nalu, cell_nac, readout = stack.layers
    with torch.no_grad():
        emb.weight[0] = table
        cell_nalu.nac.W_hat[0] = big * torch.tensor(mult, dtype=torch.float32)
        cell_nalu.nac.M_hat[0] = big
        cell_nalu.G[0] = 0.0
        cell_nalu.G[0, :, 4] = torch.tensor(gate, dtype=torch.float32)
        cell_nac.W_hat[0] = big * torch.tensor([[0, 1, 1, 0], [1, 0, 0, 1]], dtype=torch.float32)  # s, v
        cell_nac.M_hat[0] = big
        readout.W_hat[0] = big
        readout.M_hat[0] = big
    return CharsToNumber(emb, stack)


def test_builder_cell_set_by_hand_adds_numbers_it_reads_digit_by_digit():
    model = builder_set_by_hand()
    assert model(programs.encode(["17+42"])).item() == pytest.approx(59, abs=1e-3)
    g = torch.Generator().manual_seed(0)
    texts = programs.generate("addition", 500, 10_000, g)  # operands of up to 4 digits, left-padded
    pred = model(programs.encode(texts)).view(-1)
    y = torch.tensor([programs.evaluate(t) for t in texts], dtype=torch.float32)
    assert (pred - y).abs().max() < 0.05
    # a one-layer cell cannot do this: the plain recurrent NALU's layer picks add or multiply per output


def test_builder_variant_trains_end_to_end(workdir):
    cli(["-m", "suite.run", "-m", "+experiment=figure4_builder", "task.kind=addition"] + TINY, workdir)
    runs = workdir / "multirun/figure4_builder"
    models = sorted(json.loads(p.read_text())["config"]["model"]["name"] for p in runs.rglob("metrics.json"))
    assert models == ["nalu", "nalu_builder"]
    out = workdir / "results"
    build_table("figure4", [runs], workdir, out, "figure4_builder")
    assert "recurrent NALU -> NAC cell" in (out / "figure4_builder.md").read_text()
