"""Every scorecard of a folder (``results/benchmarks/<name>.jsonl``, written by ``make
benchmark-unit``) rebuilt from its evidence beside the reference evidence that target scores it
against, so that a scorecard follows its reference when a reference run lands
(``make reproduce-units`` ends with it):

    <class>[_told]         the units table's protocol: results/evidence/units.jsonl (+ units_long)
    <class>[_told]_paper   BUDGET=paper: units_paper.jsonl and Table 1's static paper cells
    <class>[_told]_primer  PROTOCOL=primer: units_primer.jsonl, where it has landed
    <class>_tasks          PROTOCOL=tasks: the unit's own cells (each table's rows are in results/)

``make benchmark-unit`` builds its scorecard with ``rebuild`` too (``python -m suite.tables
scorecard FILE``), so the reference a card is scored against is chosen here only;
tests/test_byo_unit.py rebuilds every committed scorecard byte for byte with it.
"""

from __future__ import annotations

from pathlib import Path

from suite.evidence import EVIDENCE_DIR

BENCHMARKS = EVIDENCE_DIR.parent / "benchmarks"


def rebuild(evidence: Path, out: Path, references: Path = EVIDENCE_DIR) -> list[Path]:
    """One scorecard, ``<out>/<evidence stem>.{md,csv,png}``, from ``evidence`` and its references."""
    from suite.tables import places, primer, units

    name = evidence.stem
    present = [p for p in (references / "units_primer.jsonl",) if p.is_file()]
    if name.endswith("_primer"):
        return primer.build([evidence, *present], out, name=name)
    if name.endswith("_tasks"):
        return places.build([evidence], out, name=name)
    if name.endswith("_paper"):
        paper = [p for p in (references / "units_paper.jsonl", references / "table1_paper.jsonl") if p.is_file()]
        return units.build([evidence, *paper], out, None, name=name)
    return units.build([evidence, references / "units.jsonl"], out, "units_long", name=name)


def build(folder: Path = BENCHMARKS, out: Path | None = None, references: Path = EVIDENCE_DIR) -> list[Path]:
    """Every scorecard whose evidence is in ``folder``, written to ``out`` (default: ``folder``)."""
    return [p for evidence in sorted(Path(folder).glob("*.jsonl")) for p in rebuild(evidence, out or folder, references)]
