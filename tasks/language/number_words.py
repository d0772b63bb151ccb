"""English number words for 0..999 and the paper's train/validation/test split (Section 4.3).

``words(721) == ["seven", "hundred", "and", "twenty", "one"]``: British usage, with "and" after
"hundred" when something follows, and no hyphens. The split follows the paper: every number below
20 goes to training, plus a random sample of the rest, adjusted so that every token of the range
occurs in training; validation and test are drawn from what is left (169 / 200 / 631 over 0..999).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from nalu.errors import ConfigError

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
        "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
LOWEST, HIGHEST = 0, 999
PAD = "<pad>"


def words(n: int) -> list[str]:
    """The English words for ``n`` in 0..999, one token per word."""
    if not LOWEST <= n <= HIGHEST:
        raise ValueError(f"number words cover {LOWEST}..{HIGHEST}, got {n}")
    if n < 20:
        return [ONES[n]]
    if n < 100:
        tens, ones = divmod(n, 10)
        return [TENS[tens]] + ([ONES[ones]] if ones else [])
    hundreds, rest = divmod(n, 100)
    return [ONES[hundreds], "hundred"] + (["and", *words(rest)] if rest else [])


def vocabulary(numbers: list[int]) -> list[str]:
    """The padding token, then every token of ``numbers`` in order of first use."""
    return list(dict.fromkeys([PAD] + [w for n in numbers for w in words(n)]))


@dataclass(frozen=True)
class Split:
    train: list[int]
    validation: list[int]
    test: list[int]


def check_range(lowest: int, highest: int) -> list[int]:
    if not LOWEST <= lowest <= highest <= HIGHEST:
        raise ConfigError(f"the number range must lie within {LOWEST}..{HIGHEST} with lowest <= highest, "
                          f"got {lowest}..{highest}")
    return list(range(lowest, highest + 1))


def split(numbers: list[int], n_train: int, n_validation: int, seed: int) -> Split:
    """Numbers below 20 plus a random sample to ``n_train``, adjusted to cover every token; then
    ``n_validation`` random numbers of the rest; the test set is what remains.

    The adjustment walks the sample in random order: for a token not yet in training, the first
    left-over number holding it replaces the last sampled number whose tokens all occur elsewhere
    in training. A split that cannot cover every token is refused with the reason.
    """
    fixed = [n for n in numbers if n < 20]
    if n_train < len(fixed) or n_validation < 1 or n_train + n_validation >= len(numbers):
        raise ConfigError(
            f"split of {len(numbers)} numbers: training needs at least the {len(fixed)} numbers below 20 "
            f"and validation and test at least one each; got train {n_train}, validation {n_validation}")
    g = torch.Generator().manual_seed(seed)
    rest = [numbers[i] for i in torch.randperm(len(numbers), generator=g).tolist() if numbers[i] >= 20]
    sampled, left = rest[: n_train - len(fixed)], rest[n_train - len(fixed):]

    def uses(train: list[int]) -> dict[str, int]:
        count: dict[str, int] = {}
        for n in train:
            for w in set(words(n)):
                count[w] = count.get(w, 0) + 1
        return count

    for token in vocabulary(numbers)[1:]:
        count = uses(fixed + sampled)
        if token in count:
            continue
        donor = next((n for n in left if token in words(n)), None)
        victim = next((n for n in reversed(sampled) if all(count[w] > 1 for w in set(words(n)))), None)
        if donor is None or victim is None:
            raise ConfigError(f"a training set of {n_train} numbers cannot hold every token of "
                              f"{numbers[0]}..{numbers[-1]} ('{token}' is missing); make it larger")
        sampled[sampled.index(victim)] = donor
        left[left.index(donor)] = victim
    return Split(sorted(fixed + sampled), sorted(left[:n_validation]), sorted(left[n_validation:]))
