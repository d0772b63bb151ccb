"""Learning simple functions of numbers: the identity (``identity.py``: Trask et al. 2018,
Section 1.1, Table 5 and Figure 1) and arithmetic on sums of the input (``functions.py``:
Section 4.1, Table 1, static and recurrent). The arithmetic problem and its ops are the family's
public names (``tasks.arithmetic.ArithmeticProblem``), used by tests, the bench and the units
table's caption."""

from __future__ import annotations

from tasks.arithmetic.functions import OPS, ArithmeticProblem

__all__ = ["OPS", "ArithmeticProblem"]
