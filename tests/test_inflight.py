"""The state a target carries between sittings (suite/inflight.py), cell by cell: which side of a
merge wins, what counts as finished, when the carried file may go. The end-to-end run (stopped
here, carried, resumed elsewhere to the uninterrupted result) is in tests/test_checkpoint.py."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from pathlib import Path

import torch

from suite import inflight


def cell(folder: Path, last_step: int | None = None, metrics: bool = False, checkpoint: bytes | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if last_step is not None:
        rows = "".join(f"{s},0,loss,0.5\n" for s in range(0, last_step + 1, 100))
        (folder / "history.csv").write_text("step,seed,metric,value\n" + rows)
    if checkpoint is not None:
        (folder / "checkpoint.pt").write_bytes(checkpoint)
        (folder / "sittings.json").write_text("{}")
    if metrics:
        time.sleep(0.01)  # written after the curve, as the runner does
        (folder / "metrics.json").write_text(json.dumps({"complete": True}))
    return folder


def carried(tmp: Path, files: dict[str, bytes]) -> Path:
    """A carried file of target ``t`` holding ``files`` (paths under the runs folder)."""
    (tmp / "carried").mkdir(exist_ok=True)
    with tarfile.open(tmp / "carried" / "t.tar.gz", "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return tmp / "carried"


def test_an_unfinished_cell_further_along_in_the_file_replaces_this_machines_older_state_whole(tmp_path):
    """Machine A was cut off before its first checkpoint (a curve to step 100, no checkpoint);
    B's carried state reached step 300: A resumes from B's, with B's curve, not A's beside it."""
    runs = tmp_path / "multirun"
    here = cell(runs / "sw" / "c", last_step=100)
    (here / "run.log").write_text("A's log")
    files = {"sw/c/history.csv": b"step,seed,metric,value\n300,0,loss,0.1\n", "sw/c/checkpoint.pt": b"B",
             "sw/c/sittings.json": b"{}", "sw/c/.hydra/config.yaml": b"op: add\n"}
    assert inflight.begin("t", [runs / "sw"], runs, carried(tmp_path, files)) == (1, 0)
    assert (here / "checkpoint.pt").read_bytes() == b"B" and (here / "history.csv").read_bytes().endswith(b"300,0,loss,0.1\n")
    assert not (here / "run.log").exists()  # nothing of A's older state beside B's
    assert (here / ".hydra" / "config.yaml").read_text() == "op: add\n"


def test_this_machines_state_stays_where_it_is_further_along_or_finished(tmp_path):
    runs = tmp_path / "multirun"
    ahead = cell(runs / "sw" / "ahead", last_step=500, checkpoint=b"here")
    done = cell(runs / "sw" / "done", last_step=900, metrics=True)
    files = {"sw/ahead/history.csv": b"step,seed,metric,value\n200,0,loss,0.1\n", "sw/ahead/checkpoint.pt": b"file",
             "sw/done/history.csv": b"step,seed,metric,value\n300,0,loss,0.1\n", "sw/done/checkpoint.pt": b"file"}
    before = {p: p.read_bytes() for p in (ahead / "checkpoint.pt", done / "metrics.json")}
    assert inflight.begin("t", [runs / "sw"], runs, carried(tmp_path, files)) == (0, 2)
    assert {p: p.read_bytes() for p in before} == before and not (done / "checkpoint.pt").exists()


def test_a_cell_retrained_over_its_old_metrics_is_carried_as_unfinished_without_them(tmp_path):
    """A cell made again (a new numerics version, force=true) keeps its old complete metrics.json
    until the new one is written: its checkpoint, or a curve newer than the metrics, says it is
    unfinished, and its old metrics do not travel (elsewhere they would read as finished)."""
    runs = tmp_path / "multirun"
    first = cell(runs / "sw" / "first", metrics=True)
    cell(first, last_step=200, checkpoint=b"ckpt")  # the group's first cell: its checkpoint beside old metrics
    mate = cell(runs / "sw" / "mate", metrics=True)
    time.sleep(0.01)
    cell(mate, last_step=200)  # a group-mate: its curve rewritten after its old metrics
    assert not inflight.finished(first) and not inflight.finished(mate)
    names = {p.relative_to(runs).as_posix() for p in inflight.carried_files(runs / "sw")}
    assert names == {"sw/first/checkpoint.pt", "sw/first/sittings.json", "sw/first/history.csv", "sw/mate/history.csv"}


def test_the_carried_file_goes_only_when_no_cell_of_the_target_is_unfinished(tmp_path):
    runs, out = tmp_path / "multirun", tmp_path / "carried"
    cell(runs / "sw" / "a", last_step=100, metrics=True)
    cell(runs / "sw" / "b", last_step=100, checkpoint=b"ckpt")
    inflight.begin("t", [runs / "sw"], runs, out)
    assert isinstance(inflight.pack("t", runs, out), Path)
    said = inflight.drop("t", runs, out)  # a SAMPLE ran part of the target: b is still unfinished
    assert "unfinished" in said and (out / "t.tar.gz").is_file() and inflight.begun(runs) == ["t"]
    os.remove(runs / "sw" / "b" / "checkpoint.pt")
    os.remove(runs / "sw" / "b" / "sittings.json")
    cell(runs / "sw" / "b", metrics=True)
    assert "removed" in inflight.drop("t", runs, out)
    assert not (out / "t.tar.gz").exists() and inflight.begun(runs) == []


def test_a_target_stopped_between_groups_carries_its_finished_cells(tmp_path):
    """Every cell begun is finished, and cells still to start have no folder yet: their metrics
    are carried all the same (the next sitting must not train them again); nothing begun, nothing."""
    runs, out = tmp_path / "multirun", tmp_path / "carried"
    (runs / "sw").mkdir(parents=True)
    inflight.begin("t", [runs / "sw"], runs, out)
    assert inflight.pack("t", runs, out) == "nothing to carry: no cell of its sweeps has begun here"
    cell(runs / "sw" / "a", last_step=100, metrics=True)
    with tarfile.open(inflight.pack("t", runs, out)) as tar:
        assert sorted(tar.getnames()) == ["MANIFEST.sha256", "sw/a/metrics.json"]
    there = tmp_path / "there"
    assert inflight.begin("t", [there / "sw"], there, out) == (1, 0)
    assert json.loads((there / "sw" / "a" / "metrics.json").read_text())["complete"]


def test_a_carried_file_that_does_not_match_its_manifest_unpacks_nothing(tmp_path):
    runs = tmp_path / "multirun"
    files = {"MANIFEST.sha256": f"{inflight.sha256(b'step')}  sw/c/history.csv\n".encode(),
             "sw/c/history.csv": b"step\n100\n"}
    listed = {"MANIFEST.sha256": f"{inflight.sha256(b'x')}  sw/c/run.log\n".encode(), "sw/c/run.log": b"x",
              "sw/c/history.csv": b"step\n100\n"}  # a file the manifest does not list
    try:
        inflight.begin("t", [runs / "sw"], runs, carried(tmp_path, listed))
    except SystemExit as e:
        assert "sw/c/history.csv does not match its MANIFEST.sha256 line" in str(e)
    else:
        raise AssertionError("unpacked a file its manifest does not list")
    try:
        inflight.begin("t", [runs / "sw"], runs, carried(tmp_path, files))
    except SystemExit as e:
        assert "sw/c/history.csv does not match its MANIFEST.sha256 line" in str(e)
    else:
        raise AssertionError("unpacked a file its manifest does not list as it is")
    assert not (runs / "sw" / "c").exists()


def test_a_carried_file_naming_a_path_outside_the_runs_folder_unpacks_nothing(tmp_path):
    runs = tmp_path / "multirun"
    files = {"sw/c/history.csv": b"step\n100\n", "../escape.txt": b"x"}
    try:
        inflight.begin("t", [runs / "sw"], runs, carried(tmp_path, files))
    except SystemExit as e:
        assert "outside" in str(e) and "nothing unpacked" in str(e)
    else:
        raise AssertionError("unpacked a path outside the runs folder")
    assert not (runs / "sw" / "c").exists() and not (tmp_path / "escape.txt").exists()


def test_state_over_the_size_a_committed_file_may_hold_is_cut_into_parts_that_unpack_as_the_whole(tmp_path):
    """A 7 MB checkpoint (a state-32 LSTM's, 10 seeds) goes in parts of at most the limit, which
    the next sitting joins and unpacks; a later, smaller pack replaces every part by one file, and
    the target's end removes what is there."""
    runs, out = tmp_path / "multirun", tmp_path / "carried"
    buffer = io.BytesIO()
    torch.save({"step": 100, "model": torch.randn(700, generator=torch.Generator().manual_seed(0))}, buffer)
    state = buffer.getvalue()  # random weights barely compress
    cell(runs / "sw" / "b", last_step=100, checkpoint=state)
    inflight.begin("t", [runs / "sw"], runs, out)
    first = inflight.pack("t", runs, out, limit=1000)
    cut = inflight.parts("t", out)
    assert first == out / "t.tar.gz.000" and [p.name for p in cut] == [f"t.tar.gz.{i:03d}" for i in range(len(cut))]
    assert len(cut) >= 3
    assert all(p.stat().st_size <= 1000 for p in cut) and not (out / "t.tar.gz").exists()
    there = tmp_path / "there"
    assert inflight.begin("t", [there / "sw"], there, out) == (1, 0)
    assert (there / "sw" / "b" / "checkpoint.pt").read_bytes() == state
    last = cut[-1].read_bytes()
    cut[-1].unlink()  # a part missing: one line, nothing unpacked
    try:
        inflight.begin("t", [tmp_path / "elsewhere" / "sw"], tmp_path / "elsewhere", out)
    except SystemExit as e:
        assert "does not read as one archive" in str(e) and "nothing unpacked" in str(e)
    else:
        raise AssertionError("unpacked an archive with a part missing")
    assert not (tmp_path / "elsewhere" / "sw").exists()
    cut[-1].write_bytes(last)
    assert f"(in {len(cut)} parts) carries 0 finished cells and 1 groups' checkpoints (at step 100)" in inflight.status("t", out)
    (out / "t.tar.gz").write_bytes(b"an older pack, whole")  # half a commit, or a pack cut short
    try:
        inflight.begin("t", [there / "sw"], there, out)
    except SystemExit as e:
        assert "t.tar.gz and its parts" in str(e) and "both there" in str(e)
    else:
        raise AssertionError("read one of two packs without a word")
    (out / "t.tar.gz").unlink()
    (runs / "sw" / "b" / "checkpoint.pt").write_bytes(b"small")
    assert inflight.pack("t", runs, out, limit=1000) == out / "t.tar.gz"
    assert inflight.parts("t", out) == [out / "t.tar.gz"] and not list(out.glob("t.tar.gz.*"))
    os.remove(runs / "sw" / "b" / "checkpoint.pt")
    os.remove(runs / "sw" / "b" / "sittings.json")
    cell(runs / "sw" / "b", metrics=True)
    inflight.pack("t", runs, out, limit=1000)
    assert "removed" in inflight.drop("t", runs, out) and not list(out.iterdir())


def test_unfinished_state_over_what_a_target_may_carry_is_left_out_finished_cells_carried(tmp_path, capsys):
    runs, out = tmp_path / "multirun", tmp_path / "carried"
    cell(runs / "sw" / "a", last_step=100, metrics=True)
    cell(runs / "sw" / "b", last_step=100, checkpoint=os.urandom(2000))
    inflight.begin("t", [runs / "sw"], runs, out)
    path = inflight.pack("t", runs, out, total=1000)
    assert "left out, these cells start again at the next sitting: sw/b" in capsys.readouterr().err
    with tarfile.open(path) as tar:
        assert sorted(tar.getnames()) == ["MANIFEST.sha256", "sw/a/metrics.json"]
    os.remove(runs / "sw" / "a" / "metrics.json")  # nothing finished: nothing to carry
    os.remove(path)
    assert inflight.pack("t", runs, out, total=1000) == ("nothing carried: its unfinished state was left out, "
                                                         "and no cell has finished") and not path.exists()
