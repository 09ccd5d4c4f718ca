"""safetensors files move both ways between libporta's C reader/writer and
the Python `safetensors` package: every dtype, ranks 0 to 4, empty tensors,
metadata and non-ASCII names, compared bit for bit. Both also reject the
same hostile files.

libporta's C API is called through ctypes on the shared library the build
makes (build/libporta.so, or the path in $PORTA_LIBRARY)."""
import ctypes
import json
import os
import pathlib
import struct

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_RANK = 16

# porta_dtype's order (include/porta.h).
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]


class Info(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("sizes", ctypes.c_int64 * MAX_RANK), ("data_offset", ctypes.c_uint64),
                ("bytes", ctypes.c_uint64)]


class Entry(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("tensor", ctypes.c_void_p)]


class Pair(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p)]


def _load_libporta():
    path = pathlib.Path(os.environ.get("PORTA_LIBRARY", ROOT / "build" / "libporta.so"))
    if not path.exists():
        pytest.fail(f"libporta not found at {path}: build it (`make build`) or set PORTA_LIBRARY")
    lib = ctypes.CDLL(str(path))
    if not hasattr(lib, "porta_safetensors_open"):
        pytest.fail(f"{path} predates the safetensors API: rebuild it (`make build`)")
    P = ctypes.c_void_p
    signatures = {
        "porta_status_message": (ctypes.c_char_p, [P]),
        "porta_status_free": (None, [P]),
        "porta_device_get": (P, [ctypes.c_int, ctypes.POINTER(P)]),
        "porta_tensor_from_host": (P, [P, ctypes.c_int, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_int64), P, ctypes.POINTER(P)]),
        "porta_tensor_to_host": (P, [P, P, ctypes.c_size_t]),
        "porta_tensor_release": (None, [P]),
        "porta_safetensors_open": (P, [ctypes.c_char_p, ctypes.POINTER(P)]),
        "porta_safetensors_close": (None, [P]),
        "porta_safetensors_count": (ctypes.c_int, [P]),
        "porta_safetensors_name": (ctypes.c_char_p, [P, ctypes.c_int]),
        "porta_safetensors_info_get": (P, [P, ctypes.c_char_p, ctypes.POINTER(Info)]),
        "porta_safetensors_get": (P, [P, ctypes.c_char_p, P, ctypes.POINTER(P)]),
        "porta_safetensors_metadata_count": (ctypes.c_int, [P]),
        "porta_safetensors_metadata_at": (P, [P, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                              ctypes.POINTER(ctypes.c_char_p)]),
        "porta_safetensors_save": (P, [ctypes.c_char_p, ctypes.POINTER(Entry), ctypes.c_int,
                                       ctypes.POINTER(Pair), ctypes.c_int]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


@pytest.fixture(scope="module")
def lib():
    return _load_libporta()


class PortaError(Exception):
    pass


def _check(lib, status):
    if status:
        message = lib.porta_status_message(status).decode()
        lib.porta_status_free(status)
        raise PortaError(message)


def _cpu(lib):
    device = ctypes.c_void_p()
    _check(lib, lib.porta_device_get(0, ctypes.byref(device)))
    return device


def porta_read(lib, path):
    """(tensors by name in file order, metadata) read by libporta."""
    handle = ctypes.c_void_p()
    _check(lib, lib.porta_safetensors_open(str(path).encode(), ctypes.byref(handle)))
    try:
        tensors = {}
        for i in range(lib.porta_safetensors_count(handle)):
            name = lib.porta_safetensors_name(handle, i)
            info = Info()
            _check(lib, lib.porta_safetensors_info_get(handle, name, ctypes.byref(info)))
            out = torch.empty(list(info.sizes[:info.rank]), dtype=DTYPES[info.dtype])
            assert out.numel() * out.element_size() == info.bytes
            tensor = ctypes.c_void_p()
            _check(lib, lib.porta_safetensors_get(handle, name, _cpu(lib), ctypes.byref(tensor)))
            try:
                _check(lib, lib.porta_tensor_to_host(tensor, out.data_ptr(), info.bytes))
            finally:
                lib.porta_tensor_release(tensor)
            tensors[name.decode()] = out
        metadata = {}
        for i in range(lib.porta_safetensors_metadata_count(handle)):
            key, value = ctypes.c_char_p(), ctypes.c_char_p()
            _check(lib, lib.porta_safetensors_metadata_at(handle, i, ctypes.byref(key),
                                                          ctypes.byref(value)))
            metadata[key.value.decode()] = value.value.decode()
        return tensors, metadata
    finally:
        lib.porta_safetensors_close(handle)


def porta_write(lib, path, tensors, metadata=None):
    device = _cpu(lib)
    made = []
    try:
        entries = (Entry * max(len(tensors), 1))()
        for i, (name, t) in enumerate(tensors.items()):
            t = t.contiguous()
            sizes = (ctypes.c_int64 * max(t.dim(), 1))(*t.shape)
            handle = ctypes.c_void_p()
            _check(lib, lib.porta_tensor_from_host(device, DTYPES.index(t.dtype), t.dim(), sizes,
                                                   t.data_ptr(), ctypes.byref(handle)))
            made.append(handle)
            entries[i] = Entry(name.encode(), handle)
        metadata = metadata or {}
        pairs = (Pair * max(len(metadata), 1))(
            *[Pair(k.encode(), v.encode()) for k, v in metadata.items()])
        _check(lib, lib.porta_safetensors_save(str(path).encode(), entries, len(tensors), pairs,
                                               len(metadata)))
    finally:
        for handle in made:
            lib.porta_tensor_release(handle)


def sample_tensors():
    """Every dtype at ranks 0 to 4, empty tensors, NaN/inf/-0 in floats,
    names that need escaping in JSON."""
    g = torch.Generator().manual_seed(0)
    shapes = [(), (5,), (2, 3), (2, 1, 3), (2, 2, 1, 3)]
    tensors = {}
    for dtype in DTYPES:
        short = str(dtype).removeprefix("torch.")
        for rank, shape in enumerate(shapes):
            if dtype == torch.bool:
                t = torch.rand(shape, generator=g) > 0.5
            elif dtype.is_floating_point:
                t = (torch.randn(shape, generator=g, dtype=torch.float64) * 100).to(dtype)
                if t.numel() >= 4:
                    t.view(-1)[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0])
            else:
                info = torch.iinfo(dtype)
                t = torch.randint(info.min, info.max, shape, generator=g, dtype=dtype)
            tensors[f"{short}.rank{rank}"] = t
    tensors["empty"] = torch.zeros(0)
    tensors["empty.3d"] = torch.zeros(2, 0, 3, dtype=torch.int64)
    tensors['caf\u00e9 "quoted" \\ \u2603\n'] = torch.arange(3, dtype=torch.int16)
    return tensors


