"""Writes the seed corpora of fuzz_zip and fuzz_pt2 from the .pt2 fixture
tests/data/tiny.pt2 (made by tests/data/make_pt2.py).

    python fuzz/make_seeds.py

fuzz_zip: the fixture as PyTorch wrote it (data descriptors, aligned data,
ZIP64 end records), the same entries written by Python's zipfile (sizes in
the local headers), with forced ZIP64 local fields, and an empty archive.
fuzz_pt2: the fixture, and its records in fuzz_pt2's list format (name
line, bytes, separated by a line "@@") so mutations reach the JSON, with a
variant whose weight is marked pickled.
fuzz_porta: the graphs (porta.graph) of small models exported with
torch_porta.export, one with a dynamic batch.
"""
import io
import os
import tempfile
import zipfile

import torch
from safetensors import safe_open

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
fixture = os.path.join(root, "tests", "data", "tiny.pt2")
corpus = os.path.join(root, "fuzz", "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(corpus, target), exist_ok=True)
    with open(os.path.join(corpus, target, name), "wb") as f:
        f.write(data)


def rezip(entries, force_zip64=False):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries:
            with z.open(name, "w", force_zip64=force_zip64) as f:
                f.write(data)
    return buffer.getvalue()


def records(entries):
    return b"\n@@\n".join(name.encode() + b"\n" + data for name, data in entries)


def main():
    raw = open(fixture, "rb").read()
    with zipfile.ZipFile(fixture) as z:
        # The pickled sample inputs are never read: left out of the lists.
        entries = [(n, z.read(n)) for n in z.namelist() if not n.endswith(".pt")]
    write("fuzz_zip", "torch.zip", raw)
    write("fuzz_zip", "zipfile.zip", rezip(entries))
    write("fuzz_zip", "zipfile_zip64.zip", rezip(entries[:3], force_zip64=True))
    write("fuzz_zip", "empty.zip", rezip([]))
    write("fuzz_pt2", "torch.pt2", raw)
    write("fuzz_pt2", "tiny.records", records(entries))
    pickled = [(n, d.replace(b'"use_pickle": false', b'"use_pickle": true', 1)) for n, d in entries]
    write("fuzz_pt2", "pickled.records", records(pickled))

    import torch_porta

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(2, 4, 3, padding=1)
            self.norm = torch.nn.LayerNorm(4)
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            y = torch.relu(self.conv(x)).mean(dim=(2, 3))
            return torch.softmax(self.fc(self.norm(y)), dim=-1)

    batch = torch.export.Dim("batch", min=1, max=64)
    exports = {
        "mlp.json": (torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.GELU(),
                                         torch.nn.Linear(5, 2)), (torch.randn(2, 6),), None),
        "net_dynamic.json": (Net(), (torch.randn(2, 2, 5, 5),), ({0: batch},)),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, inputs, dynamic) in exports.items():
            path = os.path.join(tmp, "m.porta")
            torch_porta.export(model.eval(), inputs, path, dynamic_shapes=dynamic)
            with safe_open(path, "pt") as f:
                write("fuzz_porta", name, f.metadata()["porta.graph"].encode())


if __name__ == "__main__":
    main()
