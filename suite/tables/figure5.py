"""Figure 5: grid-world time tracking, average episode reward against the command's magnitude.

For each agent (A3C, A3C + NAC): the mean over seeds of the average reward of the evaluation
episodes at every command, with the band from the worst to the best seed; the training commands
are shaded. The paper's curves, read off its figure (``results/paper/figure5.csv``, approximate),
are drawn beside ours. Every seed is in the mean (of every rerun, where an agent ran more than
once: ``replicate``; the table gives how far the reruns' means lie apart): a seed that diverged is frozen where it was
(``tasks.gridworld.a3c``), evaluated like the others, and counted in the legend and the CSV.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from suite.io import write_text_atomic
from suite.tables.common import load_cells, paper, require, save_figure, to_markdown
from tasks import metrics

AGENTS = {"a3c": "A3C", "a3c_nac": "A3C + NAC", "a3c_nac:feedback": "A3C + NAC (fed back into the LSTM)",
          "a3c_nac:countdown": "A3C + NAC (countdown from the command)",
          "a3c_nac:clock_only": "A3C + NAC (countdown; time only through the NAC)"}
COLOURS = {"a3c": "tab:blue", "a3c_nac": "tab:red", "a3c_nac:feedback": "tab:green",
           "a3c_nac:countdown": "tab:purple", "a3c_nac:clock_only": "tab:orange"}


def agent_key(cell: dict) -> str:
    """``a3c``, ``a3c_nac`` (its accumulator beside the LSTM) or ``a3c_nac:<wiring>``."""
    wiring = cell.get("wiring")
    return cell["agent"] if wiring in (None, "beside") else f"{cell['agent']}:{wiring}"


def replicate(cell: dict) -> int:
    """Which independent rerun of its config the cell is (``replicate``; 0 for cells made before the key)."""
    return int(cell["config"].get("replicate", 0))


def rows(cells: list[dict]) -> pd.DataFrame:
    """One row per agent and command: every seed of every rerun of the agent pooled (mean, worst,
    best), and how far the reruns' own means lie apart (``rerun_spread``: A3C's asynchronous
    workers do not repeat, so one rerun of the same seeds scores differently)."""
    out = []
    by_agent: dict[str, list[dict]] = {}
    for c in cells:
        by_agent.setdefault(agent_key(c), []).append(c)
    for agent, group in by_agent.items():
        c0 = group[0]
        lo, hi = c0["train_commands"]
        for cmd in c0["commands"]:
            runs = [np.array([m["final"][metrics.reward(cmd)] for m in c["members"]], dtype=float) for c in group]
            v = np.concatenate(runs)
            early = np.array([m["final"][metrics.early(cmd)] for c in group for m in c["members"]], dtype=float)
            means = [r.mean() for r in runs]
            out.append({"agent": agent, "command": cmd, "mean": v.mean(), "min": v.min(), "max": v.max(),
                        "early_pct": early.mean(), "in_training": lo <= cmd <= hi, "seeds": len(v),
                        "reruns": len(group), "rerun_spread": max(means) - min(means),
                        "diverged": sum(m["diverged"] for c in group for m in c["members"]),
                        "frames": c0["frames"]})
    cols = ["agent", "command", "mean", "min", "max", "early_pct", "in_training", "seeds", "reruns", "rerun_spread",
            "diverged", "frames"]
    return pd.DataFrame(out, columns=cols)


def paper_points() -> pd.DataFrame:
    p = paper("figure5")
    return p.assign(command=p.command.astype(float), reward=p.average_episode_reward.astype(float))


def paper_beside_ours(ref: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    """One row per point of the paper's curves: ours at the nearest command in ``ours`` (the agent
    of the paper's kind) and in ``ours, <wiring>`` for each NAC wiring we ran, all beside the
    paper's A3C + NAC; ``n/a`` where we ran none, blank where a column is of the other kind."""
    wirings = [a for a in AGENTS if ":" in a and a in set(df.agent)]
    near = []
    for _, r in ref.iterrows():
        row = {"paper's agent": AGENTS.get(r.agent, r.agent), "command": f"{r.command:g}", "paper": f"{r.reward:+.2f}"}
        for agent, column in [(r.agent, "ours"), *((a, f"ours, {a.split(':')[1]}") for a in wirings)]:
            if agent.split(":")[0] != r.agent:
                row[column] = ""
                continue
            v = df[(df.agent == agent) & (df.command == round(r.command))]["mean"]
            row[column] = f"{v.iloc[0]:+.2f} (at {round(r.command)})" if len(v) else "n/a"
        near.append(row)
    return pd.DataFrame(near)


