"""Models exported with torch_porta.export run in the `porta` command, in a
process without Python, and give PyTorch's outputs on every device Porta
finds (the CPU; PoCL's OpenCL device where it is installed).

The command is $PORTA_CLI, else build/porta of the source tree."""
import os
import pathlib
import re
import stat
import sys
import subprocess

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

import torch_porta
from torch_porta.export import ExportError

import hf_models
import models

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("PORTA_CLI", str(ROOT / "build" / "porta"))


def porta(*args, check=True):
    """Runs the command with Python nowhere in its environment's way."""
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"the porta command is not built: {CLI} (set PORTA_CLI)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=300)
    if check and done.returncode:
        pytest.fail(f"porta {' '.join(map(str, args))} exited {done.returncode}:\n"
                    f"{done.stdout}{done.stderr}")
    return done


def devices():
    """porta:N of every device `porta devices` lists."""
    return re.findall(r"^(porta:\d+)\s", porta("devices").stdout, re.M)


def run_exported(path, inputs, device, tmp_path):
    """The outputs of `porta run` (a list, in the model's output order)."""
    names = [f"{i}" for i in range(len(inputs))]
    save_file({n: t.contiguous() for n, t in zip(names, inputs)}, tmp_path / "in.safetensors")
    out = tmp_path / f"out-{device.replace(':', '')}.safetensors"
    porta("run", path, "--input", tmp_path / "in.safetensors", "--output", out,
          "--device", device)
    return load_file(out)


def check_model(model, inputs, tmp_path, dynamic_shapes=None, more_inputs=(), atol=1e-5,
                rtol=1e-4):
    model = model.eval()
    path = tmp_path / "model.porta"
    ep = torch_porta.export(model, inputs, path, dynamic_shapes=dynamic_shapes)
    names = [s.arg.name for s in ep.graph_signature.output_specs
             if s.kind.name == "USER_OUTPUT"]
    for case in (inputs, *more_inputs):
        with torch.no_grad():
            expected = model(*case)
        expected = [expected] if isinstance(expected, torch.Tensor) else \
            [t for t in torch.utils._pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)]
        for device in devices():
            got = run_exported(path, case, device, tmp_path)
            assert len(got) == len(expected), (device, list(got))
            for name, want in zip(names, expected):
                torch.testing.assert_close(got[name], want, atol=atol, rtol=rtol,
                                           msg=lambda m: f"{device}, output {name}: {m}")
    return path


class Recurrent(nn.Module):
    def __init__(self, cell):
        super().__init__()
        torch.manual_seed(0)
        self.inner = cell()

    def forward(self, x):
        out, _ = self.inner.rnn(x)
        return F.log_softmax(self.inner.head(out), -1)


