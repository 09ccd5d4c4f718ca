"""The numbers the README states about the aten layer are the library's own."""
import pathlib
import re

import torch_porta

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_readme_counts_the_aten_layers_overloads():
    stated = re.search(r"aten layer \(`src/aten/`, (\d+) overloads\)", README.read_text())
    assert stated, "README no longer states the aten layer's overload count"
    assert int(stated.group(1)) == len(torch_porta._C.aten_ops())
