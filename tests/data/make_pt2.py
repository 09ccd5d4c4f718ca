"""Writes the .pt2 fixtures of tests/test_pt2.c with torch.export.save.

    python tests/data/make_pt2.py [out-dir]     (default: this folder)

tiny.pt2 holds a small program whose weights and constants cover what the
reader must handle: float32 parameters, two parameters tied to one storage,
a transposed (non-contiguous) buffer, a buffer viewing the middle of a
larger storage, int64 and bool buffers, a lifted tensor constant.
tiny_expected.safetensors holds every one of those tensors by the same
name, contiguous, written by the safetensors package: the test compares
the two, so no expected value is written by hand.
"""
import os
import sys

import torch
from safetensors.torch import save_file


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 3)
        self.tied = torch.nn.Linear(4, 3, bias=False)
        self.tied.weight = self.lin.weight  # one storage, two names
        self.register_buffer("transposed", torch.arange(6.0).reshape(2, 3).t())
        self.register_buffer("middle", torch.arange(10.0)[3:7])
        self.register_buffer("steps", torch.tensor([1, -2, 3], dtype=torch.int64))
        self.register_buffer("mask", torch.tensor([True, False, True]))
        self.constant = torch.tensor([0.5, 0.25, 0.125])

    def forward(self, x):
        y = self.lin(x) + self.tied(x) + self.constant
        y = y + self.transposed.sum() + self.middle.sum()
        return torch.where(self.mask, y * self.steps, y)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    model = Tiny().eval()
    program = torch.export.export(model, (torch.randn(2, 4),))
    for node in program.graph.nodes:  # they name this machine's paths
        node.meta.pop("stack_trace", None)
    torch.export.save(program, os.path.join(out, "tiny.pt2"))
    expected = {name: t.detach().contiguous().clone() for name, t in model.state_dict().items()}
    expected["constant"] = model.constant.clone()
    save_file(expected, os.path.join(out, "tiny_expected.safetensors"))
    os.chmod(os.path.join(out, "tiny_expected.safetensors"), 0o644)


if __name__ == "__main__":
    main()
