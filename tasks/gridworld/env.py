"""Grid-world time tracking (Trask et al. 2018, Section 4.5, Figure 5), as a gymnasium environment.

An episode begins with a *command* ``T``: the agent must stand on the target square exactly at
time step ``T``. The agent sees the grid (one channel for itself, one for the target) and the
command; by default the command is shown on the first observation only (``show_command="first"``),
so the agent has to remember it and count the steps itself, as in the paper, where the agent
receives the instruction at the start of the episode.

Dynamics and rewards (the paper gives the task, not these details; they are ours):

- actions ``UP, DOWN, LEFT, RIGHT, PASS``; a move into the wall leaves the agent where it is;
- the target and the start are drawn at reset, the start at Manhattan distance 1..``max_distance``
  from the target, so every command ``T >= max_distance`` can be met;
- stepping onto the target before step ``T`` ends the episode with reward -1 (early);
- at step ``T`` the episode ends with +1 if the agent stands on the target, else ``late_reward``
  (-1 by default: late);
- every other step gives 0. An episode thus lasts at most ``T`` steps and its return is +1 or -1,
  so the average episode reward spans [-1, 1], the range of the paper's Figure 5.

``late_reward=0`` is the paper's scoring as its Figure 5 reads: the A3C + NAC curve sits at exactly
0 beyond command 21 or so and never below, and the text says that agent "failed to arrive", so
an agent that has not arrived scores 0 there; arriving early still scores -1. Under it waiting is
safe, under ours it is not.

A policy that waits ``T - d`` steps and then walks the ``d`` steps of a shortest path scores +1 on
every episode (``optimal_action``).

``gymnasium.make("NaluGridWorldTime-v0", size=5)`` builds one after ``import tasks.gridworld.env``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from nalu.errors import ConfigError, check_choice

ACTIONS = ("up", "down", "left", "right", "pass")
MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1), (0, 0))  # (row, column) change of each action
UP, DOWN, LEFT, RIGHT, PASS = range(5)
AGENT, TARGET = 0, 1  # image channels
ENV_ID = "NaluGridWorldTime-v0"
MAX_COMMAND = 1000  # the observation space's bound on commands


class GridWorldTime(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        size: int = 5,
        commands: tuple[int, int] = (5, 12),
        max_distance: int = 4,
        show_command: str = "first",
        late_reward: float = -1.0,
        render_mode: str | None = None,
    ):
        lo, hi = int(commands[0]), int(commands[1])
        if size < 2:
            raise ConfigError(f"grid size must be at least 2, got {size}")
        if not 1 <= max_distance <= 2 * (size - 1):
            raise ConfigError(f"max_distance must be in [1, {2 * (size - 1)}] on a {size}x{size} grid, "
                              f"got {max_distance}")
        if not max_distance <= lo <= hi <= MAX_COMMAND:
            raise ConfigError(f"commands must satisfy max_distance ({max_distance}) <= low <= high so that "
                              f"every episode can be won (and high <= {MAX_COMMAND}), got [{lo}, {hi}]")
        if not -1.0 <= late_reward < 1.0:
            raise ConfigError(f"late_reward must be in [-1, 1), below the +1 of arriving on time, got {late_reward}")
        self.size, self.commands, self.max_distance = size, (lo, hi), max_distance
        self.late_reward = float(late_reward)
        self.show_command = check_choice("show_command", show_command, ("first", "always"))
        if render_mode is not None:
            check_choice("render_mode", render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(len(ACTIONS))
        self.observation_space = spaces.Dict({
            "image": spaces.Box(0.0, 1.0, (2, size, size), np.float32),
            "command": spaces.Box(0.0, float(MAX_COMMAND), (1,), np.float32),
        })
        cells = np.stack(np.meshgrid(np.arange(size), np.arange(size), indexing="ij"), -1).reshape(-1, 2)
        self._cells = cells
        self._agent = self._target = (0, 0)  # (row, column)
        self._t = self._command = 0

    # --- the episode -------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        command = (options or {}).get("command")
        if command is None:
            command = int(self.np_random.integers(self.commands[0], self.commands[1] + 1))
        elif not self.max_distance <= int(command) <= MAX_COMMAND:
            raise ValueError(f"command must be in [max_distance={self.max_distance}, {MAX_COMMAND}], got {command}")
        self._command, self._t = int(command), 0
        target = self._cells[self.np_random.integers(len(self._cells))]
        d = np.abs(self._cells - target).sum(1)
        starts = self._cells[(d >= 1) & (d <= self.max_distance)]
        self._target = (int(target[0]), int(target[1]))
        self._agent = tuple(int(v) for v in starts[self.np_random.integers(len(starts))])
        return self._observation(), self._info()

    def step(self, action):
        if not (isinstance(action, (int, np.integer)) and 0 <= action < len(ACTIONS)):
            raise ValueError(f"action must be one of 0..{len(ACTIONS) - 1} ({', '.join(ACTIONS)}), got {action}")
        self._t += 1
        dr, dc = MOVES[int(action)]
        last = self.size - 1
        self._agent = (min(max(self._agent[0] + dr, 0), last), min(max(self._agent[1] + dc, 0), last))
        on_target = self._agent == self._target
        if self._t < self._command:
            reward, done, outcome = (-1.0, True, "early") if on_target else (0.0, False, None)
        else:
            reward, done, outcome = (1.0, True, "on_time") if on_target else (self.late_reward, True, "late")
        info = self._info()
        if outcome:
            info["outcome"] = outcome
        return self._observation(), reward, done, False, info

    # --- what the agent sees -------------------------------------------------------------------

    def _observation(self) -> dict:
        image = np.zeros((2, self.size, self.size), dtype=np.float32)
        image[(AGENT, *self._agent)] = 1.0
        image[(TARGET, *self._target)] = 1.0
        shown = self._t == 0 or self.show_command == "always"
        return {"image": image, "command": np.array([self._command if shown else 0.0], dtype=np.float32)}

    def _info(self) -> dict:
        return {"command": self._command, "t": self._t,
                "distance": self._distance()}

    def _distance(self) -> int:
        return abs(self._agent[0] - self._target[0]) + abs(self._agent[1] - self._target[1])

    def optimal_action(self) -> int:
        """The scripted policy that always wins: PASS while there is time to spare, then walk."""
        if self._command - self._t > self._distance():
            return PASS
        if self._agent[0] != self._target[0]:
            return DOWN if self._target[0] > self._agent[0] else UP
        return RIGHT if self._target[1] > self._agent[1] else LEFT

    def render(self, cell: int = 16) -> np.ndarray | None:
        """An RGB frame ``[size * cell, size * cell, 3]``: grey grid, red target, blue agent (purple
        when on the target)."""
        if self.render_mode != "rgb_array":
            return None
        frame = np.full((self.size, self.size, 3), 235, dtype=np.uint8)
        frame[(np.add.outer(np.arange(self.size), np.arange(self.size)) % 2) == 1] = 220
        frame[self._target] = (220, 40, 40)
        frame[self._agent] = (140, 40, 200) if self._agent == self._target else (40, 90, 220)
        return frame.repeat(cell, 0).repeat(cell, 1)


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="tasks.gridworld.env:GridWorldTime")
