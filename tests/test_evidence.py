"""The committed record: every table and figure of results/ rebuilds from results/evidence/ alone,
and the evidence is what the run folders hold."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from suite.evidence import EVIDENCE_DIR, collect, dumps, load
from suite.preregistered import registrations
from suite.targets import BUILT

from .conftest import ROOT, cli

RESULTS = ROOT / "results"
# entries whose evidence is not committed yet: only a pre-registered run still under way
# (results/preregistered/) may be one; the test below fails on any other entry without evidence
PENDING: set[str] = {r.evidence for r in registrations() if not (RESULTS / "evidence" / f"{r.evidence}.jsonl").is_file()}


def with_evidence() -> list:
    return [b for b in BUILT if all(p.is_file() for p in b.evidence())]


def test_pending_entries_are_exactly_those_without_evidence():
    assert {b.name for b in BUILT} - {b.name for b in with_evidence()} == PENDING


def test_only_a_pending_target_has_state_carried_between_sittings():
    """A target whose evidence landed has nothing left to resume: its make target removes the
    carried file, and a landing by hand must too."""
    carried = {p.name.split(".tar.gz")[0] for p in (RESULTS / "inflight").glob("*.tar.gz*")}  # whole, or in parts
    assert carried <= PENDING, sorted(carried - PENDING)


@pytest.mark.parametrize("built", with_evidence(), ids=lambda b: b.name)
def test_a_table_rebuilds_byte_identical_from_its_evidence_alone(built, tmp_path):
    """No run folder is read (the test runs from a folder that has none); every file the builder
    writes is the committed one, byte for byte (figures: pixel for pixel, their metadata aside)."""
    out = tmp_path / "results"
    cli(["-m", "suite.tables", "build", built.name, "--out", str(out)], tmp_path)
    made = sorted(out.iterdir())
    assert made, built.name
    for path in made:
        committed = RESULTS / path.name
        assert committed.is_file(), f"{built.name} writes {path.name}, which results/ does not hold"
        if path.suffix == ".png":
            import matplotlib.pyplot as plt
            import numpy as np

            assert np.array_equal(plt.imread(path), plt.imread(committed)), path.name
        else:
            assert path.read_bytes() == committed.read_bytes(), f"{path.name} differs from results/{path.name}"


def test_every_table_of_results_has_a_builder():
    """Nothing in results/ is orphaned: each table and figure is some entry's output."""
    figure3 = {"figure3" + b.name.removeprefix("table3") for b in BUILT if b.what == "table3"}  # beside each Table 3
    stems = {b.name for b in BUILT} | figure3 | {"figure1", "claims", "stability", "timings", "rates"}  # suite.claims, suite.timings
    stems |= {f"{b.name}_best_of_k" for b in BUILT if b.what == "table1"}  # beside a Table 1 of many seeds
    stems |= {f"{b.name}_totals" for b in BUILT if b.what == "primer"}  # beside the Primer's table
    files = [p for p in RESULTS.iterdir() if p.suffix in (".md", ".csv", ".png") and p.name != "README.md"]
    assert files and all(p.stem in stems for p in files), sorted(p.name for p in files if p.stem not in stems)


def test_every_evidence_file_belongs_to_an_entry():
    names = {b.name for b in BUILT}
    assert {p.stem for p in EVIDENCE_DIR.glob("*.jsonl")} <= names


def test_evidence_is_the_cells_metrics_in_order_with_solved_at_from_their_history(tmp_path):
    sweep = tmp_path / "multirun" / "units"
    for cell, value in (("model=nau,task.op=mul", 0.5), ("model=nau,task.op=add", 2.0), ("half", None)):
        folder = sweep / cell
        folder.mkdir(parents=True)
        (folder / "history.csv").write_text("step,seed,metric,value\n0,0,extrapolation,9.0\n"
                                            "100,0,extrapolation,0.5\n200,0,extrapolation,0.1\n")
        if value is None:
            (folder / "metrics.json").write_text('{"complete": false}')
            continue
        members = [{"seed": 0, "success_threshold": 1.0, "solved": value < 1.0}]
        (folder / "metrics.json").write_text(json.dumps({"complete": True, "task": "static_arithmetic",
                                                         "members": members}))
    cells = collect(sweep)
    assert [c["run"] for c in cells] == ["units/model=nau,task.op=add", "units/model=nau,task.op=mul"]
    assert [c["members"][0]["solved_at"] for c in cells] == [100, 100]  # first step below 1.0
    path = tmp_path / "e.jsonl"
    path.write_text(dumps(cells))
    assert load(path) == cells


