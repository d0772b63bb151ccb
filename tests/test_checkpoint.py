"""Mid-cell checkpoints: a run killed in the middle and resumed ends as an uninterrupted one."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from nalu.ensemble import init_members
from nalu.train import Checkpoint, Stopped, fit
from tasks.arithmetic import ArithmeticProblem
from tasks.cell import build_model, model_factory

from .conftest import ROOT, TINY_ARITHMETIC, compose

STEPS, EVERY = 240, 40


class Killed(Exception):
    """Stands in for the process dying: raised from inside the training loop."""


def dies_at(problem, at: int):
    """The problem, until its ``at``-th batch, where the run 'dies'."""
    batch, drawn = problem.batch, [0]

    def dying_batch():
        drawn[0] += 1
        if drawn[0] == at:
            raise Killed
        return batch()

    problem.batch = dying_batch
    return problem


def fresh(model_name: str, extra: list[str] = ()):
    cfg = compose(TINY_ARITHMETIC + [f"model={model_name}", "task.op=mul", "seeds=3", f"task.steps={STEPS}", *extra])
    seeds = [0, 1, 2]
    problem = ArithmeticProblem(cfg.task, seeds, recurrent=False)
    model = build_model(model_factory(cfg.model), 100, 1, 3)
    init_members(model, seeds)
    return model, problem, torch.optim.Adam(model.parameters(), lr=1e-2)


def run(model, problem, opt, checkpoint=None, logged=None, mode="autograd", schedule="constant"):
    def log(step, metrics):
        if logged is not None:
            logged.append((step, {k: v.clone() for k, v in metrics.items()}))

    return fit(model, problem, opt, steps=STEPS, eval_every=EVERY, select="validation", progress=False,
               checkpoint=checkpoint, log=log, train_step=mode, lr_schedule=schedule)


def same(a, b) -> None:
    for when in ("init", "final", "best"):
        for k in getattr(a, when):
            torch.testing.assert_close(getattr(a, when)[k], getattr(b, when)[k], rtol=0, atol=0, equal_nan=True)
    assert a.best_step.tolist() == b.best_step.tolist()
    assert a.diverged_step.tolist() == b.diverged_step.tolist()
    torch.testing.assert_close(a.train_loss, b.train_loss, rtol=0, atol=0, equal_nan=True)
    for p, q in zip(a.best_model.parameters(), b.best_model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=0, equal_nan=True)


# nalu: the plain loop; nmu: a regulariser ramped in mid-run and clamping; inalu: re-initialisation
# drawn from the unit's own generators, with a loss ring in non-persistent buffers
# functional: the compiled step's function, which must pick up the optimiser state a resume loads
# cosine: a learning rate that changes every step, which the resumed run must take up at the step it left
@pytest.mark.parametrize("model_name,extra,mode,schedule", [
    ("nalu", [], "autograd", "constant"), ("nmu", [], "autograd", "constant"),
    ("nmu", [], "functional", "constant"),
    ("inalu", ["model.reinit_every=20", "model.reinit_window=10"], "autograd", "constant"),
    ("nalu", [], "autograd", "cosine"),
])
def test_killed_fit_resumes_to_the_uninterrupted_result(tmp_path, model_name, extra, mode, schedule):
    whole_log: list = []
    whole = run(*fresh(model_name, extra), logged=whole_log, mode=mode, schedule=schedule)

    dies = 150  # between two evaluations, after a regulariser ramp has begun
    ckpt = Checkpoint(tmp_path / "checkpoint.pt", every_s=0.0, key="k")
    model, problem, opt = fresh(model_name, extra)
    with pytest.raises(Killed):
        run(model, dies_at(problem, dies), opt, checkpoint=ckpt, mode=mode, schedule=schedule)
    assert ckpt.step() == dies - 1

    rewound = []
    ckpt.on_resume = rewound.append
    resumed_log: list = []
    resumed = run(*fresh(model_name, extra), checkpoint=ckpt, logged=resumed_log, mode=mode, schedule=schedule)
    assert resumed.train_step == mode
    assert resumed.resumed_from == dies - 1 and rewound == [dies - 1]
    same(whole, resumed)
    # what the resumed run logs is exactly what the uninterrupted one logged after the checkpoint
    after = [(s, m) for s, m in whole_log if s > dies - 1]
    assert [s for s, _ in resumed_log] == [s for s, _ in after]
    for (_, m1), (_, m2) in zip(after, resumed_log, strict=True):
        for k in m1:
            torch.testing.assert_close(m1[k], m2[k], rtol=0, atol=0, equal_nan=True)


def asks_stop_at(problem, at: int, checkpoint: Checkpoint):
    """The problem, which sets ``checkpoint.stop_signal`` (as a signal handler would) while
    drawing its ``at``-th batch."""
    batch, drawn = problem.batch, [0]

    def batch_then_ask():
        drawn[0] += 1
        if drawn[0] == at:
            checkpoint.stop_signal = signal.SIGTERM
        return batch()

    problem.batch = batch_then_ask
    return problem


def test_fit_asked_to_stop_saves_that_step_and_resumes_to_the_uninterrupted_result(tmp_path):
    whole = run(*fresh("nalu"))
    ckpt = Checkpoint(tmp_path / "checkpoint.pt", every_s=1e9, key="k")  # no periodic save
    model, problem, opt = fresh("nalu")
    with pytest.raises(Stopped) as stop:
        run(model, asks_stop_at(problem, 150, ckpt), opt, checkpoint=ckpt)
    assert stop.value.step == 150 and stop.value.signum == signal.SIGTERM
    assert ckpt.step() == 150 and not ckpt.listening  # the step it was in is saved, nothing lost
    ckpt.stop_signal = 0
    same(whole, run(*fresh("nalu"), checkpoint=ckpt))


def test_checkpoint_of_another_run_is_ignored(tmp_path):
    ckpt = Checkpoint(tmp_path / "checkpoint.pt", every_s=0.0, key="one")
    model, problem, opt = fresh("nac")
    with pytest.raises(Killed):
        run(model, dies_at(problem, 100), opt, checkpoint=ckpt)
    assert ckpt.step() == 99
    other = Checkpoint(ckpt.path, key="two")
    assert other.step() == 0 and other.load() is None
    whole = run(*fresh("nac"))
    same(whole, run(*fresh("nac"), checkpoint=other))


def test_a_save_is_noted_before_it_replaces_the_last_state_so_a_kill_between_loses_no_note(tmp_path):
    seen = []
    ckpt = Checkpoint(tmp_path / "checkpoint.pt", key="k")
    ckpt.on_save = lambda step: seen.append((step, ckpt.step()))  # the state on disk when noted
    ckpt.save({"step": 1})
    ckpt.save({"step": 2})
    assert seen == [(1, 0), (2, 1)] and ckpt.step() == 2


def test_torn_checkpoint_file_is_ignored(tmp_path):
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(b"not a checkpoint")
    assert Checkpoint(path, key="k").read() == (None, "unreadable")
    assert Checkpoint(tmp_path / "absent.pt", key="k").read() == (None, None)


def wait_for(predicate, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise TimeoutError
        time.sleep(0.05)


KILLED_ARGS = [sys.executable, "-m", "suite.run", *TINY_ARITHMETIC, "model=nalu", "task.op=mul",
               "task.steps=6000", "task.eval_every=500", "checkpoint_every_s=0.5", "train_step=compiled"]
KILLED_ENV = {"WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    """The run folder of the killed runs' command, run through once."""
    where = tmp_path_factory.mktemp("uninterrupted")
    subprocess.run([*KILLED_ARGS, f"hydra.run.dir={where / 'whole'}"], cwd=where, env=KILLED_ENV, check=True,
                   capture_output=True, timeout=600)
    return where / "whole"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_cell_killed_mid_run_resumes_from_its_checkpoint(tmp_path, sig, uninterrupted):
    """The real command, killed with SIGKILL after its first checkpoint (or stopped with SIGTERM,
    which saves at once and exits 143 with one line), then rerun as written: it restarts from the
    checkpoint and ends with the uninterrupted run's metrics.json."""

    def command(name: str) -> list[str]:
        return [*KILLED_ARGS, f"hydra.run.dir={tmp_path / name}"]

    env = KILLED_ENV
    p = subprocess.Popen(command("killed"), cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    ckpt = tmp_path / "killed" / "checkpoint.pt"
    try:
        wait_for(ckpt.exists, timeout=300)
    finally:
        p.send_signal(sig)
        _, err = p.communicate(timeout=300)
    assert not (tmp_path / "killed" / "metrics.json").exists()
    step = torch.load(ckpt, weights_only=False)["step"]
    if sig == signal.SIGTERM:
        assert p.returncode == 128 + signal.SIGTERM, err[-3000:]
        assert f"stopped by SIGTERM at step {step:,}, checkpoint saved" in err.splitlines()[-1]
        assert "Traceback" not in err
    assert 0 < step < 6000
    again = subprocess.run(command("killed"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"resumed from step {step:,}" in again.stderr
    said = next(line for line in again.stderr.splitlines() if "resumed from step" in line)
    assert said.endswith("steps are trained again") or said.endswith("no step is trained again"), said
    assert not ckpt.exists()  # a finished cell keeps no checkpoint
    whole, killed = (json.loads((d / "metrics.json").read_text()) for d in (uninterrupted, tmp_path / "killed"))
    assert killed["resumed_from"] == step and whole["resumed_from"] == 0
    # each sitting's time until its last checkpoint, the last one's the cell's (suite.timings sums them)
    assert [s["from_step"] for s in killed["sittings"]] == [0, step] and killed["sittings"][0]["wall_s"] > 0
    assert killed["sittings"][-1]["wall_s"] == killed["wall_s"] and whole["sittings"][0]["wall_s"] == whole["wall_s"]
    assert killed["members"] == whole["members"]
    history = [(d / "history.csv").read_text() for d in (uninterrupted, tmp_path / "killed")]
    assert history[0] == history[1]


def inflight(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "suite.inflight", *args, "--runs", "multirun", "--carried", "carried"],
                          cwd=cwd, env=KILLED_ENV, capture_output=True, text=True, timeout=120, check=True)


def test_a_run_stopped_here_and_carried_in_git_resumes_on_another_machine_to_the_uninterrupted_result(
        tmp_path, uninterrupted):
    """make's first step records the target's sweeps; the run is stopped (SIGTERM saves its
    checkpoint); ``make carry`` packs what resumes it, a finished cell as its metrics only, never
    locks; a fresh machine with that one file unpacks it, resumes from the step, ends with the
    uninterrupted run's metrics, and the target's last step removes the carried file."""
    import shutil
    import tarfile

    here, there = tmp_path / "here", tmp_path / "there"
    sweep = here / "multirun" / "sw"
    shutil.copytree(uninterrupted, sweep / "done")  # a cell that finished in an earlier sitting
    inflight(here, "begin", "t", "multirun/sw")
    command = [*KILLED_ARGS, "hydra.run.dir=multirun/sw/cell"]
    p = subprocess.Popen(command, cwd=here, env=KILLED_ENV, stderr=subprocess.DEVNULL)
    try:
        wait_for((sweep / "cell" / "checkpoint.pt").exists, timeout=300)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=300)
    step = torch.load(sweep / "cell" / "checkpoint.pt", weights_only=False)["step"]
    assert 0 < step < 6000
    assert "wrote" in inflight(here, "pack").stderr
    carried = here / "carried" / "t.tar.gz"
    with tarfile.open(carried) as tar:
        names = set(tar.getnames())
        manifest = tar.extractfile("MANIFEST.sha256").read().decode()
    assert {"sw/done/metrics.json", "sw/cell/checkpoint.pt", "sw/cell/history.csv", "sw/cell/sittings.json",
            "sw/cell/.hydra/config.yaml"} <= names
    assert not {n for n in names if n.endswith(".lock") or n.startswith("sw/done/") and n != "sw/done/metrics.json"}
    assert len(manifest.splitlines()) == len(names) - 1

    (there / "carried").mkdir(parents=True)
    shutil.copy(carried, there / "carried")
    said = inflight(there, "status", "t").stderr.strip()  # what a dry run says there, before unpacking
    assert said == (f"t: carried/t.tar.gz carries 1 finished cells and 1 groups' checkpoints (at step {step:,}); "
                    "the target unpacks it and goes on from there")
    assert not (there / "multirun").exists()
    assert "2 cells unpacked" in inflight(there, "begin", "t", "multirun/sw").stderr
    again = subprocess.run(command, cwd=there, env=KILLED_ENV, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"resumed from step {step:,}" in again.stderr
    said = next(line for line in again.stderr.splitlines() if "resumed from step" in line)
    assert said.endswith("steps are trained again") or said.endswith("no step is trained again"), said
    whole, resumed = (json.loads((d / "metrics.json").read_text()) for d in (uninterrupted, there / "multirun/sw/cell"))
    assert resumed["members"] == whole["members"]
    assert (there / "multirun/sw/done/metrics.json").read_bytes() == (uninterrupted / "metrics.json").read_bytes()
    assert "wrote" in inflight(there, "pack", "t").stderr  # both finished: their metrics, till the evidence is written
    with tarfile.open(there / "carried" / "t.tar.gz") as tar:
        assert sorted(tar.getnames()) == ["MANIFEST.sha256", "sw/cell/metrics.json", "sw/done/metrics.json"]

    kept = inflight(there, "begin", "t", "multirun/sw").stderr  # begun twice: nothing overwritten
    assert "0 cells unpacked" in kept and "2 kept as they are here" in kept
    assert "removed" in inflight(there, "drop", "t").stderr
    assert not (there / "carried" / "t.tar.gz").exists() and not (there / "multirun/.inflight/t").exists()


def test_carry_refuses_while_a_cell_trains_and_names_the_targets_begun_here(tmp_path):
    """A cell whose lock a process holds is training: packing it now would carry a state that is
    about to change, so nothing is written; a target not begun here is named with those that were."""
    import fcntl

    cell = tmp_path / "multirun" / "sw" / "cell"
    cell.mkdir(parents=True)
    (cell / "history.csv").write_text("step\n")
    inflight(tmp_path, "begin", "t", "multirun/sw")
    with open(cell / ".lock", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        p = subprocess.run([sys.executable, "-m", "suite.inflight", "pack", "--runs", "multirun", "--carried", "carried"],
                           cwd=tmp_path, env=KILLED_ENV, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "is training now" in p.stderr and "nothing written" in p.stderr
    assert not (tmp_path / "carried").exists()
    p = subprocess.run([sys.executable, "-m", "suite.inflight", "pack", "u", "--runs", "multirun", "--carried", "carried"],
                       cwd=tmp_path, env=KILLED_ENV, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and p.stderr.strip() == ("error: u was not begun here (no multirun/.inflight/u); "
                                                      "begun: t; nothing written")


class Planted:
    """An object whose unpickling runs code (it touches a file): what a crafted checkpoint could carry."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_checkpoint_holding_anything_but_tensors_and_plain_data_is_refused_unread(tmp_path):
    """make carry commits checkpoints to git, so a pulled one may be crafted: loading is tensors and
    plain data only, and a file holding any other object is refused in one line, its code not run."""
    from nalu.train import Checkpoint

    marker = tmp_path / "ran"
    path = tmp_path / "checkpoint.pt"
    torch.save({"step": 5, "key": "k", "payload": Planted(marker)}, path)
    state, why = Checkpoint(path, key="k").read()
    assert state is None and why.startswith("refused: it holds objects other than tensors and plain data")
    assert not marker.exists()
    torch.save({"step": 5, "key": "k", "model": {"w": torch.ones(2)}, "rngs": [1, 2.0, None]}, path)
    state, why = Checkpoint(path, key="k").read()
    assert why is None and state["step"] == 5


def test_a_carried_checkpoint_holding_other_objects_is_refused_in_one_line(tmp_path):
    import io
    import tarfile

    from .conftest import cli

    marker = tmp_path / "ran"
    buffer = io.BytesIO()
    torch.save({"step": 5, "payload": Planted(marker)}, buffer)
    carried = tmp_path / "inflight"
    carried.mkdir()
    with tarfile.open(carried / "t.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("t/cell/checkpoint.pt")
        info.size = len(buffer.getvalue())
        tar.addfile(info, io.BytesIO(buffer.getvalue()))
    p = cli(["-m", "suite.inflight", "status", "t", "--carried", str(carried)], tmp_path, check=False)
    (line,) = p.stderr.strip().splitlines()
    assert p.returncode == 2 and "checkpoint.pt is not a checkpoint of tensors and plain data" in line
    assert not marker.exists()


def test_the_last_steps_are_saved_before_the_last_evaluation_so_a_stop_there_costs_only_the_evaluation(tmp_path):
    """A stop that lands in the last evaluation (a preemption, say) found the state of the last
    checkpoint interval and trained its steps again; now the state at the last step is saved first,
    and the resumed run only evaluates, ending as the uninterrupted one does."""
    whole = run(*fresh("nalu"))
    ckpt = Checkpoint(tmp_path / "checkpoint.pt", every_s=1e9, key="k")  # no save inside the loop
    model, problem, opt = fresh("nalu")
    evaluate, calls = problem.evaluate, [0]

    def dies_in_the_last_evaluation(m):
        calls[0] += 1
        if calls[0] == 1 + STEPS // EVERY:  # the initial evaluation, the ones inside the loop, then the last
            raise Killed
        return evaluate(m)

    problem.evaluate = dies_in_the_last_evaluation
    with pytest.raises(Killed):
        run(model, problem, opt, checkpoint=ckpt)
    assert ckpt.step() == STEPS
    resumed = run(*fresh("nalu"), checkpoint=ckpt)
    assert resumed.resumed_from == STEPS
    same(whole, resumed)


def test_a_resume_says_how_many_steps_the_last_sitting_trained_past_its_checkpoint(tmp_path):
    from suite.runner import last_logged_step

    history = tmp_path / "history.csv"
    history.write_text("step,seed,metric,value\n0,0,validation,1.0\n1500,0,validation,0.5\n3000,0,validation,0.2\n")
    assert last_logged_step(history) == 3000 and last_logged_step(tmp_path / "absent.csv") == 0
