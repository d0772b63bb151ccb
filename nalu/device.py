"""Where a cell trains: ``device=cpu`` (the default), ``cuda`` or ``cuda:<n>``.

Models are built and initialised on the CPU, and data are drawn on the CPU from the same seeded
generators, whatever the device; both are then moved. So a seed starts from the same weights and
sees the same inputs everywhere, and only the arithmetic differs (GPU kernels round and sum in
other orders, so a GPU run matches a CPU run closely, not bit for bit).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import torch
from torch import Tensor

from nalu.errors import ConfigError

T = TypeVar("T")
FORMS = "cpu, cuda, cuda:<n>"


def resolve(name: str) -> torch.device:
    """The torch device ``name`` names, or a one-line ConfigError if it is malformed or absent here."""
    name = str(name)
    if not re.fullmatch(r"cpu|cuda(:\d+)?", name):
        raise ConfigError(f"unknown device '{name}'; valid: {FORMS}")
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"device={name}, but CUDA is not available here (torch {torch.__version__}, "
                              f"built for CUDA {torch.version.cuda or 'none'}); use device=cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigError(f"device={name}, but this machine has {torch.cuda.device_count()} CUDA device(s)")
    return device


def move(obj: T, device: torch.device | str) -> T:
    """``obj`` with every tensor in it (nested in tuples, lists and dicts) on ``device``."""
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple):
        return tuple(move(x, device) for x in obj)
    if isinstance(obj, list):
        return [move(x, device) for x in obj]
    if isinstance(obj, dict):
        return {k: move(v, device) for k, v in obj.items()}
    return obj


def of(module: Any) -> torch.device:
    """The device of a model's parameters."""
    return next(module.parameters()).device