def plot(df: pd.DataFrame, path: Path, train: tuple[int, int], caption: str) -> None:
    fig, ax = plt.subplots(figsize=(10.5, 4.8))
    ax.axvspan(train[0] - 0.5, train[1] + 0.5, color="0.9", label="training commands")
    ref = paper_points()
    for agent, label in AGENTS.items():
        f = df[df.agent == agent].sort_values("command")
        if not f.empty:
            div = int(f.diverged.iloc[0])
            name = f"{label} (ours, {int(f.seeds.iloc[0])} seeds" + (f", {div} diverged)" if div else ")")
            ax.plot(f.command, f["mean"], "-o", ms=3, color=COLOURS[agent], label=name)
            ax.fill_between(f.command, f["min"], f["max"], color=COLOURS[agent], alpha=0.15, lw=0)
        r = ref[ref.agent == agent].sort_values("command")
        if not r.empty:  # the paper has curves for A3C and A3C + NAC only, not for our wirings
            ax.plot(r.command, r.reward, ":", marker="x", color=COLOURS[agent], label=f"{label} (paper, read off its plot)")
    ax.axhline(0, color="0.6", lw=0.6)
    ax.set(xlabel="command (time step at which to stand on the target)", ylabel="average episode reward",
           ylim=(-1.05, 1.05), title="Figure 5: grid-world time tracking")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))  # outside: the curves fill the axes
    fig.text(0.01, 0.005, caption, fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    save_figure(fig, path)


def build(evidence: Path | list[Path], out: Path, name: str = "figure5") -> list[Path]:
    """Figure 5 from the evidence files ``evidence`` (one cell per agent and wiring) as
    ``<out>/<name>.png|csv|md`` (the wirings variant: ``figure5_wirings``)."""
    evidence = [evidence] if isinstance(evidence, Path | str) else list(evidence)
    cells = require([c for c in load_cells(*evidence) if c["task"] == "gridworld_time"], "grid-world", evidence,
                    "reproduce-figure5")
    agents = [(agent_key(c), replicate(c)) for c in cells]
    if len(set(agents)) != len(agents):
        dup = sorted({a for a, r in agents if agents.count((a, r)) > 1})
        raise SystemExit(f"error: {', '.join(map(str, evidence))} hold more than one cell for agent(s) {', '.join(dup)}; "
                         f"give evidence with one cell per agent, wiring and rerun (replicate)")
    df = rows(cells)
    caption, train = "no cells were run", (5, 12)
    if cells:
        c0 = cells[0]
        t = c0["config"]["task"]
        train = tuple(c0["train_commands"])
        frames = ", ".join(f"{AGENTS.get(a, a)} {c['frames']:,}" for a, c in {agent_key(c): c for c in cells}.items())
        lr = c0["config"]["optimizer"]["lr"]
        reruns = int(df.reruns.max())
        again = (f" Each agent ran {reruns} times over the same seeds (replicate=0..{reruns - 1}), all pooled; "
                 f"the reruns' means lie up to {df.rerun_spread.max():.2f} apart at one command." if reruns > 1 else "")
        caption = (f"Trained with A3C ({t['a3c']['workers']} workers, lr {lr}) on commands "
                   f"U{{{train[0]}..{train[1]}}}, {t['env']['size']}x{t['env']['size']} grid; frames per seed: "
                   f"{frames}. Not arriving scores {t['env'].get('late_reward', -1.0):g}, arriving early -1. "
                   f"Mean over {int(df.seeds.max())} seeds, band from worst to best seed; "
                   f"{t['eval']['episodes']} {'greedy' if t['eval']['greedy'] else 'sampled'} episodes per "
                   f"command.{again}")
    out.mkdir(parents=True, exist_ok=True)
    png, csv, md = out / f"{name}.png", out / f"{name}.csv", out / f"{name}.md"
    plot(df, png, train, caption)
    write_text_atomic(csv, df.to_csv(index=False))
    table = df.pivot(index="command", columns="agent", values="mean") if len(df) else pd.DataFrame()
    ref = paper_points()
    lines = ["# Figure 5: grid-world time tracking", caption + f" ![figure 5]({png.name})",
             "## Average episode reward per command (ours; training commands marked *)"]
    if len(df):
        shown = pd.DataFrame({"command": [f"{c}*" if train[0] <= c <= train[1] else str(c) for c in table.index]})
        for agent, label in AGENTS.items():
            if agent in table:
                shown[label] = [f"{v:+.2f}" for v in table[agent]]
        lines.append(to_markdown(shown))
    lines += ["## The paper's curves, read off its figure (approximate), beside ours at the nearest command",
              "Every NAC wiring of ours (`ours, <wiring>`) is set beside the paper's A3C + NAC, whose wiring "
              "the paper does not state."]
    lines.append(to_markdown(paper_beside_ours(ref, df)))
    write_text_atomic(md, "\n\n".join(lines) + "\n")
    return [png, csv, md]
