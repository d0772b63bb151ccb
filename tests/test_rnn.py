"""The gated cells: LSTM and GRU equal torch's own, the UGRNN's gate does what its equations say."""

from __future__ import annotations

import math

import pytest
import torch

from baselines.rnn import GatedCell, GatedRNN
from nalu.ensemble import init_members
from nalu.errors import ConfigError


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


def test_tensorflow_initialisation_is_glorot_input_orthogonal_recurrent_and_forget_bias_one():
    """init="tensorflow": TensorFlow's default LSTM construction, which the paper's authors recall
    using for Table 3; each member drawn from its own seed."""

    H, n_in = 8, 5
    net = GatedRNN(n_in, 1, 3, [H], cell="lstm", init="tensorflow")
    init_members(net, [0, 1, 0])
    cell = net.cell
    bound = math.sqrt(6 / (n_in + 4 * H))
    assert cell.W_x.abs().max() <= bound and cell.W_x.abs().max() > 0.8 * bound
    for i in range(3):
        gram = cell.W_h[i].double().T @ cell.W_h[i].double()  # [H, H]: orthonormal columns
        torch.testing.assert_close(gram, torch.eye(H, dtype=torch.float64), atol=1e-6, rtol=0)
    bias = (cell.b_x + cell.b_h)[:, 0]  # [M, 4H], gates i, f, g, o
    assert (bias[:, H:2 * H] == 1).all() and (bias[:, :H] == 0).all() and (bias[:, 2 * H:] == 0).all()
    assert torch.equal(cell.W_h[0], cell.W_h[2]) and not torch.equal(cell.W_h[0], cell.W_h[1])


def test_an_unknown_initialisation_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="valid: tensorflow, torch"):
        GatedRNN(2, 1, 1, [4], init="keras")