def test_members_stored_by_column_load_back_exactly_field_order_and_all(tmp_path):
    """Columns only where every member has the same fields in the same order: an empty field, a
    field one member lacks, a NaN and a single member all come back as they were."""
    members = [{"seed": s, "best": {"validation": 0.5 * s, "extrapolation": float("nan")}, "horizon": {},
                "curve": [s, s + 1], "solved_at": None} for s in range(3)]
    members[1]["best"] = {"extrapolation": 1.0, "validation": 2.0}  # same keys, another order: stays records
    cells = [{"run": "a", "members": members}, {"run": "b", "members": [{"seed": 7, "x": {"y": 1}}]},
             {"run": "c", "members": []}, {"run": "d", "members": [{"seed": 0}, {"seed": 1, "extra": 2}]}]
    text = dumps(cells)
    first = json.loads(text.splitlines()[0])["members"]
    assert first["seed"] == [0, 1, 2] and first["horizon"] == [{}, {}, {}] and isinstance(first["best"], list)
    assert json.loads(text.splitlines()[1])["members"] == {"seed": [7], "x": {"y": [1]}}
    assert isinstance(json.loads(text.splitlines()[3])["members"], list)
    path = tmp_path / "e.jsonl"
    path.write_text(text)
    assert json.dumps(load(path)) == json.dumps(cells)  # NaN != NaN: compare the text, order included


def test_no_tracked_file_is_over_five_megabytes():
    """The repository stays a clone away: the largest committed record (100 seeds a cell) fits."""
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    files = [ROOT / f for f in listed.stdout.split("\0") if f and (ROOT / f).is_file()]
    assert len(files) > 100
    assert [f.name for f in files if f.stat().st_size > 5_000_000] == []


def test_evidence_refuses_to_write_from_no_cells(tmp_path):
    p = cli(["-m", "suite.evidence", "table1", str(tmp_path / "absent"), "--out", str(tmp_path / "ev")], tmp_path,
            check=False)
    assert p.returncode != 0 and p.stderr.strip().splitlines()[-1].startswith("error: no finished cells")
    assert not (tmp_path / "ev").exists()


def test_archive_packs_a_targets_run_folders_with_a_manifest_that_checks(tmp_path):
    import hashlib
    import tarfile

    sweep = tmp_path / "multirun" / "t1"
    (sweep / "cell").mkdir(parents=True)
    (sweep / "cell" / "history.csv").write_text("step,seed,metric,value\n")
    (sweep / "cell" / "metrics.json").write_text('{"complete": true, "members": []}')
    evidence = tmp_path / "ev"
    cli(["-m", "suite.evidence", "t1", str(sweep), "--out", str(evidence)], tmp_path)
    (evidence / "t1.jsonl").write_text((evidence / "t1.jsonl").read_text() + '{"run": "gone/cell"}\n')
    sys_path = ["-c", f"import sys; sys.argv[0] = 'archive'; sys.path.insert(0, {str(ROOT)!r}); "
                      f"from scripts.archive import archive; from pathlib import Path; "
                      f"archive('t1', Path({str(tmp_path / 'multirun')!r}), Path({str(tmp_path / 'out')!r}), "
                      f"Path({str(evidence)!r}))"]
    p = cli(sys_path, tmp_path)
    assert "1 cells have no run folder" in p.stderr
    with tarfile.open(tmp_path / "out" / "t1.tar.gz") as tar:
        names = tar.getnames()
        manifest = tar.extractfile("MANIFEST.sha256").read().decode().splitlines()
        assert names[0] == "MANIFEST.sha256" and len(manifest) == len(names) - 1 == 3
        for line in manifest:
            digest, arc = line.split("  ")
            assert hashlib.sha256(tar.extractfile(arc).read()).hexdigest() == digest
    assert {line.split("  ")[1] for line in manifest} == {
        "evidence/t1.jsonl", "runs/t1/cell/history.csv", "runs/t1/cell/metrics.json"}


def test_restored_cells_are_up_to_date_and_the_sweep_goes_on_with_the_missing_ones(workdir):
    """A fresh machine with the evidence but no run folders: --restore writes the cells back, a dry
    run finds them up to date, and the sweep runs only a cell the evidence lacks."""
    import shutil

    from .conftest import TINY_ARITHMETIC

    run = ["-m", "suite.run", "-m", "model=nac", "name=rs"] + TINY_ARITHMETIC
    cli(run + ["task.op=add,sub"], workdir)
    cli(["-m", "suite.evidence", "rs", str(workdir / "multirun/rs"), "--out", str(workdir / "ev")], workdir)
    shutil.rmtree(workdir / "multirun")
    p = cli(["-m", "suite.evidence", "rs", "--restore", "--out", str(workdir / "ev"), "--runs",
             str(workdir / "multirun")], workdir)
    assert "restored 2 cells" in p.stderr
    dry = cli(run + ["task.op=add,sub,mul", "dry_run=true"], workdir)
    assert sorted(line for line in dry.stderr.splitlines() if line.startswith("status:")) == [
        "status: to run: static/mul/nac (not run yet)", "status: up to date: static/add/nac",
        "status: up to date: static/sub/nac"]
    again = cli(run + ["task.op=add,sub,mul"], workdir)
    assert "done static/mul/nac" in again.stderr and "skip static/add/nac" in again.stderr


