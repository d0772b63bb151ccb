"""Grid-world time tracking with A3C and A3C + NAC (Trask et al. 2018, Section 4.5, Figure 5).

The agent gets a command ``T`` at the start of an episode and must stand on the target square
exactly at step ``T`` (``tasks.gridworld.env``). Agents train on commands drawn from
``U{env.commands}`` (5..12) with A3C (``tasks.gridworld.workers``), then are evaluated on every command of
``eval.commands`` (5..25): ``eval.episodes`` fixed episodes per command, the same for every agent
and seed, with the greedy action of the final policy (``eval.greedy``). Metrics per command ``c``:
``reward_c`` (mean episode reward, +1 on time, -1 otherwise) and ``early_c`` (% of episodes that
stepped on the target too early; the rest of the misses were late).

``task.agent`` picks the agent (``a3c`` or ``a3c_nac``; ``task.agent_net.nac_wiring`` how its
accumulator is wired, ``tasks.gridworld.agent.WIRINGS``); the model group is not used. A3C needs
``optimizer=adam``: workers share its moments. The trained agent (every seed) is saved to
``<run dir>/agent.pt``; ``scripts/render_episode.py`` replays it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from nalu.errors import ConfigError, check_choice
from nalu.seeding import derive_seed
from tasks import Task
from tasks.gridworld import workers
from tasks.gridworld.agent import WIRINGS, Agent, make_agent
from tasks.gridworld.env import MAX_COMMAND, GridWorldTime
from tasks import metrics

AGENTS = ("a3c", "a3c_nac")


def evaluation_episodes(env_cfg: dict, commands: list[int], episodes: int, members: int,
                        data_seed: int = 0) -> tuple[list[GridWorldTime], list[dict]]:
    """``members`` copies of the same ``len(commands) * episodes`` episodes: environment ``i`` and
    ``i + n`` start alike (``n`` episodes per member), ``episodes`` in a row per command."""
    n = len(commands) * episodes
    envs = [GridWorldTime(**env_cfg) for _ in range(members * n)]
    obs = [env.reset(seed=derive_seed("grid_eval", data_seed, i % n),
                     options={"command": commands[(i % n) // episodes]})[0] for i, env in enumerate(envs)]
    return envs, obs


def evaluate(agent: Agent, env_cfg: dict, commands: list[int], episodes: int, greedy: bool = True,
             data_seed: int = 0) -> dict[str, torch.Tensor]:
    """Run ``episodes`` fixed episodes per command for every member at once; per-member metrics."""
    M, n = agent.members, len(commands) * episodes
    envs, obs = evaluation_episodes(env_cfg, commands, episodes, M, data_seed)
    reward, early = np.zeros(M * n), np.zeros(M * n, bool)
    active = np.ones(M * n, bool)
    state = agent.initial_state(n)
    gen = torch.Generator().manual_seed(derive_seed("grid_eval_actions", data_seed))
    with torch.no_grad():
        while active.any():
            logits, _, state = agent(*workers.observation_tensors(obs, M, n), state)
            probs = torch.softmax(logits.view(M * n, -1), -1).nan_to_num(1.0)  # a diverged member: any action
            actions = probs.argmax(-1) if greedy else torch.multinomial(probs, 1, generator=gen).flatten()
            for i in np.flatnonzero(active):
                obs[i], r, done, _, info = envs[i].step(int(actions[i]))
                if done:
                    reward[i], early[i], active[i] = r, info["outcome"] == "early", False
    reward, early = reward.reshape(M, len(commands), episodes), early.reshape(M, len(commands), episodes)
    out = {}
    for k, c in enumerate(commands):
        out[metrics.reward(c)] = torch.from_numpy(reward[:, k].mean(1)).float()
        out[metrics.early(c)] = torch.from_numpy(100 * early[:, k].mean(1)).float()
    return out


def check(cfg: DictConfig) -> None:
    """Refuse settings the A3C cannot train with (the runner asks before it touches the cell)."""
    if cfg.device != "cpu":
        raise ConfigError(f"device={cfg.device}: the A3C of gridworld_time trains in CPU worker processes "
                          "(shared-memory weights), so it runs on the CPU only; use device=cpu")
    t = cfg.task
    check_choice("agent", t.agent, AGENTS)
    check_choice("NAC wiring", t.agent_net.nac_wiring, WIRINGS)
    if t.agent_net.nac_wiring in ("countdown", "clock_only") and t.env.show_command != "first":
        raise ConfigError(f"nac_wiring={t.agent_net.nac_wiring} adds the command to the accumulator when it is "
                          "shown, which must be once: use task.env.show_command=first")
    if cfg.optimizer.get("_target_") != "torch.optim.Adam":
        raise ConfigError("the grid-world task trains with A3C, whose workers share Adam's moments: "
                          "use optimizer=adam")
    for key in ("workers", "envs_per_worker", "rollout"):
        if t.a3c[key] < 1:
            raise ConfigError(f"task.a3c.{key} must be at least 1, got {t.a3c[key]}")
    if t.env.size < 3:
        raise ConfigError(f"the agent's 3x3 convolution needs task.env.size >= 3, got {t.env.size}")
    lo, hi = t.eval.commands
    if not t.env.max_distance <= lo <= hi <= MAX_COMMAND:
        raise ConfigError(f"task.eval.commands must be [low, high] with max_distance <= low <= high <= {MAX_COMMAND}, "
                          f"got {[lo, hi]}")
    if cfg.get("lr_schedule", "constant") != "constant":
        raise ConfigError(f"lr_schedule={cfg.lr_schedule}: the A3C's workers step a shared Adam at its fixed rate; "
                          "use lr_schedule=constant")
    opt = cfg.optimizer
    if opt.get("weight_decay", 0) or opt.get("amsgrad", False):
        raise ConfigError("A3C's shared Adam uses optimizer.lr, betas and eps only: weight_decay and amsgrad "
                          "are not supported")
    if t.frames < 1 or t.eval.episodes < 1:
        raise ConfigError(f"task.frames and task.eval.episodes must be positive, got {t.frames}, {t.eval.episodes}")
    GridWorldTime(**t.env)  # validates the environment's settings


def a3c_settings(cfg: DictConfig) -> dict:
    """What ``workers.train`` reads: the task config as plain data, with Adam's settings in ``a3c``
    (``lr``, ``betas``, ``eps``; the shared Adam steps one tensor at a time, so ``fused`` is moot)."""
    check(cfg)
    out, opt = OmegaConf.to_container(cfg.task, resolve=True), cfg.optimizer
    out["a3c"] |= {"lr": opt.lr, "betas": list(opt.get("betas", (0.9, 0.999))), "eps": opt.get("eps", 1e-8)}
    return out


def save_agent(path: Path, agent: Agent, settings: dict, seeds: list[int]) -> None:
    """The trained agent (all seeds) and what it takes to rebuild it, written atomically."""
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save({"state_dict": agent.state_dict(), "settings": settings, "seeds": seeds}, tmp)
    os.replace(tmp, path)


def load_agent(run_dir: Path) -> tuple[Agent, dict, list[int]]:
    """The agent that ``run`` saved in ``run_dir/agent.pt``, with its settings and seeds."""
    path = Path(run_dir) / "agent.pt"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: point to a grid-world run directory "
                                f"(runs/... or multirun/figure5/...) whose cell is complete")
    saved = torch.load(path, weights_only=True)
    agent = make_agent(saved["settings"], len(saved["seeds"]))
    agent.load_state_dict(saved["state_dict"])
    return agent, saved["settings"], saved["seeds"]


def run(cfg: DictConfig, log) -> dict:
    seeds, t = list(cfg.seeds), cfg.task
    settings = a3c_settings(cfg)
    agent, summary = workers.train(settings, seeds, log=log.metrics, progress=cfg.progress, desc=log.name)
    commands = list(range(t.eval.commands[0], t.eval.commands[1] + 1))
    final = evaluate(agent, settings["env"], commands, t.eval.episodes, t.eval.greedy, t.data_seed)
    lo, hi = t.env.commands
    inside = [c for c in commands if lo <= c <= hi]
    beyond = [c for c in commands if c > hi]
    if inside:
        final[metrics.reward("train")] = torch.stack([final[metrics.reward(c)] for c in inside]).mean(0)
    if beyond:
        final[metrics.reward("beyond")] = torch.stack([final[metrics.reward(c)] for c in beyond]).mean(0)
    log.metrics(summary["frames"], final)
    save_agent(log.out_dir / "agent.pt", agent, settings, seeds)
    diverged = summary.pop("diverged_at")
    members = [{"seed": int(s), "diverged": at >= 0, "diverged_step": at if at >= 0 else None,
                "final": {k: float(v[i]) for k, v in final.items()}}
               for i, (s, at) in enumerate(zip(seeds, diverged, strict=True))]
    parameters = sum(p[0].numel() for p in agent.parameters())
    wiring = t.agent_net.nac_wiring if t.agent == "a3c_nac" else None
    return {**summary, "agent": t.agent, "wiring": wiring, "commands": commands, "train_commands": [lo, hi],
            "parameters_per_member": parameters, "members": members}


TASK = Task(run=run, check=check, numerics=1)  # bump with any change to its numbers (tests/test_golden.py)
