"""A small convolutional digit encoder, batched over seeds with grouped convolutions.

Two 5x5 convolutions with stride 2 (28x28 -> 12x12 -> 4x4), a ReLU hidden layer of ``hidden``
units (none when 0) and a linear map to ``out_features``: the shape of the PyTorch MNIST example
(two convolutions, one dense hidden layer), smaller (that one has 431,080 weights) so that
end-to-end training over digit series fits a laptop CPU. Member ``m`` owns channel group ``m`` of
every convolution (``groups=M``), so members never mix. All sizes are config values.

``pool=True`` takes the PyTorch MNIST example's own layout (its 2018 version, which Madsen &
Johansen say the paper's Table 2 used): 5x5 convolutions with stride 1, each followed by a 2x2
max-pool (28x28 -> 24 -> 12 -> 8 -> 4), with ``channels=[20, 50]`` and ``hidden=500``: 431,080
weights to 10 features, against about 20k of the default.

Without the hidden layer the code is linear in the convolutional features and learns more slowly:
on MNIST parity (2,000 Adam steps, 2 seeds) the NAC final layer reached 84-87% without it and 90%
with 64 hidden units, ``sigmoid(W)x`` 86-87% and 94-95%. The MNIST tasks use 64.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from nalu import ensemble

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


INITS = ("torch", "glorot")  # GroupedConv's initialisations


class GroupedConv(nn.Module):
    """One ``Conv2d`` per member (weights ``[M, out, in, k, k]``), run as one grouped convolution.

    ``init``: ``torch``, ``torch.nn.Conv2d``'s default, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for
    weight and bias; or ``glorot``, TensorFlow's ``tf.layers.conv2d`` default, Glorot-uniform
    weights U(-sqrt(6 / (fan_in + fan_out)), +...) and zero biases."""

    def __init__(self, in_channels: int, out_channels: int, kernel: int, stride: int, members: int,
                 dilation: int = 1, init: str = "torch"):
        super().__init__()
        if init not in INITS:
            raise ValueError(f"unknown init {init!r}; valid: {', '.join(INITS)}")
        self.weight = nn.Parameter(torch.empty(members, out_channels, in_channels, kernel, kernel))
        self.bias = nn.Parameter(torch.empty(members, out_channels))
        self.in_channels, self.stride, self.members, self.dilation = in_channels, stride, members, dilation
        self.init = init

    def init_member(self, i: int, g: torch.Generator) -> None:
        out_channels, in_channels, k, _ = self.weight.shape[1:]
        fan_in, fan_out = in_channels * k * k, out_channels * k * k
        if self.init == "glorot":
            bound = math.sqrt(6.0 / (fan_in + fan_out))
            self.weight.data[i].uniform_(-bound, bound, generator=g)
            self.bias.data[i].zero_()
        else:
            bound = 1.0 / math.sqrt(fan_in)
            self.weight.data[i].uniform_(-bound, bound, generator=g)
            self.bias.data[i].uniform_(-bound, bound, generator=g)

    def forward(self, x: Tensor) -> Tensor:
        """``[N, M * in, H, W] -> [N, M * out, H', W']``, member-major channels. An input of ``in``
        channels, ``[N, in, H, W]``, is one that every member reads: it runs as one convolution
        with ``M * out`` filters, not ``M`` groups over ``M`` copies of it (the same function to
        rounding; ``shared_first_conv`` in the encoders below)."""
        w = self.weight.flatten(0, 1)
        groups = self.members if x.shape[1] == self.members * self.in_channels else 1
        return F.conv2d(x, w, self.bias.flatten(), stride=self.stride, dilation=self.dilation, groups=groups)


def members_on_channels(x: Tensor, members: int, shared_first_conv: bool) -> Tensor:
    """``[M|1, N, S, S]`` -> ``[N, M, S, S]``, members on the channel axis; one batch that every
    member reads (``[1, N, S, S]``) stays one channel, ``[N, 1, S, S]``, with ``shared_first_conv``
    (``GroupedConv`` then runs it once: ``make bench`` measures the training step both ways)."""
    if x.shape[0] == 1:
        return x[0].unsqueeze(1) if shared_first_conv else x[0].unsqueeze(1).expand(-1, members, -1, -1)
    return x.transpose(0, 1)


class DigitEncoder(nn.Module):
    """``[M|1, N, 28, 28]`` images (uint8 or float in [0, 1]) -> ``[M, N, out_features]``."""

    def __init__(self, out_features: int, members: int, channels: tuple[int, int] = (8, 16), hidden: int = 64,
                 pool: bool = False, shared_first_conv: bool = False):
        super().__init__()
        c1, c2 = channels
        self.members, self.pool, self.shared_first_conv = members, pool, shared_first_conv
        stride = 1 if pool else 2  # either way a 4x4 map: pooled after each convolution, or strided
        self.conv1 = GroupedConv(1, c1, 5, stride, members)
        self.conv2 = GroupedConv(c1, c2, 5, stride, members)
        self.hidden = ensemble.Linear(c2 * 16, hidden, members) if hidden else None
        self.fc = ensemble.Linear(hidden or c2 * 16, out_features, members)

    def forward(self, images: Tensor) -> Tensor:
        M, N = self.members, images.shape[1]
        x = images.to(next(self.parameters()).dtype)  # float32 in the suite; float64 in its golden runs
        if images.dtype == torch.uint8:
            x = x / 255.0
        x = (x - MNIST_MEAN) / MNIST_STD
        x = members_on_channels(x, M, self.shared_first_conv)  # [N, M|1, 28, 28]
        if self.pool:
            h = F.max_pool2d(F.relu(self.conv1(x.contiguous())), 2)
            h = F.max_pool2d(F.relu(self.conv2(h)), 2)  # [N, M * c2, 4, 4]
        else:
            h = F.relu(self.conv2(F.relu(self.conv1(x.contiguous()))))  # [N, M * c2, 4, 4]
        h = h.view(N, M, -1).transpose(0, 1).contiguous()  # [M, N, c2 * 16]
        if self.hidden is not None:
            h = F.relu(self.hidden(h))
        return self.fc(h)


class CanvasEncoder(nn.Module):
    """``[M|1, N, S, S]`` canvases (uint8 or float in [0, 1]) -> ``[M, N, out_features]``: the
    counting network of fomorians/counting-mnist (a reimplementation of Seguí et al. 2015) up to
    its last layer, batched over members with grouped convolutions:

        conv c1 @ 7x7 stride 2 -> ReLU -> max-pool 2 -> conv c2 @ 3x3 dilation 2 -> ReLU
        -> conv c3 @ 3x3 -> ReLU -> conv 1 @ 1x1 -> ReLU (a density map) -> flatten
        -> dense out_features -> ReLU

    (100 x 100 -> 47 -> 23 -> 19 -> 17: a 17 x 17 map; that network pads to keep 50 x 50 -> 25 x 25.)
    The layer under study (Table 4's final layer) reads its ``out_features``.

    ``init`` initialises the convolutions (``GroupedConv``): ``glorot``, as that network's
    TensorFlow layers are by default, or ``torch``. The one-channel density map is the weak point:
    where it is negative on every pixel at initialisation, its ReLU passes no gradient, and the
    network outputs a constant for ever. Under ``torch``'s uniform biases 42 of 100 seeds start
    so; under ``glorot``'s zero biases none of the same 100 (measured once on MNIST validation canvases; tests/test_mnist_series.py checks, on random
    canvases, that none starts dead under ``glorot`` and at least 10 of 100 do under ``torch``)."""

    def __init__(self, size: int, out_features: int, members: int, channels: tuple[int, int, int] = (8, 16, 32),
                 init: str = "glorot", shared_first_conv: bool = False):
        super().__init__()
        c1, c2, c3 = channels
        self.members, self.shared_first_conv = members, shared_first_conv
        self.conv1 = GroupedConv(1, c1, 7, 2, members, init=init)
        self.conv2 = GroupedConv(c1, c2, 3, 1, members, dilation=2, init=init)
        self.conv3 = GroupedConv(c2, c3, 3, 1, members, init=init)
        self.density = GroupedConv(c3, 1, 1, 1, members, init=init)
        side = (((size - 7) // 2 + 1) // 2 - 4) - 2
        if side < 1:
            raise ValueError(f"a {size}x{size} canvas is too small for the counting network")
        self.fc = ensemble.Linear(side * side, out_features, members)

    def forward(self, canvases: Tensor) -> Tensor:
        x = canvases.to(next(self.parameters()).dtype)
        if canvases.dtype == torch.uint8:
            x = x / 255.0
        x = members_on_channels(x, self.members, self.shared_first_conv)  # [N, M|1, S, S]
        h = F.relu(self.density_map(x))  # [N, M, side, side]
        return F.relu(self.fc(h.flatten(2).transpose(0, 1).contiguous()))

    def density_map(self, x: Tensor) -> Tensor:
        """``[N, M|1, S, S]`` canvases in [0, 1] -> ``[N, M, side, side]``, the density map before its ReLU."""
        h = F.max_pool2d(F.relu(self.conv1(x.contiguous())), 2)
        return self.density(F.relu(self.conv3(F.relu(self.conv2(h)))))


class OverDigits(nn.Module):
    """Encode every digit of ``[M|1, B, K, 28, 28]`` and hand the codes to ``head``: as a sequence
    ``[M, B, K, F]`` (a recurrent core), or concatenated ``[M, B, K * F]`` with ``flatten=True``."""

    def __init__(self, encoder: nn.Module, head: nn.Module, flatten: bool = False):
        super().__init__()
        self.encoder, self.head, self.flatten = encoder, head, flatten

    def forward(self, images: Tensor) -> Tensor:
        m, B, K = images.shape[:3]
        codes = self.encoder(images.reshape(m, B * K, 28, 28))
        codes = codes.view(codes.shape[0], B, K, -1)
        return self.head(codes.flatten(2) if self.flatten else codes)
