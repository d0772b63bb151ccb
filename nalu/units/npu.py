"""The neural power unit of Heim, Pevny & Smidl (NeurIPS 2020): the real one (``nalu.units.realnpu``)
with complex weights ``W_re + i W_im``, ``z = exp(W_re log r - W_im k) * cos(W_re k + W_im log r)``."""

from __future__ import annotations

from nalu.units.realnpu import RealNPU


class NPU(RealNPU):
    """The neural power unit with complex weights ``W_re + i W_im``."""

    complex_weights = True
