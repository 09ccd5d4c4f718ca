"""Dtypes CUDA accepts and the CPU refuses: libraries reach them through
`device.type != "cpu"` branches, so porta takes the union. The expected
values come from the CPU in a wider dtype. (abs, softsign and trace of
bools, which CUDA takes too, stay refused: the elementwise and trace tests
hold them to the CPU's refusal.)"""
import pytest
import torch
import torch.nn.functional as F

import torch_porta  # noqa: F401  (registers the device)

DEVICE = "porta"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_avg_pool3d_of_half_types(dtype):
    x = torch.randn(2, 3, 4, 4, 6, generator=torch.Generator().manual_seed(4))
    got = F.avg_pool3d(x.to(dtype).to(DEVICE), 2, stride=(1, 2, 2))
    expected = F.avg_pool3d(x.to(dtype).float(), 2, stride=(1, 2, 2)).to(dtype)
    assert got.dtype == dtype
    torch.testing.assert_close(got.cpu(), expected)
