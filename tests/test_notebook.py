"""notebooks/results.ipynb runs headless, top to bottom, on the committed results and a tiny run."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from .conftest import TINY_ARITHMETIC, cli

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "results.ipynb"


def test_results_notebook_executes_on_committed_results_and_a_tiny_run(workdir, monkeypatch):
    cli(["-m", "suite.run", "model=nalu", "task.op=mul", "name=nb"] + TINY_ARITHMETIC, workdir)
    (run_dir,) = {p.parent for p in (workdir / "runs").rglob("history.csv")}
    monkeypatch.setenv("NALU_RUN_DIR", str(run_dir))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel draws inline
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit it without outputs"
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any(str(run_dir) in o.get("text", "") for o in outputs)  # it found the tiny run ...
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # ... and drew Table 1, the units, the figures and its curves
