"""Exported models on the CPU: `porta bench` (Porta's C model runtime on the
CPU device, no Python in the process) against ONNX Runtime, in one run.

The models: a GPT-2-style and a BERT-style model from Hugging Face
transformers configs (random weights), and the eager issue's MLP and CNN
(python/tests/models.py). Each is exported twice from the same weights:
torch_porta.export to a .porta file, torch.onnx.export (the dynamo exporter)
to an .onnx file. Before timing, `porta run` and ONNX Runtime must both give
PyTorch's outputs on the same inputs.

Timing: both sides get the same thread count (--threads, default 1):
PORTA_NUM_THREADS for porta, intra_op_num_threads for ONNX Runtime (with one
inter-op thread, sequential execution, all graph optimizations). Each round
runs `porta bench --devices porta:0` (--iterations timed runs after --warmup)
and then as many ONNX Runtime runs in this process, timed one by one; a
round's figure is each side's median run. The result is the median over
--rounds rounds and the ratio porta / ONNX Runtime (below 1.0: porta is
faster). Milliseconds are shown for scale.

    .venv/bin/python bench/bench_onnxruntime.py [--threads N] [--rounds N]
        [--iterations N] [--warmup N] [--porta PATH] [--only NAME,...] [--json FILE]

Needs transformers, onnxruntime, onnx and onnxscript (scripts/setup.sh) and
the porta command (build/porta, or --porta / $PORTA_CLI).
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python" / "tests"))

import hf_models  # noqa: E402
import models  # noqa: E402

# Outputs of porta run and of ONNX Runtime against PyTorch's eager ones.
ATOL, RTOL = 1e-4, 1e-4


def workloads():
    """name -> (builder of the model, its inputs). Attention is transformers'
    "eager" implementation: Porta's exporter takes it as it is (see
    python/tests/test_export_hf.py for SDPA), and both runtimes then get the
    same graph of matmuls and softmax."""
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    return {
        "gpt2": (lambda: hf_models.Logits(hf_models.gpt2("eager")), (hf_models.token_ids(1, 64),)),
        "gpt2-wide": (lambda: hf_models.Logits(hf_models.gpt2("eager", layers=4, hidden=256, heads=8)),
                      (hf_models.token_ids(1, 128),)),
        "bert": (lambda: hf_models.Encoder(hf_models.bert("eager")),
                 (hf_models.token_ids(2, 64), hf_models.padding_mask(2, 64))),
        "bert-wide": (lambda: hf_models.Encoder(hf_models.bert("eager", layers=4, hidden=256, heads=8)),
                      (hf_models.token_ids(2, 128), hf_models.padding_mask(2, 128))),
        "mlp": (lambda: models.MLP().net, (torch.randn(16, 12, generator=gen),)),
        "cnn": (lambda: models.CNN(), (torch.randn(8, 3, 16, 16, generator=gen),)),
    }


def _flat(outputs):
    return [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)


def _close(name, got, want, what):
    torch.testing.assert_close(torch.as_tensor(got), want, atol=ATOL, rtol=RTOL,
                               msg=lambda m: f"{name}: {what} differs from PyTorch: {m}")


def export_both(name, model, inputs, directory):
    """The .porta and .onnx files of the model and a safetensors file of its
    inputs (named by position, as porta run reads them)."""
    import torch_porta
    from safetensors.torch import save_file
    porta_path = directory / f"{name}.porta"
    onnx_path = directory / f"{name}.onnx"
    input_path = directory / f"{name}-in.safetensors"
    torch_porta.export(model, inputs, porta_path)
    torch.onnx.export(model, inputs, str(onnx_path), dynamo=True, verbose=False)
    save_file({str(i): t.contiguous() for i, t in enumerate(inputs)}, input_path)
    return porta_path, onnx_path, input_path


def porta_command(args, *command, threads):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PORTA_NUM_THREADS"] = str(threads)
    done = subprocess.run([args.porta, *map(str, command)], capture_output=True, text=True,
                          env=env, timeout=600)
    if done.returncode:
        raise RuntimeError(f"porta {' '.join(map(str, command))} exited {done.returncode}: "
                           f"{done.stderr.strip()}")
    return done.stdout


def check_porta_run(args, name, porta_path, input_path, expected, directory):
    from safetensors.torch import load_file
    out_path = directory / f"{name}-out.safetensors"
    porta_command(args, "run", porta_path, "--input", input_path, "--output", out_path,
                  "--device", "porta:0", threads=args.threads)
    got = load_file(out_path)
    if len(got) != len(expected):
        raise RuntimeError(f"{name}: porta run gave {len(got)} outputs, PyTorch {len(expected)}")
    # Outputs are named after the exported graph's outputs, in its order;
    # safetensors keeps them sorted by name, so match each by shape and values.
    for want in expected:
        if not any(t.shape == want.shape and torch.allclose(t, want, atol=ATOL, rtol=RTOL)
                   for t in got.values()):
            raise RuntimeError(f"{name}: no output of porta run matches PyTorch's "
                               f"{tuple(want.shape)} output")


def ort_session(onnx_path, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])


def ort_median_ms(session, feeds, iterations, warmup):
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def porta_median_ms(args, porta_path, input_path, directory):
    report = directory / "bench.json"
    porta_command(args, "bench", porta_path, "--devices", "porta:0", "--input", input_path,
                  "--iterations", args.iterations, "--warmup", args.warmup, "--json", report,
                  threads=args.threads)
    return json.loads(report.read_text())["devices"][0]["p50_ms"]


def bench_one(args, name, build, inputs, directory):
    model = build().eval()
    with torch.no_grad():
        expected = _flat(model(*inputs))
    porta_path, onnx_path, input_path = export_both(name, model, inputs, directory)
    check_porta_run(args, name, porta_path, input_path, expected, directory)
    session = ort_session(onnx_path, args.threads)
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)}
    for got, want in zip(session.run(None, feeds), expected):
        _close(name, got, want, "ONNX Runtime")
    porta_ms, ort_ms = [], []
    for _ in range(args.rounds):
        porta_ms.append(porta_median_ms(args, porta_path, input_path, directory))
        ort_ms.append(ort_median_ms(session, feeds, args.iterations, args.warmup))
    porta_median, ort_median = statistics.median(porta_ms), statistics.median(ort_ms)
    return {"model": name, "porta_ms": porta_median, "onnxruntime_ms": ort_median,
            "ratio": porta_median / ort_median, "porta_rounds_ms": porta_ms,
            "onnxruntime_rounds_ms": ort_ms}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of porta's CPU backend and of ONNX Runtime's intra-op pool")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=50, help="timed runs per round")
    parser.add_argument("--warmup", type=int, default=5, help="untimed runs before each round")
    parser.add_argument("--porta", default=os.environ.get("PORTA_CLI", str(ROOT / "build" / "porta")))
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--json", help="write the results to this file too")
    args = parser.parse_args()
    if not os.access(args.porta, os.X_OK):
        sys.exit(f"the porta command is not built: {args.porta} (make, or --porta PATH)")
    torch.set_num_threads(args.threads)
    os.environ["PORTA_NUM_THREADS"] = str(args.threads)  # torch_porta's pool, used by export
    import onnxruntime
    chosen = workloads()
    if args.only:
        unknown = set(args.only.split(",")) - set(chosen)
        if unknown:
            sys.exit(f"--only: no model {', '.join(sorted(unknown))}; there are {', '.join(chosen)}")
        chosen = {n: chosen[n] for n in args.only.split(",")}
    print(f"porta bench (porta:0, CPU backend) vs ONNX Runtime {onnxruntime.__version__} "
          f"(CPUExecutionProvider), {args.threads} thread(s) each, median of {args.rounds} "
          f"rounds of {args.iterations} runs")
    print(f"{'model':<10} {'porta ms':>10} {'ORT ms':>10} {'porta/ORT':>10}")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (build, inputs) in chosen.items():
            try:
                result = bench_one(args, name, build, inputs, pathlib.Path(tmp))
            except Exception as error:  # one failing model does not hide the others
                print(f"{name:<10} failed: {type(error).__name__}: {error}")
                results.append({"model": name, "error": f"{type(error).__name__}: {error}"})
                continue
            results.append(result)
            print(f"{name:<10} {result['porta_ms']:10.3f} {result['onnxruntime_ms']:10.3f} "
                  f"{result['ratio']:10.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "rounds": args.rounds,
                       "iterations": args.iterations, "results": results}, f, indent=1)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
