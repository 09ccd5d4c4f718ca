"""The C reader of .pt2 archives (src/io/pt2_archive.c) on archives that the
installed PyTorch writes now: weights of every dtype Porta has, tied,
transposed and sliced storages, run through torch_porta.load and compared
with the program torch.export.load gives back; and archives rewritten with
versions this reader does not support, refused with the version named."""
import io
import re
import zipfile

import pytest
import torch

import torch_porta


class Storages(torch.nn.Module):
    """Every weight feeds the output, so a storage read wrongly shows."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.lin = torch.nn.Linear(4, 3)
        self.tied = torch.nn.Linear(4, 3, bias=False)
        self.tied.weight = self.lin.weight
        self.register_buffer("transposed", torch.randn(3, 4).t())
        self.register_buffer("middle", torch.randn(20)[5:8])
        self.register_buffer("f16", torch.randn(3).half())
        self.register_buffer("bf16", torch.randn(3).bfloat16())
        self.register_buffer("f64", torch.randn(3, dtype=torch.float64))
        self.register_buffer("i64", torch.tensor([3, -1, 2]))
        self.register_buffer("i32", torch.tensor([1, 2, -4], dtype=torch.int32))
        self.register_buffer("i16", torch.tensor([7, -7, 0], dtype=torch.int16))
        self.register_buffer("i8", torch.tensor([-3, 5, 1], dtype=torch.int8))
        self.register_buffer("u8", torch.tensor([200, 1, 17], dtype=torch.uint8))
        self.register_buffer("mask", torch.tensor([True, False, True]))

    def forward(self, x):
        y = self.lin(x) + self.tied(x) + x @ self.transposed + self.middle
        for name in ("f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u8"):
            y = y + getattr(self, name).to(torch.float32)
        return torch.where(self.mask, y, -y)


def save(model, inputs, path):
    program = torch.export.export(model.eval(), inputs).run_decompositions()
    torch.export.save(program, path)
    return program


def test_weights_of_every_dtype_and_layout(tmp_path):
    path = tmp_path / "storages.pt2"
    x = torch.randn(2, 4)
    save(Storages(), (x,), path)
    want = torch.export.load(path).module()(x)
    model = torch_porta.load(path)
    assert model.format.startswith("pt2 (schema 8."), model.format
    got = model(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    other = torch.randn(2, 4)
    torch.testing.assert_close(model(other), torch.export.load(path).module()(other),
                               rtol=1e-5, atol=1e-5)


def rewrite(source, target, replace):
    """Copies the archive with each record's bytes passed through replace(name, bytes)."""
    with zipfile.ZipFile(source) as z:
        records = [(name, replace(name, z.read(name))) for name in z.namelist()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, data in records:
            z.writestr(name, data)
    target.write_bytes(buffer.getvalue())


@pytest.fixture(scope="module")
def small_archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("pt2") / "small.pt2"
    save(torch.nn.Linear(3, 2), (torch.randn(1, 3),), path)
    return path


def test_rewritten_archive_still_loads(small_archive, tmp_path):
    """Python's zipfile layout (no data descriptors, no padding) is read too,
    so the refusals below come from the versions alone."""
    path = tmp_path / "same.pt2"
    rewrite(small_archive, path, lambda name, data: data)
    x = torch.randn(1, 3)  # the program's static shape
    torch.testing.assert_close(torch_porta.load(path)(x), torch_porta.load(small_archive)(x))


@pytest.mark.parametrize("record, old, new, message", [
    ("archive_version", b"0", b"1",
     re.escape('expected archive_version 0 (the version this reader supports), got "1"')),
    ("models/model.json", b'"schema_version": {"major": 8', b'"schema_version": {"major": 9',
     r"expected schema version 8.x \(this reader follows 8.\d+, PyTorch 2.13\), got 9."),
    ("byteorder", b"little", b"big", re.escape('expected byteorder "little"')),
    ("archive_format", b"pt2", b"pt3", re.escape('expected archive_format "pt2", got "pt3"')),
])
def test_unsupported_versions_are_refused(small_archive, tmp_path, record, old, new, message):
    path = tmp_path / "changed.pt2"

    def replace(name, data):
        if name.split("/", 1)[1] != record:
            return data
        assert old in data, (name, data[:200])
        return data.replace(old, new, 1)

    rewrite(small_archive, path, replace)
    with pytest.raises(RuntimeError, match=message):
        torch_porta.load(path)


def test_damaged_archive_is_refused(small_archive, tmp_path):
    data = bytearray(small_archive.read_bytes())
    with zipfile.ZipFile(small_archive) as z:
        info = z.getinfo(next(n for n in z.namelist() if n.endswith("weight_0")))
    local = info.header_offset  # the local header's own name and extra lengths
    start = local + 30 + int.from_bytes(data[local + 26:local + 28], "little") + \
        int.from_bytes(data[local + 28:local + 30], "little")
    data[start] ^= 1  # the first byte of the weight
    path = tmp_path / "damaged.pt2"
    path.write_bytes(bytes(data))
    with pytest.raises(RuntimeError, match="expected CRC-32 0x"):
        torch_porta.load(path)
