"""Every long run of issue 62 on is pre-registered: its reading committed before its evidence."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from suite import preregistered
from suite.claims import CLAIMS
from suite.targets import BY_NAME
from tests.conftest import ROOT


def test_every_committed_run_was_registered_before_its_evidence():
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"],
                      capture_output=True, text=True).stdout.strip() == "true":
        pytest.skip("a shallow clone has not the history the order is read from")
    assert preregistered.problems() == []


def test_every_registration_names_a_built_table_a_claim_and_one_of_its_readings():
    claims = {c.id: c for c in CLAIMS}
    regs = preregistered.registrations()
    assert regs, "results/preregistered/ holds no registration"
    for r in regs:
        assert r.evidence in BY_NAME, r.path
        assert r.claim in claims, r.path
        assert r.reading in {reading.name for reading in claims[r.claim].readings}, r.path
        assert r.command.startswith("make "), r.path


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.email", "t@t")
    git(tmp_path, "config", "user.name", "t")
    (tmp_path / "results/preregistered").mkdir(parents=True)
    (tmp_path / "results/evidence").mkdir(parents=True)
    (tmp_path / "results/preregistered/README.md").write_text("folder\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "begin")
    return tmp_path


def register(repo: Path, name: str) -> None:
    (repo / f"results/preregistered/{name}.md").write_text(
        f"---\nevidence: {name}\ncommand: make x\nclaim: recurrent\nreading: selected seed\n---\ntext\n")


def commit_evidence(repo: Path, name: str) -> None:
    (repo / f"results/evidence/{name}.jsonl").write_text("{}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", name)


def test_a_registration_committed_before_its_evidence_passes(repo):
    register(repo, "run")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "register")
    commit_evidence(repo, "run")
    assert preregistered.problems(repo) == []


def test_a_registration_committed_with_its_evidence_fails(repo):
    register(repo, "run")
    commit_evidence(repo, "run")
    assert [p for p in preregistered.problems(repo) if "not after its pre-registration" in p]


def test_evidence_added_without_a_registration_fails(repo):
    commit_evidence(repo, "unregistered")
    assert preregistered.problems(repo) == [
        "results/evidence/unregistered.jsonl was added after results/preregistered/ was begun and has no pre-registration"]


def test_evidence_on_disk_beside_an_uncommitted_registration_fails(repo):
    register(repo, "run")
    (repo / "results/evidence/run.jsonl").write_text("{}\n")
    assert preregistered.problems(repo) == ["run.md: results/evidence/run.jsonl exists but its pre-registration is not committed"]


def test_a_registration_without_front_matter_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "x.md"
    path.write_text("# no front matter\n")
    with pytest.raises(ValueError, match="x.md: no front matter"):
        preregistered.parse(path)
