"""complex64 and complex128 on porta against PyTorch's CPU: copies both
ways, casts, the pair views (view_as_real, view_as_complex, real, imag),
the lazy conjugate bit, save/load, and the error for what porta does not
compute on complex tensors."""
import io
import warnings

import pytest
import torch

from conftest import assert_matches

COMPLEX = [torch.complex64, torch.complex128]


def _complex(dtype, *shape, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=generator)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_copies_both_ways_keep_the_values(dtype):
    cpu = _complex(dtype, 3, 5)
    porta = cpu.to("porta")
    assert porta.dtype == dtype
    assert torch.equal(porta.cpu(), cpu)
    assert torch.equal(porta.t().cpu(), cpu.t())           # strided read
    assert torch.equal(porta.t().contiguous().cpu(), cpu.t().contiguous())
    target = torch.zeros(5, 3, dtype=dtype, device="porta")
    target.copy_(cpu.t())                                   # strided write
    assert torch.equal(target.cpu(), cpu.t())


@pytest.mark.parametrize("dtype", COMPLEX)
def test_casts_as_pytorch(dtype):
    cpu = _complex(dtype, 4, 3)
    porta = cpu.to("porta")
    other = torch.complex128 if dtype == torch.complex64 else torch.complex64
    assert_matches(porta.to(other), cpu.to(other))
    real = torch.randn(4, 3, dtype=torch.float64)
    assert_matches(real.to("porta").to(dtype), real.to(dtype))  # imaginary part 0
    with warnings.catch_warnings():  # "discards the imaginary part", once a process
        warnings.simplefilter("ignore", UserWarning)
        assert_matches(porta.to(torch.float32), cpu.to(torch.float32))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_factories_and_fills(dtype):
    assert_matches(torch.zeros(2, 3, dtype=dtype, device="porta"), torch.zeros(2, 3, dtype=dtype))
    assert_matches(torch.ones(2, 3, dtype=dtype, device="porta"), torch.ones(2, 3, dtype=dtype))
    assert_matches(torch.full((2,), 2.5, dtype=dtype, device="porta"),
                   torch.full((2,), 2.5, dtype=dtype))
    cpu = _complex(dtype, 2, 3)
    assert_matches(torch.cat([cpu.to("porta"), cpu.to("porta")], 1), torch.cat([cpu, cpu], 1))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_pair_views_share_memory(dtype):
    cpu = _complex(dtype, 3, 4)
    porta = cpu.to("porta")
    pairs = torch.view_as_real(porta)
    assert pairs.dtype == torch.view_as_real(cpu).dtype
    assert pairs.stride() == torch.view_as_real(cpu).stride()
    assert torch.equal(pairs.cpu(), torch.view_as_real(cpu))
    pairs[0, 0, 1] = 9.0  # a view: writes reach the complex tensor
    assert porta[0, 0].cpu().imag.item() == 9.0
    back = torch.view_as_complex(pairs)
    assert back.data_ptr() == porta.data_ptr()
    assert torch.equal(porta.real.cpu(), porta.cpu().real)
    assert torch.equal(porta.imag.cpu(), porta.cpu().imag)
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        torch.view_as_complex(torch.zeros(3, 3, device="porta"))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_lazy_conjugate_resolves_as_on_the_cpu(dtype):
    cpu = _complex(dtype, 3, 4)
    porta = cpu.to("porta")
    conj = porta.conj()
    assert conj.is_conj()
    assert torch.equal(conj.cpu(), cpu.conj())
    resolved = conj.resolve_conj()
    assert not resolved.is_conj()
    assert torch.equal(resolved.cpu(), cpu.conj().resolve_conj())
    assert torch.equal(conj.clone().cpu(), cpu.conj().clone())
    assert torch.equal(conj.imag.cpu(), cpu.conj().imag)  # a negative view
    assert torch.equal(conj.t().contiguous().cpu(), cpu.conj().t().contiguous())
    with pytest.raises(RuntimeError, match="unresolved conjugated"):
        torch.view_as_real(conj)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_save_and_load(dtype):
    cpu = _complex(dtype, 2, 3)
    buffer = io.BytesIO()
    torch.save(cpu.to("porta"), buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, map_location="cpu")
    assert torch.equal(loaded, cpu)


def test_unimplemented_op_names_the_dtype(monkeypatch):
    monkeypatch.setenv("PORTA_FALLBACK", "error")
    porta = _complex(torch.complex64, 4).to("porta")
    with pytest.raises(Exception, match="not implemented for complex64 on porta"):
        torch.sin(porta)
