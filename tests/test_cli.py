"""The command line as a user meets it: one-line errors, resumable sweeps, launchers, loggers."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import pytest
import torch

from suite.machine import describe, environment

from .conftest import TINY_ARITHMETIC, build_table, cli

RUN = ["-m", "suite.run"]


@pytest.mark.parametrize("args,valid", [
    (["model=foo"], "unknown model 'foo'; valid: dnc, dnc_nalu, gru, inalu, lstm, lstm_nac, lstm_nalu, lstm_sum, mlp, nac, nalu, nalu_builder, nau, nmu, none, npu"),
    (["-m", "model=nac,foo"], "unknown model 'foo'"),
    (["task=bar"], "unknown task 'bar'; valid: gridworld_time, identity, mnist_addition, mnist_count_even, mnist_counting"),
    (["task=gridworld_time", "task.agent=a2c"], "unknown agent 'a2c'; valid: a3c, a3c_nac"),
    (["task=mnist_count_even", "task.encoder.init=he"], "unknown encoder init 'he'; valid: glorot, torch"),
    (["task=mnist_count_even", "task.final_layer=softmax"], "unknown final layer 'softmax'; valid: nac, nac_plus_b"),
    (["task=gridworld_time", "optimizer=sgd"], "use optimizer=adam"),
    (["task=gridworld_time", "task.env.commands=[2,12]"], "max_distance (4) <= low <= high"),
    (["task.op=pow", "task.steps=1"], "unknown op 'pow'; valid: add, div, mul, sqrt, square, sub"),
    (["model=mlp", "model.activation_name=Swish"], "unknown activation 'Swish'; valid: CELU, ELU"),
    (["task.extrapolation.low=1", "task.extrapolation.high=2"], "does not exceed training"),
    (["task=recurrent_arithmetic", "model=lstm", "task.extrapolation_length=5"], "does not exceed"),
    (["task=static_arithmetic", "model=lstm"], "lstm is a sequence model"),
    (["device=tpu"], "unknown device 'tpu'; valid: cpu, cuda, cuda:<n>"),
    (["task.stpes=10"], "unknown key 'task.stpes'; closest: task.steps"),
    (["+task.stpes=10"], "'task.stpes' is not a config key and nothing reads it; closest: task.steps"),
    (["-m", "task.op=add,mul", "optimizer.lrr=1"], "unknown key 'optimizer.lrr'; closest: optimizer.lr"),
    (["task.steps=0"], "task.steps must be a positive integer, got 0"),
    (["task.steps=-5"], "task.steps must be a positive integer, got -5"),
    (["task.batch_size=0"], "task.batch_size must be a positive integer, got 0"),
    (["task.eval_every=0"], "task.eval_every must be a positive integer, got 0"),
    (["optimizer.lr=-1"], "optimizer.lr must be a positive number, got -1"),
    (["lr_schedule=linear"], "unknown lr_schedule 'linear'; valid: constant, cosine"),
    (["task=gridworld_time", "lr_schedule=cosine"], "use lr_schedule=constant"),
    (["optimizer.lr=inf"], "optimizer.lr must be a finite number, got inf"),
    (["model.eps=nan"], "model.eps must be a finite number, got nan"),
    (["task.steps=1e12"], "task.steps must be a positive integer, got 1000000000000.0"),
    *([] if torch.cuda.is_available() else [(["device=cuda"], "CUDA is not available here")]),
])
def test_bad_input_gives_one_line_error(workdir, args, valid):
    p = cli(RUN + args + ["progress=false"], workdir, check=False)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and valid in lines[0], p.stderr
    assert not list(workdir.rglob("metrics.json"))
    # a refused cell leaves no half-made run folder behind (Hydra's .hydra/ and run.log included)
    assert not [d for d in workdir.rglob("*") if d.is_dir() and (d / ".hydra").exists()], list(workdir.rglob("*"))
    assert not (workdir / "runs").exists(), list((workdir / "runs").rglob("*"))  # nor the folders above it


@pytest.mark.parametrize("launcher", ["basic", "fused"])
def test_a_bad_cell_does_not_half_run_a_sweep(workdir, launcher):
    """The fused launcher refuses the sweep before any cell runs; Hydra's basic launcher runs
    the valid cells and exits non-zero naming the refused ones."""
    p = cli(RUN + ["-m", "task.op=pow,add,mul", f"hydra/launcher={launcher}"] + TINY_ARITHMETIC, workdir, check=False)
    assert p.returncode == 2, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    made = sorted(json.loads(m.read_text())["op"] for m in workdir.rglob("metrics.json"))
    if launcher == "basic":
        assert last.startswith("error: 1 of 3 cells of the sweep refused, the other 2 ran: static/pow/nalu (unknown op 'pow'")
        assert made == ["add", "mul"]
    else:
        assert last.startswith("error: 1 of 3 cells refused, none run: unknown op 'pow'")
        assert last.endswith("(static/pow/nalu)")
        assert made == []


def test_a_sweep_whose_every_cell_is_refused_says_none_ran(workdir):
    p = cli(RUN + ["-m", "task.op=add,mul", "optimizer.lr=inf", "hydra/launcher=basic"] + TINY_ARITHMETIC, workdir,
            check=False)
    last = p.stderr.strip().splitlines()[-1]
    assert p.returncode == 2 and last.startswith("error: 2 of 2 cells of the sweep refused, none ran: "), p.stderr
    assert not list(workdir.rglob("metrics.json"))


def test_sweep_resumes_without_redoing_complete_cells(workdir):
    args = RUN + ["-m", "model=nac,none", "task.op=add", "name=resume"] + TINY_ARITHMETIC
    cli(args, workdir)
    cells = sorted((workdir / "multirun" / "resume").glob("*/metrics.json"))
    assert len(cells) == 2
    done, broken = cells
    done_mtime = done.stat().st_mtime_ns
    broken.write_text(broken.read_text()[:100])  # a half-written file
    (broken.parent / "history.csv").write_text("garbage")
    hydra_config = done.parent / ".hydra" / "config.yaml"
    recorded = hydra_config.read_text()
    p = cli(args + ["logger=wandb"], workdir)  # a rerun with an unhashed setting changed
    assert "skip static/add/nac: complete" in p.stderr
    assert "not logged to wandb again (force=true reruns it)" in p.stderr
    assert done.stat().st_mtime_ns == done_mtime
    # the skipped cell keeps the record of the command that made it; the redone one gets the new one
    assert hydra_config.read_text() == recorded and "name: csv" in recorded
    assert "name: wandb" in (broken.parent / ".hydra" / "config.yaml").read_text()
    assert not list(workdir.rglob(".hydra.next"))
    redone = json.loads(broken.read_text())
    assert redone["complete"] and len(redone["members"]) == 2
    assert (broken.parent / "history.csv").read_text().startswith("step,seed,metric,value")


def test_cells_are_redone_when_their_numerics_version_changes_and_only_noted_when_code_does(workdir):
    """A cell is up to date by its config hash and its task's numerics version (``suite.record``):
    code that differs from the cell's record is named by a dry run, never a reason to rerun."""
    args = RUN + ["-m", "model=nac,none", "task.op=add", "name=code"] + TINY_ARITHMETIC
    cli(args, workdir)
    nac, none = sorted((workdir / "multirun" / "code").glob("*/metrics.json"))
    m = json.loads(nac.read_text())
    assert m["numerics"] == 1 and "commit" in m and "dirty" in m
    recorded = m["code"]
    assert {"nalu/train.py", "nalu/units/nac.py", "tasks/arithmetic/functions.py", "tasks/cell.py"} <= set(recorded)
    assert not any(path.startswith(("suite/tables/", "suite/run")) for path in recorded)  # builders, plumbing

    def cell_files() -> dict:  # every file of the sweep: both cells and its multirun.yaml
        return {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in nac.parent.parent.rglob("*") if p.is_file()}

    m["code"]["tasks/arithmetic/functions.py"] = "0" * 16  # as if the task's code had been edited since
    m["commit"], m["dirty"] = "abc1234def", False
    nac.write_text(json.dumps(m))
    m = json.loads(none.read_text())
    m["numerics"] = 0  # as if made before the task's numbers last changed
    none.write_text(json.dumps(m))
    before = cell_files()
    assert nac.parent.parent / "multirun.yaml" in before
    check = cli(args + ["dry_run=true"], workdir)
    status = [line for line in check.stderr.splitlines() if line.startswith("status: ")]
    assert status == [
        "status: up to date: static/add/nac; code differs from the cell's commit abc1234 in tasks/arithmetic/functions.py",
        "status: to run: static/add/none (its task's numerics version is now 1, the cell's 0)"]
    assert before == cell_files()
    record, kept = nac.parent.parent / "multirun.yaml", nac.parent.parent / ".multirun.yaml.kept"
    made = record.read_bytes()
    os.replace(record, kept)  # as a dry run killed midway leaves them: the true record set aside
    record.write_text("the killed dry run's record\n")
    cli(args + ["dry_run=true"], workdir)
    assert record.read_bytes() == made and not kept.exists()

    p = cli(args, workdir)
    assert "skip static/add/nac: complete" in p.stderr and "done static/add/none" in p.stderr
    assert json.loads(none.read_text())["numerics"] == 1