def test_a_cell_whose_identical_twin_is_in_evidence_is_copied_not_trained_under_any_sweep_name(workdir):
    """The twin is found by config hash and numerics version alone (the sweep's name is not
    hashed); its record is copied with where it came from, the rest of the sweep trains, a dry run
    says so first, and reuse=null trains the twin anyway. A cell's own committed record is no twin:
    the sweep run again from a fresh clone trains the cell that only it made."""
    import shutil

    from .conftest import TINY_ARITHMETIC

    run = ["-m", "suite.run", "-m", "model=nac"] + TINY_ARITHMETIC
    cli(run + ["name=first", "task.op=add,sub"], workdir)
    cli(["-m", "suite.evidence", "first", str(workdir / "multirun/first"), "--out", str(workdir / "ev")], workdir)
    shutil.rmtree(workdir / "multirun")
    second = run + ["name=second", "task.op=add,sub,mul", f"reuse={workdir / 'ev'}"]
    dry = cli(second + ["dry_run=true"], workdir)
    statuses = sorted(line for line in dry.stderr.splitlines() if line.startswith("status:"))
    assert [s.split(" (")[0] for s in statuses] == ["status: to run: static/add/nac", "status: to run: static/mul/nac",
                                                    "status: to run: static/sub/nac"]
    assert "identical to first: first/model=nac," in statuses[0] and statuses[0].endswith("to be reused)")
    assert "reused" not in statuses[1]
    p = cli(second, workdir)
    assert sum(line.startswith("reuse static/") for line in p.stderr.splitlines()) == 2
    assert "done static/mul/nac" in p.stderr
    (twin,) = [c for c in load(workdir / "ev" / "first.jsonl") if "task.op=add," in c["run"]]
    (path,) = (workdir / "multirun/second").glob("*task.op=add,*/metrics.json")
    copied = json.loads(path.read_text())
    assert copied == {**{k: v for k, v in twin.items() if k != "run"}, "reused_from": f"first: {twin['run']}"}
    cli(["-m", "suite.evidence", "second", str(workdir / "multirun/second"), "--out", str(workdir / "ev")], workdir)
    shutil.rmtree(workdir / "multirun")  # a fresh clone: the second sweep's own records are not its twins
    fresh = cli(second, workdir)
    assert sorted(line.split(":")[0] for line in fresh.stderr.splitlines() if line.startswith("reuse ")) == [
        "reuse static/add/nac", "reuse static/sub/nac"]  # from the first sweep, not from their copies
    assert "done static/mul/nac" in fresh.stderr and "identical to first: first/" in fresh.stderr
    again = cli(run + ["name=third", "task.op=add", "reuse=null"], workdir)
    assert "done static/add/nac" in again.stderr and "reuse " not in again.stderr
    bad = cli(run + ["name=fourth", "task.op=add", f"reuse={workdir / 'absent'}"], workdir, check=False)
    assert bad.returncode == 2 and "reuse must be a folder of evidence files" in bad.stderr.strip().splitlines()[-1]
    assert not list((workdir / "multirun").glob("fourth/*/metrics.json"))


def test_a_table_without_evidence_is_pending_and_one_with_evidence_has_its_table():
    for b in BUILT:
        assert (RESULTS / f"{b.name}.csv").exists() or b.name in PENDING, b.name


def test_a_torn_evidence_file_is_one_line_and_exit_2_with_nothing_built(tmp_path):
    from .conftest import cli

    good = (EVIDENCE_DIR / "table1.jsonl").read_text().splitlines()
    torn = tmp_path / "table1.jsonl"
    torn.write_text(good[0] + "\n" + good[1][:200] + "\n")
    p = cli(["-m", "suite.tables", "table1", "--evidence", str(torn), "--out", str(tmp_path / "out")], tmp_path,
            check=False)
    assert p.returncode == 2
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith(f"error: {torn}, line 2, is not JSON") and "git checkout" in line
    assert not (tmp_path / "out" / "table1.md").exists()