class TransformerLM(nn.Module):
    """The parity test's Transformer up to its logits."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.m = models.Transformer()

    def forward(self, tokens):
        m = self.m
        n, length = tokens.shape
        x = m.embed(tokens) + m.position(torch.arange(length, device=tokens.device))
        mask = nn.Transformer.generate_square_subsequent_mask(length, device=tokens.device)
        x = m.encoder(x, mask=mask, is_causal=True)
        q, k, v = m.qkv(m.norm(x)).view(n, length, 3, m.heads, -1).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + attended.transpose(1, 2).reshape(n, length, m.width)
        return m.out(x)


def test_mlp(tmp_path):
    torch.manual_seed(0)
    check_model(models.MLP().net, (torch.randn(16, 12),), tmp_path)


def test_resnet_block_with_batch_norm_in_eval(tmp_path):
    torch.manual_seed(0)
    model = models.CNN()
    with torch.no_grad():  # running statistics that are not the defaults
        for bn in (model.stem[1], model.block.bn1, model.block.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    check_model(model, (torch.randn(8, 3, 16, 16),), tmp_path)


@pytest.mark.parametrize("cell", [models.LSTM, models.GRU], ids=["lstm", "gru"])
def test_recurrent(cell, tmp_path):
    check_model(Recurrent(cell), (torch.randn(4, 7, 6),), tmp_path)


def test_transformer_encoder(tmp_path):
    tokens = torch.randint(0, models.Transformer.vocab, (4, models.Transformer.length),
                           generator=torch.Generator().manual_seed(1))
    check_model(TransformerLM(), (tokens,), tmp_path, atol=1e-4)


def test_dynamic_batch_size(tmp_path):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=64)
    path = check_model(models.MLP().net, (torch.randn(16, 12),), tmp_path,
                       dynamic_shapes=({0: batch},),
                       more_inputs=[(torch.randn(3, 12),), (torch.randn(40, 12),)])
    info = porta("inspect", path).stdout
    assert re.search(r"^  input\s+float32\s+\[batch, 12\]$", info, re.M), info
    # Outside the exported range: refused by the interpreter, naming the symbol.
    save_file({"x": torch.randn(65, 12)}, tmp_path / "big.safetensors")
    done = porta("run", path, "--input", tmp_path / "big.safetensors", "--output",
                 tmp_path / "o.safetensors", check=False)
    assert done.returncode == 1
    assert "symbol batch" in done.stderr and "[1, 64]" in done.stderr, done.stderr


def test_export_names_ops_porta_lacks(tmp_path, monkeypatch):
    export_module = sys.modules["torch_porta.export"]
    ops = dict(torch_porta._C.aten_ops())
    del ops["addmm"]
    monkeypatch.setattr(export_module._C, "aten_ops", lambda: ops)
    with pytest.raises(ExportError, match="does not have: addmm"):
        torch_porta.export(nn.Linear(3, 2), (torch.randn(2, 3),), tmp_path / "m.porta")


def test_inspect_and_bench(tmp_path):
    torch.manual_seed(0)
    path = check_model(models.MLP().net, (torch.randn(16, 12),), tmp_path)
    info = porta("inspect", path).stdout
    params = sum(p.numel() for p in models.MLP().net.parameters())
    assert f"parameters: {params}" in info, info
    assert re.search(r"^\s+3\s+addmm$", info, re.M), info
    report = tmp_path / "bench.json"
    out = porta("bench", path, "--devices", "all", "--iterations", "5", "--json", report).stdout
    assert "p50 ms" in out and "porta:0" in out, out
    import json
    numbers = json.loads(report.read_text())
    assert len(numbers["devices"]) == len(devices())
    assert all(d["p50_ms"] > 0 and d["p99_ms"] >= d["p50_ms"] for d in numbers["devices"])


def test_gpt2_from_transformers_config(tmp_path):
    check_model(hf_models.Logits(hf_models.gpt2()), (hf_models.token_ids(),), tmp_path, atol=1e-4)


def test_bert_from_transformers_config(tmp_path):
    check_model(hf_models.Encoder(hf_models.bert()), (hf_models.token_ids(), hf_models.padding_mask()),
                tmp_path, atol=1e-4)


def check_pt2(model, inputs, tmp_path, dynamic_shapes=None, more_inputs=(), atol=1e-5):
    """A .pt2 of torch.export.save (decomposed to Core ATen) runs in `porta run`."""
    model = model.eval()
    ep = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes).run_decompositions()
    path = tmp_path / "model.pt2"
    torch.export.save(ep, path)
    names = [s.arg.name for s in ep.graph_signature.output_specs]
    for case in (inputs, *more_inputs):
        with torch.no_grad():
            expected = model(*case)
        expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
        for device in devices():
            got = run_exported(path, case, device, tmp_path)
            for name, want in zip(names, expected):
                torch.testing.assert_close(got[name], want, atol=atol, rtol=1e-4,
                                           msg=lambda m: f"{device}, output {name}: {m}")
    return path


def test_pt2_mlp_with_dynamic_batch(tmp_path):
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=2, max=64)
    path = check_pt2(models.MLP().net, (torch.randn(16, 12),), tmp_path,
                     dynamic_shapes=({0: batch},), more_inputs=[(torch.randn(5, 12),)])
    info = porta("inspect", path).stdout
    assert "format: pt2 (schema 8." in info and "addmm" in info, info


def test_pt2_resnet_block_and_transformer(tmp_path):
    torch.manual_seed(0)
    check_pt2(models.CNN(), (torch.randn(2, 3, 16, 16),), tmp_path)
    tokens = torch.randint(0, models.Transformer.vocab, (2, models.Transformer.length),
                           generator=torch.Generator().manual_seed(1))
    check_pt2(TransformerLM(), (tokens,), tmp_path, atol=1e-4)


def test_pt2_not_decomposed_names_the_missing_op(tmp_path):
    """A program saved without run_decompositions() may call ops outside the
    aten layer: the command names the op and fails without running."""
    ep = torch.export.export(nn.Sequential(nn.Linear(3, 2), nn.Hardswish()),
                             (torch.randn(2, 3),))
    torch.export.save(ep, tmp_path / "raw.pt2")
    save_file({"0": torch.randn(2, 3)}, tmp_path / "in.safetensors")
    done = porta("run", tmp_path / "raw.pt2", "--input", tmp_path / "in.safetensors",
                 "--output", tmp_path / "o.safetensors", check=False)
    ops = torch_porta._C.aten_ops()
    if "linear" in ops and "hardswish" in ops:
        assert done.returncode == 0, done.stderr
    else:
        assert done.returncode == 1
        assert "which Porta's aten layer does not have" in done.stderr, done.stderr


def test_load_returns_a_callable_on_cpu_and_porta_tensors(tmp_path):
    torch.manual_seed(0)
    model = models.CNN().eval()
    x = torch.randn(2, 3, 16, 16)
    batch = torch.export.Dim("batch", min=1, max=8)
    torch_porta.export(model, (x,), tmp_path / "cnn.porta", dynamic_shapes=({0: batch},))
    loaded = torch_porta.load(tmp_path / "cnn.porta")
    assert loaded.input_names == ["x"] and loaded.input_shapes == [(None, 3, 16, 16)]
    assert loaded.parameter_count == sum(t.numel() for t in model.state_dict().values())
    with torch.no_grad():
        want = model(x)
        want_one = model(x[:1])
    got = loaded(x)
    assert got.device.type == "cpu"
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(loaded(x[:1]), want_one, atol=1e-5, rtol=1e-4)
    for index in range(torch_porta.device_count()):
        on_device = loaded(x.to(f"porta:{index}"))
        assert on_device.device == torch.device("porta", index)
        torch.testing.assert_close(on_device.cpu(), want, atol=1e-5, rtol=1e-4)
    with pytest.raises(RuntimeError, match=r"expected size 3 in dim 1"):
        loaded(torch.randn(2, 4, 16, 16))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        loaded(x, x)


def test_gpt2_with_dynamic_batch_and_sequence_length(tmp_path):
    batch = torch.export.Dim("batch", min=1, max=8)
    length = torch.export.Dim("length", min=2, max=64)
    more = [(hf_models.token_ids(batch=3, length=9, seed=2),),
            (hf_models.token_ids(batch=1, length=40, seed=3),)]
    path = check_model(hf_models.Logits(hf_models.gpt2()), (hf_models.token_ids(),), tmp_path,
                       dynamic_shapes=({0: batch, 1: length},), more_inputs=more, atol=1e-4)
    assert "[batch, length]" in porta("inspect", path).stdout


class _Twice(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        return y, y


def test_run_names_outputs_by_position_when_a_value_repeats(tmp_path):
    torch_porta.export(_Twice(), (torch.randn(3),), tmp_path / "twice.porta")
    x = torch.randn(3)
    got = run_exported(tmp_path / "twice.porta", (x,), "porta:0", tmp_path)
    assert sorted(got) == ["0", "1"]
    torch.testing.assert_close(got["0"], torch.relu(x))
    torch.testing.assert_close(got["1"], torch.relu(x))


def test_pt2_schema_table_is_current(tmp_path):
    """src/model/pt2_schemas.c (argument names and defaults for filling in
    what .pt2 archives leave out) matches the aten layer's ops and the
    installed PyTorch; regenerate it with python -m torch_porta._model_schema
    when an op is added."""
    from torch_porta import _model_schema
    fresh = tmp_path / "pt2_schemas.c"
    _model_schema.main(fresh)
    committed = ROOT / "src" / "model" / "pt2_schemas.c"
    assert fresh.read_text() == committed.read_text(), \
        "src/model/pt2_schemas.c is stale: run python -m torch_porta._model_schema " \
        "src/model/pt2_schemas.c"


def test_export_follows_links_and_refuses_fifos(tmp_path):
    """An export through a symbolic link replaces the file it leads to (the
    link stays); a FIFO or directory there is refused and left as it is."""
    model, x = nn.Linear(2, 2).eval(), torch.randn(1, 2)
    (tmp_path / "real.porta").write_bytes(b"old")
    os.chmod(tmp_path / "real.porta", 0o640)
    link = tmp_path / "link.porta"
    link.symlink_to("real.porta")
    torch_porta.export(model, (x,), link)
    assert link.is_symlink() and (tmp_path / "real.porta").stat().st_size > 3
    assert (tmp_path / "real.porta").stat().st_mode & 0o777 == 0o640
    assert "tensors: 2" in porta("inspect", link).stdout
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for refused, kind in [(fifo, "a FIFO"), (tmp_path, "a directory")]:
        with pytest.raises(OSError, match=f"got {kind}"):
            torch_porta.export(model, (x,), refused)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link.porta", "real.porta"]
