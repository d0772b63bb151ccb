"""A unit from outside the suite in the paper's other places (``make benchmark-unit PROTOCOL=tasks``):
the recurrent arithmetic task of Table 1, the recurrent core of Table 2's MNIST counting and addition,
the read-out of Table 3's number-word LSTM, the read-out of Figure 4's program-evaluation LSTM, and
Table 4's final layer. Each place ran at its table's default budget, so the unit's rows enter that
table beside the committed rows of its paper target (``results/evidence/<table>.jsonl``), built by
the table's own builder: the same metrics, selection and paper column, one more row.

The unit's rows are named by its class (``ClippedAdder``); in a read-out, ``lstm_<class>`` as the
suite's ``lstm_nac``. ``<name>.md`` lists the places with a link to each table.
"""

from __future__ import annotations

import copy
import importlib
import json
import tempfile
from pathlib import Path

from nalu.errors import ConfigError
from suite.io import write_text_atomic
from suite.tables.common import load_cells

# the place -> (its tasks, the table's builder, its committed evidence, where the unit sits)
PLACES = {
    "recurrent": (("recurrent_arithmetic",), "table1", "core"),
    "mnist": (("mnist_counting", "mnist_addition"), "table2", "core"),
    "words": (("translation",), "table3", "readout"),
    "program": (("program_eval",), "figure4", "readout"),
    "final_layer": (("mnist_count_even",), "table4", "final"),
}
WHAT = {
    "recurrent": "the recurrent arithmetic task (Table 1's lower half): the unit stacked as the NAC is, its state the hidden layer",
    "mnist": "MNIST counting and addition (Table 2): the recurrent core over the digit encoder, as the NAC's",
    "words": "number words to number (Table 3): the read-out of the LSTM, as the NAC's in `lstm_nac`",
    "program": "program evaluation (Figure 4): the read-out of the LSTM, as the NALU's in `lstm_nalu`",
    "final_layer": "counting even MNIST digits (Table 4): the final layer, as the NAC row's",
}


def place_of(cell: dict) -> str:
    for place, (tasks, _, _) in PLACES.items():
        if cell["task"] in tasks:
            return place
    raise ConfigError(f"cell {cell['cell']}: task {cell['task']} is not one of the places "
                      f"({', '.join(t for tasks, _, _ in PLACES.values() for t in tasks)})")


def unit_name(cell: dict, sits: str) -> str:
    """The unit's class, from where the cell's config put it."""
    cfg = cell["config"]
    where = {"core": cfg["model"].get("unit"), "readout": cfg["model"].get("readout"),
             "final": cfg["task"].get("final_layer")}[sits]
    if not where or ":" not in str(where):
        raise ConfigError(f"cell {cell['cell']}: no unit from outside in its {sits} (model.unit, model.readout or "
                          "task.final_layer as <module>:<Class>)")
    return str(where).rpartition(":")[2]


def relabel(cell: dict, sits: str, name: str) -> dict:
    """The cell as its table names it: by the unit's class ``name`` (``lstm_<class>`` in a read-out)."""
    cell = copy.deepcopy(cell)
    if sits == "final":
        cell["final_layer"] = name
    else:
        cell["model"] = name if sits == "core" else f"lstm_{name.lower()}"
    return cell


def build(evidence: Path | list[Path], out: Path, name: str = "tasks", reference: Path | None = None) -> list[Path]:
    from suite.evidence import EVIDENCE_DIR

    reference = reference or EVIDENCE_DIR
    cells = load_cells(*([evidence] if isinstance(evidence, Path) else evidence))
    by_place: dict[str, list[dict]] = {}
    units = set()
    for c in cells:
        place = place_of(c)
        sits = PLACES[place][2]
        units.add(unit := unit_name(c, sits))
        by_place.setdefault(place, []).append(relabel(c, sits, unit))
    if not by_place:
        raise ConfigError(f"no cells in {evidence}; nothing written")
    unit = sorted(units)
    paths, lines = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for place, (_, table, _) in PLACES.items():
            if place not in by_place:
                continue
            ours = Path(tmp) / f"{place}.jsonl"
            ours.write_text("".join(json.dumps(c) + "\n" for c in by_place[place]))
            committed = reference / f"{table}.jsonl"
            module = importlib.import_module(f"suite.tables.{table}")
            written = module.build([ours, *([committed] if committed.is_file() else [])], out, name=f"{name}_{place}")
            paths += written
            beside = f"beside `{committed.name}`" if committed.is_file() else "alone (no committed evidence to set it beside)"
            n = len(by_place[place])
            lines.append(f"- **{place}**: {WHAT[place]}; {n} cell{'s' if n != 1 else ''}, {beside}: "
                         f"[{name}_{place}.md]({name}_{place}.md)")
    md = out / f"{name}.md"
    write_text_atomic(md, "\n".join([
        f"# {', '.join(unit)} in the paper's other places",
        "",
        "Built by `python -m suite.tables places` from the unit's evidence "
        f"(`{name}.jsonl`, `make benchmark-unit PROTOCOL=tasks`). Each place ran at its table's default budget, "
        "and its table is that table's own, built from the committed evidence of its make target with the "
        "unit's rows added (named by its class; `lstm_<class>` where it reads the LSTM out).",
        "",
        *lines,
        "",
    ]))
    return [md, *paths]