def test_a_key_the_configs_gained_since_a_committed_cell_was_made_leaves_it_up_to_date():
    """Every key of today's config (per task and model that committed evidence holds) that a
    committed cell's config lacks is unhashed (suite.record.NOT_HASHED) or at its neutral value
    (NEUTRAL): a knob added later makes no finished cell stale. Numeric keys are data, not knobs
    (the test sets an experiment chooses, ``task.test_series``)."""
    from omegaconf import OmegaConf

    from suite.record import NEUTRAL, NOT_HASHED

    from .conftest import compose

    def flat(d, path=()):
        out = {}
        for k, v in d.items():
            out.update(flat(v, (*path, k)) if isinstance(v, dict) and v else {(*path, k): v})
        return out

    made = {}
    for f in sorted(EVIDENCE_DIR.glob("*.jsonl")):
        for cell in load(f):
            made.setdefault((cell["config"]["task"]["name"], cell["config"]["model"]["name"]), flat(cell["config"]))
    assert len(made) > 30
    unneutral = []
    for (task, model), stored in sorted(made.items()):
        now = flat(OmegaConf.to_container(compose([f"task={task}", f"model={model}"]), resolve=True))
        for key in now.keys() - stored.keys():
            if key[0] in NOT_HASHED or str(key[-1]).isdigit():
                continue
            if not any(key[:len(p)] == p and now[key] == value for p, value in NEUTRAL.items()):
                unneutral.append(f"{task}/{model}: {'.'.join(map(str, key))}={now[key]!r}")
    assert unneutral == []


def sweep_of(root: Path, cells: dict[str, str]) -> Path:
    """A sweep folder whose finished cells are named by run folder, each with its config hash."""
    sweep = root / "multirun" / "t"
    for folder, digest in cells.items():
        (sweep / folder).mkdir(parents=True)
        (sweep / folder / "metrics.json").write_text(json.dumps({"complete": True, "task": "static_arithmetic",
                                                                 "config_hash": digest, "members": []}))
    return sweep


def test_committed_evidence_is_replaced_only_by_the_same_run_of_its_target_or_on_purpose(tmp_path, monkeypatch):
    """A narrowed run (fewer cells) or one of other settings (another config hash) leaves committed
    evidence as it was, in one line naming the switch; the whole run, or REPLACE=1, replaces it."""
    from suite import evidence

    monkeypatch.setattr(evidence, "committed", lambda path: True)
    out = tmp_path / "evidence"
    out.mkdir()
    whole = sweep_of(tmp_path / "a", {"x": "h1", "y": "h2"})
    evidence.write("t", [whole], out)
    before = (out / "t.jsonl").read_text()
    for cells, said in (({"x": "h1"}, "1 of its 2 cells missing"), ({"x": "h1", "y": "h9"}, "1 cells with other settings")):
        with pytest.raises(SystemExit, match=rf"not the committed run of .*t\.jsonl \({said}\); nothing replaced.*REPLACE=1"):
            evidence.write("t", [sweep_of(tmp_path / said.replace(" ", "_"), cells)], out)
        assert (out / "t.jsonl").read_text() == before
    evidence.write("t", [whole], out)  # the same run again: replaced (its numbers may differ by machine)
    evidence.write("t", [sweep_of(tmp_path / "b", {"x": "h1"})], out, replace=True)
    assert [c["run"] for c in load(out / "t.jsonl")] == ["t/x"]


def test_a_narrowed_make_target_writes_a_scratch_results_folder_and_keeps_the_carried_state():
    """make reproduce-* SAMPLE=... (the docs' way to try a target small) writes its evidence, tables and
    claims under multirun/.scratch/<name> and drops no carried state; REPLACE=1 writes results/."""
    def recipe(*extra: str) -> str:
        return " ".join(subprocess.run(["make", "-n", "-o", ".venv/.installed", "reproduce-table1", *extra], cwd=ROOT,
                                       capture_output=True, text=True, check=True).stdout.replace("\n", " \n ").split())

    narrowed = recipe("VARIANT=protocol3", "SAMPLE=model=nac task.steps=20")
    assert "-m suite.evidence table1_protocol3 multirun/table1_static_protocol3 --out multirun/.scratch/table1_protocol3/evidence" in narrowed
    assert "suite.tables build table1_protocol3 --out multirun/.scratch/table1_protocol3 --evidence-dir" in narrowed
    assert "suite.claims --results multirun/.scratch/table1_protocol3 --readme none" in narrowed
    assert "inflight drop" not in narrowed and "suite.timings" not in narrowed
    on_purpose = recipe("VARIANT=protocol3", "SAMPLE=model=nac", "REPLACE=1")
    assert "--replace && .venv/bin/python -m suite.inflight drop table1_protocol3" in on_purpose and "suite.timings" in on_purpose
    assert ".scratch" not in on_purpose and ".scratch" not in recipe()
