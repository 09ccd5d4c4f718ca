"""The numbers the README states about the aten layer and OpInfo are the library's own."""
import json
import pathlib
import re

import torch_porta

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_readme_counts_the_aten_layers_overloads():
    stated = re.search(r"aten layer \(`src/aten/`, (\d+) overloads\)", README.read_text())
    assert stated, "README no longer states the aten layer's overload count"
    assert int(stated.group(1)) == len(torch_porta._C.aten_ops())


def test_readme_counts_the_opinfo_outcomes_the_expected_list_holds():
    """The OpInfo outcomes the README states that opinfo_expected.json fixes
    (test_opinfo.py holds every OpInfo to that list): none through the
    fallback, the unsupported and the random ones."""
    stated = re.search(r"(\d+) pass, 0 fail, none runs through the CPU fallback, (\d+) need "
                       r"dtypes\s+or layouts porta lacks \([^)]*\), (\d+) depend on a random",
                       README.read_text())
    assert stated, "README no longer states the OpInfo outcomes in the expected form"
    expected = json.loads((pathlib.Path(__file__).with_name("opinfo_expected.json")).read_text())
    outcomes = [entry["status"] for entry in expected.values()]
    assert outcomes.count("fallback") == 0
    assert int(stated.group(2)) == outcomes.count("unsupported")
    assert int(stated.group(3)) == outcomes.count("random")
