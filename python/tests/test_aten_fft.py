"""torch.fft and stft/istft on porta against PyTorch's CPU (pocketfft):
every torch.fft function in both precisions and all three normalizations,
lengths that take each path of the CPU plans (powers of two, mixed radix,
odd primes up to 31, Bluestein for 97 and 1009), batched and strided
inputs, gradients through PyTorch's derivative formulas, and the
short-time transforms. All of it runs natively (no CPU fallback), the
conjugation of ihfft2/ihfftn's complex result (conj_physical) too."""
import pytest
import torch

from aten_compare import compare, compare_grad

REAL = {torch.float32: torch.float32, torch.float64: torch.float64}
COMPLEX = {torch.float32: torch.complex64, torch.float64: torch.complex128}
NORMS = [None, "ortho", "forward"]


def signal(shape, dtype, complex_values, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=dtype)
    if complex_values:
        x = torch.complex(x, torch.randn(shape, generator=g, dtype=dtype))
    return x


def tolerances(dtype, n):
    """PyTorch's test tolerances for the dtype, with the absolute one grown
    with the transform's size: FFT rounding spreads over every output, so an
    output much smaller than the rest carries the others' rounding."""
    if dtype == torch.float32:
        return {"rtol": 1.3e-6, "atol": 1e-5 * max(1, n ** 0.5)}
    return {"rtol": 1e-7, "atol": 1e-7 * max(1, n ** 0.5)}


ONE_DIM = [
    (torch.fft.fft, True), (torch.fft.ifft, True), (torch.fft.fft, False),
    (torch.fft.rfft, False), (torch.fft.irfft, True), (torch.fft.hfft, True),
    (torch.fft.ihfft, False),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fn,complex_input", ONE_DIM, ids=lambda v: getattr(v, "__name__", ""))
def test_one_dim_functions(fn, complex_input, norm, dtype, no_fallbacks):
    for n in (1, 2, 5, 8, 12, 31, 60):
        x = signal((3, n), dtype, complex_input)
        compare(lambda t: fn(t, norm=norm), x, **tolerances(dtype, n))
    # a length of its own along the first dim (cropped or zero-padded)
    x = signal((10, 4), dtype, complex_input, seed=1)
    compare(lambda t: fn(t, n=7, dim=0, norm=norm), x, **tolerances(dtype, 10))
    compare(lambda t: fn(t, n=16, dim=0, norm=norm), x, **tolerances(dtype, 16))


MULTI_DIM = [
    (torch.fft.fft2, True), (torch.fft.ifft2, True), (torch.fft.rfft2, False),
    (torch.fft.irfft2, True), (torch.fft.fftn, True), (torch.fft.ifftn, True),
    (torch.fft.rfftn, False), (torch.fft.irfftn, True), (torch.fft.hfft2, True),
    (torch.fft.hfftn, True),
]


def check_multi_dim(fn, complex_input, norm, dtype):
    x = signal((2, 6, 9, 4), dtype, complex_input)
    compare(lambda t: fn(t, norm=norm), x, **tolerances(dtype, 36))
    compare(lambda t: fn(t, s=(5, 8), dim=(0, 2), norm=norm), x, **tolerances(dtype, 40))
    # strided input (a transpose) and dims out of order
    compare(lambda t: fn(t.transpose(1, 2), dim=(-1, 1), norm=norm), x, **tolerances(dtype, 36))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fn,complex_input", MULTI_DIM, ids=lambda v: getattr(v, "__name__", ""))
def test_multi_dim_functions(fn, complex_input, norm, dtype, no_fallbacks):
    check_multi_dim(fn, complex_input, norm, dtype)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fn", [torch.fft.ihfft2, torch.fft.ihfftn], ids=lambda f: f.__name__)
def test_multi_dim_hermitian_inverses(fn, norm, no_fallbacks):
    check_multi_dim(fn, False, norm, torch.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [97, 1009, 2 * 3 * 5 * 7, 1024, 4096])
def test_long_and_prime_lengths(n, dtype, no_fallbacks):
    x = signal((2, n), dtype, True)
    compare(torch.fft.fft, x, **tolerances(dtype, n))
    compare(torch.fft.ifft, x, **tolerances(dtype, n))
    compare(torch.fft.irfft, x, **tolerances(dtype, n))
    compare(torch.fft.rfft, signal((2, n), dtype, False), **tolerances(dtype, n))


def test_helpers_and_shifts(no_fallbacks):
    x = signal((5, 8), torch.float32, True)
    compare(lambda t: torch.fft.fftshift(torch.fft.fft2(t)), x, **tolerances(torch.float32, 40))
    compare(lambda t: torch.fft.ifft(torch.fft.ifftshift(t, dim=1)), x,
            **tolerances(torch.float32, 8))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients(dtype):
    x = signal((3, 10), dtype, False)
    compare_grad(lambda t: torch.view_as_real(torch.fft.rfft(t, norm="ortho")), x)
    compare_grad(lambda t: torch.view_as_real(torch.fft.fft(t)), x)
    # irfft's and hfft's backward scale complex gradients by real numbers
    compare_grad(lambda t: torch.fft.irfft(torch.view_as_complex(t), n=8),
                 signal((5, 2), dtype, False))
    compare_grad(lambda t: torch.fft.hfft(torch.view_as_complex(t), n=9),
                 signal((5, 2), dtype, False))
    compare_grad(lambda t: torch.view_as_real(torch.fft.fft2(torch.view_as_complex(t))),
                 signal((4, 6, 2), dtype, False))
    compare_grad(lambda t: torch.view_as_real(torch.fft.ifft(torch.view_as_complex(t),
                                                             norm="forward")),
                 signal((7, 2), dtype, False))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_stft_and_istft(dtype, no_fallbacks):
    x = signal((2, 400), dtype, False)
    window = torch.hann_window(64, dtype=dtype)

    def spectrogram(t, w):
        return torch.stft(t, n_fft=64, hop_length=16, window=w, return_complex=True)

    compare(spectrogram, x, window, **tolerances(dtype, 64))

    def round_trip(t, w):
        spec = torch.stft(t, n_fft=64, hop_length=16, window=w, return_complex=True)
        return torch.istft(spec, n_fft=64, hop_length=16, window=w, length=400)

    compare(round_trip, x, window, **tolerances(dtype, 64))


def test_errors_match_the_cpu():
    # integer input to _fft_c2c's caller is promoted by PyTorch; a bad norm
    # and an empty length fail alike
    x = signal((4,), torch.float32, True)
    compare(lambda t: torch.fft.fft(t, norm="bogus"), x)
    compare(lambda t: torch.fft.fft(t, n=0), x)
