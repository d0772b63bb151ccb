"""A3C's processes (Mnih et al. 2016, "Asynchronous methods for deep reinforcement learning", Algorithm S3) for
the grid-world time-tracking task, with the A3C + NAC variant of Trask et al. (2018), Section 4.5.

The agent (``Agent``): a convolution over the grid image, its features and the command into an
LSTM, and two linear heads, the actor (action logits) and the critic (state value). The A3C + NAC
agent adds an accumulator beside the LSTM: a NAC (``nalu.units.NAC``) reads the LSTM input and
output and adds its result to a running state, ``s_t = s_{t-1} + NAC([x_t, h_t])``, which both
heads read beside ``h_t``. The NAC can thus hold ``command - t``, a counter that does not saturate
(our reading of "a NAC in the agent's recurrent core"; the paper gives no more detail).

Every seed of a cell trains in the same processes as one batched model (``nalu.ensemble``): the
parameters have a leading member dimension, each member has its own environments, its own loss
and its own gradient clipping, and Adam is elementwise, so members never interact.

The algorithm (``train``): ``workers`` processes (``torch.multiprocessing``, spawn) share the
model's parameters and Adam's moments in shared memory. Each worker repeatedly copies the shared
weights into its local model, runs ``rollout`` steps in each of its environments, computes the
n-step returns, the policy-gradient loss with an entropy bonus and the value loss, and applies
its local gradients to the shared weights with the shared Adam, without locks (Hogwild!, as in
A3C). Workers send episode statistics through a queue; only the main process logs them.
Because the workers' updates interleave, runs with more than one worker are not bit-for-bit
reproducible; every episode and every action draw is seeded.
"""


from __future__ import annotations

import os
import queue as queue_module
import signal
import threading
import time
import traceback
from contextlib import contextmanager

import numpy as np
import torch
import torch.multiprocessing as mp
from torch import Tensor
from torch.nn import functional as F
from tqdm.auto import tqdm

from nalu import ensemble
from nalu.seeding import derive_seed, generator
from tasks.gridworld.a3c import a3c_losses, clip_grad_norm_per_member, shared_adam, shared_adam_state
from tasks.gridworld.agent import Agent, make_agent, reset_where
from tasks.gridworld.env import GridWorldTime


def observation_tensors(obs: list[dict], members: int, batch: int) -> tuple[Tensor, Tensor]:
    """``members * batch`` observations (member-major) -> image ``[M, B, 2, N, N]``, command ``[M, B, 1]``."""
    image = torch.from_numpy(np.stack([o["image"] for o in obs]))
    command = torch.from_numpy(np.stack([o["command"] for o in obs]))
    return image.view(members, batch, *image.shape[1:]), command.view(members, batch, 1)


