"""Which code made a cell: a digest per repository module, recorded for diagnosis (a dry run names
the modules that differ from a cell's record; ``suite.record``), never a reason to rerun.

A digest is taken of a file's syntax tree with its docstrings removed, so that editing comments,
docstrings or layout leaves a module's digest as it was; any change to what the code does shows.
Tracked: the library (``nalu/``), the tasks and the baselines. Left out: this package
(``suite/``): the table builders, which do not touch cells, and the runner's plumbing, which
reaches a cell's numbers only through its config (hashed on its own: seeds, the
``steps_fraction`` resolver) or not at all (files, logging, the machine record, this module);
and ``nalu/errors.py``.
"""

from __future__ import annotations

import ast
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("nalu", "tasks", "baselines")
# every folder a cell's command needs to run: the digested packages, the runner and its configs, and
# the Hydra plugins (what the dirty flag of a cell's record looks at)
CODE_TREE = (*PACKAGES, "suite", "configs", "hydra_plugins")
EXCLUDED = ("nalu/errors.py",)  # the one-line error type: it never reaches a number


def source_digest(path: Path) -> str:
    """A digest of ``path``'s syntax tree, blind to comments, docstrings and layout (a file that
    does not parse gets a digest of its text: it changes whenever the file does)."""
    return text_digest(path.read_text(encoding="utf-8"))


def text_digest(text: str) -> str:
    """``source_digest`` of a module's text (a version from git history, say)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return "unparsed-" + hashlib.sha256(text.encode()).hexdigest()[:7]
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(canonical(tree).encode()).hexdigest()[:16]


def canonical(node) -> str:
    """A syntax tree as text: each node's type and its fields, leaving out empty ones (``None``,
    ``[]``). Not ``ast.dump``, whose output changes between Python versions (3.13 stopped writing
    empty fields; 3.12 added ``type_params``), which would make every finished cell look stale
    to a new Python; this text is the same for the same source on every Python the suite supports."""
    if isinstance(node, ast.AST):
        fields = (f"{k}={canonical(v)}" for k, v in ast.iter_fields(node)
                  if v is not None and not (isinstance(v, list) and not v))
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return f"[{', '.join(canonical(x) for x in node)}]"
    return repr(node)


def tracked_sources() -> dict[str, Path]:
    """Every module of the suite's packages that a cell may run, by its path relative to the root."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(EXCLUDED):
                out[rel] = path
    return out


_FIRST_SEEN: dict[str, str] = {}  # per process: each module's digest when this process first looked


def snapshot() -> dict[str, str]:
    """Digests of every tracked module (take it before a cell starts). A process that runs several
    cells (a reused joblib worker, the basic launcher) keeps the modules it has imported, so for
    those the digest first seen in this process is kept, not the file's current one."""
    sources = tracked_sources()
    loaded = imported(dict.fromkeys(sources, ""))
    out = {}
    for rel, path in sources.items():
        if rel not in loaded or rel not in _FIRST_SEEN:
            _FIRST_SEEN[rel] = source_digest(path)
        out[rel] = _FIRST_SEEN[rel]
    return out


def imported(digests: dict[str, str]) -> dict[str, str]:
    """The entries of ``digests`` whose module this process has imported: the code a cell ran.
    A process that ran another task first (a reused worker) has that task's modules too, so a
    cell may record more than it ran: a dry run may then name a change the cell did not run."""
    loaded = set()
    for module in list(sys.modules.values()):
        f = getattr(module, "__file__", None)
        if f:
            try:
                loaded.add(Path(f).resolve().relative_to(ROOT).as_posix())
            except ValueError:
                pass
    return {rel: d for rel, d in digests.items() if rel in loaded}


def changed(recorded: dict[str, str]) -> list[str]:
    """The recorded modules whose code now differs (or that are gone); modules left out since the
    record was made are not compared."""
    sources = tracked_sources()
    return [rel for rel, d in recorded.items() if tracked(rel) and (rel not in sources or source_digest(sources[rel]) != d)]


def tracked(rel: str) -> bool:
    """Whether a module's path is one a cell's record can name: in a tracked package, not left out."""
    return rel.startswith(tuple(f"{p}/" for p in PACKAGES)) and not rel.startswith(EXCLUDED)
