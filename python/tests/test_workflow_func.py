"""torch.func transforms on porta tensors compute what they compute on the CPU:
vmap, grad (and vmap of grad: per-sample gradients), jvp, and
functional_call over a module's parameters."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, jvp, vmap

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _assert_close_on_porta(got, expected, rtol=1e-5, atol=1e-6):
    assert got.device.type == DEVICE
    assert got.dtype == expected.dtype and got.shape == expected.shape
    torch.testing.assert_close(got.cpu(), expected, rtol=rtol, atol=atol)


def _f(x, w):
    return (torch.tanh(x @ w) * x.sum()).softmax(-1)


def test_vmap_matches_the_cpu():
    x, w = _randn(7, 4, 5, seed=1), _randn(5, 3, seed=2)
    expected = vmap(_f, in_dims=(0, None))(x, w)
    got = vmap(_f, in_dims=(0, None))(x.to(DEVICE), w.to(DEVICE))
    _assert_close_on_porta(got, expected)
    # a batched dimension other than the first, and nested vmap
    expected = vmap(vmap(torch.dot), in_dims=(1, 1))(x[..., :4], x[..., 1:])
    got = vmap(vmap(torch.dot), in_dims=(1, 1))(x[..., :4].to(DEVICE), x[..., 1:].to(DEVICE))
    _assert_close_on_porta(got, expected)


def test_grad_matches_the_cpu():
    x, w = _randn(4, 5, seed=1), _randn(5, 3, seed=2)

    def loss(w, x):
        return _f(x, w).log().mean()

    expected = grad(loss)(w, x)
    got = grad(loss)(w.to(DEVICE), x.to(DEVICE))
    _assert_close_on_porta(got, expected)


def test_per_sample_gradients_of_a_module_match_the_cpu():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    x, y = _randn(5, 4, seed=1), torch.tensor([0, 1, 1, 0, 1])

    def per_sample(params, x, y, module):
        logits = functional_call(module, params, (x.unsqueeze(0),))
        return F.cross_entropy(logits, y.unsqueeze(0))

    def gradients(module, device):
        params = {k: v.detach() for k, v in module.named_parameters()}
        return vmap(grad(per_sample), in_dims=(None, 0, 0, None))(
            params, x.to(device), y.to(device), module)

    expected = gradients(model, "cpu")
    got = gradients(model.to(DEVICE), DEVICE)
    assert got.keys() == expected.keys()
    for name in expected:
        assert got[name].shape[0] == 5
        _assert_close_on_porta(got[name], expected[name])


def test_jvp_matches_the_cpu():
    x, w, tangent = _randn(4, 5, seed=1), _randn(5, 3, seed=2), _randn(4, 5, seed=3)
    expected_out, expected_tangent = jvp(lambda x: _f(x, w), (x,), (tangent,))
    got_out, got_tangent = jvp(lambda x: _f(x, w.to(DEVICE)), (x.to(DEVICE),),
                               (tangent.to(DEVICE),))
    _assert_close_on_porta(got_out, expected_out)
    _assert_close_on_porta(got_tangent, expected_tangent)
