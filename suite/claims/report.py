"""What a reader sees: the primary table (claims.md's head and README.md's block), the thresholds,
the sensitivity rows, and the line a rebuild ends with against the committed verdicts.

    python -m suite.claims [--results results]     -> results/claims.md, results/claims.csv,
                                                      results/stability.csv, README.md's block
"""

from __future__ import annotations

import io
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd

from suite.claims.answer import evaluate, levers_left, registered
from suite.claims.catalogue import CLAIMS
from suite.claims.rules import (EXACT, FAILS, HALF_THE_CUT, IDENTITY_FAILS, MNIST_POINTS, TRAINED_REWARD, ZERO, Claim,
                                segui_reference)
from suite.io import fill_block, generated_main, write_text_atomic
from suite.provenance import ROOT

def sentence(row, claim: Claim) -> str:
    """The primary verdict in one sentence, from its numbers: where, what, and whether the model under
    test was trained as the paper says."""
    where = f"in `{row.table}`" + (f" ({row.protocol})" if row.protocol else "")
    trained = {"yes": "the model under test fits its training range as the paper says",
               "no": "the model under test does not fit its training range as the paper says, so this does "
                     "not test the claim", "n/a": ""}[row.trained]
    return f"{row.reading[:1].upper()}{row.reading[1:]} {where}: {row.numbers}" + (f"; {trained}" if trained else "") + "."


def glance(df: pd.DataFrame, results: Path | None = None) -> str:
    """One row per claim: its registered primary verdict with its stability, the claim's class, one
    sentence from the numbers, and the levers still unpulled; the sensitivity rows are in claims.md."""
    results = results or ROOT / "results"
    lines = ["| claim | the paper says | primary verdict (registered) | stability | class | in numbers | lever left |",
             "|---|---|---|---|---|---|---|"]
    for claim in CLAIMS:
        p = df[(df.claim == claim.id) & df.primary]
        if p.empty:
            lines.append(f"| {claim.id} ({claim.section}) | {claim.sentence} | not run | - | untested | - | - |")
            continue
        r = p.iloc[0]
        from suite.stability import describe
        left = "; ".join(f"{lv.what} ({lv.cost})" for lv in levers_left(claim, results)) or "-"
        lines.append(f"| {claim.id} ({claim.section}) | {claim.sentence} | **{r.verdict}** in `{r.table}`, "
                     f"{r.reading} (registered {registered()[claim.id].date}) | {describe(r.stability)} | "
                     f"**{r['class']}** | {sentence(r, claim)} | {left} |")
    return "\n".join(lines)


def found(rows: pd.DataFrame) -> str:
    """Each verdict among ``rows`` once, with the first table that reaches it."""
    r = rows.drop_duplicates("verdict")
    return ", ".join(f"**{v}** ({t})" for v, t in zip(r.verdict, r.table, strict=True))


def thresholds() -> str:
    """Every threshold the rules use, from the constants the rules read."""
    from suite.stability import FRAGILE, RESAMPLES

    return "\n".join([
        f"- **Prints 0.0** (Table 1): a scaled score below {ZERO:g}; where the paper prints a number, ours agrees at "
        f"most twice it. **Fails**: a score of at least {FAILS:g}.",
        f"- **Identity** (Table 5): an MLP fails when its median MAE on [-1000, 1000] is above {IDENTITY_FAILS:g} "
        "(predicting 0 scores 500).",
        f"- **Table 2**: single digits within {MNIST_POINTS:g} points of the paper's accuracy; lengths 100 and 1000 "
        "at most twice its MAE.",
        "- **Table 3**: the LSTM + NALU's test MAE at most twice the paper's 0.41; trained: its training MAE at "
        "most twice the paper's 0.12 (the summed-state LSTM's fit is the comparison's, not the claim's).",
        f"- **Table 4**: the NAC's median error cut at least {HALF_THE_CUT:g}% (half the paper's 54%), and above "
        "every head that is not a NAC; trained: Seguí et al.'s head at most 5 points below the "
        f"{segui_reference():g}% exact of the reference reimplementation (fomorians/counting-mnist).",
        f"- **Figure 4**: a model solves a domain at a mean of {EXACT:g}% exact; trained: the recurrent NALU "
        f"{EXACT:g}% exact below 100.",
        f"- **Figure 5**: a mean reward at or above 0 holds, below 0 degrades; trained: each agent's mean reward "
        f"at least {TRAINED_REWARD:g} on every training command.",
        "- **Success rates** (Madsen & Johansen): their rate within our 95% Wilson interval; *inconclusive* where "
        "that interval also holds 0 (or 1) while their rate does not, with the power our seeds had at their rate.",
        f"- **Stability**: the share of {RESAMPLES} draws of every cell's seeds (with replacement; the seed or "
        "model selected by validation selected again inside each draw) whose verdict equals the one shown; "
        f"*fragile* below {100 * FRAGILE:.0f}%.",
    ])


