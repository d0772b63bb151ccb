"""Every table and figure in ``results/``: which builder makes it from which evidence.

An entry's ``name`` is both its files' stem (``results/<name>.md|csv|png``; Table 3 and Table 5
write their figures beside: ``figure3*``, ``figure1``) and its evidence file's
(``results/evidence/<name>.jsonl``, written by its make target); ``reads`` names other targets'
evidence it draws too. ``python -m suite.tables build <name>`` builds one entry as its make target
does; ``tests/test_evidence.py`` rebuilds every entry from the committed evidence alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from suite.evidence import EVIDENCE_DIR


@dataclass(frozen=True)
class Built:
    name: str
    what: str  # the builder: python -m suite.tables <what>
    reads: tuple[str, ...] = ()  # other entries' evidence it draws as well
    args: tuple[str, ...] = ()

    def evidence(self, folder: Path = EVIDENCE_DIR) -> list[Path]:
        """Its own evidence in ``folder``; the evidence it reads besides, from ``folder`` where it is
        there, else the committed one (a narrowed run's scratch folder holds its own alone)."""
        return [folder / f"{self.name}.jsonl"] + [folder / f"{n}.jsonl" if (folder / f"{n}.jsonl").is_file()
                                                  else EVIDENCE_DIR / f"{n}.jsonl" for n in self.reads]

    def command(self, out: Path, folder: Path = EVIDENCE_DIR) -> list[str]:
        """The arguments of ``python -m suite.tables`` that build it into ``out``."""
        return [self.what, "--evidence", *map(str, self.evidence(folder)), "--out", str(out),
                *(["--name", self.name] if self.what != "table5" else []), *self.args]


BUILT = [
    Built("table1", "table1"), Built("table1_paper", "table1"), Built("table1_seeds100", "table1"),
    Built("table1_protocol1", "table1"), Built("table1_protocol2", "table1"), Built("table1_protocol3", "table1"),
    Built("table1_protocol1_seeds100", "table1"), Built("table1_paper_protocol1", "table1"),
    Built("table1_paper_wide", "table1"),
    Built("table2", "table2"), Built("table2_last", "table2"), Built("table2_select100", "table2"),
    Built("table2_mnist_example", "table2"), Built("table2_nalu_grid", "table2"),
    Built("table3", "table3"), Built("table3_paper", "table3"), Built("table3_paper_grid", "table3"),
    Built("table3_tf_init", "table3"), Built("table3_paper_grid_tf_init", "table3"),
    Built("table4", "table4"), Built("table4_parity", "table4"), Built("table4_long", "table4"),
    Built("table5", "table5"),
    Built("figure4", "figure4"), Built("figure4_numbers", "figure4"), Built("figure4_builder", "figure4"),
    Built("figure4_builder_long", "figure4"), Built("figure4_trained", "figure4"),
    Built("figure4_programs_long", "figure4"),
    Built("figure5", "figure5"), Built("figure5_wirings", "figure5", reads=("figure5",)),
    Built("figure5_late_zero", "figure5"),
    Built("protocol_search", "protocol_search"), Built("protocol_search_recurrent", "protocol_search"),
    Built("units", "units", args=("--long", "units_long")),
    Built("units_paper", "units", reads=("table1_paper",), args=("--long", "none")),
    Built("units_seeds100", "units", args=("--long", "none")),
    Built("units_protocol1", "units", args=("--long", "none")),
    Built("units_primer", "primer"),
]
BY_NAME = {b.name: b for b in BUILT}
