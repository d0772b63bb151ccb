"""Canvases of MNIST digits for counting, after Seguí, Pujol & Vitrià (2015), "Learning to count
with deep object features" (arXiv 1505.08082), the task the NALU paper's Table 4 defers to.

A canvas is a ``size x size`` image (100 x 100) holding ``min_digits..max_digits`` (0..5) MNIST
digits, their number drawn uniformly. Each digit is pasted whole (28 x 28); a layout in which two
boxes overlap is drawn again whole (rejection sampling, vectorised over canvases, so layouts are
uniform over the valid ones), and no pixel is written twice. (The public reimplementation
fomorians/counting-mnist adds overlapping pixels and clips the sums to [0, 1]; its README asks
the digits to be at least 28 px apart, i.e. boxes that do not overlap.) The target is the number
of **even** digits on the canvas.

Everything is drawn from one ``torch.Generator``: the same generator state gives the same canvases.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

DIGIT = 28


@dataclass
class Canvases:
    images: Tensor  # [N, size, size] uint8
    digits: Tensor  # [N, max_digits] int64 labels of the placed digits, -1 in empty slots
    corners: Tensor  # [N, max_digits, 2] (row, column) of each placed digit's top-left corner, -1 if empty

    @property
    def count(self) -> Tensor:
        """``[N]``: how many digits each canvas holds."""
        return (self.digits >= 0).sum(1)

    @property
    def even(self) -> Tensor:
        """``[N]``: how many of them are even (the target)."""
        return ((self.digits >= 0) & (self.digits % 2 == 0)).sum(1)


def overlaps(a: Tensor, b: Tensor) -> Tensor:
    """Whether two 28 x 28 boxes with top-left corners ``a`` and ``b`` (``[..., 2]``) overlap."""
    return ((a - b).abs() < DIGIT).all(-1)


def place(n: int, slots: Tensor, size: int, max_digits: int, g: torch.Generator, max_rounds: int = 100_000) -> Tensor:
    """Top-left corners ``[n, max_digits, 2]`` of ``slots[i]`` pairwise non-overlapping boxes
    per canvas (-1 in unused slots): every canvas still without a valid layout draws all its
    corners anew, and keeps them if no two of its boxes overlap (rejection sampling of the whole
    layout, so layouts are uniform over the valid ones; 5 boxes on 100 x 100 take ~100 rounds)."""
    corners = torch.full((n, max_digits, 2), -1, dtype=torch.long)
    used = torch.arange(max_digits) < slots[:, None]  # [n, max_digits]
    pairs = used[:, :, None] & used[:, None, :] & ~torch.eye(max_digits, dtype=torch.bool)
    todo = torch.arange(n)
    for _ in range(max_rounds):
        if not len(todo):
            return torch.where(used[..., None], corners, -1)
        proposal = torch.randint(0, size - DIGIT + 1, (len(todo), max_digits, 2), generator=g)
        clash = (overlaps(proposal[:, :, None], proposal[:, None, :]) & pairs[todo]).flatten(1).any(1)
        corners[todo[~clash]] = proposal[~clash]
        todo = todo[clash]
    raise RuntimeError(f"could not place {int(slots.max())} digits without overlap on a {size}x{size} canvas")


def layouts(n: int, g: torch.Generator, size: int = 100, min_digits: int = 0, max_digits: int = 5) -> Tensor:
    """Corners ``[n, max_digits, 2]`` of ``n`` canvases' digits, their number uniform in
    ``min_digits..max_digits`` (-1 in unused slots)."""
    slots = torch.randint(min_digits, max_digits + 1, (n,), generator=g)
    return place(n, slots, size, max_digits, g)


def render(images: Tensor, labels: Tensor, corners: Tensor, pick: Tensor, size: int = 100) -> Canvases:
    """Paste digit ``pick[i, j]`` of the pool ``images [P, 28, 28]`` (uint8, ``labels [P]``) at
    corner ``corners[i, j]`` of canvas ``i``, for every used slot (corner >= 0)."""
    n, max_digits = pick.shape
    used = corners[..., 0] >= 0  # [n, max_digits]
    digits = torch.where(used, labels[pick], -1)
    # boxes never overlap, so each digit is written, not added; unused slots write into a margin
    # beyond the canvas, cut off at the end (so the pixel values stay within [0, 255] as they are)
    canvas = torch.zeros(n, size + DIGIT, size + DIGIT, dtype=torch.uint8)
    offsets = torch.arange(DIGIT)
    which = torch.arange(n)[:, None, None]
    at = torch.where(used[..., None], corners, size)  # [n, max_digits, 2]
    for j in range(max_digits):
        rows, cols = at[:, j, 0:1] + offsets, at[:, j, 1:2] + offsets  # [n, 28] each
        canvas[which, rows[:, :, None], cols[:, None, :]] = images[pick[:, j]]
    return Canvases(canvas[:, :size, :size].contiguous(), digits, corners)


def draw(images: Tensor, labels: Tensor, n: int, g: torch.Generator, size: int = 100, min_digits: int = 0,
         max_digits: int = 5) -> Canvases:
    """``n`` canvases of digits drawn from the pool ``images [P, 28, 28]`` uint8 with ``labels [P]``."""
    corners = layouts(n, g, size, min_digits, max_digits)
    return render(images, labels, corners, torch.randint(0, len(images), (n, max_digits), generator=g), size)
