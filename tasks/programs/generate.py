"""Programs for the "learning to execute" task (Trask et al. 2018, Section 4.4, Figure 4).

Two kinds of text, read one character at a time, each answered with one integer:

- ``addition``: ``"17+42"`` -> 59.
- ``program``: two assignments, a comparison and a conditional expression (our grammar; the paper
  gives none)::

      program := "a=" INT ";b=" INT ";if a" CMP "b:c=" EXPR " else:c=" EXPR ";print(c)"
      CMP     := "<" | ">"
      EXPR    := "a" OP "b" | "b" OP "a"        OP := "+" | "-"

  (the two variables differ, so no branch is a constant such as ``a-a``)

  e.g. ``"a=17;b=42;if a<b:c=a+b else:c=b-a;print(c)"`` -> 59. The answer can be negative.

Operands are drawn uniformly from ``0 .. domain - 1``; the model is trained on one domain (100)
and tested on larger ones. Two encodings: ``chars`` (``encode``: one token per character, so a
model must build each number digit by digit, ``value = 10 * value + digit``) and ``numbers``
(``encode_numbers``: each integer literal is one token carrying its value; the paper does not say
which it used). ``evaluate`` is the reference semantics; the tests check it against
Python's own execution of the same program.
"""

from __future__ import annotations

import re

import torch

KINDS = ("addition", "program")
ALPHABET = "0123456789+-=;<>:()abcdefilnprst "  # every character either kind can print
PAD = 0  # token 0 pads the *start* of a row, so every row ends on its last character


def chars_to_ids() -> dict[str, int]:
    return {ch: i + 1 for i, ch in enumerate(ALPHABET)}


def generate(kind: str, n: int, domain: int, g: torch.Generator) -> list[str]:
    """``n`` texts with operands below ``domain``."""
    a, b = torch.randint(0, domain, (2, n), generator=g).tolist()
    if kind == "addition":
        return [f"{x}+{y}" for x, y in zip(a, b)]
    cmp = torch.randint(0, 2, (n,), generator=g).tolist()
    exprs = torch.randint(0, 4, (2, n), generator=g).tolist()

    def expr(k: int) -> str:
        first, second = "ab" if k & 1 else "ba"
        return f"{first}{'+-'[k >> 1]}{second}"

    return [f"a={x};b={y};if a{'<>'[c]}b:c={expr(e1)} else:c={expr(e2)};print(c)"
            for x, y, c, e1, e2 in zip(a, b, cmp, *exprs)]


def evaluate(text: str) -> int:
    """The answer of an ``addition`` or ``program`` text (the reference semantics)."""
    if not text.startswith("a="):
        x, y = text.split("+")
        return int(x) + int(y)
    assign_a, assign_b, branch, _ = text.split(";")
    env = {"a": int(assign_a[2:]), "b": int(assign_b[2:])}
    cond, rest = branch[len("if "):].split(":", 1)
    then, otherwise = rest[len("c="):].split(" else:c=")
    take = env["a"] < env["b"] if cond[1] == "<" else env["a"] > env["b"]

    def value(e: str) -> int:
        x, op, y = env[e[0]], e[1], env[e[2]]
        return x + y if op == "+" else x - y

    return value(then if take else otherwise)


NUMBER = len(ALPHABET) + 1  # the token of an integer literal, in the ``numbers`` encoding
ENCODINGS = ("chars", "numbers")


def encode_numbers(texts: list[str]) -> torch.Tensor:
    """The ``numbers`` encoding: every integer literal is one ``NUMBER`` token carrying its value
    as a scalar feature; every other character stays a character token (value 0). Returns
    ``[N, T, 2]`` floats, channel 0 the token id and channel 1 the value, left-padded with ``PAD``
    (the training loop moves one tensor per batch, so the two travel together)."""
    ids = chars_to_ids()
    rows = []
    for t in texts:
        row = []
        for literal, other in re.findall(r"(\d+)|(\D)", t):
            row.append((NUMBER, float(literal)) if literal else (ids[other], 0.0))
        rows.append(row)
    T = max(len(r) for r in rows)
    out = torch.zeros(len(texts), T, 2)
    for k, row in enumerate(rows):
        out[k, T - len(row):] = torch.tensor(row)
    return out


def encode(texts: list[str]) -> torch.Tensor:
    """Character ids ``[N, T]``, left-padded with ``PAD`` to the longest text."""
    ids = chars_to_ids()
    T = max(len(t) for t in texts)
    out = torch.full((len(texts), T), PAD, dtype=torch.long)
    for row, t in enumerate(texts):
        out[row, T - len(t):] = torch.tensor([ids[ch] for ch in t])
    return out
