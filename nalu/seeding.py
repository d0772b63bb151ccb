"""Named random streams: every random choice takes a generator derived from a seed and a name."""

from __future__ import annotations

import hashlib

import torch


def derive_seed(*parts: object) -> int:
    """A 63-bit seed that depends on ``parts`` only (e.g. ``derive_seed(3, "data")``)."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def generator(*parts: object) -> torch.Generator:
    return torch.Generator().manual_seed(derive_seed(*parts))


def training_streams(task: str, seeds: list[int], shared: bool, data_seed: int) -> list[torch.Generator]:
    """The generators that draw training batches: one stream for all members, drawn from
    ``data_seed`` (``shared``), or one stream per member, drawn from its own seed."""
    if shared:
        return [generator(task, "train_data", data_seed)]
    return [generator(s, "train_data") for s in seeds]
