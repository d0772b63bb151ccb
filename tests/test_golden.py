"""Golden tiny runs: one per task, the guard of its numerics version (``tasks.Task.numerics``).

A cell stays up to date while its config and its task's numerics version are unchanged
(``suite.record``), so a change to the code that alters a task's numbers must bump that version.
Each task's tiny run here (a few steps, 2 seeds, two cells trained as one model where the task
fuses) is compared with the numbers stored in ``tests/golden/<task>.json``: numbers that move
while the version stays fail, naming the task and the version to bump; a bumped version fails
until the stored numbers are made again by

    .venv/bin/python -m tests.test_golden <task> [<task> ...]

The runs are in float64 where the task allows it (``DTYPE``), so that another CPU's rounding
stays far below the tolerance while any change to what the code computes does not.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
import torch

GOLDEN = Path(__file__).resolve().parent / "golden"
TINY = ["progress=false", "seeds=2", "train_step=autograd"]
# per task config: (model and other overrides, the overrides of the second cell of a fused group)
CASES: dict[str, tuple[list[str], list[str] | None]] = {
    "identity": (["model=mlp", "model.activation_name=ReLU6", "task.steps=4", "task.eval_every=2",
                  "task.table5.points=101"], None),
    "static_arithmetic": (["model=nalu", "task.op=mul", "task.steps=4", "task.eval_every=2", "task.test_samples=200",
                           "task.extrapolation_samples=20", "task.reference.members=4"], ["task.op=add"]),
    "recurrent_arithmetic": (["model=nalu", "task.op=mul", "task.steps=4", "task.eval_every=2",
                              "task.test_samples=50", "task.extrapolation_samples=4", "task.extrapolation_length=50",
                              "task.reference.members=4"], ["task.op=add"]),
    "translation": (["model=lstm_nalu", "task.steps=4", "task.eval_every=2", "task.lstm_size=4"], None),
    "program_eval": (["model=ugrnn_nalu", "task.steps=4", "task.eval_every=2", "task.test_size=10",
                      "task.validation_size=10", "task.test_domains=[100,1000]", "task.batch_size=8"], None),
    "mnist_counting": (["model=nac", "task.steps=4", "task.eval_every=2", "task.validation_images=40",
                        "task.validation_series=8", "task.batch_size=4", "task.test_series={1: 20, 10: 6, 100: 3}"], None),
    "mnist_addition": (["model=lstm", "task.steps=4", "task.eval_every=2", "task.validation_images=40",
                        "task.validation_series=8", "task.batch_size=4", "task.test_series={1: 20, 10: 6, 100: 3}"], None),
    "mnist_count_even": (["task.final_layer=nac", "task.steps=4", "task.eval_every=2", "task.validation_images=40",
                          "task.validation_samples=8", "task.batch_size=4", "task.test_samples=20", "task.layouts=50"],
                         None),
    "mnist_parity": (["task.final_layer=nac", "task.steps=4", "task.eval_every=2", "task.validation_images=40",
                      "task.validation_samples=8", "task.batch_size=4", "task.test_samples=20"], None),
    "gridworld_time": (["task.frames=400", "task.log_every=200", "task.a3c.workers=1", "task.a3c.envs_per_worker=2",
                        "task.a3c.rollout=10", "task.eval.episodes=2", "task.eval.commands=[5,7]"], None),
}
DTYPE = {"gridworld_time": torch.float32}  # default: float64
TOLERANCE = {torch.float64: 1e-9, torch.float32: 1e-4}


def numbers(node, prefix: str = "") -> dict[str, float]:
    """Every number of a cell's ``members`` (and other results), flattened: ``members.0.best.validation``."""
    out: dict[str, float] = {}
    if isinstance(node, dict):
        for k, v in node.items():
            out.update(numbers(v, f"{prefix}{k}."))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.update(numbers(v, f"{prefix}{i}."))
    elif isinstance(node, bool) or node is None:
        out[prefix[:-1]] = float(node) if node is not None else math.nan
    elif isinstance(node, int | float):
        out[prefix[:-1]] = float(node)
    return out


