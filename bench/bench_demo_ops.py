"""Times the demo CNN's (examples/train_digits_cnn.py) slow ops on their own
shapes, and one whole training step, on "porta" and on PyTorch's CPU:
medians of many calls, printed side by side with their ratio."""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import torch_porta  # noqa: F401  (registers the "porta" device)

sys.path.insert(0, "examples")
from train_digits_cnn import DigitsCNN  # noqa: E402

ROUNDS = 7
CALLS = 50


def median_ms(fn, device):
    fn()  # warm up: caches, allocator
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        if device == "porta":
            torch.porta.synchronize()
        times.append((time.perf_counter() - start) / CALLS * 1e3)
    return statistics.median(times)


def op_cases(device):
    g = torch.Generator().manual_seed(0)

    def on(*shape):
        return torch.randn(*shape, generator=g).to(device)

    x1, w1, b1 = on(64, 1, 8, 8), on(16, 1, 3, 3), on(16)
    x2, w2, b2 = on(64, 16, 8, 8), on(32, 16, 3, 3), on(32)
    gy1, gy2 = on(64, 16, 8, 8), on(64, 32, 8, 8)
    p = on(64, 32, 8, 8)
    _, idx = F.max_pool2d(p, 2, return_indices=True)
    gp = on(64, 32, 4, 4)
    conv_bw = torch.ops.aten.convolution_backward
    return {
        "conv1 forward": lambda: F.conv2d(x1, w1, b1, padding=1),
        "conv2 forward": lambda: F.conv2d(x2, w2, b2, padding=1),
        "conv1 backward": lambda: conv_bw(gy1, x1, w1, [16], [1, 1], [1, 1], [1, 1], False,
                                          [0, 0], 1, [False, True, True]),
        "conv2 backward": lambda: conv_bw(gy2, x2, w2, [32], [1, 1], [1, 1], [1, 1], False,
                                          [0, 0], 1, [True, True, True]),
        "max_pool2d": lambda: F.max_pool2d(p, 2, return_indices=True),
        "max_pool2d backward": lambda: torch.ops.aten.max_pool2d_with_indices_backward(
            gp, p, [2, 2], [2, 2], [0, 0], [1, 1], False, idx),
    }


def train_step(device):
    torch.manual_seed(0)
    model = DigitsCNN().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    x = torch.randn(64, 1, 8, 8).to(device)
    y = torch.randint(0, 10, (64,)).to(device)

    def step():
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return step


def main():
    cases = {device: op_cases(device) for device in ("porta", "cpu")}
    print(f"{'ms per call (median)':<22} {'porta':>8} {'cpu':>8} {'ratio':>7}")
    rows = [(name, cases["porta"][name], cases["cpu"][name]) for name in cases["cpu"]]
    rows.append(("training step", train_step("porta"), train_step("cpu")))
    for name, on_porta, on_cpu in rows:
        a, b = median_ms(on_porta, "porta"), median_ms(on_cpu, "cpu")
        print(f"{name:<22} {a:8.3f} {b:8.3f} {a / b:7.2f}")


if __name__ == "__main__":
    main()
