"""torch.fft on "porta" beside PyTorch's CPU (pocketfft), in one run.

Each case runs on both devices, alternating them over several rounds so the
machine's noise falls on both alike, and reports the median time per call
of each and their ratio (porta / CPU: 1.0 is parity, below is faster).
Lengths cover powers of two, 5-smooth lengths, a prime handled by
Bluestein, batched 1-d transforms, 2-d transforms and real transforms, in
float32 and float64. Times in microseconds are for scale only.

    .venv/bin/python bench/bench_fft.py [--rounds N] [--only SUBSTRING]
"""
import argparse
import functools

import torch

from bench_torch import DEVICES, measure as measure_torch

# a round of about 0.1 s on the CPU: the transforms are short
measure = functools.partial(measure_torch, min_seconds=0.1)


def case(fn, shape, dtype, complex_input):
    def make(device):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(shape, generator=g, dtype=dtype)
        if complex_input:
            x = torch.complex(x, torch.randn(shape, generator=g, dtype=dtype))
        x = x.to(device)
        return lambda: fn(x)
    return make


def cases():
    for dtype in (torch.float32, torch.float64):
        short = "f32" if dtype == torch.float32 else "f64"
        for n in (256, 4096, 65536, 1000, 1009):
            yield f"fft {n} {short}", case(torch.fft.fft, (n,), dtype, True)
        yield f"fft 64 x 1024 {short}", case(torch.fft.fft, (64, 1024), dtype, True)
        yield f"rfft 64 x 1024 {short}", case(torch.fft.rfft, (64, 1024), dtype, False)
        yield f"irfft 64 x 513 {short}", case(torch.fft.irfft, (64, 513), dtype, True)
        yield f"fft2 256 x 256 {short}", case(torch.fft.fft2, (256, 256), dtype, True)
        yield f"rfft2 8 x 128 x 128 {short}", case(torch.fft.rfft2, (8, 128, 128), dtype, False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    args = parser.parse_args()
    print(f"{'case':28} {'porta us':>10} {'cpu us':>10} {'porta/cpu':>10}")
    for name, make in cases():
        if args.only not in name:
            continue
        t = measure(make, args.rounds)
        print(f"{name:28} {t['porta'] * 1e6:10.1f} {t['cpu'] * 1e6:10.1f} "
              f"{t['porta'] / t['cpu']:10.2f}")


if __name__ == "__main__":
    main()
