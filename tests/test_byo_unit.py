"""A unit from outside the suite (``model=unit model.unit=<module>:<Class>``): resolved by module
or file, held to the unit protocol in one line naming what is missing, and trained end to end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from nalu.ensemble import init_members
from nalu.errors import ConfigError
from nalu.stack import units
from nalu.units import NAU, resolve

from .conftest import ROOT, TINY_ARITHMETIC

EXAMPLE = "examples.units.clipped_adder:ClippedAdder"
EXAMPLE_FILE = str(ROOT / "examples/units/clipped_adder.py") + ":ClippedAdder"


def test_registry_names_and_outside_units_resolve_to_their_classes(monkeypatch):
    assert resolve("nau") is NAU
    with pytest.raises(ConfigError, match="valid: .*nau"):
        resolve("nua")
    monkeypatch.syspath_prepend(str(ROOT))
    by_module, by_file = resolve(EXAMPLE), resolve(EXAMPLE_FILE)
    assert by_module.__name__ == by_file.__name__ == "ClippedAdder"


def test_an_outside_unit_stacks_members_by_seed_and_adds_exactly_when_set_by_hand():
    model = units(EXAMPLE_FILE, in_features=2, out_features=1, members=3, hidden=[])
    init_members(model, [0, 1, 2])
    (W,) = [p for p in model.parameters()]
    assert not torch.equal(W[0], W[1])  # members differ by seed ...
    again = units(EXAMPLE_FILE, in_features=2, out_features=1, members=3, hidden=[])
    init_members(again, [0, 1, 2])
    assert torch.equal(next(again.parameters()), W)  # ... and repeat from it
    with torch.no_grad():
        W.copy_(torch.tensor([[[1.0, 1.0]], [[1.0, -1.0]], [[3.0, 0.0]]]))
    x = torch.tensor([[[3.0, 4.0], [-2.5, 10.0]]])  # [1, B, 2]
    assert model(x).squeeze(-1).tolist() == [[7.0, 7.5], [-1.0, -12.5], [9.0, -7.5]]
    for layer in model.layers:
        layer.after_step(1, torch.zeros(3))
    assert W.abs().max() == 1.0  # its after_step hook clamps


BROKEN = '''
import torch
from torch import nn

class OneArg(nn.Module):
    def __init__(self, n):
        super().__init__()

class NoInit(nn.Module):
    def __init__(self, in_features, out_features, members=1):
        super().__init__()

class DropsMembers(nn.Module):
    def __init__(self, in_features, out_features, members=1):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(members, out_features, in_features))
    def init_member(self, i, g):
        pass
    def forward(self, x):
        return (x @ self.W.transpose(1, 2))[0]
'''


@pytest.mark.parametrize("cls,says", [
    ("Missing", "has no torch module 'Missing'; it has: DropsMembers, NoInit, OneArg"),
    ("OneArg", "its constructor must take (in_features, out_features, members), it takes (n)"),
    ("NoInit", "it has no init_member(i, generator), so its members would not differ by seed"),
    ("DropsMembers", "forward must map [M|1, B, in] to [M, B, out]: inputs [1, 4, 3] and [2, 4, 3] gave [4, 2]"),
])
def test_a_class_off_the_protocol_is_refused_in_one_line_naming_what_is_missing(tmp_path, cls, says):
    (tmp_path / "mine.py").write_text(BROKEN)
    with pytest.raises(ConfigError) as e:
        resolve(f"{tmp_path / 'mine.py'}:{cls}")
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_missing_file_or_module_is_one_line():
    with pytest.raises(ConfigError, match="no file"):
        resolve("nowhere/unit.py:Unit")
    with pytest.raises(ConfigError, match="cannot import no_such_package.units"):
        resolve("no_such_package.units:Unit")


def test_an_outside_unit_trains_end_to_end_from_the_command_line(tmp_path):
    """From the repository root, as the README shows it: a fused sweep over two ops."""
    out = tmp_path / "sweep"
    p = subprocess.run([sys.executable, "-m", "suite.run", "-m", "model=unit", f"model.unit={EXAMPLE}",
                        "task.op=add,sub", "name=byo", f"hydra.sweep.dir={out}", "hydra/launcher=fused",
                        *TINY_ARITHMETIC], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env={"PATH": "/usr/bin:/bin", "WANDB_MODE": "disabled"})
    assert p.returncode == 0, p.stderr
    made = [json.loads(m.read_text()) for m in out.glob("*/metrics.json")]
    assert sorted(m["cell"] for m in made) == ["static/add/unit", "static/sub/unit"]
    assert all(m["complete"] and m["config"]["model"]["unit"] == EXAMPLE for m in made)
    assert made[0]["fused_with"]  # one group, as the suite's own units


def test_make_benchmark_unit_scores_it_beside_the_suites_units(tmp_path):
    """The make target as the README shows it, in a scratch copy of this tree, narrowed to a tiny
    budget: the unit's cells, its evidence, and a scorecard that holds it and the suite's units."""
    from scripts.verify import copy_tree

    copy_tree(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    p = subprocess.run(["make", "benchmark-unit", f"UNIT={EXAMPLE}", "BENCH_OUT=scorecards", "JOBS=1",
                        "SAMPLE=task.steps=60 task.eval_every=20 seeds=2 progress=false"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    card = (tmp_path / "scorecards/clippedadder.md").read_text()
    rows = [line for line in card.splitlines() if line.startswith(("| a", "| sqrt(a)"))]
    assert sum("| ClippedAdder " in line for line in rows) == 6 and any("| NAU " in line for line in rows)
    assert (tmp_path / "scorecards/clippedadder.png").stat().st_size > 0


def test_make_benchmark_unit_under_the_primers_protocol_scores_it_by_range(tmp_path):
    """``PROTOCOL=primer``: both of its sweeps (a/b apart), narrowed to one range and a tiny budget."""
    from scripts.verify import copy_tree

    copy_tree(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    p = subprocess.run(["make", "benchmark-unit", f"UNIT={EXAMPLE}", "PROTOCOL=primer", "BENCH_OUT=scorecards",
                        "JOBS=1", "SAMPLE=task.steps=60 task.eval_every=20 seeds=2 progress=false task.range=n12_11 "
                        "task.test_samples=100 task.extrapolation_samples=50"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    card = (tmp_path / "scorecards/clippedadder_primer.md").read_text()
    # a row per function (a+b, a-b, a*b, a/b), then one over every range
    assert card.count("| ClippedAdder ") == 5 and "U[-1.2, -1.1] -> [-6.1, -1.2]" in card
    assert "## Over every range" in card and (tmp_path / "scorecards/clippedadder_primer_totals.csv").is_file()


@pytest.mark.parametrize("evidence", sorted((ROOT / "results/benchmarks").glob("*.jsonl")), ids=lambda p: p.stem)
def test_a_committed_scorecard_is_rebuilt_from_its_evidence_byte_for_byte(tmp_path, evidence):
    from suite.tables import scorecards

    written = {p.name for p in scorecards.rebuild(evidence, tmp_path)}
    assert {f"{evidence.stem}.md", f"{evidence.stem}.csv"} <= written
    for suffix in (".md", ".csv"):
        assert (tmp_path / f"{evidence.stem}{suffix}").read_text() == evidence.with_suffix(suffix).read_text()


@pytest.mark.parametrize("card,builder,references,long", [
    ("x", "units", ["units.jsonl"], "units_long"), ("x_told", "units", ["units.jsonl"], "units_long"),
    ("x_paper", "units", ["units_paper.jsonl", "table1_paper.jsonl"], None),
    ("x_told_primer", "primer", ["units_primer.jsonl"], None), ("x_tasks", "places", [], None)])
def test_a_scorecard_is_scored_against_the_reference_its_name_calls_for(monkeypatch, tmp_path, card, builder,
                                                                        references, long):
    """The one place that chooses a card's reference evidence (make benchmark-unit and make
    reproduce-units both go through it): the units table's at the default budget, its paper-budget
    cells with Table 1's at BUDGET=paper, the Primer table's (where it has landed) for PROTOCOL=primer."""
    from suite.tables import places, primer, scorecards, units

    for name in ("units.jsonl", "units_paper.jsonl", "table1_paper.jsonl", "units_primer.jsonl"):
        (tmp_path / name).write_text("")
    called = {}
    monkeypatch.setattr(units, "build", lambda ev, out, lg, name: called.update(units=(ev, lg, name)))
    monkeypatch.setattr(primer, "build", lambda ev, out, name: called.update(primer=(ev, None, name)))
    monkeypatch.setattr(places, "build", lambda ev, out, name: called.update(places=(ev, None, name)))
    evidence = tmp_path / "cards" / f"{card}.jsonl"
    scorecards.rebuild(evidence, tmp_path / "out", references=tmp_path)
    assert called == {builder: ([evidence, *(tmp_path / r for r in references)], long, card)}


def test_the_one_scorecard_command_writes_beside_its_evidence_what_rebuild_writes(tmp_path):
    """``python -m suite.tables scorecard FILE`` (make benchmark-unit's last step) writes, beside
    FILE, the files ``scorecards.rebuild`` writes for it (the committed ones)."""
    evidence = ROOT / "results/benchmarks/nau.jsonl"
    shutil.copy(evidence, tmp_path / evidence.name)
    p = subprocess.run([sys.executable, "-m", "suite.tables", "scorecard", str(tmp_path / evidence.name)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    for suffix in (".md", ".csv"):
        assert (tmp_path / f"nau{suffix}").read_text() == evidence.with_suffix(suffix).read_text()


def test_the_benchmark_of_the_suites_own_nau_has_the_units_tables_success_counts():
    """``make benchmark-unit UNIT=nalu.units.nau:NAU`` (committed: results/benchmarks/nau.*) runs
    the NAU through the outside-unit path: per function its success count lies within the 95%
    Wilson interval of the units table's NAU row, and the units table's within its own."""
    import pandas as pd

    from nalu.scoring import wilson_interval

    card = pd.read_csv(ROOT / "results/benchmarks/nau.csv")
    ours = card[card.unit == "NAU (benchmarked)"].set_index("function")
    table = pd.read_csv(ROOT / "results/units.csv")
    theirs = table[table.model == "nau"].set_index("function")
    assert len(ours) == 6 and set(ours.index) == set(theirs.index)
    for function, row in ours.iterrows():
        ref = theirs.loc[function]
        lo, hi = wilson_interval(int(ref.solved), int(ref.seeds))
        olo, ohi = wilson_interval(int(row.solved), int(row.seeds))
        within = [a - 1e-9 <= rate <= b + 1e-9 for (a, b), rate in (((lo, hi), row.solved / row.seeds),
                                                                     ((olo, ohi), ref.solved / ref.seeds))]
        assert all(within), (function, row.solved, ref.solved)


@pytest.mark.parametrize("O,gate,op", [([1.0, 1.0], 30.0, lambda a, b: a + b), ([1.0, -1.0], 30.0, lambda a, b: a - b),
                                       ([1.0, 1.0], -30.0, lambda a, b: a * b), ([1.0, -1.0], -30.0, lambda a, b: a / b)])
def test_the_domain_mixed_unit_computes_its_four_operations_when_set_by_hand(O, gate, op):
    """examples/units/dmu.py: with the selector O and the gate set, the operation on inputs of
    either sign (the gate at 1 adds or subtracts, at 0 multiplies or divides, signs from the
    count of negative inputs), to the precision of its smoothing terms."""
    from examples.units.dmu import DMU
    from nalu.units import check_unit

    check_unit(DMU, "examples.units.dmu:DMU")  # the protocol, as a run checks it
    unit = DMU(2, 1, members=2).double()
    with torch.no_grad():
        unit.O.copy_(torch.tensor([[O]] * 2, dtype=torch.float64))
        unit.g.fill_(gate)
    x = torch.tensor([[[3.0, 2.0], [-3.0, 2.0], [3.0, -2.0], [-1.5, -0.5]]], dtype=torch.float64)
    torch.testing.assert_close(unit(x)[1, :, 0], op(x[0, :, 0], x[0, :, 1]), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op,O", [("add", [1.0, 1.0]), ("sub", [1.0, -1.0]), ("mul", [1.0, 1.0]), ("div", [1.0, -1.0])])
def test_the_domain_mixed_unit_told_its_function_keeps_the_selector_its_published_runs_fix(op, O):
    """``op`` given (``model=unit_told``): O is the code's --freeze-O pattern, a buffer that a
    training step leaves where it is, and the gate is the only parameter left to learn."""
    from examples.units.dmu import DMU

    unit = DMU(2, 1, members=3, op=op)
    for i in range(3):
        unit.init_member(i, torch.Generator().manual_seed(i))
    assert [name for name, _ in unit.named_parameters()] == ["g"]
    optimiser = torch.optim.Adam(unit.parameters(), lr=0.1)
    unit(torch.rand(1, 8, 2) + 1).square().mean().backward()
    optimiser.step()
    assert unit.O.tolist() == [[O]] * 3 and unit.g.abs().amax() > 0


def test_the_domain_mixed_unit_refuses_a_fixed_selector_it_has_none_for():
    from examples.units.dmu import DMU

    with pytest.raises(ConfigError, match="fixed for add, mul, sub, div only"):
        DMU(2, 1, op="square")
    with pytest.raises(ConfigError, match="reads 2 inputs"):
        DMU(100, 1, op="add")


def test_a_unit_told_its_function_is_labelled_so_in_the_scorecard():
    from suite.tables.units import unit_label

    cell = {"model": "unit_told", "config": {"model": {"unit": "examples.units.dmu:DMU", "op": "mul"}}}
    assert unit_label(cell) == "DMU, told the function"
    assert unit_label({**cell, "model": "unit"}) == "DMU"


def test_a_unit_from_outside_takes_every_place_of_the_paper_and_enters_each_table_beside_its_rows(tmp_path):
    """``make benchmark-unit PROTOCOL=tasks``: the unit as the recurrent task's stack, the MNIST
    core, the number-word and program read-outs and Table 4's final layer (each one tiny cell of the
    sweep the make target runs), then ``suite.tables places``: each paper table rebuilt from its
    committed evidence with the unit's rows added, the committed rows still there."""
    from suite.evidence import write
    from suite.runner import run_job
    from suite.tables import places

    from .conftest import compose, make_fake_mnist

    mnist = make_fake_mnist(tmp_path / "mnist")
    tiny = ["progress=false", "seeds=2", "train_step=autograd"]
    cells = {
        "recurrent": ["+experiment=table1_recurrent", "model=unit", f"model.unit={EXAMPLE}", "task.op=add",
                      "task.steps=30", "task.eval_every=10", "task.test_samples=200", "task.extrapolation_samples=20",
                      "task.reference.members=4"],
        "mnist": ["+experiment=table2_stacks", "model=unit", f"model.unit={EXAMPLE}", "model.state_init=random",
                  f"data_dir={mnist}", "task.steps=6", "task.eval_every=3", "task.validation_images=40",
                  "task.validation_series=8", "task.batch_size=4", "task.test_series={1: 20, 10: 6, 100: 3, 1000: 2}"],
        "words": ["+experiment=table3", "model=lstm", f"+model.readout={EXAMPLE}", "task.steps=6", "task.eval_every=3",
                  "task.lstm_size=4"],
        "program": ["+experiment=figure4", "model=lstm", f"+model.readout={EXAMPLE}", "task.steps=4", "task.eval_every=2",
                    "task.test_size=10", "task.validation_size=10", "task.test_domains=[100,1000]", "task.batch_size=8"],
        "final_layer": ["+experiment=table4", f"task.final_layer={EXAMPLE}", f"data_dir={mnist}", "task.steps=4",
                        "task.eval_every=2", "task.validation_images=40", "task.validation_samples=8",
                        "task.batch_size=4", "task.test_samples=20", "task.layouts=50"],
    }
    for place, overrides in cells.items():
        run_job(compose(tiny + overrides), tmp_path / "multirun/bench" / place / "cell")
    evidence = write("clippedadder_tasks", [tmp_path / "multirun/bench"], tmp_path / "evidence")
    out = tmp_path / "scorecards"
    places.build([evidence], out, name="clippedadder_tasks")
    index = (out / "clippedadder_tasks.md").read_text()
    assert all(f"[clippedadder_tasks_{p}.md]" in index for p in cells)
    card = {p: (out / f"clippedadder_tasks_{p}.md").read_text() for p in cells}
    assert "| recurrent ClippedAdder " in card["recurrent"] and "| recurrent NAC " in card["recurrent"]
    assert "| ClippedAdder " in card["mnist"] and "| NAC " in card["mnist"]
    assert "| lstm_clippedadder " in card["words"] and "| LSTM + NAC " in card["words"]
    assert "| lstm_clippedadder " in card["program"] and "| LSTM + NALU " in card["program"]
    assert "| ClippedAdder " in card["final_layer"] and "| NAC " in card["final_layer"]
    assert (out / "clippedadder_tasks_words_figure3.png").is_file()


def test_the_scorecards_command_rebuilds_each_scorecard_of_a_folder_in_place(tmp_path, capsys):
    """``python -m suite.tables scorecards`` (the last step of ``make reproduce-units``) rewrites
    every scorecard of the folder from its evidence: a stale card comes back as committed."""
    from suite.tables import run

    shutil.copy(ROOT / "results/benchmarks/nau.jsonl", tmp_path)
    (tmp_path / "nau.md").write_text("stale")
    run(["scorecards", "--folder", str(tmp_path)])
    assert (tmp_path / "nau.md").read_text() == (ROOT / "results/benchmarks/nau.md").read_text()
    assert "rebuilt 1 scorecard in" in capsys.readouterr().err and (tmp_path / "nau.csv").is_file()
