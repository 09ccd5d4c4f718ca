"""GPT-2-style and BERT-style models from Hugging Face transformers configs
run on porta with the outputs of PyTorch's CPU: every op of their forward
passes (both attention implementations transformers offers, with a padding
mask for BERT) goes through porta's kernels, op by op, in fused eager mode
and through torch.compile(backend="porta"); one backward pass of GPT-2."""
import pytest
import torch

import hf_models
import torch_porta


ATTENTIONS = ["eager", "sdpa"]


@pytest.fixture(autouse=True)
def no_cpu_fallback():
    """Every op runs on porta: none falls back to PyTorch's CPU kernels."""
    torch_porta.reset_metrics()
    yield
    assert torch_porta.metrics()["fallbacks"] == {}


def _same(got, expected):
    assert got.device.type == "porta"
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_gpt2_logits(attention):
    model, ids = hf_models.gpt2(attention), hf_models.token_ids()
    with torch.no_grad():
        expected = model(ids).logits
        got = model.to("porta")(ids.to("porta")).logits
    _same(got, expected)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_bert_hidden_states_with_padding(attention):
    model, ids, mask = hf_models.bert(attention), hf_models.token_ids(), hf_models.padding_mask()
    with torch.no_grad():
        expected = model(ids, attention_mask=mask)
        got = model.to("porta")(ids.to("porta"), attention_mask=mask.to("porta"))
    _same(got.last_hidden_state, expected.last_hidden_state)
    _same(got.pooler_output, expected.pooler_output)


def _fused(model):
    """The model run in fused eager mode (ops recorded, fused, run at the
    first read)."""
    def run(*args):
        previous = torch_porta.get_eager_mode()
        torch_porta.set_eager_mode("fused")
        try:
            out = model(*args)[0]
            return out.cpu().to("porta")  # the read that runs the recorded trace
        finally:
            torch_porta.set_eager_mode(previous)
    return run


def _compiled(model):
    compiled = torch.compile(model, backend="porta")
    return lambda *args: compiled(*args)[0]


# torch.compile takes seconds per model: transformers' default attention only.
@pytest.mark.parametrize("how,attention", [(_fused, "eager"), (_fused, "sdpa"),
                                           (_compiled, "sdpa")],
                         ids=["fused-eager", "fused-sdpa", "compile-sdpa"])
@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_fused_and_compiled(how, name, attention):
    model = getattr(hf_models, name)(attention)
    args = (hf_models.token_ids(),) if name == "gpt2" else \
        (hf_models.token_ids(), hf_models.padding_mask())
    with torch.no_grad():
        expected = model(*args)[0]
        got = how(model.to("porta"))(*[a.to("porta") for a in args])
    _same(got, expected)


def _to_porta_keeping_ties(model):
    """model.to("porta") with parameters swapped in place (the other way
    Module.to keeps GPT-2's tied input embedding and output projection one
    parameter; plain .to shallow-copies, test_to_porta_keeps_tied_weights)."""
    swap = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        return model.to("porta")
    finally:
        torch.__future__.set_swap_module_params_on_conversion(swap)


def test_to_porta_keeps_tied_weights():
    model = hf_models.gpt2().to("porta")
    assert model.lm_head.weight is model.transformer.wte.weight


def test_gpt2_training_step_gradients():
    """One backward pass through GPT-2 (loss over shifted labels): the
    gradients of every parameter, the tied embedding included, match the
    CPU's."""
    cpu_model, ids = hf_models.gpt2("sdpa"), hf_models.token_ids()
    porta_model = _to_porta_keeping_ties(hf_models.gpt2("sdpa"))
    assert porta_model.lm_head.weight is porta_model.transformer.wte.weight
    cpu_model(ids, labels=ids).loss.backward()
    porta_model(ids.to("porta"), labels=ids.to("porta")).loss.backward()
    for (name, p), (_, q) in zip(cpu_model.named_parameters(), porta_model.named_parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-4, atol=1e-5, msg=name)
