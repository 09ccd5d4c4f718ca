"""Dtypes CUDA accepts and the CPU refuses: libraries reach them through
`device.type != "cpu"` branches, so porta takes the union. The expected
values come from the CPU in a wider dtype."""
import torch
import torch.nn.functional as F

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"


def _bools(*shape, seed=0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) > 0.5


def test_abs_of_bools_is_each_bool():
    x = _bools(3, 4)
    got = torch.abs(x.to(DEVICE))
    assert got.dtype == torch.bool
    torch.testing.assert_close(got.cpu(), torch.abs(x.to(torch.uint8)).bool())


def test_abs_of_bools_in_place_and_out():
    x = _bools(5, seed=1)
    y = x.to(DEVICE)
    y.abs_()
    torch.testing.assert_close(y.cpu(), x)
    out = torch.empty(5, dtype=torch.bool, device=DEVICE)
    torch.abs(x.to(DEVICE), out=out)
    torch.testing.assert_close(out.cpu(), x)


def test_softsign_of_bools_as_on_cuda():
    x = _bools(6, seed=2)
    got = F.softsign(x.to(DEVICE))
    expected = x.to(torch.uint8) / (1 + x.to(torch.uint8).abs())
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got.cpu(), expected)


def test_trace_of_bools_counts_the_true_diagonal():
    x = _bools(4, 5, seed=3)
    got = torch.trace(x.to(DEVICE))
    assert got.dtype == torch.int64
    assert got.item() == torch.trace(x.to(torch.int64)).item()
