"""`porta serve` against Porta in-process and transformers, in one run: the
speed targets of issue 22.

1. Throughput: --clients (default 64) concurrent clients, each a keep-alive
   HTTP connection sending JSON infer requests of one row to the GPT-2 config
   of python/tests/hf_models.py (--seq tokens, a dynamic batch dim), for
   --seconds, to a server with --batch-delay-ms (default 0, the server's).
   The clients are wrk's (Debian: apt-get install wrk), one thread: a load
   generator in C, so the clients' own work and wake-ups are not what
   bounds the rate (Python clients, tried first, took 4-6 ms to send the
   next request after a reply, during which the model waited). The batch
   the batcher reaches is read from /metrics (batch_rows_total /
   batches_total); then `porta bench --size batch=THAT` runs the same
   model in one process with no HTTP. Ratio: served rows/s / in-process
   samples/s (target >= 0.9). The clients' CPU time and the server's are
   reported beside the wall time.
2. Added latency: one client, requests one after the other, to a server
   with --batch-delay-ms 0 (a window would add itself to a lone request);
   p50 of the request's time (seen by the client, its Python included)
   minus p50 of `porta bench` at batch 1 (target <= 1 ms).
3. Generation: tokens/s of `porta serve`'s /generate (--gen-batch
   concurrent requests on a server of as many slots), of `porta generate`
   (one sequence; its load time is taken out by timing --max-tokens 1
   too, the fastest of 7 runs each) and of transformers' greedy
   `generate` on PyTorch's CPU at the same batch, prompt length and new
   tokens, for the GPT-2 and Llama configs.
   Ratio: porta / transformers (target >= 1).

Outputs come back as binary tensor data (what tritonclient asks for by
default): JSON text of GPT-2's [1, 16, 1000] logits costs the server more
than the model does. Each figure is the median of --rounds rounds, each
ratio the median of the rounds' ratios, both sides measured in the same
round. Milliseconds are shown for scale only.

    .venv/bin/python bench/bench_serve.py [--rounds N] [--seconds S]
        [--clients N] [--batch-delay-ms T] [--gen-batch N] [--gen-tokens N]
        [--threads N] [--porta PATH] [--only throughput,latency,generate]
        [--json FILE]

Needs wrk, transformers and the porta command (build/porta, or --porta /
$PORTA_CLI) built with libmicrohttpd.
"""
import argparse
import gc
import http.client
import json
import os
import pathlib
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python" / "tests"))

import hf_models  # noqa: E402

MAX_BATCH = 64


class Server:
    """`porta serve MODEL --port 0 ...` until stop()."""

    def __init__(self, cli, model, *options, env=None):
        self.process = subprocess.Popen([cli, "serve", str(model), "--port", "0", *options],
                                        stderr=subprocess.PIPE, text=True, env=env)
        port, lines = None, []
        while port is None:
            line = self.process.stderr.readline()
            if not line:
                raise SystemExit("porta serve did not start:\n" + "".join(lines))
            lines.append(line)
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            port = int(found.group(1)) if found else None
        self.port = port
        # The access log is read away so that the server never blocks on it.
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()

    def get(self, path):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        connection.request("GET", path)
        return connection.getresponse().read().decode()

    def metric(self, series):
        found = re.search(rf"^{re.escape(series)} (\S+)$", self.get("/metrics"), re.M)
        return float(found.group(1)) if found else 0.0

    def cpu_seconds(self):
        fields = pathlib.Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1]
        utime, stime = fields.split()[11:13]
        return (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=60)


def porta_bench(cli, model, batch, iterations, env):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([cli, "bench", str(model), "--size", f"batch={batch}", "--iterations",
                        str(iterations), "--warmup", "3", "--json", out.name], check=True,
                       capture_output=True, env=env)
        return json.load(open(out.name))["devices"][0]


def client_loop(port, path, body, deadline, times):
    """Keep-alive requests on a raw socket until the deadline: the request's
    bytes are built once and the reply is read by its Content-Length, so the
    client spends little CPU of its own (http.client parses every header
    in Python, which on 2 cores made the clients the bottleneck)."""
    request = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while time.monotonic() < deadline:
            start = time.perf_counter()
            connection.sendall(request)
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(1 << 16)
            head, _, rest = data.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"infer answered {head.splitlines()[0]!r}")
            length = int(re.search(rb"(?im)^content-length: *(\d+)", head).group(1))
            while len(rest) < length:
                rest += connection.recv(max(1 << 16, length - len(rest)))
            times.append(time.perf_counter() - start)


