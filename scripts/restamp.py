"""Re-stamp finished cells (and saved checkpoints) whose code changed without changing what it computes.

    python scripts/restamp.py results/cells/table1_static_paper [DIR ...] [--dry-run]

A cell records the digest of every module it ran (``suite.provenance``), so any edit to one of them
makes the cell out of date and a rerun of its sweep redoes it: hours, for a paper-budget cell, for
an edit that may only add an option or move a line. This script settles it by running, not by
trust. For each kind of out-of-date cell (its task, model and edited modules), it

1. finds the code the cell ran: the edited modules' recorded versions in git history, put back
   into a copy of today's tree; or, where modules were moved, renamed or split since (their
   recorded paths are gone), the commit whose tree holds every recorded module at its recorded
   digest, checked out whole;
2. runs the cell's own command (its ``.hydra/overrides.yaml``) cut to a tiny budget twice: with
   that code, and with the tree as it is now;
3. compares the two ``metrics.json`` member by member, bit for bit.

Where they are identical, every such cell's record is updated to the code today's run of its
command imported (new paths included), with a ``restamped`` entry saying which modules, checked
how and when; a checkpoint's record likewise, so that the run resumes. Where they differ, or the
recorded code cannot be found, nothing is touched and the cell reruns as before. Cells out of
date for their config, or half-written, are left alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from suite.io import read_json, write_json_atomic  # noqa: E402
from suite.provenance import CODE_TREE, changed, source_digest, text_digest, tracked_sources  # noqa: E402


def tiny(task: dict) -> list[str]:
    """Overrides that cut a cell of ``task`` (its config) to a budget that runs in seconds; every
    other value is the cell's own."""
    out = ["task.steps=20", "task.eval_every=10", "progress=false", "checkpoint_every_s=100000"]
    if "eval_late_from" in task:
        out += ["task.eval_late_from=null", "task.eval_late_every=null"]
    return out


def recorded_version(path: str, digest: str) -> str | None:
    """The text of ``path`` as it was when its digest was ``digest``, from git history."""
    commits = subprocess.run(["git", "log", "--format=%H", "--", path], cwd=ROOT, capture_output=True,
                             text=True).stdout.split()
    for commit in commits:
        shown = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if shown.returncode == 0 and text_digest(shown.stdout) == digest:
            return shown.stdout
    return None


def recorded_commit(code: dict[str, str]) -> str | None:
    """The newest commit whose tree holds every module of ``code`` at its recorded digest."""
    paths = sorted(code)
    digests: dict[str, str] = {}  # blob -> digest
    commits = subprocess.run(["git", "rev-list", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    for commit in commits:
        listed = subprocess.run(["git", "ls-tree", "-r", commit, "--", *paths], cwd=ROOT, capture_output=True,
                                text=True).stdout.splitlines()
        blobs = {line.split("\t", 1)[1]: line.split()[2] for line in listed}
        if set(blobs) != set(paths):
            continue
        for blob in set(blobs.values()) - set(digests):
            digests[blob] = text_digest(subprocess.run(["git", "cat-file", "blob", blob], cwd=ROOT,
                                                       capture_output=True, text=True).stdout)
        if all(digests[blobs[p]] == code[p] for p in paths):
            return commit
    return None


def runner(tree: Path) -> str:
    """The runner's module in ``tree`` (it moved from ``nalu.run`` to ``suite.run``)."""
    return "suite.run" if (tree / "suite" / "run.py").exists() else "nalu.run"


def tiny_run(tree: Path, overrides: list[str], cfg: dict, out: Path) -> dict:
    """The cell's command at the tiny budget (its first two seeds), in ``tree``; its metrics.json."""
    args = [a for a in overrides if not a.startswith(("hydra", "seeds="))]
    seeds = list(range(cfg["seeds"])) if isinstance(cfg["seeds"], int) else list(cfg["seeds"])
    data = ROOT / cfg.get("data_dir", "data")  # this checkout's data (MNIST), whichever tree runs
    cmd = [sys.executable, "-m", runner(tree), *args, *tiny(cfg["task"]), f"seeds={seeds[:2]}",
           f"data_dir={data}", f"hydra.run.dir={out}"]
    env = {**os.environ, "PYTHONPATH": str(tree), "WANDB_MODE": "disabled"}
    p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"the tiny run failed in {tree}:\n{p.stderr[-2000:]}")
    return json.loads((out / "metrics.json").read_text())


def same_numbers(a: dict, b: dict) -> bool:
    return json.dumps(a["members"], sort_keys=True) == json.dumps(b["members"], sort_keys=True)


def recorded_tree(code: dict[str, str], edited: list[str], today: dict[str, str], old_tree: Path) -> bool:
    """Lay out in ``old_tree`` the code a record was made by; False if it cannot be found."""
    if old_tree.exists():
        shutil.rmtree(old_tree)
    if all(rel in today for rel in edited):  # edited in place: today's tree, the recorded versions put back
        old = {rel: recorded_version(rel, code[rel]) for rel in edited}
        if None in old.values():
            return False
        for part in CODE_TREE:
            shutil.copytree(ROOT / part, old_tree / part, ignore=shutil.ignore_patterns("__pycache__"))
        for path, text in old.items():
            (old_tree / path).write_text(text)
        return True
    commit = recorded_commit(code)  # moved or split since: the whole tree of a commit that ran it
    if commit is None:
        return False
    old_tree.mkdir(parents=True)
    parts = [p for p in CODE_TREE if subprocess.run(["git", "cat-file", "-e", f"{commit}:{p}"], cwd=ROOT).returncode == 0]
    archive = subprocess.run(["git", "archive", commit, *parts], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old_tree)], input=archive, check=True)
    return True


