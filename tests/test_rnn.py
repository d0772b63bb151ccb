"""The gated cells: LSTM and GRU equal torch's own, the UGRNN's gate does what its equations say."""

from __future__ import annotations

import pytest
import torch

from baselines.rnn import GatedCell, GatedRNN
from nalu.ensemble import init_members


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_lstm_and_gru_match_torch(kind):
    torch.manual_seed(0)
    ref = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind](3, 4, batch_first=True)
    rnn = GatedRNN(3, 1, 1, [4], kind)
    with torch.no_grad():
        rnn.cell.W_x[0] = ref.weight_ih_l0
        rnn.cell.W_h[0] = ref.weight_hh_l0
        rnn.cell.b_x[0, 0] = ref.bias_ih_l0
        rnn.cell.b_h[0, 0] = ref.bias_hh_l0
    x = torch.randn(5, 7, 3)
    states, _ = ref(x)
    state = rnn.cell.initial_state(1, 5, x)
    for t in range(7):
        state = rnn.cell(x[None, :, t], state)
    torch.testing.assert_close(state[0][0], states[:, -1])


def ugrnn(gate_bias: float) -> GatedCell:
    cell = GatedCell("ugrnn", 3, 4, 1)
    init_members(cell, [0])
    with torch.no_grad():
        cell.b_x[0, 0, 4:] = gate_bias  # the gate's share; the candidate's bias stays random
        cell.W_x[0, 4:] = 0.0
        cell.W_h[0, 4:] = 0.0
        cell.b_h[0, 0, 4:] = 0.0
    return cell


def test_ugrnn_with_the_gate_open_is_its_input_to_state_map():
    """Gate at 0 (sigmoid(-200) underflows to 0): h_t = tanh(W_c x_t + U_c h_{t-1} + b_c) exactly."""
    cell = ugrnn(-200.0)
    x, h = torch.randn(1, 5, 3), torch.randn(1, 5, 4)
    (out,) = cell(x, (h,))
    W_c, U_c = cell.W_x[0, :4], cell.W_h[0, :4]
    b_c = cell.b_x[0, 0, :4] + cell.b_h[0, 0, :4]
    torch.testing.assert_close(out[0], torch.tanh(x[0] @ W_c.T + h[0] @ U_c.T + b_c), rtol=0, atol=1e-7)


def test_ugrnn_with_the_gate_closed_keeps_its_state():
    cell = ugrnn(200.0)
    x, h = torch.randn(1, 5, 3), torch.randn(1, 5, 4)
    (out,) = cell(x, (h,))
    torch.testing.assert_close(out, h, rtol=0, atol=0)


def test_ugrnn_step_follows_its_equations():
    """Random weights everywhere (gate included): one step against the equations by hand."""
    cell = GatedCell("ugrnn", 3, 4, 1)
    init_members(cell, [3])
    x, h = torch.randn(1, 5, 3), torch.randn(1, 5, 4)
    (out,) = cell(x, (h,))
    pre = x[0] @ cell.W_x[0].T + cell.b_x[0, 0] + h[0] @ cell.W_h[0].T + cell.b_h[0, 0]
    c, g = torch.tanh(pre[:, :4]), torch.sigmoid(pre[:, 4:])
    assert ((g > 0.05) & (g < 0.95)).float().mean() > 0.5  # the gate is really mixing
    torch.testing.assert_close(out[0], g * h[0] + (1 - g) * c)