def infer_body(seq):
    ids = hf_models.token_ids(1, seq, seed=3)[0].tolist()
    return json.dumps({"inputs": [{"name": "ids", "shape": [1, seq], "datatype": "INT64",
                                   "data": ids}],
                       "parameters": {"binary_data_output": True}}).encode()


def wrk_script(directory, body):
    """wrk's Lua script: POST the body (read from a file beside it)."""
    (directory / "infer.json").write_bytes(body)
    script = directory / "infer.lua"
    script.write_text(f'local f = io.open("{directory / "infer.json"}", "rb")\n'
                      'wrk.method = "POST"\nwrk.body = f:read("*a")\nf:close()\n'
                      'wrk.headers["Content-Type"] = "application/json"\n')
    return script


def throughput_round(args, server, script):
    """One round of wrk's keep-alive connections against the server."""
    batches0 = server.metric('porta_serve_batches_total{model="gpt2"}')
    rows0 = server.metric('porta_serve_batch_rows_total{model="gpt2"}')
    cpu0 = server.cpu_seconds()
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(["wrk", "-t1", f"-c{args.clients}", f"-d{args.seconds}s", "-s",
                          str(script), f"http://127.0.0.1:{server.port}/v2/models/gpt2/infer"],
                         check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk saw failed requests:\n{out}")
    batches = server.metric('porta_serve_batches_total{model="gpt2"}') - batches0
    rows = server.metric('porta_serve_batch_rows_total{model="gpt2"}') - rows0
    client_cpu = (children.ru_utime + children.ru_stime) - (children0.ru_utime + children0.ru_stime)
    return {"rows_per_s": float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1)),
            "mean_batch": rows / batches,
            "client_cpu_s_per_s": client_cpu / wall,
            "server_cpu_s_per_s": (server.cpu_seconds() - cpu0) / wall}


def bench_throughput(args, cli, model, directory, env):
    if not shutil.which("wrk"):
        raise SystemExit("bench_serve: the throughput part runs wrk's clients: install wrk "
                         "(Debian/Ubuntu: apt-get install wrk), or --only latency,generate")
    server = Server(cli, model, "--max-batch", str(MAX_BATCH), "--batch-delay-ms",
                    str(args.batch_delay_ms), "--max-connections", str(args.clients + 16),
                    env=env)
    script = wrk_script(directory, infer_body(args.seq))
    try:
        rounds = []
        for _ in range(args.rounds):
            served = throughput_round(args, server, script)
            batch = max(1, round(served["mean_batch"]))
            served["bench_samples_per_s"] = porta_bench(cli, model, batch, 50, env)["samples_per_s"]
            served["ratio"] = served["rows_per_s"] / served["bench_samples_per_s"]
            rounds.append(served)
    finally:
        server.stop()
    result = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    print(f"throughput, {args.clients} clients: served {result['rows_per_s']:.0f} rows/s at "
          f"mean batch {result['mean_batch']:.1f}; porta bench {result['bench_samples_per_s']:.0f}"
          f" samples/s; ratio {result['ratio']:.3f} (target >= 0.9); CPU s per s: clients "
          f"{result['client_cpu_s_per_s']:.2f}, server {result['server_cpu_s_per_s']:.2f}"
          f" of {os.cpu_count()} cores", flush=True)
    return result


def bench_latency(args, cli, model, env):
    server = Server(cli, model, "--max-batch", str(MAX_BATCH), "--batch-delay-ms", "0", env=env)
    body = infer_body(args.seq)
    try:
        rounds = []
        for _ in range(args.rounds):
            times = []
            client_loop(server.port, "/v2/models/gpt2/infer", body, time.monotonic() + 1, [])
            client_loop(server.port, "/v2/models/gpt2/infer", body,
                        time.monotonic() + args.seconds, times)
            request_ms = 1e3 * statistics.median(times)
            model_ms = porta_bench(cli, model, 1, 200, env)["p50_ms"]
            rounds.append({"request_p50_ms": request_ms, "model_p50_ms": model_ms,
                           "added_ms": request_ms - model_ms})
    finally:
        server.stop()
    result = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    print(f"latency, 1 client: request p50 {result['request_p50_ms']:.3f} ms, model p50 "
          f"{result['model_p50_ms']:.3f} ms, added {result['added_ms']:.3f} ms (target <= 1)",
          flush=True)
    return result


def transformers_tokens_per_s(model, prompt, tokens):
    with torch.no_grad():
        start = time.perf_counter()
        model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                       max_new_tokens=tokens, min_new_tokens=tokens, eos_token_id=None,
                       pad_token_id=0)
        return prompt.shape[0] * tokens / (time.perf_counter() - start)


