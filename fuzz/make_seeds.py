"""Writes the seed corpora of fuzz_zip and fuzz_pt2 from the .pt2 fixture
tests/data/tiny.pt2 (made by tests/data/make_pt2.py).

    python fuzz/make_seeds.py

fuzz_zip: the fixture as PyTorch wrote it (data descriptors, aligned data,
ZIP64 end records), the same entries written by Python's zipfile (sizes in
the local headers), with forced ZIP64 local fields, and an empty archive.
fuzz_pt2: the fixture, and its records in fuzz_pt2's list format (name
line, bytes, separated by a line "@@") so mutations reach the JSON, with a
variant whose weight is marked pickled.
"""
import io
import os
import zipfile

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


if __name__ == "__main__":
    main()
