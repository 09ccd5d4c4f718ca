"""Fused recurrent cells (_thnn_fused_lstm_cell, _thnn_fused_gru_cell and
their backward ops) through nn.LSTM and nn.GRU against PyTorch CPU: outputs,
final states and every parameter's gradient, at float32 tolerance, with no
op falling back to the CPU."""
import copy

import pytest
import torch
import torch.nn as nn

import torch_porta

TOL = dict(atol=1e-5, rtol=1e-4)


def _run(module, x, h0, device):
    module = module.to(device)
    x = x.to(device).requires_grad_()
    h0 = tuple(h.to(device).requires_grad_() for h in h0)
    out, state = module(x, h0 if isinstance(module, nn.LSTM) else h0[0])
    state = state if isinstance(state, tuple) else (state,)
    gen = torch.Generator().manual_seed(1)
    weights = [torch.randn(t.shape, generator=gen).to(device) for t in (out,) + state]
    loss = sum((t * w).sum() for t, w in zip((out,) + state, weights))
    loss.backward()
    grads = [x.grad] + [h.grad for h in h0] + [p.grad for p in module.parameters()]
    return [out] + list(state), grads


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_rnn_matches_cpu(kind, num_layers, batch_first, bias):
    torch.manual_seed(0)
    batch, seq, inp, hidden = 3, 5, 4, 6
    cpu_module = kind(inp, hidden, num_layers=num_layers, batch_first=batch_first, bias=bias)
    porta_module = copy.deepcopy(cpu_module)
    gen = torch.Generator().manual_seed(2)
    shape = (batch, seq, inp) if batch_first else (seq, batch, inp)
    x = torch.randn(shape, generator=gen)
    states = 2 if kind is nn.LSTM else 1
    h0 = tuple(torch.randn(num_layers, batch, hidden, generator=gen) for _ in range(states))
    torch_porta.reset_metrics()
    got, got_grads = _run(porta_module, x, h0, "porta")
    assert torch_porta.metrics()["fallbacks"] == {}
    expected, expected_grads = _run(cpu_module, x, h0, "cpu")
    for g, e in zip(got, expected):
        assert g.device.type == "porta"
        torch.testing.assert_close(g.cpu(), e, **TOL)
    assert len(got_grads) == len(expected_grads)
    for g, e in zip(got_grads, expected_grads):
        torch.testing.assert_close(g.cpu(), e, **TOL)


def test_lstm_cell_backward_with_only_grad_cy():
    """A loss on cy alone: grad_hy arrives undefined."""
    gen = torch.Generator().manual_seed(3)
    b, h = 2, 3
    ig, hg = torch.randn(b, 4 * h, generator=gen), torch.randn(b, 4 * h, generator=gen)
    cx = torch.randn(b, h, generator=gen)
    ib, hb = torch.randn(4 * h, generator=gen), torch.randn(4 * h, generator=gen)
    leaves = [t.to("porta").requires_grad_() for t in (ig, hg, cx, ib, hb)]
    hy, cy, ws = torch.ops.aten._thnn_fused_lstm_cell(*leaves)
    assert ws.shape == (b, 4 * h)
    cy.sum().backward()
    cpu = [t.clone().requires_grad_() for t in (ig, hg, cx, ib, hb)]
    gates = (cpu[0] + cpu[1] + cpu[3] + cpu[4]).chunk(4, 1)
    i, f, g = gates[0].sigmoid(), gates[1].sigmoid(), gates[2].tanh()
    (f * cpu[2] + i * g).sum().backward()
    for p, c in zip(leaves, cpu):
        torch.testing.assert_close(p.grad.cpu(), c.grad, **TOL)