def porta_generate_seconds(cli, path, ids, tokens, env):
    start = time.perf_counter()
    subprocess.run([cli, "generate", str(path), "--ids", ",".join(map(str, ids)),
                    "--max-tokens", str(tokens)], check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def serve_tokens_per_s(server, prompts, tokens):
    def one(ids):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
        connection.request("POST", "/v2/models/model/generate", json.dumps(
            {"input_ids": ids, "parameters": {"max_tokens": tokens}}))
        reply = connection.getresponse()
        assert reply.status == 200, reply.read()
        assert len(json.loads(reply.read())["output_ids"]) == tokens
    threads = [threading.Thread(target=one, args=(ids,)) for ids in prompts]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(prompts) * tokens / (time.perf_counter() - start)


def bench_generate(args, cli, directory, env):
    import torch_porta
    results = {}
    for family in ("gpt2", "llama"):
        model = hf_models.gpt2("eager") if family == "gpt2" else hf_models.llama()
        model.generation_config.use_cache = True
        model.config.use_cache = True
        path = directory / family / "model.porta"
        path.parent.mkdir()
        max_length = args.gen_prompt + args.gen_tokens + 1
        torch_porta.export_causal_lm(model, path, max_length=max_length, max_batch=args.gen_batch)
        prompts = hf_models.token_ids(args.gen_batch, args.gen_prompt, seed=5)
        server = Server(cli, path, "--max-batch", str(args.gen_batch), env=env)
        rounds = []
        try:
            serve_tokens_per_s(server, prompts[:1].tolist(), 2)
            for _ in range(args.rounds):
                hf_batch = transformers_tokens_per_s(model, prompts, args.gen_tokens)
                hf_one = transformers_tokens_per_s(model, prompts[:1], args.gen_tokens)
                served = serve_tokens_per_s(server, prompts.tolist(), args.gen_tokens)
                ids = prompts[0].tolist()
                # Each process loads the model: the difference of the fastest
                # of 7 runs of N tokens and of 1 token leaves N - 1 tokens'
                # time (the fastest: the load's time is noisy on a busy machine).
                cli_seconds = (min(porta_generate_seconds(cli, path, ids, args.gen_tokens, env)
                                   for _ in range(7))
                               - min(porta_generate_seconds(cli, path, ids, 1, env)
                                     for _ in range(7)))
                if cli_seconds <= 0:
                    raise SystemExit("porta generate: the load time's noise hid the tokens' "
                                     "time; give a larger --gen-tokens")
                cli_rate = (args.gen_tokens - 1) / cli_seconds
                rounds.append({"transformers_batch_tok_s": hf_batch, "serve_tok_s": served,
                               "serve_ratio": served / hf_batch,
                               "transformers_1_tok_s": hf_one, "generate_tok_s": cli_rate,
                               "generate_ratio": cli_rate / hf_one})
        finally:
            server.stop()
        result = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        print(f"generate {family}, batch {args.gen_batch}, prompt {args.gen_prompt}, "
              f"{args.gen_tokens} tokens: serve {result['serve_tok_s']:.0f} tok/s vs transformers "
              f"{result['transformers_batch_tok_s']:.0f}, ratio {result['serve_ratio']:.3f}; "
              f"batch 1: porta generate {result['generate_tok_s']:.0f} vs transformers "
              f"{result['transformers_1_tok_s']:.0f}, ratio {result['generate_ratio']:.3f} "
              "(target >= 1)", flush=True)
        results[family] = result
    return results


def export_gpt2(path, seq):
    import torch_porta
    model = hf_models.Logits(hf_models.gpt2("eager"))
    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    torch_porta.export(model, (hf_models.token_ids(2, seq),), path,
                       dynamic_shapes=({0: batch},))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--batch-delay-ms", type=int, default=0)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--gen-batch", type=int, default=4)
    parser.add_argument("--gen-prompt", type=int, default=8)
    parser.add_argument("--gen-tokens", type=int, default=96)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--porta", default=os.environ.get("PORTA_CLI",
                                                          str(ROOT / "build" / "porta")))
    parser.add_argument("--only", default="throughput,latency,generate")
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    env = dict(os.environ, PORTA_NUM_THREADS=str(args.threads))
    only = set(args.only.split(","))
    results = {"threads": args.threads, "rounds": args.rounds}
    with tempfile.TemporaryDirectory() as tmp:
        directory = pathlib.Path(tmp)
        model = directory / "gpt2.porta"
        if only & {"throughput", "latency"}:
            export_gpt2(model, args.seq)
        if "throughput" in only:
            results["throughput"] = bench_throughput(args, args.porta, model, directory, env)
        if "latency" in only:
            results["latency"] = bench_latency(args, args.porta, model, env)
        if "generate" in only:
            results["generate"] = bench_generate(args, args.porta, directory, env)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
