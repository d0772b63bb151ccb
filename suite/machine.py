"""The machine a cell ran on, recorded in its ``metrics.json`` (``environment``).

The same code, config and seeds repeat bit for bit on one machine, but not across machines: which
kernels a BLAS library picks (AVX2 or AVX-512, MKL's code path, ``MKL_CBWR``) changes the rounding
of every matrix product, and NALU training amplifies rounding (README, "How seeds are batched").
So each cell says where it ran, and the tables name it in their captions.
"""

from __future__ import annotations

import os
import platform
import re

import torch

# variables that change which kernels run, or how many threads they use
ENV_VARS = ("MKL_CBWR", "MKL_NUM_THREADS", "MKL_ENABLE_INSTRUCTIONS", "OMP_NUM_THREADS", "OPENBLAS_CORETYPE",
            "OPENBLAS_NUM_THREADS", "OPENBLAS_L2_SIZE", "ATEN_CPU_CAPABILITY", "KMP_AFFINITY")
FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")


def cpu() -> tuple[str, list[str]]:
    """The CPU's model name and which of ``FLAGS`` it has (Linux; elsewhere what platform says)."""
    try:
        text = open("/proc/cpuinfo", encoding="utf-8").read()
    except OSError:
        return platform.processor() or platform.machine(), []
    model = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    flags = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
    have = set(flags.group(1).split()) if flags else set()
    return (model.group(1).strip() if model else platform.machine()), [f for f in FLAGS if f in have]


def blas() -> str:
    """The BLAS torch was built with, and its version where torch reports one."""
    config = torch.__config__.show()
    info = re.search(r"BLAS_INFO=(\w+)", config)
    mkl = re.search(r"Math Kernel Library Version ([\w.\-]+)", config)
    name = info.group(1) if info else "unknown"
    return f"{name} {mkl.group(1)}" if name == "mkl" and mkl else name


def environment() -> dict:
    model, flags = cpu()
    return {
        "cpu": model,
        "cpu_flags": flags,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),  # the kernels ATen dispatches to
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "blas": blas(),
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "env": {k: os.environ[k] for k in ENV_VARS if k in os.environ},
    }


def describe(env: dict | None) -> str:
    """One line: ``AMD EPYC (AVX512 kernels), torch 2.14.1, mkl 2024.2, 1 thread``."""
    if not env:
        return "not recorded (cells made before the suite recorded machines)"
    extra = "".join(f", {k}={v}" for k, v in env.get("env", {}).items())
    threads = env.get("threads")
    return (f"{env['cpu']} ({env['cpu_capability']} kernels), torch {env['torch']}, {env['blas']}, "
            f"{threads} thread{'s' if threads != 1 else ''}{extra}")
