"""Trains a small CNN on the UCI handwritten digits (scikit-learn's bundled
copy) three times from the same initial weights and batches: on "porta" op
by op, on "porta" in fused eager mode (ops recorded and run as fused,
compiled kernels at each sync point), and on PyTorch's CPU, printing them
side by side. The model code is plain PyTorch; only the device string
(and, for the second run, porta's eager mode) differs."""
import copy
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits

import torch_porta

EPOCHS = 10
BATCH = 64


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):                      # x: (B, 1, 8, 8)
        x = F.relu(self.bn1(self.conv1(x)))    # (B, 16, 8, 8)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # (B, 32, 4, 4)
        return self.fc(x.flatten(1))           # (B, 10)


def load_data():
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
    images, labels = images[order], labels[order]
    cut = int(0.8 * len(labels))
    return (images[:cut], labels[:cut]), (images[cut:], labels[cut:])


def batches(count, epoch):
    order = torch.randperm(count, generator=torch.Generator().manual_seed(epoch))
    return [order[i:i + BATCH] for i in range(0, count, BATCH)]


class Run:
    """One model and optimizer on one device."""

    def __init__(self, model, device, mode="debug"):
        self.device, self.mode = device, mode
        self.model = copy.deepcopy(model).to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-3)
        self.seconds = 0.0

    def train_epoch(self, images, labels, epoch):
        if self.device == "porta":
            torch_porta.set_eager_mode(self.mode)
        try:
            return self._train_epoch(images, labels, epoch)
        finally:
            if self.device == "porta":
                torch_porta.set_eager_mode("debug")

    def _train_epoch(self, images, labels, epoch):
        start = time.perf_counter()
        self.model.train()
        total, correct = 0.0, 0
        for index in batches(len(labels), epoch):
            x, y = images[index].to(self.device), labels[index].to(self.device)
            logits = self.model(x)
            loss = F.cross_entropy(logits, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            total += loss.item() * len(index)
            correct += (logits.argmax(1) == y).sum().item()
        self.seconds += time.perf_counter() - start
        return total / len(labels), correct / len(labels)

    @torch.no_grad()
    def accuracy(self, images, labels):
        start = time.perf_counter()
        self.model.eval()
        predicted = self.model(images.to(self.device)).argmax(1).cpu()
        self.seconds += time.perf_counter() - start
        return (predicted == labels).float().mean().item()


def main():
    torch.manual_seed(0)
    (train_x, train_y), (test_x, test_y) = load_data()
    model = DigitsCNN()
    runs = [Run(model, "porta"), Run(model, "porta", "fused"), Run(model, "cpu")]
    print(f"torch {torch.__version__}, porta device: {torch_porta.get_device_name(0)}")
    print(f"digits: {len(train_y)} train, {len(test_y)} test; CNN, AdamW, batch {BATCH}")
    print(f"{'epoch':>5} | {'porta loss':>10} {'acc':>7} {'test':>7} | "
          f"{'fused loss':>10} {'acc':>7} {'test':>7} | {'cpu loss':>10} {'acc':>7} {'test':>7}")
    compile_seconds = 0.0
    for epoch in range(1, EPOCHS + 1):
        cells = []
        for run in runs:
            before = torch_porta.metrics()["compile_seconds"]
            loss, accuracy = run.train_epoch(train_x, train_y, epoch)
            if run.mode == "fused":  # building kernels, once: the disk cache keeps them
                spent = torch_porta.metrics()["compile_seconds"] - before
                run.seconds -= spent
                compile_seconds += spent
            test = run.accuracy(test_x, test_y)
            cells.append(f"{loss:10.4f} {accuracy:7.2%} {test:7.2%}")
        print(f"{epoch:5d} | " + " | ".join(cells))
    porta, fused, cpu = runs
    final = porta.accuracy(test_x, test_y)
    print(f"time: porta {porta.seconds:.2f} s, porta fused {fused.seconds:.2f} s "
          f"(+ {compile_seconds:.2f} s building kernels, cached for later runs), "
          f"cpu {cpu.seconds:.2f} s")
    print(f"porta/cpu {porta.seconds / cpu.seconds:.2f}x, "
          f"porta fused/cpu {fused.seconds / cpu.seconds:.2f}x")
    fallbacks = torch_porta.metrics()["fallbacks"]
    print(f"porta fallbacks to the CPU: {sum(fallbacks.values())} {dict(fallbacks) or ''}")
    if final < 0.9:
        print(f"porta's final test accuracy {final:.2%} is below 90%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
