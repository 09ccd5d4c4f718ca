"""GPT-2-style and BERT-style models from Hugging Face transformers configs,
exported with torch_porta.export and run by the `porta` command (a process
without Python) on every device it lists: outputs equal to PyTorch's within
float32 tolerance, for both attention implementations transformers offers,
with a dynamic sequence length (and batch) checked at several sizes.

test_export.py covers the default configs at one shape; this file covers
what real use of these models adds. The command is $PORTA_CLI, else
build/porta of the source tree."""
import pytest
import torch
from torch.export import Dim

import hf_models
import torch_porta
from test_export import devices, run_exported


TOLERANCE = dict(atol=1e-4, rtol=1e-4)


def _flat(outputs):
    return [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)


def check_runs(model, path, ep, cases, tmp_path):
    """Every case through `porta run` on every device equals PyTorch's
    eager result."""
    names = [s.arg.name for s in ep.graph_signature.output_specs if s.kind.name == "USER_OUTPUT"]
    listed = devices()
    assert listed, "porta devices lists no device"
    for case in cases:
        with torch.no_grad():
            expected = _flat(model(*case))
        for device in listed:
            got = run_exported(path, case, device, tmp_path)
            assert sorted(got) == sorted(names), (device, list(got))
            for name, want in zip(names, expected):
                assert got[name].shape == want.shape, (device, name)
                torch.testing.assert_close(got[name], want, **TOLERANCE,
                                           msg=lambda m: f"{device}, {name}, {case[0].shape}: {m}")


def gpt2_cases():
    return [(hf_models.token_ids(2, 16),), (hf_models.token_ids(1, 5, seed=2),),
            (hf_models.token_ids(3, 37, seed=3),)]


def bert_cases():
    cases = []
    for batch, length, seed in ((2, 16, 1), (1, 5, 2), (3, 37, 3)):
        cases.append((hf_models.token_ids(batch, length, seed), hf_models.padding_mask(batch, length)))
    return cases


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_bert_dynamic_batch_and_sequence(attention, tmp_path):
    model = hf_models.Encoder(hf_models.bert(attention)).eval()
    batch, seq = Dim("batch", min=1, max=8), Dim("seq", min=2, max=128)
    dims = ({0: batch, 1: seq}, {0: batch, 1: seq})
    path = tmp_path / "bert.porta"
    ep = torch_porta.export(model, bert_cases()[0], path, dynamic_shapes=dims)
    check_runs(model, path, ep, bert_cases(), tmp_path)


def test_gpt2_dynamic_batch_and_sequence(tmp_path):
    model = hf_models.Logits(hf_models.gpt2("eager")).eval()
    dims = ({0: Dim("batch", min=1, max=8), 1: Dim("seq", min=2, max=128)},)
    path = tmp_path / "gpt2.porta"
    ep = torch_porta.export(model, gpt2_cases()[0], path, dynamic_shapes=dims)
    check_runs(model, path, ep, gpt2_cases(), tmp_path)


def test_gpt2_sdpa_attention_dynamic_sequence(tmp_path):
    """transformers' default attention (scaled_dot_product_attention)
    through torch_porta.export, with dynamic batch and sequence length."""
    model = hf_models.Logits(hf_models.gpt2("sdpa")).eval()
    dims = ({0: Dim("batch", min=1, max=8), 1: Dim("seq", min=2, max=128)},)
    path = tmp_path / "gpt2-sdpa.porta"
    ep = torch_porta.export(model, gpt2_cases()[0], path, dynamic_shapes=dims)
    check_runs(model, path, ep, gpt2_cases(), tmp_path)


def test_wider_deeper_gpt2(tmp_path):
    """Four layers, width 128, eight heads of 16."""
    model = hf_models.Logits(hf_models.gpt2("eager", layers=4, hidden=128, heads=8)).eval()
    path = tmp_path / "gpt2-wide.porta"
    ep = torch_porta.export(model, gpt2_cases()[0], path)
    check_runs(model, path, ep, gpt2_cases()[:1], tmp_path)
