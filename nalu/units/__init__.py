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
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

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