def check(overrides: list[str], cfg: dict, old_tree: Path, work: Path) -> dict | None:
    """Today's code record for the cell's command if it computes the same with the code in
    ``old_tree`` as with today's (tiny budget, bit for bit); None if it does not."""
    before = tiny_run(old_tree, overrides, cfg, work / "before")
    now = tiny_run(ROOT, overrides, cfg, work / "now")
    shutil.rmtree(work / "before")
    shutil.rmtree(work / "now")
    return now["code"] if same_numbers(before, now) else None


def hydra_file(cell_dir: Path, name: str):
    """``<cell>/.hydra/<name>.yaml`` (the command's overrides, the job's config), or None."""
    path = cell_dir / ".hydra" / f"{name}.yaml"
    return yaml.safe_load(path.read_text()) if path.exists() else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dirs", nargs="+", type=Path, help="sweep folders (their cells are found below them)")
    p.add_argument("--dry-run", action="store_true", help="check and report, change nothing")
    a = p.parse_args(argv)
    today = {rel: source_digest(path) for rel, path in tracked_sources().items()}
    # (cell folder, recorded code, what to update) for every out-of-date record found
    records = []
    for d in a.dirs:
        if not d.exists():
            raise SystemExit(f"error: {d} does not exist")
        for m_path in sorted(d.rglob("metrics.json")):
            m = read_json(m_path)
            if m and m.get("complete") and m.get("code") and changed(m["code"]):
                records.append((m_path.parent, m["code"], m_path, m.get("config")))
        for c_path in sorted(d.rglob("checkpoint.pt")):
            state = torch.load(c_path, weights_only=False)
            if isinstance(state, dict) and state.get("code") and changed(state["code"]):
                records.append((c_path.parent, state["code"], c_path, hydra_file(c_path.parent, "config")))
    if not records:
        print("nothing to re-stamp: every record matches today's code")
        return 0
    verdicts: dict[tuple, dict | bool | None] = {}  # today's code record, False (differs), None (not found)
    done, kept = 0, 0
    with tempfile.TemporaryDirectory(prefix="restamp-") as tmp:
        for cell_dir, code, path, cfg in records:
            edited = sorted(changed(code))
            overrides = hydra_file(cell_dir, "overrides")
            # one check per command and edit; the ops of a fused group ran as one model and share it
            kind = (tuple(o for o in overrides or [] if not o.startswith("task.op=")), tuple(edited))
            if kind not in verdicts:
                old_tree = Path(tmp) / "recorded"
                if overrides is None or cfg is None or not recorded_tree(code, edited, today, old_tree):
                    verdicts[kind] = None
                else:
                    print(f"checking {cell_dir.name} ({', '.join(edited)}) ...", flush=True)
                    verdicts[kind] = check(overrides, cfg, old_tree, Path(tmp)) or False
            verdict = verdicts[kind]
            if not verdict:
                why = "its recorded code is not in git history" if verdict is None else "the tiny runs differ"
                print(f"keep {path}: {why} ({', '.join(edited)}); it reruns")
                kept += 1
                continue
            entry = {"modules": edited, "checked": "tiny runs of its command, recorded vs today's code, "
                     "identical members", "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            new_code = dict(verdict)
            if a.dry_run:
                print(f"would re-stamp {path}")
            elif path.name == "metrics.json":
                m = read_json(path)
                write_json_atomic(path, {**m, "code": new_code, "restamped": [*m.get("restamped", []), entry]})
            else:
                state = torch.load(path, weights_only=False)
                tmp_path = path.with_name(f".{path.name}.tmp")
                torch.save({**state, "code": new_code, "restamped": [*state.get("restamped", []), entry]}, tmp_path)
                os.replace(tmp_path, path)
            done += 1
    print(f"{'would re-stamp' if a.dry_run else 're-stamped'} {done}, kept {kept} (they rerun)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