METADATA = {"format": "pt", "note": 'round "trip" \u00e9\n', "\u2603": ""}


def assert_same(got, want):
    assert got.keys() == want.keys()
    for name, t in want.items():
        g = got[name]
        assert g.dtype == t.dtype and g.shape == t.shape, name
        # Bitwise, so NaN payloads and -0.0 count.
        assert torch.equal(g.reshape(-1).view(torch.uint8), t.reshape(-1).view(torch.uint8)), name


def test_files_from_python_read_in_c(lib, tmp_path):
    tensors = sample_tensors()
    path = tmp_path / "from_python.safetensors"
    save_file(tensors, str(path), metadata=METADATA)
    got, metadata = porta_read(lib, path)
    assert_same(got, tensors)
    assert metadata == METADATA


def test_files_from_c_read_in_python(lib, tmp_path):
    tensors = sample_tensors()
    path = tmp_path / "from_c.safetensors"
    porta_write(lib, path, tensors, METADATA)
    assert_same(load_file(str(path)), tensors)
    with safe_open(str(path), framework="pt") as f:
        assert f.metadata() == METADATA
        assert set(f.keys()) == set(tensors)
    assert [p.name for p in tmp_path.iterdir()] == ["from_c.safetensors"]  # no temporary left


def test_c_rewrites_a_python_file_unchanged(lib, tmp_path):
    """Python -> C read -> C write -> Python read: the same tensors."""
    tensors = {"w": torch.randn(4, 5), "b": torch.zeros(5, dtype=torch.bfloat16),
               "ids": torch.arange(7), "mask": torch.tensor([True, False])}
    first, second = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    save_file(tensors, str(first))
    read, _ = porta_read(lib, first)
    porta_write(lib, second, read)
    assert_same(load_file(str(second)), tensors)


def test_strided_torch_tensors_written_by_c(lib, tmp_path):
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()  # porta_write packs it
    path = tmp_path / "t.safetensors"
    porta_write(lib, path, {"t": t})
    assert torch.equal(load_file(str(path))["t"], t)


def _file(header, data=b""):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def _u8(begin, end, shape=None):
    return {"dtype": "U8", "shape": shape or [end - begin], "data_offsets": [begin, end]}


HOSTILE = {
    "overlap": (_file({"a": _u8(0, 4), "b": _u8(2, 6)}, bytes(6)), "an overlap of 2 bytes"),
    "gap": (_file({"a": _u8(0, 4), "b": _u8(6, 10)}, bytes(10)), "a gap of 2 bytes"),
    "past the end": (_file({"a": _u8(0, 4)}, bytes(2)), "within the 2-byte data section"),
    "left over": (_file({"a": _u8(0, 4)}, bytes(8)), "4 bytes left over"),
    "size mismatch": (_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}},
                            bytes(4)), "expected 8 bytes for shape [2] of F32"),
    "overflow": (_file({"a": {"dtype": "F32", "shape": [2**32, 2**32], "data_offsets": [0, 4]}},
                       bytes(4)), "the product overflows"),
    "negative": (_file({"a": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 0]}}),
                 "got -1"),
    "bad dtype": (_file({"a": {"dtype": "Q8", "shape": [1], "data_offsets": [0, 1]}}, bytes(1)),
                  'got "Q8"'),
    "bad json": (_file(b'{"a": '), "expected a value"),
    "invalid utf-8": (_file(b'{"\xff":1}'), "expected valid UTF-8"),
    "header past the end": (struct.pack("<Q", 1000) + b"{}", "past the end of the file"),
    "header over the cap": (struct.pack("<Q", 100_000_001) + b"{}", "at most 100000000 bytes"),
    "truncated": (b"\x02\x00\x00", "expected at least 8 bytes"),
    "not an object": (_file(b"[]"), "expected the header to start with '{', got '['"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_files_rejected_by_both(lib, tmp_path, case):
    data, message = HOSTILE[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(PortaError) as raised:
        porta_read(lib, path)
    assert message in str(raised.value)
    assert str(path) in str(raised.value)
    with pytest.raises(Exception):
        load_file(str(path))


def test_edges_accepted_by_both(lib, tmp_path):
    """Padding after the JSON and empty tensors sharing an offset are valid."""
    header = json.dumps({"a": _u8(0, 4), "e": {"dtype": "F64", "shape": [0, 3],
                                               "data_offsets": [4, 4]}}).encode() + b"    "
    path = tmp_path / "edge.safetensors"
    path.write_bytes(_file(header, bytes([1, 2, 3, 4])))
    got, _ = porta_read(lib, path)
    assert_same(got, load_file(str(path)))
    assert got["a"].tolist() == [1, 2, 3, 4]