def test_a_dry_run_of_a_sweep_never_run_leaves_nothing_behind(workdir):
    """Hydra makes the sweep's folder, its multirun.yaml, a folder per job and their job logs
    before the runner reports; a dry run takes all of them back."""
    p = cli(RUN + ["-m", "model=nac", "task.op=add,sub", "task.steps=100", "name=fresh", "dry_run=true",
                   "progress=false"], workdir)
    assert sorted(line for line in p.stderr.splitlines() if line.startswith("status: ")) == [
        "status: to run: static/add/nac (not run yet)", "status: to run: static/sub/nac (not run yet)"]
    assert list(workdir.iterdir()) == []


def test_a_dry_run_says_how_long_a_long_cell_would_train_and_hands_the_seconds_on(workdir):
    """From ``results/rates.csv`` (the committed speed of its task and model in groups of the
    nearest size): a cell of a minute or more gets its projection on its status line, and every
    cell to run its seconds in the status file that ``make reproduce-all DRY_RUN=1`` sums; a
    cell under a minute gets no projection on its line."""
    from suite.projection import projected_s

    from .conftest import compose

    status = workdir / "status.jsonl"
    env = {"NALU_STATUS_FILE": str(status)}
    long, short = ["model=nalu", "task.steps=2000000", "seeds=10"], ["model=nalu", "task.steps=100", "seeds=10"]
    said = []
    for steps in (long, short):
        p = subprocess.run([sys.executable, *RUN, "-m", *steps, "task.op=add,mul", "name=long", "dry_run=true",
                            "progress=false"], cwd=workdir, env={**os.environ, **env}, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        said.append(sorted(line for line in p.stderr.splitlines() if line.startswith("status: ")))
    for line, op in zip(said[0], ("add", "mul"), strict=True):
        assert re.fullmatch(rf"status: to run: static/{op}/nalu \(not run yet\); projected [0-9.]+ (min|h) here",
                            line), line
    assert said[1] == ["status: to run: static/add/nalu (not run yet)", "status: to run: static/mul/nalu (not run yet)"]
    seconds, little = projected_s([compose(long)]), projected_s([compose(short)])
    assert seconds > 60 > little
    assert [r["projected_s"] for r in map(json.loads, status.read_text().splitlines())] == [seconds] * 2 + [little] * 2


def test_a_dry_run_projects_a_fused_cell_as_its_share_of_the_group_it_would_train_in(workdir):
    """The fused launcher trains the cells to run of a group as one model, whose speed is that of
    committed groups of that size: each cell is projected as its share of the group's time."""
    from suite.projection import projected_s

    from .conftest import compose

    status = workdir / "status.jsonl"
    long = ["model=nac", "task.steps=2000000", "seeds=10"]
    p = subprocess.run([sys.executable, *RUN, "-m", *long, "task.op=add,mul", "name=long", "dry_run=true",
                        "progress=false", "hydra/launcher=fused", "hydra.launcher.n_jobs=1"], cwd=workdir,
                       env={**os.environ, "NALU_STATUS_FILE": str(status)}, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    group = [compose([*long, f"task.op={op}"]) for op in ("add", "mul")]
    share = projected_s(group) / 2
    assert [r["projected_s"] for r in map(json.loads, status.read_text().splitlines())] == [share] * 2
    assert share != projected_s(group[:1])  # 20 members go at another committed speed than 10


def test_code_digest_ignores_comments_and_docstrings_but_not_code(tmp_path):
    from suite.provenance import source_digest

    def digest(text: str) -> str:
        (tmp_path / "m.py").write_text(text)
        return source_digest(tmp_path / "m.py")

    base = digest('"""Doc."""\ndef f(x):\n    """Doc."""\n    return x + 1\n')
    assert digest("def f(x):  # a comment\n\n    return (x + 1)\n") == base
    assert digest("def f(x):\n    return x + 2\n") != base


def test_code_digest_text_leaves_out_empty_fields():
    """The digested text is ours, not ``ast.dump``'s (whose empty-field defaults differ between
    Pythons): the same on every supported version, and it still tells apart what the code does."""
    import ast

    from suite.provenance import canonical

    assert canonical(ast.parse("def f(x):\n    return x + 1\n")) == (
        "Module(body=[FunctionDef(name='f', args=arguments(args=[arg(arg='x')]), "
        "body=[Return(value=BinOp(left=Name(id='x', ctx=Load()), op=Add(), right=Constant(value=1)))])])")
    assert canonical(ast.parse("f(None, [])")) != canonical(ast.parse("f()"))


def test_only_modules_that_make_numbers_are_compared_with_a_cells_code():
    from suite.provenance import changed, snapshot

    now = snapshot()
    assert "nalu/units/nac.py" in now and "suite/run.py" not in now and not changed(now)
    stale = {**now, "nalu/units/nac.py": "0" * 16, "suite/run.py": "0" * 16, "tasks/gone.py": "0" * 16}
    assert changed(stale) == ["nalu/units/nac.py", "tasks/gone.py"]


def test_tiny_table1_end_to_end(workdir):
    """Both Table 1 sweeps through the real experiment files (cut down), then the table."""
    cli(RUN + ["-m", "+experiment=table1_static", "model=nac,nalu", "task.op=add",
               "hydra/launcher=local2"] + TINY_ARITHMETIC, workdir)
    cli(RUN + ["-m", "+experiment=table1_recurrent", "model=nac,lstm", "task.op=mul"]
        + TINY_ARITHMETIC, workdir)
    out = workdir / "results"
    build_table("table1", [workdir / "multirun/table1_static", workdir / "multirun/table1_recurrent"], workdir, out)
    md = (out / "table1.md").read_text()
    assert "| interpolation | a+b" in md and "/ 0.0" in md
    assert "88 entries were not run" in md  # 48 cells x 2 ranges, 4 cells run
    assert "## Selection, made visible" in md and "extrapolation cells where it prints 0.0 (and we ran)" in md
    assert f"Run on: {describe(environment())}" in md  # the machine, named in the caption
    import pandas as pd

    df = pd.read_csv(out / "table1.csv")
    ran = df.dropna(subset=["ours"])
    assert len(ran) == 8 and set(ran.model) == {"nac", "nalu", "lstm"}
    assert (ran.seeds == 2).all() and {"median", "oracle", "solved", "diverged", "paper"} <= set(df.columns)
    # each row from its cell's evidence, by hand: the seed with the lowest validation MSE is the
    # chosen one, its scaled score 100 * MSE / the random reference's; the oracle the best on the range
    from suite.evidence import load

    evidence = load(workdir / "evidence" / "table1.jsonl")
    for _, row in ran.iterrows():
        (cell,) = [c for c in evidence if c["model"] == row.model and c["label"] == row.function
                   and c["task"].startswith(row.task)]
        best = min(cell["members"], key=lambda m: m["best"]["validation"])
        scores = [100 * m["best"][row.range] / m["reference"][row.range] for m in cell["members"]]
        assert row.chosen_seed == best["seed"]
        assert row.ours == pytest.approx(100 * best["best"][row.range] / best["reference"][row.range], rel=1e-12)
        assert row.oracle == pytest.approx(min(scores), rel=1e-12)
    # every seed carries the success criterion of Madsen & Johansen (2020) and its sparsity error
    for path in (workdir / "multirun").rglob("metrics.json"):
        m = json.loads(path.read_text())
        assert m["environment"]["torch"] == torch.__version__ and m["environment"]["cpu"]
        assert [s["from_step"] for s in m["sittings"]] == [0]
        for seed in m["members"]:
            assert seed["success_threshold"] > 0 and isinstance(seed["solved"], bool)
            assert (seed["sparsity_error"] is None) == (m["model"] == "lstm")


def test_tiny_table5_end_to_end(workdir):
    tiny = ["progress=false", "task.steps=20", "task.eval_every=10", "seeds=3", "task.table5.points=101",
            "train_step=autograd"]
    p = cli(RUN + ["-m", "+experiment=table5", "model.activation_name=ReLU,PReLU,Threshold"] + tiny, workdir)
    done = [line.split(":")[0] for line in p.stderr.splitlines() if line.startswith("done ")]
    assert sorted(done) == [f"done identity/mlp [model.activation_name={a}]" for a in ("PReLU", "ReLU", "Threshold")]
    cli(RUN + ["-m", "+experiment=table5_units", "model=nalu"] + tiny, workdir)
    out = workdir / "results"
    build_table("table5", [workdir / "multirun/table5"], workdir, out)
    md = (out / "table5.md").read_text()
    for name in ("| relu ", "| prelu ", "| threshold ", "| nalu "):
        assert name in md
    assert (out / "figure1.png").stat().st_size > 10_000
    import pandas as pd

    f1 = pd.read_csv(out / "figure1.csv")
    assert set(f1.nonlinearity) == {"relu", "prelu", "threshold", "nalu"}
    assert f1.loc[f1.nonlinearity == "relu", "paper_at_plus20"].item() == 1.0


def test_submitit_local_launcher(workdir):
    cli(RUN + ["-m", "hydra/launcher=submitit_local", "model=nac", "name=slurmish"] + TINY_ARITHMETIC,
        workdir)
    m = json.loads(next((workdir / "multirun" / "slurmish").glob("*/metrics.json")).read_text())
    assert m["complete"] and m["model"] == "nac"


def test_wandb_offline_logs_each_seed_and_prints_sync(workdir):
    env_mode = os.environ.get("WANDB_MODE")
    os.environ["WANDB_MODE"] = "offline"
    try:
        import subprocess
        import sys

        p = subprocess.run([sys.executable, *RUN, "logger=wandb", *TINY_ARITHMETIC], cwd=workdir,
                           capture_output=True, text=True, timeout=300)
    finally:
        os.environ["WANDB_MODE"] = env_mode or "disabled"
    assert p.returncode == 0, p.stderr
    assert "wandb sync" in p.stderr
    runs = list(workdir.rglob("offline-run-*"))
    assert len(runs) == 2  # one per seed
    assert all(any(f.suffix == ".wandb" and f.stat().st_size > 0 for f in r.iterdir()) for r in runs)


@pytest.mark.parametrize("setting,message", [
    ("WANDB_MODE=online", "logger.mode=online but nalu-suite.invalid:443 cannot be reached"),
    ("WANDB_MODE=bogus", "unknown logger mode 'bogus'; valid: disabled, offline, online"),
])
def test_wandb_online_without_its_server_is_refused_at_once_in_one_line(workdir, setting, message):
    """WANDB_MODE is honoured (logger.mode, when given, wins); online without a reachable server
    is one line and no run folder, not wandb's minute of silence and a traceback."""
    import subprocess
    import sys

    key, value = setting.split("=")
    env = {**os.environ, key: value, "WANDB_BASE_URL": "https://nalu-suite.invalid", "HYDRA_FULL_ERROR": "0"}
    p = subprocess.run([sys.executable, *RUN, "logger=wandb", *TINY_ARITHMETIC], cwd=workdir, env=env,
                       capture_output=True, text=True, timeout=120, check=False)
    (line,) = p.stderr.strip().splitlines()
    assert p.returncode == 2 and line.startswith("error: ") and message in line, p.stderr
    assert not (workdir / "runs").exists()


def test_curves_plot_from_history(workdir):
    p = cli(RUN + TINY_ARITHMETIC, workdir)
    # a single run ends with one line: what its seeds reached, and where metrics.json is
    done = [line for line in p.stderr.splitlines() if line.startswith("done static/add/nalu: 2 seeds")]
    assert len(done) == 1 and "; median best: " in done[0] and "extrapolation " in done[0], p.stderr
    assert done[0].endswith("metrics.json")
    run_dir = next(workdir.rglob("history.csv")).parent
    cli(["-m", "suite.tables", "curves", str(run_dir)], workdir)
    assert (run_dir / "curves.png").stat().st_size > 10_000


def test_curves_of_a_run_evaluated_once_show_points():
    import pandas as pd

    from suite.tables.curves import draw

    h = pd.DataFrame({"step": [10, 10], "seed": [0, 1], "metric": ["extrapolation"] * 2, "value": [1.0, 2.0]})
    lines = draw(h, "one evaluation").axes[0].get_lines()
    assert len(lines) == 2 and all(len(line.get_xdata()) == 1 and line.get_marker() == "o" for line in lines)


def test_curves_of_a_sweep_overlay_its_cells_and_mark_what_cannot_be_drawn(tmp_path):
    """One line per cell (its median over seeds), labelled axes, and an inf or NaN value marked at
    its step rather than dropped."""
    import pandas as pd

    from suite.tables import curves

    for cell, last in (("optimizer.lr=0.01", 0.5), ("optimizer.lr=0.1", float("inf"))):
        (tmp_path / cell).mkdir()
        rows = [(step, seed, "extrapolation", v) for seed in (0, 1) for step, v in ((0, 2.0), (100, last if seed else 1.0))]
        pd.DataFrame(rows, columns=["step", "seed", "metric", "value"]).to_csv(tmp_path / cell / "history.csv", index=False)
    fig = curves.draw_cells(curves.histories(tmp_path), "sweep")
    (ax,) = fig.axes
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["optimizer.lr=0.01", "optimizer.lr=0.1", "inf or NaN (1 points)"]
    assert ax.get_ylabel() == "extrapolation (raw, as logged)" and ax.get_xlabel() == "step"
    out = curves.plot(tmp_path)
    assert out == tmp_path / "curves.png" and out.is_file()


def test_the_done_line_speaks_the_tables_words_and_counts_non_finite_seeds_as_inf():
    """'success' is the table's word for Madsen & Johansen's criterion (its 'solved' is another
    count), and a seed whose error overflowed is +inf in the median as in the tables, never a
    median of nan beside '0 diverged'."""
    from suite.runner import headline

    seeds = [{"solved": True, "best": {"extrapolation": 0.1}}, {"solved": False, "best": {"extrapolation": math.nan}},
             {"solved": False, "best": {"extrapolation": 0.3}}]
    assert headline(seeds) == "; success 1/3; median best: extrapolation 0.3"
    seeds[2]["best"]["extrapolation"] = math.inf
    assert headline(seeds) == "; success 1/3; median best: extrapolation inf"


def test_a_cell_another_process_is_making_is_left_to_it_and_the_command_says_so(workdir):
    """The same command started twice: the second leaves the cell to the first (its lock held),
    trains nothing, touches none of its files, and exits non-zero; once the first is gone, it runs."""
    import fcntl

    args = RUN + ["model=nac", "task.op=add", "name=twice", "hydra.run.dir=cell"] + TINY_ARITHMETIC
    cell = workdir / "cell"
    cell.mkdir()
    with open(cell / ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        p = cli(args, workdir, check=False)
    assert p.returncode == 2
    assert "busy static/add/nac: another process is making it" in p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith("error: 1 of 1 cells were being made by another process")
    assert not (cell / "metrics.json").exists() and not (cell / ".hydra").exists()
    cli(args, workdir)
    assert json.loads((cell / "metrics.json").read_text())["complete"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_sweep_started_twice_leaves_the_busy_cell_to_the_first_and_makes_the_others(workdir, jobs):
    """The fused launcher goes on past a cell whose lock another process holds: the sweep's other
    groups train, the busy cell's folder (the other process's, its history just begun) is left as it
    is, and the command exits non-zero naming it."""
    import fcntl

    args = RUN + ["-m", "model=nac,none", "task.op=add", "name=twice", "hydra/launcher=fused",
                  f"hydra.launcher.n_jobs={jobs}", "hydra.sweep.subdir=cell${hydra.job.num}"] + TINY_ARITHMETIC
    busy = workdir / "multirun" / "twice" / "cell0"  # model=nac, the sweep's first cell
    busy.mkdir(parents=True)
    (busy / "history.csv").write_text("step,seed,metric,value\n")  # the other process's, before its first row
    with open(busy / ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        p = cli(args, workdir, check=False)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines()[-1] == (
        "error: left to another process that was making them: static/add/nac; the sweep's other cells ran; "
        "run this command again once it ends"), p.stderr
    made = [json.loads(m.read_text()) for m in workdir.rglob("metrics.json")]
    assert [(m["model"], m["complete"]) for m in made] == [("none", True)]
    assert (busy / "history.csv").read_text() == "step,seed,metric,value\n" and not (busy / ".hydra").exists()


def test_an_untouched_folder_is_discarded_unless_another_process_holds_its_lock(tmp_path, monkeypatch):
    """A refused cell's folder (only its header written) is removed, with the folders made for it;
    the same folder while another process holds its lock is that process's cell, begun: kept."""
    import fcntl

    from suite.runner import discard_if_untouched

    monkeypatch.chdir(tmp_path)
    cell = tmp_path / "runs" / "sweep" / "cell0"
    cell.mkdir(parents=True)
    (cell / "history.csv").write_text("step,seed,metric,value\n")
    with open(cell / ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        discard_if_untouched(cell)
        assert (cell / "history.csv").read_text() == "step,seed,metric,value\n"
    discard_if_untouched(cell)
    assert not (tmp_path / "runs").exists()