class Environments:
    """``members x per_member`` environments stepped in lockstep; observations as tensors."""

    def __init__(self, env_cfg: dict, seeds: list[int], per_member: int, stream: object):
        self.M, self.B = len(seeds), per_member
        self.envs = [GridWorldTime(**env_cfg) for _ in range(self.M * per_member)]
        self.obs = [env.reset(seed=derive_seed(seeds[i // per_member], stream, i % per_member))[0]
                    for i, env in enumerate(self.envs)]

    def tensors(self) -> tuple[Tensor, Tensor]:
        return observation_tensors(self.obs, self.M, self.B)

    def step(self, actions: Tensor) -> tuple[Tensor, Tensor, list[tuple[int, int, float, int]]]:
        """Step every environment; reset those that end. Returns rewards and dones ``[M, B]`` and
        the finished episodes as ``(member, command, reward, length)``."""
        rewards, dones, finished = np.zeros(len(self.envs)), np.zeros(len(self.envs), bool), []
        for i, (env, a) in enumerate(zip(self.envs, actions.flatten().tolist(), strict=True)):
            obs, reward, done, _, info = env.step(a)
            rewards[i], dones[i] = reward, done
            if done:
                finished.append((i // self.B, info["command"], reward, info["t"]))
                obs, _ = env.reset()
            self.obs[i] = obs
        shape = (self.M, self.B)
        return torch.from_numpy(rewards).float().view(shape), torch.from_numpy(dones).view(shape), finished


def worker(rank: int, shared: Agent, adam_state: list, alive: Tensor, cfg: dict, seeds: list[int],
           frames, stop, queue, parent: int) -> None:
    """One A3C worker process: never touches wandb or files; reports through ``queue``. It ignores
    Ctrl-C (the main process stops it through ``stop``) and stops when its parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    queue.put(("ready", rank, None))  # its arguments (the shared tensors) have arrived
    try:
        torch.set_num_threads(1)
        torch.set_flush_denormal(True)
        _work(rank, shared, adam_state, alive, cfg, seeds, frames, stop, queue, parent)
    except Exception:
        queue.put(("error", rank, traceback.format_exc()))
    finally:
        queue.put(("done", rank, None))


def _work(rank, shared, adam_state, alive, cfg, seeds, frames, stop, queue, parent) -> None:
    a = cfg["a3c"]
    M, n = len(seeds), a["rollout"]
    params = list(shared.parameters())
    optimizer = shared_adam(params, adam_state, lr=a["lr"], betas=tuple(a["betas"]), eps=a["eps"])
    local = make_agent(cfg, M)
    local_params = list(local.parameters())
    envs = Environments(cfg["env"], seeds, a["envs_per_worker"], ("grid_train", rank))
    gens = [generator("a3c_actions", rank, seed) for seed in seeds]  # a seed's actions are its own

    def diverged(bad: Tensor) -> None:
        """Members whose logits, loss or gradients are not finite stop for good (``alive``)."""
        bad = bad & alive
        if bad.any():
            alive[bad] = False
            queue.put(("diverged", rank, (bad.nonzero().flatten().tolist(), frames.value)))

    state = local.initial_state(envs.B)
    while frames.value < cfg["frames"] and not stop.is_set() and os.getppid() == parent:
        local.load_state_dict(shared.state_dict())
        state = tuple(s.detach() for s in state)
        logits, values, actions, rewards, dones, episodes = [], [], [], [], [], []
        for _ in range(n):
            lg, v, state = local(*envs.tensors(), state)
            probs = F.softmax(lg.detach(), -1)
            diverged(~torch.isfinite(probs).flatten(1).all(1))
            probs = torch.where(ensemble.member_view(alive, probs), probs.nan_to_num(1.0), 1.0)  # dead: uniform
            act = torch.stack([torch.multinomial(probs[m], 1, generator=gens[m]).squeeze(-1) for m in range(M)])
            r, d, finished = envs.step(act)
            state = reset_where(state, d)
            for x, lst in zip((lg, v, act, r, d), (logits, values, actions, rewards, dones)):
                lst.append(x)
            episodes += finished
        with torch.no_grad():
            bootstrap = local(*envs.tensors(), state)[1]
        losses = a3c_losses(torch.stack(logits), torch.stack(values), torch.stack(actions),
                            torch.stack(rewards), torch.stack(dones), bootstrap, a["gamma"])
        loss = losses.total(a["value_coef"], a["entropy_coef"])
        diverged(~torch.isfinite(loss.detach()))
        local.zero_grad(set_to_none=True)
        torch.where(alive, loss, 0.0).sum().backward()
        ensemble.mask_dead_gradients(local_params, alive)
        diverged(~torch.isfinite(clip_grad_norm_per_member(local_params, a["max_grad_norm"])))
        ensemble.mask_dead_gradients(local_params, alive)
        for p, lp in zip(params, local_params, strict=True):
            p.grad = lp.grad
        optimizer.step()
        if not alive.all():
            ensemble.freeze_members(optimizer, ~alive)
        with frames.get_lock():
            frames.value += n * envs.B
            done_frames = frames.value
        report = {k: getattr(losses, k).tolist() for k in ("policy", "value", "entropy")}
        queue.put(("rollout", rank, {"frames": done_frames, "episodes": episodes, **report}))


# --- the main process -------------------------------------------------------------------------


@contextmanager
def sigterm_as_exit():
    """While training, turn SIGTERM into SystemExit so that the workers are stopped on the way out
    (only where SIGTERM still has its default action: a launcher's own handler is left alone; the
    workers also stop by themselves when their parent process is gone)."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def spawnable_start_method():
    """A spawned child re-applies its parent's default start method before anything else; under
    Hydra's joblib launcher that is joblib's own ("loky"), which a fresh child does not know. Make
    the default "spawn" while the workers start, then put it back."""
    previous = mp.get_start_method(allow_none=True)
    if previous in (None, "spawn", "fork", "forkserver"):
        yield
        return
    mp.set_start_method("spawn", force=True)
    try:
        yield
    finally:
        mp.set_start_method(previous, force=True)


class HeldSignals:
    """Hold Ctrl-C and SIGTERM while the workers start, and deliver them once every worker is
    ready: a worker stopped while it still fetches the shared tensors from this process can leave
    this process hanging at exit. (A no-op outside the main thread, where handlers cannot be set.)"""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.pending: int | None = None
        self.previous: dict = {}

    def hold(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in self.SIGNALS:
            self.previous[sig] = signal.signal(sig, self._record)

    def _record(self, signum, frame) -> None:
        self.pending = self.pending or signum

    def release(self) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous = {}
        if self.pending:
            pending, self.pending = self.pending, None
            signal.raise_signal(pending)


def shutdown(procs: list, queue, timeout: float = 10.0) -> None:
    """Join the started workers (draining the queue so that none blocks on a full pipe);
    terminate any that do not stop within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        try:
            while True:
                queue.get_nowait()
        except (queue_module.Empty, OSError, EOFError):
            pass
        for p in procs:
            p.join(timeout=0.05)
    for p in procs:
        if p.is_alive():
            p.terminate()
        p.join()


class EpisodeStats:
    """Running per-member statistics of training episodes between two log points."""

    def __init__(self, members: int):
        self.M = members
        self.clear()

    def clear(self) -> None:
        self.reward, self.count = torch.zeros(self.M), torch.zeros(self.M)
        self.losses: dict[str, list[Tensor]] = {"policy": [], "value": [], "entropy": []}

    def add(self, payload: dict) -> None:
        for m, _, reward, _ in payload["episodes"]:
            self.reward[m] += reward
            self.count[m] += 1
        for k in self.losses:
            self.losses[k].append(torch.tensor(payload[k]))

    def metrics(self) -> dict[str, Tensor]:
        out = {"train_reward": self.reward / self.count, "episodes": self.count}
        for k, v in self.losses.items():
            if v:
                out[f"{k}_loss" if k != "entropy" else k] = torch.stack(v).mean(0)
        return out


def train(cfg: dict, seeds: list[int], log=None, progress: bool = True, desc: str = "a3c") -> tuple[Agent, dict]:
    """Train one agent per seed with ``cfg["a3c"]["workers"]`` processes for ``cfg["frames"]``
    environment steps per member. Returns the trained (shared) agent and a summary."""
    M, a = len(seeds), cfg["a3c"]
    agent = make_agent(cfg, M)
    ensemble.init_members(agent, seeds)
    agent.share_memory()
    adam_state = shared_adam_state(list(agent.parameters()))
    alive = torch.ones(M, dtype=torch.bool).share_memory_()
    ctx = mp.get_context("spawn")
    frames, stop, queue = ctx.Value("q", 0), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=worker, daemon=True, name=f"a3c-worker-{rank}",
                         args=(rank, agent, adam_state, alive, cfg, seeds, frames, stop, queue, os.getpid()))
             for rank in range(a["workers"])]
    stats, diverged_at = EpisodeStats(M), torch.full((M,), -1, dtype=torch.long)
    next_log, seen, finished, ready, episodes, started = cfg["log_every"], 0, 0, 0, torch.zeros(M), []
    held = HeldSignals()

    def flush(step: int) -> None:
        nonlocal episodes
        metrics = stats.metrics()
        episodes += metrics["episodes"]
        if log and metrics["episodes"].sum() > 0:
            log(step, metrics)
        stats.clear()

    start = time.perf_counter()
    bar = tqdm(total=cfg["frames"], desc=desc, disable=not progress, mininterval=2.0, leave=False)
    with sigterm_as_exit():
        try:
            held.hold()
            with spawnable_start_method():
                for p in procs:
                    p.start()
                    started.append(p)
            while finished < len(procs):
                try:
                    kind, rank, payload = queue.get(timeout=1.0)
                except queue_module.Empty:
                    dead = [p for p in procs if p.exitcode not in (None, 0)]
                    if dead:
                        raise RuntimeError(f"A3C worker {dead[0].name} died with exit code {dead[0].exitcode}")
                    continue
                if kind == "error":
                    raise RuntimeError(f"A3C worker {rank} failed:\n{payload}")
                if kind == "ready":
                    ready += 1
                    if ready == len(procs):
                        held.release()
                elif kind == "done":
                    finished += 1
                elif kind == "diverged":
                    members, at = payload
                    diverged_at[members] = at
                elif kind == "rollout":
                    stats.add(payload)
                    seen = max(seen, min(payload["frames"], cfg["frames"]))  # workers' messages interleave
                    bar.update(seen - bar.n)
                    if seen >= next_log:
                        flush(seen)
                        while next_log <= seen:
                            next_log += cfg["log_every"]
            flush(seen)  # the episodes after the last log point
        finally:
            stop.set()
            bar.close()
            shutdown(started, queue)
            held.release()
    summary = {"frames": int(frames.value), "train_wall_s": round(time.perf_counter() - start, 2),
               "frames_per_s": round(frames.value / (time.perf_counter() - start), 1),
               "diverged_at": diverged_at.tolist(), "train_episodes": episodes.tolist()}
    return agent, summary
