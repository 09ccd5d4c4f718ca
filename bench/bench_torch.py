"""PyTorch on "porta" beside PyTorch's own CPU kernels, in one run.

Each case runs the same code on both devices, alternating them over several
rounds so that the machine's noise falls on both alike, and reports the
median time per call of each and their ratio (porta / CPU: 1.0 is parity,
below is faster). Times in microseconds are shown for scale only; the
ratios are the result.

    .venv/bin/python bench/bench_torch.py [--rounds N] [--only SUBSTRING]
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_porta  # noqa: F401  (registers the device)

DEVICES = ("porta", "cpu")


def seconds_per_call(fn, calls):
    torch.porta.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.porta.synchronize()
    return (time.perf_counter() - start) / calls


def measure(make, rounds, min_seconds=0.2):
    """Median seconds per call on each device. make(device) returns a
    no-argument function; the number of calls per round is set so a round
    takes about min_seconds on the CPU."""
    fns = {device: make(device) for device in DEVICES}
    for fn in fns.values():  # warm-up: allocations, first-call caches
        fn()
        fn()
    once = seconds_per_call(fns["cpu"], 3)
    calls = max(3, int(min_seconds / max(once, 1e-7)))
    samples = {device: [] for device in DEVICES}
    for _ in range(rounds):
        for device in DEVICES:
            samples[device].append(seconds_per_call(fns[device], calls))
    return {device: statistics.median(times) for device, times in samples.items()}


def tensor(shape, device, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(device)


def binary(op, shape):
    def make(device):
        a, b = tensor(shape, device, 1), tensor(shape, device, 2)
        return lambda: op(a, b)
    return make


def unary(op, shape):
    def make(device):
        a = tensor(shape, device, 1)
        return lambda: op(a)
    return make


class SmallCNN(nn.Module):
    """The demo's CNN shape class: conv-BN-ReLU blocks, pooling, a linear head."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.features(x))


class SmallTransformer(nn.Module):
    """A causal language model: embeddings, two encoder layers, a head."""
    vocab, width, length = 256, 128, 64

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(self.vocab, self.width)
        layer = nn.TransformerEncoderLayer(self.width, 4, 4 * self.width, dropout=0.0,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(self.width, self.vocab)

    def forward(self, tokens):
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1],
                                                              device=tokens.device)
        return self.head(self.encoder(self.embed(tokens), mask=mask, is_causal=True))


def training_step(model_class, batch, loss_fn):
    def make(device):
        torch.manual_seed(0)
        model = model_class().to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        inputs, targets = (t.to(device) for t in batch())

        def step():
            optimizer.zero_grad()
            loss_fn(model(inputs), targets).backward()
            optimizer.step()
        return step
    return make


def cnn_batch():
    generator = torch.Generator().manual_seed(0)
    return (torch.randn(64, 1, 16, 16, generator=generator),
            torch.randint(0, 10, (64,), generator=generator))


def transformer_batch():
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, SmallTransformer.vocab, (8, SmallTransformer.length + 1),
                           generator=generator)
    return tokens[:, :-1], tokens[:, 1:]


def transformer_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def linalg(op, n, rhs=0):
    """op on an n x n symmetric positive-definite matrix (and an n x rhs
    right-hand side when rhs > 0)."""
    def make(device):
        a = tensor((n, n), "cpu", 3)
        spd = (a @ a.mT + n * torch.eye(n)).to(device)
        b = tensor((n, rhs), device, 4) if rhs else None
        return (lambda: op(spd, b)) if rhs else (lambda: op(spd))
    return make


MILLION = (1024, 1024)
CASES = [
    ("per-op overhead: add, 1 element", binary(torch.add, (1,))),
    ("add, 4M elements", binary(torch.add, (4, *MILLION))),
    ("mul, 4M elements", binary(torch.mul, (4, *MILLION))),
    ("relu, 4M elements", unary(torch.relu, (4, *MILLION))),
    ("exp, 4M elements", unary(torch.exp, (4, *MILLION))),
    ("sum, 4M elements", unary(torch.sum, (4, *MILLION))),
    ("sum over rows, 4M elements", unary(lambda a: a.sum(1), (4 * 1024, 1024))),
    ("max over rows, 4M elements", unary(lambda a: a.amax(1), (4 * 1024, 1024))),
    ("softmax over rows, 4M elements", unary(lambda a: a.softmax(1), (4 * 1024, 1024))),
    ("matmul 1024x1024x1024", binary(torch.matmul, MILLION)),
    ("cholesky 512x512", linalg(torch.linalg.cholesky, 512)),
    ("lu_factor 512x512", linalg(torch.linalg.lu_factor, 512)),
    ("solve 512x512, 64 right-hand sides", linalg(torch.linalg.solve, 512, 64)),
    ("CNN training step (AdamW, batch 64)",
     training_step(SmallCNN, cnn_batch, F.cross_entropy)),
    ("transformer training step (AdamW, 8x64 tokens)",
     training_step(SmallTransformer, transformer_batch, transformer_loss)),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", default="", help="run the cases whose name has this")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads; "
          f"median of {args.rounds} rounds; ratio = porta / cpu")
    print(f"{'case':48} {'porta us':>10} {'cpu us':>10} {'ratio':>7}")
    for name, make in CASES:
        if args.only not in name:
            continue
        times = measure(make, args.rounds)
        porta_us, cpu_us = times["porta"] * 1e6, times["cpu"] * 1e6
        print(f"{name:48} {porta_us:10.1f} {cpu_us:10.1f} {porta_us / cpu_us:7.2f}",
              flush=True)


if __name__ == "__main__":
    main()
