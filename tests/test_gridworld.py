"""The grid-world environment and the A3C agent (tasks/gridworld/env.py, tasks/gridworld/a3c.py, tasks/gridworld/time_tracking.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import torch
from gymnasium.utils.env_checker import check_env

from nalu.ensemble import init_members
from nalu.errors import ConfigError
from tasks.gridworld import a3c, workers
from tasks.gridworld.agent import Agent
from tasks.gridworld import env as grid_env
from tasks.gridworld.env import PASS, GridWorldTime
from tasks.gridworld.time_tracking import evaluate

from .conftest import ROOT, build_table, cli

RUN = ["-m", "suite.run", "task=gridworld_time"]
TINY_A3C = ["progress=false", "seeds=2", "task.frames=600", "task.log_every=200", "task.a3c.workers=2",
            "task.a3c.envs_per_worker=2", "task.a3c.rollout=10", "task.eval.episodes=3",
            "task.eval.commands=[5,7]"]


def play(env: GridWorldTime, policy, seed: int, command: int | None = None) -> tuple[float, dict, int]:
    env.reset(seed=seed, options={"command": command} if command else None)
    done, t = False, 0
    while not done:
        _, reward, done, truncated, info = env.step(policy(env))
        assert not truncated
        t += 1
    return reward, info, t


def test_env_passes_gymnasium_checker_and_is_registered():
    env = gym.make(grid_env.ENV_ID, size=4, render_mode="rgb_array")
    check_env(env.unwrapped, skip_render_check=False)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs) and obs["command"][0] == info["command"]
    frame = env.render()
    assert frame.shape == (64, 64, 3) and frame.dtype == np.uint8
    assert (frame == (220, 40, 40)).all(-1).sum() == 16 * 16  # one red target cell


@pytest.mark.parametrize("command", range(5, 26))
def test_scripted_optimal_policy_wins_every_command(command):
    env = GridWorldTime(size=5, commands=(5, 12), max_distance=4)
    for seed in range(10):
        reward, info, t = play(env, GridWorldTime.optimal_action, seed, command)
        assert (reward, info["outcome"], t) == (1.0, "on_time", command)


def test_arriving_early_or_late_is_penalised():
    env = GridWorldTime(size=5, commands=(6, 6), max_distance=4)
    # head straight for the target: it is 1..4 steps away, so the agent arrives before step 6
    reward, info, t = play(env, _walk, seed=1)
    assert (reward, info["outcome"], info["distance"]) == (-1.0, "early", 0) and t <= 4
    # never move: the episode ends at step T, away from the target
    reward, info, t = play(env, lambda e: PASS, seed=1)
    assert (reward, info["outcome"], t) == (-1.0, "late", 6)
    # the command is shown once, then hidden
    obs, _ = env.reset(seed=2)
    assert obs["command"][0] == 6 and env.step(PASS)[0]["command"][0] == 0
    always = GridWorldTime(size=5, commands=(6, 6), show_command="always")
    always.reset(seed=2)
    assert always.step(PASS)[0]["command"][0] == 6


def test_under_the_papers_scoring_not_arriving_scores_zero_and_arriving_early_still_costs():
    env = GridWorldTime(size=5, commands=(6, 6), max_distance=4, late_reward=0.0)
    reward, info, t = play(env, lambda e: PASS, seed=1)
    assert (reward, info["outcome"], t) == (0.0, "late", 6)
    reward, info, _ = play(env, _walk, seed=1)
    assert (reward, info["outcome"]) == (-1.0, "early")
    reward, info, _ = play(env, GridWorldTime.optimal_action, seed=1)
    assert (reward, info["outcome"]) == (1.0, "on_time")


@pytest.mark.parametrize("late_reward", [1.0, -1.5])
def test_a_late_reward_outside_minus_one_to_one_is_refused(late_reward):
    with pytest.raises(ConfigError, match="late_reward"):
        GridWorldTime(late_reward=late_reward)


def _walk(env: GridWorldTime) -> int:
    """Head straight for the target, whatever the time."""
    (r, c), (tr, tc) = env._agent, env._target
    if r != tr:
        return grid_env.DOWN if tr > r else grid_env.UP
    return grid_env.RIGHT if tc > c else grid_env.LEFT


def test_same_seed_same_episode_and_walls_hold():
    a, b = GridWorldTime(), GridWorldTime()
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 5, 30)
    for env in (a, b):
        env.reset(seed=7)
    for act in actions:
        oa, ra, da, _, _ = a.step(int(act))
        ob, rb, db, _, _ = b.step(int(act))
        assert np.array_equal(oa["image"], ob["image"]) and (ra, da) == (rb, db)
        assert oa["command"] == ob["command"]
        assert oa["image"][0].sum() == 1  # the agent never leaves the grid
        if da:
            a.reset(seed=int(act))
            b.reset(seed=int(act))
    starts = {tuple(GridWorldTime().reset(seed=s)[0]["image"].reshape(2, -1).argmax(1)) for s in range(50)}
    assert len(starts) > 20  # seeds give different episodes


@pytest.mark.parametrize("kwargs, match", [
    ({"commands": (3, 12)}, "max_distance"),
    ({"size": 1}, "size"),
    ({"max_distance": 9}, "max_distance"),
    ({"show_command": "never"}, "show_command"),
])
def test_bad_env_settings_are_refused(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        GridWorldTime(**kwargs)


# --- the agent and the algorithm ------------------------------------------------------------


def test_nac_agent_accumulates_and_members_are_independent():
    agent = Agent(size=5, members=2, nac=2)
    init_members(agent, [0, 1])
    obs, _ = GridWorldTime().reset(seed=0)
    image = torch.from_numpy(obs["image"]).expand(2, 3, 2, 5, 5)
    command = torch.full((2, 3, 1), 9.0)
    state = agent.initial_state(3)
    logits, value, s1 = agent(image, command, state)
    _, _, s2 = agent(image, 0 * command, s1)
    assert logits.shape == (2, 3, 5) and value.shape == (2, 3)
    with torch.no_grad():  # s_t = s_{t-1} + NAC([x_t, h_t]), from s_0 = 0
        x1, x2 = agent.core_input(image, command), agent.core_input(image, 0 * command)
        torch.testing.assert_close(s1[2], agent.nac(torch.cat([x1, s1[0]], -1)))
        torch.testing.assert_close(s2[2], s1[2] + agent.nac(torch.cat([x2, s2[0]], -1)))
    # changing member 1's weights leaves member 0's outputs alone
    with torch.no_grad():
        for p in agent.parameters():
            p[1].add_(1.0)
    logits2, value2, _ = agent(image, command, state)
    torch.testing.assert_close(logits2[0], logits[0])
    torch.testing.assert_close(value2[0], value[0])
    assert not torch.allclose(logits2[1], logits[1])


def test_a3c_losses_match_hand_computed_returns():
    # two environments, three steps, gamma 0.9, bootstrap value 5 after the rollout:
    #   env 0: rewards 0, 0, +1, its episode ends at step 3 (the bootstrap is cut)
    #   env 1: rewards 0, -1, 0, an episode ends at step 2 and a new one runs on (bootstrapped)
    T, gamma = 3, 0.9
    logits = torch.zeros(T, 1, 2, 5)
    values = torch.tensor([[0.5, 0.0], [0.2, 0.3], [0.1, 0.4]]).view(T, 1, 2)
    rewards = torch.tensor([[0.0, 0.0], [0.0, -1.0], [1.0, 0.0]]).view(T, 1, 2)
    dones = torch.tensor([[False, False], [False, True], [True, False]]).view(T, 1, 2)
    losses = a3c.a3c_losses(logits, values, torch.zeros(T, 1, 2, dtype=torch.long), rewards, dones,
                            bootstrap=torch.tensor([[5.0, 5.0]]), gamma=gamma)
    returns = torch.tensor([[gamma**2, gamma * -1.0], [gamma, -1.0], [1.0, gamma * 5.0]])
    adv = returns - values.view(T, 2)
    torch.testing.assert_close(losses.value, (0.5 * adv.square().mean()).view(1))
    torch.testing.assert_close(losses.policy, (np.log(5) * adv.mean()).view(1).float())
    torch.testing.assert_close(losses.entropy, torch.tensor([np.log(5)], dtype=torch.float32))


def _adam_step_in_child(param: torch.nn.Parameter, state: list) -> None:
    param.grad = torch.ones_like(param)
    a3c.shared_adam([param], state, lr=0.1).step()


def test_per_member_clipping_and_shared_adam_state():
    p = torch.nn.Parameter(torch.zeros(2, 3))
    p.grad = torch.tensor([[30.0, 40.0, 0.0], [0.3, 0.4, 0.0]])
    norms = a3c.clip_grad_norm_per_member([p], max_norm=5.0)
    torch.testing.assert_close(norms, torch.tensor([50.0, 0.5]))
    torch.testing.assert_close(p.grad, torch.tensor([[3.0, 4.0, 0.0], [0.3, 0.4, 0.0]]))  # only member 0 clipped
    # an optimiser step in a spawned process moves the parent's weights, moments and step count
    shared = torch.nn.Parameter(torch.zeros(2, 3))
    shared.share_memory_()
    state = a3c.shared_adam_state([shared])
    child = torch.multiprocessing.get_context("spawn").Process(target=_adam_step_in_child, args=(shared, state))
    child.start()
    child.join(timeout=600)  # a bound on a hang, not on speed: a spawned child imports torch afresh
    assert child.exitcode == 0
    assert state[0]["step"].item() == 1 and (state[0]["exp_avg"] == 0.1).all()  # (1 - beta1) * grad
    torch.testing.assert_close(shared.data, torch.full((2, 3), -0.1))  # Adam's first step: lr * sign(grad)


def test_evaluation_plays_the_same_episodes_for_every_member():
    from tasks.gridworld.time_tracking import evaluation_episodes

    envs, obs = evaluation_episodes({"size": 5}, [5, 9], episodes=8, members=3)
    n = 16
    for i in range(n):
        same = [(e._agent, e._target, e._command) for e in envs[i::n]]
        assert len(same) == 3 and len(set(same)) == 1
        assert envs[i]._command == (5 if i < 8 else 9) and obs[i]["command"][0] == envs[i]._command
    assert len({(e._agent, e._target) for e in envs[:n]}) > 8  # and the episodes differ
    agent = Agent(size=5, members=2)
    init_members(agent, [3, 4])
    out = evaluate(agent, {"size": 5}, [5, 9], episodes=8)
    assert set(out) == {"reward_5", "early_5", "reward_9", "early_9"}
    assert all(set(out[f"reward_{c}"].tolist()) <= {x / 8 for x in range(-8, 9, 2)} for c in (5, 9))


# --- end to end ------------------------------------------------------------------------------


@pytest.mark.parametrize("wiring", ["feedback", "countdown", "clock_only"])
def test_nac_wirings_compute_what_they_say(wiring):
    """feedback: the LSTM reads s_{t-1}; countdown: the command starts the first accumulator unit
    and a constant input lets the NAC count; clock_only: the LSTM never sees the command."""
    agent = Agent(size=5, members=2, nac=2, wiring=wiring)
    init_members(agent, [0, 1])
    obs, _ = GridWorldTime().reset(seed=0)
    image = torch.from_numpy(obs["image"]).expand(2, 3, 2, 5, 5)
    command = torch.full((2, 3, 1), 9.0)
    state = agent.initial_state(3)
    _, _, s1 = agent(image, command, state)
    _, _, s2 = agent(image, 0 * command, s1)
    with torch.no_grad():
        x1, x2 = agent.core_input(image, command), agent.core_input(image, 0 * command)
        one = torch.ones(2, 3, 1)
        if wiring == "feedback":
            h1, _ = agent.lstm(torch.cat([x1, state[2]], -1), state[:2])
            h2, _ = agent.lstm(torch.cat([x2, s1[2]], -1), s1[:2])
            torch.testing.assert_close(s2[2], s1[2] + agent.nac(torch.cat([x2, h2], -1)))
        else:
            lstm_in = (lambda x: x[..., :-1]) if wiring == "clock_only" else (lambda x: x)
            h1, _ = agent.lstm(lstm_in(x1), state[:2])
            h2, _ = agent.lstm(lstm_in(x2), s1[:2])
            start = torch.cat([command, torch.zeros(2, 3, 1)], -1)  # the command enters unit 1 only
            torch.testing.assert_close(s1[2], start + agent.nac(torch.cat([x1, h1, one], -1)))
            torch.testing.assert_close(s2[2], s1[2] + agent.nac(torch.cat([x2, h2, one], -1)))
        torch.testing.assert_close(s1[0], h1)
        torch.testing.assert_close(s2[0], h2)
    if wiring == "clock_only":  # the command reaches the policy only through s
        _, _, s_other = agent(image, 2 * command, state)
        torch.testing.assert_close(s_other[0], s1[0])
        assert not torch.allclose(s_other[2], s1[2])


def test_countdown_needs_the_command_shown_once(tmp_path):
    p = cli(RUN + ["task.agent=a3c_nac", "task.agent_net.nac_wiring=countdown", "task.env.show_command=always",
           "progress=false"], tmp_path, check=False)
    assert p.returncode == 2 and "use task.env.show_command=first" in p.stderr.strip().splitlines()[-1]


def figure5_cell(agent: str, replicate: int, rewards: list[float]) -> dict:
    from tasks import metrics

    return {"task": "gridworld_time", "agent": agent, "config": {"replicate": replicate}, "train_commands": [5, 6],
            "commands": [6], "frames": 100, "seeds": list(range(len(rewards))),
            "members": [{"final": {metrics.reward(6): r, metrics.early(6): 0.0}, "diverged": False} for r in rewards]}


def test_figure5_pools_the_reruns_of_an_agent_and_reports_how_far_apart_they_lie():
    from suite.tables.figure5 import rows

    df = rows([figure5_cell("a3c", 0, [1.0, 0.0]), figure5_cell("a3c", 1, [0.0, -1.0]),
               figure5_cell("a3c_nac", 0, [0.5])])
    a3c, nac = df[df.agent == "a3c"].iloc[0], df[df.agent == "a3c_nac"].iloc[0]
    assert (a3c.seeds, a3c.reruns, a3c["mean"], a3c.rerun_spread, a3c["min"], a3c["max"]) == (4, 2, 0.0, 1.0, -1.0, 1.0)
    assert (nac.seeds, nac.reruns, nac.rerun_spread) == (1, 1, 0.0)


def test_figure5_refuses_two_cells_of_one_agent_and_rerun(tmp_path):
    from suite.tables.figure5 import build

    evidence = tmp_path / "figure5.jsonl"
    evidence.write_text("".join(json.dumps(c) + "\n" for c in (figure5_cell("a3c", 1, [0.0]), figure5_cell("a3c", 1, [1.0]))))
    with pytest.raises(SystemExit, match="more than one cell for agent.s. a3c"):
        build(evidence, tmp_path / "out")


def test_tiny_figure5_wirings_end_to_end(tmp_path):
    """The wirings sweep (basic launcher, as make reproduce-figure5 VARIANT=wirings), narrowed to
    one wiring, and its figure."""
    cli(["-m", "suite.run", "-m", "+experiment=figure5_wirings", "hydra/launcher=basic",
         "task.agent_net.nac_wiring=clock_only"] + TINY_A3C, tmp_path)
    out = tmp_path / "results"
    build_table("figure5", [tmp_path / "multirun/figure5_wirings"], tmp_path, out, "figure5_wirings")
    df = pd.read_csv(out / "figure5_wirings.csv")
    assert set(df.agent) == {"a3c_nac:clock_only"}
    assert "A3C + NAC (countdown; time only through the NAC)" in (out / "figure5_wirings.md").read_text()


def test_tiny_figure5_end_to_end(tmp_path):
    """The real sweep (both agents, basic launcher as in `make reproduce-figure5`) and its figure."""
    cli(["-m", "suite.run", "-m", "+experiment=figure5", "hydra/launcher=basic"] + TINY_A3C, tmp_path)
    runs = tmp_path / "multirun" / "figure5"
    for run_dir in runs.iterdir():
        if not run_dir.is_dir():
            continue
        m = json.loads((run_dir / "metrics.json").read_text())
        assert m["complete"] and m["frames"] >= 600 and m["commands"] == [5, 6, 7]
        assert all(not s["diverged"] and -1 <= s["final"]["reward_6"] <= 1 for s in m["members"])
        h = pd.read_csv(run_dir / "history.csv")
        losses = h[h.metric.isin(["policy_loss", "value_loss", "entropy"])]
        assert len(losses) and np.isfinite(losses.value).all()
    out = tmp_path / "results"
    out.mkdir()
    build_table("figure5", [runs], tmp_path, out)
    df = pd.read_csv(out / "figure5.csv")
    assert set(df.agent) == {"a3c", "a3c_nac"} and sorted(set(df.command)) == [5, 6, 7]
    assert df.loc[df.command == 6, "in_training"].all() and (df.seeds == 2).all()
    assert (out / "figure5.png").stat().st_size > 10_000
    md = (out / "figure5.md").read_text()
    row = md.split("| 6*")[1].splitlines()[0]  # our values at command 6, a training command
    for agent in ("a3c", "a3c_nac"):
        assert f"{df.loc[(df.agent == agent) & (df.command == 6), 'mean'].item():+.2f}" in row
    # a trained agent's episode, rendered from the run directory's saved agent
    run_dir = next(runs.glob("*agent=a3c_nac*"))
    p = cli(["scripts/render_episode.py", str(run_dir), "--seed", "1", "--command", "6",
             "--out", str(out / "episode.gif")], ROOT)
    assert "wrote" in p.stderr and (out / "episode.gif").stat().st_size > 1000


def test_render_script_draws_the_optimal_policy(tmp_path):
    p = cli(["scripts/render_episode.py", "--command", "7", "--out", str(tmp_path / "strip.png")], ROOT)
    assert "7 frames" not in p.stderr and "8 frames" in p.stderr and "on_time +1" in p.stderr
    from PIL import Image

    assert Image.open(tmp_path / "strip.png").size[0] > 8 * 160


@pytest.mark.parametrize("launcher", ["submitit_local", "joblib"])
def test_workers_start_under_other_launchers(tmp_path, launcher):
    args = ["-m", "suite.run", "-m", "task=gridworld_time", f"hydra/launcher={launcher}", "name=launched"]
    cli(args + TINY_A3C, tmp_path)
    m = json.loads(next((tmp_path / "multirun" / "launched").rglob("metrics.json")).read_text())
    assert m["complete"] and m["frames"] >= 600


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc").exists(), reason="needs /proc to list processes")
def test_training_in_process_joins_its_workers():
    from tasks.gridworld.time_tracking import a3c_settings

    from .conftest import compose

    cfg = compose(["task=gridworld_time", "progress=false"] + [o for o in TINY_A3C if o.startswith("task.")])
    before = _descendants(os.getpid())
    agent, summary = workers.train(a3c_settings(cfg), [0, 1], progress=False)
    left = {pid for pid in _descendants(os.getpid()) - before if "resource_tracker" not in _cmdline(pid)}
    assert not left, f"processes left behind: {left}"
    assert summary["frames"] >= 600 and all(torch.isfinite(p).all() for p in agent.parameters())


@pytest.mark.skipif(not Path("/proc").exists(), reason="needs /proc to list processes")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_training_leaves_no_process_behind(tmp_path, sig):
    env = {**os.environ, "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "0"}
    args = [sys.executable, *RUN, "progress=false", "seeds=1", "task.frames=100000000", "name=killed"]
    # as from a terminal: a test run in a background job (nohup ... &) inherits SIGINT ignored, and
    # Python then installs no Ctrl-C handler in the child, which would make SIGINT a no-op
    p = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        workers: set[int] = set()
        while len(workers) < 2 and time.monotonic() < deadline:  # the two A3C workers of the default config
            workers = {w for w in _descendants(p.pid) if "spawn_main" in _cmdline(w)}
            time.sleep(0.2)
        assert len(workers) == 2, "the workers never started"
        time.sleep(1.0)
        p.send_signal(sig)
        # held until every worker is ready (tasks.gridworld.workers.HeldSignals), then up to 10 s of shutdown; 7-19 s
        # measured with experiments sharing the cores
        p.wait(timeout=120)
        deadline = time.monotonic() + 30
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [w for w in workers if _alive(w)], "worker processes outlived the run"
        assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").rglob("metrics.json"))
    finally:
        if p.poll() is None:
            p.kill()


@pytest.mark.slow
def test_a3c_beats_a_random_policy_on_a_small_grid(tmp_path):
    """A 3x3 grid, commands 2..4: a few minutes of training beat the random policy's mean reward."""
    cli(RUN + ["progress=false", "seeds=2", "name=small", "task.env.size=3", "task.env.max_distance=2",
               "task.env.commands=[2,4]", "task.eval.commands=[2,4]", "task.frames=300000",
               "task.eval.episodes=50", "task.agent_net.channels=8"], tmp_path)
    m = json.loads(next((tmp_path / "runs" / "small").rglob("metrics.json")).read_text())
    random_agent = Agent(size=3, members=1, channels=8)
    init_members(random_agent, [0])
    with torch.no_grad():
        random_agent.actor.weight.zero_()
        random_agent.actor.bias.zero_()
    baseline = evaluate(random_agent, {"size": 3, "commands": (2, 4), "max_distance": 2}, [2, 3, 4], 50, greedy=False)
    random_reward = float(np.mean([baseline[f"reward_{c}"].item() for c in (2, 3, 4)]))
    for s in m["members"]:
        assert s["final"]["reward_train"] > random_reward + 0.5, (s["final"], random_reward)
