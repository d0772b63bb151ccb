"""Prose that cannot drift: every number the results overview quotes names its source, a row
and column of a committed table, and is checked here against it at the precision it is printed.

A quoted number is written ``1.2 [↗](table1.csv "task=static range=extrapolation function=a*b
model=nalu: ours")``: the value as printed, then a link to the table whose title selects one row
(``key=value`` pairs) and names a column. In results/README.md every decimal number outside code
(backticks) is quoted this way."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from .conftest import ROOT

# the reader's report and the per-table notes behind it (REPORT), and the README
REPORT = [ROOT / "results" / "README.md", *sorted((ROOT / "results" / "notes").glob("*.md"))]
PAGES = [*REPORT, ROOT / "README.md"]
GENERATED = re.compile(r"<!-- (claims|timings): generated.*?<!-- /\1 -->", re.DOTALL)
# a number (no spaces), or a verdict in italics ("*not reproduced*"), then its source
CITED = re.compile(r"(\*[^*\n]+\*|\S+) \[↗\]\(([\w./]+\.csv) \"([^\"]+)\"\)")
VERDICT = re.compile(r"\*(reproduced|not reproduced|mixed)\*")  # the words of results/claims.md
PAIR = re.compile(r"(\w+)=(.*?)(?= \w+=|$)")  # key=value, a value running to the next key (claims.csv's readings have spaces)
# "(not) trained as the paper says" (not after a "*": the overview's definition of the words), then
# either claims.csv's row whose trained column says so, or (a label: "Trained as the paper says: ...")
# the column's word in italics, cited as a verdict is
TRAINED = re.compile(r"(?i)(?<![*\w])(not\s+)?trained\s+as\s+the\s+(?:paper|reference)\s+says"
                     r"(?: \[↗\]\((?:\.\./)?claims\.csv \"([^\"]+)\"\))?")
TRAINED_WORD = re.compile(r"\*(?:yes|no)\* \[↗\]\((?:\.\./)?claims\.csv \"[^\"]+: trained\"\)")
NEGATIONS = re.compile(r"(?i)\b(?:never|no longer|nor|isn't|wasn't|aren't|weren't|not yet)\s+$")


def citations() -> list[tuple[str, str, str, str]]:
    out = []
    for page in PAGES:
        for value, table, query in CITED.findall(TRAINED.sub("", page.read_text())):
            out.append((page.relative_to(ROOT).as_posix(), value, table, query))
    return out


def lookup(table: str, query: str, page: str = "results/README.md") -> str:
    """The cell of ``table`` (a path relative to the citing ``page``, itself relative to the root;
    the README's links name results/... from the root, as that page sits there)."""
    keys, _, column = query.rpartition(": ")
    base = (ROOT / page).parent
    path = base / table if (base / table).is_file() else ROOT / "results" / table
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    rows = df
    for k, v in PAIR.findall(keys):
        rows = rows[rows[k] == v]
    assert len(rows) == 1, f"{table} \"{query}\" selects {len(rows)} rows"
    return rows.iloc[0][column]


def agrees(printed: str, actual: float) -> bool:
    """``printed`` is ``actual`` at the precision it is printed (``>999``: above it; ``12%``: a
    percentage of a fraction when the column holds one)."""
    text = printed.strip("*,;.()").replace(",", "")
    if text.startswith(">"):
        return actual > float(text[1:])
    percent = text.endswith("%")
    text = text.rstrip("%")
    if text in ("inf", "∞"):
        return math.isinf(actual)
    mantissa, _, exponent = text.partition("e")
    if exponent:  # 1.3e+14: the mantissa's precision, at the exponent's scale
        actual, text = actual / 10 ** int(exponent), mantissa
    decimals = len(text.split(".")[1]) if "." in text else 0
    value = float(text)
    for candidate in ((actual, 100 * actual) if percent else (actual,)):
        if abs(round(candidate, decimals) - value) <= 0.5 * 10**-decimals + 1e-12:
            return True
    return False


def test_the_overview_quotes_numbers_with_their_sources():
    assert len(citations()) >= 20


@pytest.mark.parametrize("page,printed,table,query", citations(), ids=lambda x: str(x)[:40])
def test_a_quoted_number_is_its_table_row(page, printed, table, query):
    actual = lookup(table, query, page)
    if printed.startswith("*"):  # a verdict (claims.csv's verdict or trained), word for word
        assert printed.strip("*") == actual, f"{page} says {printed} for {table} \"{query}\", which holds {actual!r}"
    else:
        assert agrees(printed, float(actual)), f"{page} quotes {printed} for {table} \"{query}\", which holds {actual!r}"


@pytest.mark.parametrize("page", REPORT, ids=lambda p: p.name)
def test_a_verdict_the_overview_states_in_the_claims_words_names_its_row_of_claims_csv(page):
    """Prose that says *mixed*, *reproduced* or *not reproduced* quotes results/claims.csv (a claim,
    a table and a reading), so that a verdict the evidence no longer gives fails here."""
    text = CITED.sub("", GENERATED.sub("", page.read_text()))
    assert not VERDICT.findall(text), f"verdicts without a source in {page.name}: {VERDICT.findall(text)}"


def test_whether_a_model_was_trained_as_the_paper_says_is_claims_csvs_word_for_it():
    """results/README.md says a model was (or was not) trained as the paper says only beside the
    row of results/claims.csv whose ``trained`` column says yes (or no): a link right after the
    words, or, where they are a label ("Trained as the paper says: ..."), the column's word in
    italics with its link before the paragraph ends (checked word for word as verdicts are), so
    that a rule or a run that changes it fails here. A negation other than "not" right before the
    words is refused: the check could not read it."""
    said = [(page, text, m) for page in REPORT for text in [page.read_text()] for m in TRAINED.finditer(text)]
    assert len(said) >= 8
    for page, text, m in said:
        negated, query = m.groups()
        line = text.count("\n", 0, m.start()) + 1
        assert not NEGATIONS.search(text[max(0, m.start() - 20) : m.start()]), (
            f"{page.name}:{line}: a negation the check cannot read before '{m.group(0)}'; write 'not trained'")
        if query:
            assert query.endswith(": trained"), query
            assert lookup("claims.csv", query, page.relative_to(ROOT).as_posix()) == ("no" if negated else "yes"), (
                f"{page.name}: claims.csv \"{query}\" disagrees")
            continue
        paragraph = text[m.end() :].split("\n\n", 1)[0]
        assert not negated and TRAINED_WORD.search(paragraph), (
            f"{page.name}:{line} says '{m.group(0)}' without its row of claims.csv (a link right after "
            "the words, or the trained column's word in italics with its link)")


def test_a_verdict_query_selects_by_values_with_spaces():
    query = "claim=programs-addition table=figure4_trained reading=in range (100): every model 90% exact: verdict"
    assert lookup("claims.csv", query) == "mixed"


@pytest.mark.parametrize("page", REPORT, ids=lambda p: p.name)
def test_no_decimal_in_the_overview_is_typed_without_a_source(page):
    text = GENERATED.sub("", page.read_text())  # the claims' block: generated from claims.csv
    text = re.sub(r"`[^`]*`", "", text)  # code and config values
    text = CITED.sub("", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets (file names)
    stray = re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", text)
    assert not stray, f"decimals without a source in {page.name}: {stray[:10]}"


@pytest.mark.parametrize("printed,actual,ok", [("1.2", 1.2269, True), ("1.3", 1.2269, False), (">999", 1e9, True),
                                               (">999", 99.0, False), ("19%", 0.187, True), ("0.0", 0.04, True),
                                               ("0.0", 0.06, False), ("inf", math.inf, True),
                                               ("1.3e+14", 1.2629e14, True), ("1.2e+14", 1.2629e14, False)])
def test_the_check_reads_printed_precision(printed, actual, ok):
    assert agrees(printed, actual) == ok


def test_the_readme_types_no_measured_number():
    """README.md's times come from the timings block (suite/timings.py) and its results from the
    claims block (suite/claims): outside them, code and cited numbers, it states no decimal and
    no duration."""
    text = (ROOT / "README.md").read_text()
    text = GENERATED.sub("", text)
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    text = re.sub(r"`[^`]*`", "", text)
    text = CITED.sub("", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    stray = re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s*(?:min|minutes|h|hours|s|seconds)\b|(?<![\w.])\d+\.\d+(?![\w.])", text)
    assert not stray, f"numbers typed in README.md without a source: {stray[:10]}"


def test_the_readers_report_stays_within_25_kb_its_detail_in_the_notes():
    assert (ROOT / "results" / "README.md").stat().st_size <= 25_000
    assert {p.stem for p in REPORT[1:]} >= {"table1", "table2", "table3", "table4", "table5", "figure4", "figure5", "units"}
