"""The arithmetic units, one per file, batched over seeds, and their registry (``UNITS``):

- NAC (``nac.py``) and NALU (``nalu.py``): Trask et al. (2018), Eqs. 1-2;
- NAU (``nau.py``) and NMU (``nmu.py``): Madsen & Johansen (ICLR 2020);
- iNALU (``inalu.py``): Schlor, Ring & Hotho (2020);
- NPU (``npu.py``) and RealNPU (``realnpu.py``): Heim, Pevny & Smidl (NeurIPS 2020).

Shapes follow ``nalu.ensemble``: inputs ``[M|1, B, in]``, weights ``[M, out, in]``. Used as a plain
torch layer, a unit has one member and takes ``[B, in]`` to ``[B, out]``::

    layer = NALU(2, 1)                      # one member
    y = layer(torch.tensor([[3.0, 4.0]]))   # [1, 1]

A unit takes part in training through the optional methods of ``nalu.hooks.Hooks``.

A unit from outside the registry enters by name: ``resolve("pkg.module:Class")`` or
``resolve("path/to/file.py:Class")`` (``model=unit model.unit=...``), checked against the unit
protocol by ``check_unit`` when the model is built (``examples/units/clipped_adder.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from pathlib import Path

import torch
from torch import Tensor, nn

from nalu.errors import ConfigError, check_choice
from nalu.hooks import having
from nalu.units.inalu import INALU
from nalu.units.nac import NAC
from nalu.units.nalu import NALU
from nalu.units.nau import NAU
from nalu.units.nmu import NMU
from nalu.units.npu import NPU
from nalu.units.realnpu import RealNPU

UNITS: dict[str, type[nn.Module]] = {"nac": NAC, "nalu": NALU, "nau": NAU, "nmu": NMU, "inalu": INALU,
                                     "npu": NPU, "realnpu": RealNPU}


def sparsity_error(model: nn.Module) -> Tensor | None:
    """``[M]``: the largest distance from {-1, 0, 1} of any weight of the model's units
    (Madsen & Johansen 2020, Section 4.1); None for a model without units."""
    errors = [m.sparsity_error() for m in having(model, "sparsity_error")]
    return torch.stack(errors).amax(0) if errors else None


def resolve(name: str | None) -> type[nn.Module]:
    """The unit class ``name`` names: a key of ``UNITS``, or ``module:Class`` / ``file.py:Class``
    from outside the suite, checked against the unit protocol (one-line errors)."""
    if name is None:
        raise ConfigError("model=unit needs its unit: model.unit=<package.module>:<Class> or <path/file.py>:<Class>")
    if ":" not in name:
        return UNITS[check_choice("unit", name, UNITS)]
    where, _, cls_name = name.rpartition(":")
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise ConfigError(f"unit {name}: no file {path.resolve()}")
            spec = importlib.util.spec_from_file_location(f"nalu_user_unit_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except ConfigError:
        raise
    except Exception as e:  # the user's module: any failure to import is reported in one line
        raise ConfigError(f"unit {name}: cannot import {where} ({type(e).__name__}: {e})") from None
    cls = getattr(module, cls_name, None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        found = sorted(k for k, v in vars(module).items() if isinstance(v, type) and issubclass(v, nn.Module)
                       and v.__module__ == module.__name__)
        raise ConfigError(f"unit {name}: {where} has no torch module {cls_name!r}; it has: {', '.join(found) or 'none'}")
    check_unit(cls, name)
    return cls


def check_unit(cls: type[nn.Module], name: str) -> None:
    """Refuse, in one line naming what is missing, a class that does not follow the unit protocol:
    the constructor ``(in_features, out_features, members=1)``, ``init_member(i, generator)``, and
    a forward from ``[M|1, B, in]`` to ``[M, B, out]`` (probed on a 2-member unit of 3 -> 2)."""
    try:
        inspect.signature(cls).bind(3, 2, 2)
    except TypeError:
        raise ConfigError(f"unit {name}: its constructor must take (in_features, out_features, members), "
                          f"it takes {inspect.signature(cls)}") from None
    if not callable(getattr(cls, "init_member", None)):
        raise ConfigError(f"unit {name}: it has no init_member(i, generator), so its members would not "
                          "differ by seed (nalu.hooks.Hooks)")
    try:
        unit = cls(3, 2, 2)
        g = torch.Generator().manual_seed(0)
        for i in range(2):
            unit.init_member(i, g)
        with torch.no_grad():
            shapes = [tuple(unit(torch.zeros(m, 4, 3)).shape) for m in (1, 2)]
    except Exception as e:  # the user's code: its failure on the probe is reported in one line
        raise ConfigError(f"unit {name}: a 2-member unit of 3 -> 2 fails on the probe ({type(e).__name__}: {e})") from None
    if shapes != [(2, 4, 2), (2, 4, 2)]:
        raise ConfigError(f"unit {name}: forward must map [M|1, B, in] to [M, B, out]: inputs [1, 4, 3] and "
                          f"[2, 4, 3] gave {list(shapes[0])} and {list(shapes[1])}, not [2, 4, 2]")
