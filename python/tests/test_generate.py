"""Token generation with a KV cache: small GPT-2 and Llama models from
transformers configs exported with torch_porta.export_causal_lm, their
logits equal to PyTorch's for a prompt fed step by step and for decode
steps after it, `porta generate`'s greedy tokens equal to transformers'
generate(do_sample=False), sampling reproducible by seed, and `porta
serve`'s generate and generate_stream endpoints giving the same tokens,
with two concurrent requests decoded in the same steps (/metrics)."""
import json
import os
import subprocess
import threading

import pytest
import torch

import hf_models
import torch_porta
from test_export import run_exported
from test_serve import CLI, Server

pytestmark = pytest.mark.serial

MAX_LENGTH = 32


def porta_generate(path, ids, *options):
    done = subprocess.run([CLI, "generate", str(path), "--ids", ",".join(map(str, ids)),
                           "--device", "porta:0", *options], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return [int(t) for t in done.stdout.strip().split(",")]


def transformers_greedy(model, ids, tokens):
    prompt = torch.tensor([ids])
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                             max_new_tokens=tokens, eos_token_id=None, pad_token_id=0)
    return out[0, len(ids):].tolist()


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    model = hf_models.gpt2("eager")
    path = tmp_path_factory.mktemp("generate") / "gpt2.porta"
    ep = torch_porta.export_causal_lm(model, path, max_length=MAX_LENGTH, max_batch=4)
    return model, path, ep


def test_exported_step_logits_match_pytorch(gpt2, tmp_path):
    """Six steps on a batch of two: a 4-token prompt fed one token per step
    (the prefill), then two decode steps of tokens the model chose; each
    step's logits equal PyTorch's full forward at that position."""
    model, path, ep = gpt2
    names = [s.arg.name for s in ep.graph_signature.output_specs if s.kind.name == "USER_OUTPUT"]
    ids = hf_models.token_ids(2, 6, seed=4)
    with torch.no_grad():
        expected = model(input_ids=ids).logits
    shape = torch_porta.export_lm.cache_shape(model, MAX_LENGTH, batch=2)
    keys, values = torch.zeros(shape), torch.zeros(shape)
    for step in range(6):
        got = run_exported(path, (ids[:, step:step + 1], torch.tensor([step, step]), keys, values),
                           "porta:0", tmp_path)
        logits, keys, values = (got[n] for n in names)
        torch.testing.assert_close(logits[:, 0], expected[:, step], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_greedy_equals_transformers(family, gpt2, tmp_path):
    if family == "gpt2":
        model, path, _ = gpt2
    else:
        model = hf_models.llama()
        path = tmp_path / "llama.porta"
        torch_porta.export_causal_lm(model, path, max_length=MAX_LENGTH, max_batch=2)
    ids = hf_models.token_ids(1, 5, seed=7)[0].tolist()
    assert porta_generate(path, ids, "--max-tokens", "10") == transformers_greedy(model, ids, 10)


def test_sampling_is_reproducible_by_seed(gpt2):
    _, path, _ = gpt2
    options = ("--max-tokens", "12", "--temperature", "1.5", "--top-k", "50", "--top-p", "0.95")
    first = porta_generate(path, [1, 2, 3], *options, "--seed", "7")
    assert porta_generate(path, [1, 2, 3], *options, "--seed", "7") == first
    assert porta_generate(path, [1, 2, 3], *options, "--seed", "8") != first


def test_server_generate_stream_and_continuous_batching(gpt2):
    model, path, _ = gpt2
    ids = hf_models.token_ids(1, 5, seed=7)[0].tolist()
    expected = transformers_greedy(model, ids, 10)
    server = Server(path, "--max-batch", "4")
    try:
        body = {"input_ids": ids, "parameters": {"max_tokens": 10}}
        status, reply = server.json("/v2/models/gpt2/generate", body)
        assert status == 200, reply
        assert reply["output_ids"] == expected and reply["model_name"] == "gpt2"

        status, headers, data = server.request("/v2/models/gpt2/generate_stream",
                                               json.dumps(body).encode())
        assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
        assert headers["Transfer-Encoding"] == "chunked"  # sent as the tokens are made
        events = [json.loads(e[len("data: "):]) for e in data.decode().split("\n\n") if e]
        assert [e["output_ids"][0] for e in events] == expected

        sampled = {"input_ids": ids, "parameters": {"max_tokens": 8, "temperature": 1.0,
                                                    "seed": 3}}
        assert server.json("/v2/models/gpt2/generate", sampled) == \
            server.json("/v2/models/gpt2/generate", sampled)
        assert porta_generate(path, ids, "--max-tokens", "8", "--temperature", "1",
                              "--seed", "3") == server.json("/v2/models/gpt2/generate",
                                                            sampled)[1]["output_ids"]

        # Two requests at once: both take a slot and share decode steps.
        long = {"input_ids": ids, "parameters": {"max_tokens": 24}}
        replies = []
        threads = [threading.Thread(target=lambda: replies.append(
            server.json("/v2/models/gpt2/generate", long))) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [r[0] for r in replies] == [200, 200]
        assert replies[0][1]["output_ids"] == replies[1][1]["output_ids"]
        _, _, metrics = server.request("/metrics")
        metrics = metrics.decode()
        assert 'porta_serve_generate_max_active_sequences{model="gpt2"} 2' in metrics, metrics

        status, reply = server.json("/v2/models/gpt2/generate",
                                    {"input_ids": ids, "parameters": {"top_k": -1}})
        assert status == 400 and "parameters.top_k" in reply["error"]
    finally:
        assert server.stop() == 0
