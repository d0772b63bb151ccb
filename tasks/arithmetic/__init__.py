"""Learning simple functions of numbers: the identity (``identity.py``: Trask et al. 2018,
Section 1.1, Table 5 and Figure 1) and arithmetic on sums of the input (``functions.py``:
Section 4.1, Table 1, static and recurrent). The arithmetic problem and its ops are the family's
public names (``tasks.arithmetic.ArithmeticProblem``), used by tests, the bench and the units
table's caption.

They are looked up on first use (PEP 562), so that running the identity task does not import
``functions.py``: a cell records the digest of every module it imported (``suite.provenance``),
and an edit to the arithmetic functions should not make Table 5's cells out of date."""

from __future__ import annotations

__all__ = ["OPS", "ArithmeticProblem"]


def __getattr__(name: str):
    if name in __all__:
        from tasks.arithmetic import functions

        return getattr(functions, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