def run_tiny(task_name: str, tmp: Path) -> dict[str, float]:
    """The task's tiny run, through the runner (``suite.runner.run_cells``), as numbers (the MNIST
    tasks on a small fake MNIST, ``tests.conftest.make_fake_mnist``)."""
    from suite.runner import CellJob, run_cells

    from .conftest import compose, make_fake_mnist

    overrides, second = CASES[task_name]
    if task_name.startswith("mnist_"):
        overrides = [*overrides, f"data_dir={make_fake_mnist(tmp / 'mnist')}"]
    cfgs = [compose([f"task={task_name}", *TINY, *overrides])]
    if second is not None:
        cfgs.append(compose([f"task={task_name}", *TINY, *overrides, *second]))
    before = torch.get_default_dtype()
    torch.set_default_dtype(DTYPE.get(task_name, torch.float64))
    try:
        made = run_cells([CellJob(cfg, tmp / f"cell{i}") for i, cfg in enumerate(cfgs)])
    finally:
        torch.set_default_dtype(before)
    keep = ("members",) + (("figure3",) if task_name == "translation" else ())
    return numbers([{k: m[k] for k in keep if k in m} for m in made])


def stored(task_name: str) -> dict:
    return json.loads((GOLDEN / f"{task_name}.json").read_text())


@pytest.mark.parametrize("task_name", sorted(CASES))
def test_a_tasks_numbers_change_only_with_its_numerics_version(task_name, tmp_path):
    from suite.config import task_of

    from .conftest import compose

    version = task_of(compose([f"task={task_name}"])).numerics
    golden = stored(task_name)
    assert golden["numerics"] == version, (
        f"task {task_name} is at numerics version {version}, its golden numbers at {golden['numerics']}: "
        f"make them anew with `.venv/bin/python -m tests.test_golden {task_name}`")
    now = run_tiny(task_name, tmp_path)
    tol = TOLERANCE[DTYPE.get(task_name, torch.float64)]
    assert set(now) == set(golden["numbers"]), f"task {task_name}: the recorded quantities changed"
    moved = [k for k, v in golden["numbers"].items()
             if not (math.isclose(now[k], v, rel_tol=tol, abs_tol=tol) or (math.isnan(v) and math.isnan(now[k])))]
    assert not moved, (f"task {task_name}'s numbers changed at numerics version {version} ({len(moved)} of "
                       f"{len(now)}, e.g. {moved[0]}: {golden['numbers'][moved[0]]!r} -> {now[moved[0]]!r}): "
                       f"bump its numerics version to {version + 1} (its Task(...)), then "
                       f"`.venv/bin/python -m tests.test_golden {task_name}`")


def test_every_task_has_a_golden_run():
    configs = {p.stem for p in (Path(__file__).resolve().parents[1] / "configs" / "task").glob("*.yaml")}
    entries = {}
    from omegaconf import OmegaConf

    for name in configs:
        entries.setdefault(OmegaConf.load(Path(__file__).resolve().parents[1] / "configs" / "task" / f"{name}.yaml").entry,
                           []).append(name)
    assert all(any(n in CASES for n in names) for names in entries.values()), entries


def update(task_names: list[str]) -> None:
    import tempfile

    from suite.config import task_of

    from .conftest import compose

    for name in task_names:
        with tempfile.TemporaryDirectory() as tmp:
            now = run_tiny(name, Path(tmp))
        version = task_of(compose([f"task={name}"])).numerics
        GOLDEN.mkdir(exist_ok=True)
        (GOLDEN / f"{name}.json").write_text(json.dumps({"numerics": version, "numbers": now}, indent=1) + "\n")
        print(f"wrote {GOLDEN / f'{name}.json'}: {len(now)} numbers at numerics version {version}")


if __name__ == "__main__":
    torch.set_num_threads(1)
    names = sys.argv[1:]
    unknown = [n for n in names if n not in CASES]
    if not names or unknown:
        raise SystemExit(f"give tasks to make golden numbers for; valid: {', '.join(sorted(CASES))}")
    update(names)
