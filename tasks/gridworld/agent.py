"""The grid-world agents of Figure 5 (Trask et al. 2018, Section 4.5): A3C's (a convolution over the
grid image, its features and the command into an LSTM, an actor and a critic head) and A3C + NAC's,
whose accumulator ``s_t = s_{t-1} + NAC(...)`` both heads read beside ``h_t``, wired one of
``WIRINGS`` ways (our reading of "a NAC in the agent's recurrent core"; the paper gives no more
detail). Batched over seeds (``nalu.ensemble``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from baselines.convnet import GroupedConv
from baselines.rnn import GatedCell
from nalu import ensemble
from nalu.units import NAC
from tasks.gridworld.env import ACTIONS

State = tuple[Tensor, ...]


# How the A3C + NAC agent wires its accumulator ``s`` (``agent_net.nac_wiring``; the paper gives
# none). ``x_t`` is the grid features with the command (shown at t = 0 only, by default):
#   beside:     h_t = LSTM(x_t);             s_t = s_{t-1} + NAC([x_t, h_t])       heads read [h_t, s_t]
#   feedback:   h_t = LSTM([x_t, s_{t-1}]);  s_t = s_{t-1} + NAC([x_t, h_t])       the LSTM reads the clock
#   countdown:  h_t = LSTM(x_t);             s_t = s_{t-1} + c_t e_1 + NAC([x_t, h_t, 1])
#               (the command c_t enters the first unit, and a constant input lets the NAC add -1 a step)
#   clock_only: as countdown, but the LSTM never sees the command: the policy can know the time
#               only through the accumulator
WIRINGS = ("beside", "feedback", "countdown", "clock_only")


class Agent(nn.Module):
    """``image [M, B, 2, N, N]``, ``command [M, B, 1]``, state -> logits ``[M, B, 5]``, value
    ``[M, B]``, state. ``nac`` is the width of the NAC accumulator (0: the plain A3C agent) and
    ``wiring`` how it is connected (``WIRINGS``)."""

    def __init__(self, size: int, members: int, channels: int = 16, features: int = 64, hidden: int = 64,
                 nac: int = 0, wiring: str = "beside"):
        super().__init__()
        if wiring not in WIRINGS:
            raise ValueError(f"unknown NAC wiring '{wiring}'; valid: {', '.join(WIRINGS)}")
        self.members, self.hidden, self.nac_width, self.wiring = members, hidden, nac, wiring if nac else "beside"
        counts = self.wiring in ("countdown", "clock_only")
        lstm_in = features + (self.wiring != "clock_only") + (nac if self.wiring == "feedback" else 0)
        self.conv = GroupedConv(2, channels, 3, 1, members)
        self.features = ensemble.Linear(channels * (size - 2) ** 2, features, members)
        self.lstm = GatedCell("lstm", lstm_in, hidden, members)
        self.nac = NAC(features + 1 + hidden + counts, nac, members) if nac else None
        self.actor = ensemble.Linear(hidden + nac, len(ACTIONS), members)
        self.critic = ensemble.Linear(hidden + nac, 1, members)

    def initial_state(self, batch: int) -> State:
        z = torch.zeros(self.members, batch, self.hidden)
        return (z, z.clone(), torch.zeros(self.members, batch, self.nac_width))

    def core_input(self, image: Tensor, command: Tensor) -> Tensor:
        """``x_t``: the convolutional features of the grid and the command, ``[M, B, features + 1]``."""
        M, B = image.shape[:2]
        x = image.transpose(0, 1).reshape(B, M * image.shape[2], *image.shape[3:])  # members on channels
        f = F.relu(self.conv(x)).view(B, M, -1).transpose(0, 1)
        return torch.cat([F.relu(self.features(f)), command], -1)

    def forward(self, image: Tensor, command: Tensor, state: State) -> tuple[Tensor, Tensor, State]:
        x_t = self.core_input(image, command)
        lstm_in = {"feedback": lambda: torch.cat([x_t, state[2]], -1),
                   "clock_only": lambda: x_t[..., :-1]}.get(self.wiring, lambda: x_t)()
        h, c = self.lstm(lstm_in, state[:2])
        s = state[2]
        if self.nac is not None:
            if self.wiring in ("countdown", "clock_only"):
                s = s + F.pad(command, (0, self.nac_width - 1))  # the command starts the count
                s = s + self.nac(torch.cat([x_t, h, torch.ones_like(command)], -1))
            else:
                s = s + self.nac(torch.cat([x_t, h], -1))
        z = torch.cat([h, s], -1)
        return self.actor(z), self.critic(z).squeeze(-1), (h, c, s)


def make_agent(cfg: dict, members: int) -> Agent:
    a = cfg["agent_net"]
    return Agent(cfg["env"]["size"], members, a["channels"], a["features"], a["hidden"],
                 a["nac"] if cfg["agent"] == "a3c_nac" else 0, a.get("nac_wiring", "beside"))


def reset_where(state: State, done: Tensor) -> State:
    """Zero the recurrent state of the environments whose episode just ended (``done [M, B]``)."""
    keep = (~done).unsqueeze(-1).float()
    return tuple(s * keep for s in state)
