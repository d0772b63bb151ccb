"""Throughput of the real training loop (``nalu.train.fit``), printed as member-steps per second.

    make bench [DEVICE=cuda]      (or: python scripts/bench.py [--steps N] [--device cuda])

A member-step is one optimiser step of one seed. Batching seeds pays when 10 members cost much
less than 10 times one member: the suite's target is at least 4x the single-member throughput.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from nalu import device as devices
from nalu.cell import build_model, model_factory
from nalu.ensemble import init_members
from nalu.run import CONFIG_DIR
from nalu.train import fit
from tasks.arithmetic import ArithmeticProblem
from tasks.identity import IdentityProblem
from tasks.mnist_data import raw_dir


def throughput(overrides: list[str], members: int, steps: int, device: torch.device) -> float:
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides + ["task.test_samples=100", "task.extrapolation_samples=10"]
                      if "task=identity" not in overrides else overrides)  # fmt: skip
    seeds = list(range(members))
    if cfg.task.name == "identity":
        problem, in_features, recurrent = IdentityProblem(cfg.task, seeds), 1, False
    else:
        recurrent = cfg.task.name.startswith("recurrent")
        problem, in_features = ArithmeticProblem(cfg.task, seeds, recurrent), cfg.task.input_size
    model = build_model(model_factory(cfg.model), in_features, 1, members, recurrent)
    init_members(model, seeds)
    model.to(device)
    problem.to(device)
    opt = instantiate(cfg.optimizer)(model.parameters())
    fit(model, problem, opt, steps=20, eval_every=10**9, progress=False)  # warm up
    start = time.perf_counter()
    fit(model, problem, opt, steps=steps, eval_every=10**9, progress=False)
    return members * steps / (time.perf_counter() - start)


def mnist_images_per_second(members: int, steps: int, device: torch.device) -> float | None:
    """Training throughput of encoder + recurrent NAC core on MNIST counting series."""
    from tasks import mnist_series

    if not raw_dir(Path("data")).exists():
        return None
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", ["task=mnist_counting", "model=nac", f"seeds={members}",
                                 "task.test_series={1: 10}", "task.validation_series=10"])  # fmt: skip
    seeds = list(range(members))
    problem = mnist_series.SeriesProblem(cfg.task, seeds, Path("data"))
    model = build_model(mnist_series.factory_for(cfg), 28 * 28, 10, members, True)
    init_members(model, seeds)
    model.to(device)
    problem.to(device)
    opt = instantiate(cfg.optimizer)(model.parameters())
    fit(model, problem, opt, steps=5, eval_every=10**9, progress=False)
    start = time.perf_counter()
    fit(model, problem, opt, steps=steps, eval_every=10**9, progress=False)
    return steps * cfg.task.batch_size * cfg.task.length / (time.perf_counter() - start)


def a3c_frames_per_second(members: int, frames: int) -> float:
    """Training throughput of the grid-world A3C + NAC agent with the task's default workers,
    start-up of the worker processes included."""
    from tasks import a3c, gridworld_time

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", ["task=gridworld_time", "task.agent=a3c_nac", f"task.frames={frames}"])
    _, summary = a3c.train(gridworld_time.a3c_settings(cfg), list(range(members)), progress=False)
    return summary["frames_per_s"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu", help="cpu or cuda[:n]; the A3C runs on the CPU regardless")
    a = p.parse_args()
    try:
        device = devices.resolve(a.device)
    except ValueError as e:
        p.error(str(e))
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, device {device}, {a.threads} thread(s), {a.steps} steps per measurement")
    cases = [
        ("static NALU (batch 128, input 100, hidden 2)",
         ["task=static_arithmetic", "model=nalu", "task.op=mul"], (1, 10)),
        ("static ReLU6 MLP (batch 128, input 100, hidden 2)",
         ["task=static_arithmetic", "model=relu6", "task.op=mul"], (1, 10)),
        ("recurrent NALU (batch 128, length 10, state 2)",
         ["task=recurrent_arithmetic", "model=nalu", "task.op=mul"], (1, 10)),
        ("recurrent LSTM (batch 128, length 10, state 2)",
         ["task=recurrent_arithmetic", "model=lstm", "task.op=mul"], (1, 10)),
        ("identity ReLU MLP (batch 64, 1-8-8-8-1)",
         ["task=identity", "model=mlp", "model.activation_name=ReLU"], (1, 100)),
    ]  # fmt: skip
    for name, overrides, (m1, mn) in cases:
        steps = a.steps if "static" in name or "identity" in name else a.steps // 5
        one = throughput(overrides, m1, steps, device)
        many = throughput(overrides, mn, steps, device)
        print(f"{name}:\n  {m1:>3} member : {one:>9,.0f} member-steps/s"
              f"\n  {mn:>3} members: {many:>9,.0f} member-steps/s  ({many / one:.1f}x)")  # fmt: skip
    print("MNIST counting, encoder + recurrent NAC (50 series x 10 digits per step), training:")
    for members in (1, 3):
        ips = mnist_images_per_second(members, max(a.steps // 40, 5), device)
        if ips is None:
            print("  skipped: no MNIST in data/ (run `make data`)")
            break
        print(f"  {members} member{'s' if members > 1 else ' '}: {ips:>9,.0f} images/s "
              f"({ips * members:,.0f} member-images/s)")

    print("grid-world A3C + NAC, training (2 worker processes, 16 environments per seed in each):")
    for members in (1, 3):
        fps = a3c_frames_per_second(members, max(a.steps * 50, 5000))
        print(f"  {members} seed{'s' if members > 1 else ' '}: {fps:>9,.0f} environment steps/s per seed "
              f"({fps * members:,.0f} environment steps/s)")


if __name__ == "__main__":
    main()