def markdown(df: pd.DataFrame, results: Path | None = None) -> str:
    text = ["# The paper's claims, decided from the evidence",
            "Generated by `python -m suite.claims` (every make target runs it after its tables) from the "
            "tables in this folder, which are built from `evidence/` alone (a unit's scorecards, from "
            "`benchmarks/`, each beside its evidence). Claims and readings: `suite/claims/catalogue.py`, rules: `suite/claims/rules.py`; each claim's "
            "primary table and reading, registered with its date and reason: `suite/primaries.csv` "
            "(append-only); runs registered before they ran: `preregistered/`.",
            "## The answer: one primary verdict per claim",
            "A claim's *primary* verdict is one table and one reading, chosen by a rule written down before "
            "the model under test's numbers were read: the protocol the blind search ranks first, at the "
            "paper's budget where one ran, the paper's own selection rule (validation), in a table where the "
            "model under test is trained as the paper says. Its *class*: **reproduced**; **refuted** (the model "
            "under test trained as the paper says, no lever left); **refuted with a lever** (a setting not yet "
            "tried, named with its cost); **untested** (the model under test never fit its training range, or "
            "the reading cannot judge). Every other row below is a *sensitivity* reading.",
            glance(df, results),
            "## Thresholds", thresholds(),
            "## Every reading, budget and variant (sensitivity)",
            "A verdict is *reproduced* when every cell a reading looks at agrees with the paper, *not reproduced* "
            "when none does, *mixed* otherwise, *partial* when every cell it has agrees but the table lacks some "
            "model the reading asks for, *inconclusive* when the seeds cannot tell. *protocol*: for the static "
            "task the inputs' training range, the share of them that a and b each sum, and their overlap "
            "(Madsen & Johansen's U[1, 2], 0.25, 0.5 by default; the others from `protocol_search.md`), then for "
            "the recurrent task its input range and the baselines' state (`protocol_search_recurrent.md`). "
            "*trained*: whether the model under test, for that reading (the selected seed, the median seed, "
            "most seeds), is at the paper's level inside its training domain in the same table, so that a "
            "failure outside it tests extrapolation; n/a where the paper gives no in-domain number or the claim "
            "is itself about the training domain."]
    body = df.assign(primary=df.primary.map({True: "primary", False: "sensitivity"}),
                     stability=df.stability.map(lambda x: "-" if math.isnan(x) else f"{100 * x:.0f}%"))
    body = body[["claim", "table", "protocol", "reading", "primary", "verdict", "stability", "numbers", "trained",
                 "trained_numbers", "source"]]
    text.append(body.to_markdown(index=False, disable_numparse=True))
    return "\n\n".join(text) + "\n"


BEGIN, END = "<!-- claims: generated by suite/claims; do not edit -->", "<!-- /claims -->"


def write(results: Path, readme: Path | None) -> list[Path]:
    df = evaluate(results)
    if df.empty:
        from nalu.errors import ConfigError

        raise ConfigError(f"{results} holds no table that a claim reads; nothing written (a make reproduce-* "
                          "target writes them)")
    from suite import stability

    md, csv = results / "claims.md", results / "claims.csv"
    write_text_atomic(results / stability.CACHE, pd.DataFrame(df.attrs["stability"], columns=[
        "table", "digest", "claim", "reading", "verdict", "resamples", "holds"]).to_csv(index=False))
    write_text_atomic(md, markdown(df, results))
    write_text_atomic(csv, df.to_csv(index=False))
    paths = [md, csv, results / "stability.csv"]
    report = results / "README.md"  # the reader's report opens with the same table
    for page in ([readme] if readme is not None else []) + ([report] if report.is_file() and BEGIN in report.read_text() else []):
        write_text_atomic(page, fill_block(page.read_text(), BEGIN, END, glance(df, results)))
        paths.append(page)
    return paths


def against_committed(results: Path, df: pd.DataFrame) -> list[str]:
    """What a rebuild changed against git's HEAD: one line saying the tables and verdicts equal the
    committed ones, or one line per file that differs and per verdict that moved (with its stability
    and the command that judges whether the move is noise)."""
    from suite.stability import describe

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)

    rel = results.resolve().relative_to(ROOT) if results.resolve().is_relative_to(ROOT) else None
    committed = git("show", f"HEAD:{rel}/claims.csv") if rel is not None else None
    if committed is None or committed.returncode:
        return [f"claims: {results} is not a committed results folder; nothing to compare"]
    changed = [line[3:] for line in git("status", "--porcelain", "--", str(rel)).stdout.splitlines()
               if line[3:].endswith((".csv", ".md")) and not line[3:].endswith(("claims.csv", "claims.md"))]
    old = pd.read_csv(io.StringIO(committed.stdout))
    key = ["claim", "table", "reading"]
    moved = df.merge(old[key + ["verdict"]], on=key, how="outer", suffixes=("", "_committed"), indicator=True)
    moved = moved[(moved.verdict.fillna("none") != moved.verdict_committed.fillna("none"))]
    lines = []
    from suite.timings import command

    for r in moved.itertuples():
        target = command(r.table).replace("make reproduce-", "make verify TARGET=") if "/" not in str(r.table) else None
        lines.append(f"claims: {r.claim} in {r.table}, {r.reading}: {r.verdict_committed if isinstance(r.verdict_committed, str) else 'none'}"
                     f" -> {r.verdict if isinstance(r.verdict, str) else 'none'}"
                     + (f" ({describe(r.stability)}; is the move noise? {target})" if isinstance(r.verdict, str) and target else ""))
    if changed:
        lines.append(f"claims: {len(changed)} table file(s) differ from the committed ones: {', '.join(changed[:6])}"
                     + (f" and {len(changed) - 6} more" if len(changed) > 6 else ""))
    return lines or ["claims: the rebuilt tables and every verdict equal the committed ones"]


def main(argv: list[str] | None = None) -> None:
    generated_main(argv, "python -m suite.claims", __doc__, "claims", write)
    args = argv if argv is not None else sys.argv[1:]
    results = Path(args[args.index("--results") + 1]) if "--results" in args else ROOT / "results"
    print("\n".join(against_committed(results, pd.read_csv(results / "claims.csv"))), file=sys.stderr)


if __name__ == "__main__":
    main()
