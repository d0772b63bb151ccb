"""The paper's claims as code: each claim, the cells that test it, and the rules that decide it,
evaluated on every budget and variant that has a table (``python -m suite.claims``).

    python -m suite.claims [--results results]     -> results/claims.md, results/claims.csv,
                                                      results/stability.csv, README.md's block

A claim names the family of tables that test it (``table1``: ``table1``, ``table1_paper``,
``table1_seeds100``; see ``suite.targets``). Each *reading* is one way of deciding it, written
once: where the paper's meaning is open (is its printed 0.0 the selected seed, the median seed, or
most seeds?) each reading is its own rule and all are shown. A reading's verdict for one table is

``reproduced``, ``mixed``, ``not reproduced`` and the others of ``rules.verdict``, with the counts and the numbers it rests on. The tables are built from the committed evidence
alone (``suite.evidence``); a table whose evidence is not committed yet is marked as such
("earlier run"). The rules read the tables, which carry, per cell, the selected seed's value,
the median and spread over seeds, success counts and the paper's value beside ours. One reading
on one table is each claim's registered primary; the others are its sensitivity rows.

The package by idea: ``rules`` (checks, rules, verdicts, thresholds), ``catalogue`` (the claims),
``answer`` (primary, stability, class), ``report`` (the pages and the comparison line).
"""

from suite.claims.answer import *  # noqa: F401,F403
from suite.claims.catalogue import *  # noqa: F401,F403
from suite.claims.report import *  # noqa: F401,F403
from suite.claims.rules import *  # noqa: F401,F403
