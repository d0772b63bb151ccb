"""Render one grid-world episode as an animated GIF or a PNG strip.

    python scripts/render_episode.py --command 9 --out episode.gif          (the scripted optimal policy)
    python scripts/render_episode.py RUN_DIR --seed 0 --command 17 --out episode.png

``RUN_DIR`` is a grid-world run directory (``runs/...`` or ``multirun/figure5/task.agent=a3c_nac``),
whose ``agent.pt`` holds the trained agent of every seed; ``--seed`` picks one. The agent acts
greedily, as in the evaluation. The output's suffix picks the format: ``.gif`` or ``.png``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

from tasks.gridworld.env import ACTIONS, GridWorldTime


def episode_frames(env: GridWorldTime, policy, seed: int, command: int) -> tuple[list[np.ndarray], list[str]]:
    """Frames of one episode, with a caption per frame (time, command, last action, outcome)."""
    obs, _ = env.reset(seed=seed, options={"command": command})
    frames, captions, done = [env.render()], [f"t=0  T={command}"], False
    t = 0
    while not done:
        action = policy(env, obs)
        obs, reward, done, _, info = env.step(action)
        t += 1
        frames.append(env.render())
        captions.append(f"t={t}  {ACTIONS[action]}" + (f"  {info['outcome']} {reward:+.0f}" if done else ""))
    return frames, captions


def agent_policy(run_dir: Path, seed: int):
    from tasks.gridworld.time_tracking import load_agent

    agent, settings, seeds = load_agent(run_dir)
    if seed not in seeds:
        raise SystemExit(f"error: seed {seed} is not in {run_dir} (its seeds: {seeds})")
    member, state = seeds.index(seed), [agent.initial_state(1)]

    def policy(env, obs) -> int:
        M = agent.members
        image = torch.from_numpy(obs["image"]).expand(M, 1, *obs["image"].shape)
        command = torch.from_numpy(obs["command"]).expand(M, 1, 1)
        with torch.no_grad():
            logits, _, state[0] = agent(image, command, state[0])
        return int(logits[member, 0].argmax())

    return policy, settings["env"]


def captioned(frame: np.ndarray, caption: str) -> Image.Image:
    img = Image.new("RGB", (frame.shape[1], frame.shape[0] + 14), "white")
    img.paste(Image.fromarray(frame), (0, 14))
    ImageDraw.Draw(img).text((2, 1), caption, fill="black")
    return img


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", type=Path, nargs="?", help="a grid-world run directory (default: optimal policy)")
    p.add_argument("--seed", type=int, default=0, help="which of the run's seeds acts")
    p.add_argument("--command", type=int, default=9)
    p.add_argument("--episode-seed", type=int, default=0, help="seeds the start and target squares")
    p.add_argument("--out", type=Path, default=Path("episode.gif"))
    a = p.parse_args(argv)
    if a.out.suffix not in (".gif", ".png"):
        raise SystemExit(f"error: --out must end in .gif or .png, got {a.out}")
    if a.run_dir is None:
        policy, env_cfg = (lambda env, obs: env.optimal_action()), {}
    else:
        try:
            policy, env_cfg = agent_policy(a.run_dir, a.seed)
        except FileNotFoundError as e:
            raise SystemExit(f"error: {e}") from None
    env = GridWorldTime(**{**env_cfg, "render_mode": "rgb_array"})
    frames, captions = episode_frames(env, policy, a.episode_seed, a.command)
    images = [captioned(np.kron(f, np.ones((2, 2, 1), dtype=np.uint8)), c) for f, c in zip(frames, captions)]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    if a.out.suffix == ".gif":
        images[0].save(a.out, save_all=True, append_images=images[1:], duration=400, loop=0)
    else:
        strip = Image.new("RGB", (sum(i.width + 4 for i in images), images[0].height), "white")
        for k, img in enumerate(images):
            strip.paste(img, (k * (img.width + 4), 0))
        strip.save(a.out)
    print(f"wrote {a.out} ({len(frames)} frames, {captions[-1]})", file=sys.stderr)


if __name__ == "__main__":
    main()
