"""`porta serve`: a model exported with a dynamic batch dim, served over the
Open Inference Protocol (KServe v2) on a free port of 127.0.0.1, and every
endpoint checked over real HTTP: health, metadata, JSON and binary tensor
data against PyTorch, concurrent requests stacked into one run (seen in
/metrics), 400/404/503 errors, the access log, and a graceful exit on
SIGTERM with a request still in flight. tritonclient (a client written by
others) checks the protocol itself where it is installed.

The command is $PORTA_CLI, else build/porta of the source tree."""
import json
import os
import pathlib
import re
import signal
import socket
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest
import torch
import torch.nn as nn

import torch_porta

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("PORTA_CLI", str(ROOT / "build" / "porta"))

# Timing matters (batch windows, a request in flight at SIGTERM): alone.
pytestmark = pytest.mark.serial


class Server:
    """`porta serve MODEL --port 0 ...`, its stderr collected line by line."""

    def __init__(self, model, *options):
        if not os.access(CLI, os.X_OK):
            pytest.fail(f"the porta command is not built: {CLI} (set PORTA_CLI)")
        self.process = subprocess.Popen([CLI, "serve", str(model), "--port", "0", *options],
                                        stderr=subprocess.PIPE, text=True)
        self.lines = []
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            port = int(found.group(1)) if found else None
        if port is None:
            self.process.kill()
            pytest.fail("porta serve did not start:\n" + "".join(self.lines))
        self.base = f"http://127.0.0.1:{port}"
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stderr:
            self.lines.append(line)

    def request(self, path, body=None, headers=None):
        """(status, headers, body bytes) of GET (no body) or POST."""
        req = urllib.request.Request(self.base + path, data=body, headers=headers or {},
                                     method="POST" if body is not None else "GET")
        try:
            with urllib.request.urlopen(req, timeout=30) as reply:
                return reply.status, reply.headers, reply.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()

    def json(self, path, body=None):
        status, _, data = self.request(path, None if body is None else json.dumps(body).encode())
        return status, json.loads(data)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=30)
        self.reader.join(timeout=5)
        return code


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))

    def forward(self, x):
        return self.layers(x)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    torch.manual_seed(0)
    model = MLP().eval()
    path = tmp_path_factory.mktemp("serve") / "mlp.porta"
    # No bounds: torch's range is then [0, int_oo], which the export writes
    # as min 0 and no max.
    batch = torch.export.Dim("batch")
    torch_porta.export(model, (torch.randn(2, 4),), path, dynamic_shapes=({0: batch},))
    return model, path


@pytest.fixture(scope="module")
def server(mlp):
    # A window long enough for four threads' requests to meet in it, short
    # enough that a lone request (which waits it out) costs little.
    serving = Server(mlp[1], "--max-batch", "4", "--batch-delay-ms", "400")
    yield serving
    assert serving.stop() == 0


def infer_body(x, name="x"):
    return {"inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32",
                        "data": x.flatten().tolist()}]}


def test_health_and_metadata(server, mlp):
    assert server.json("/v2/health/live") == (200, {"live": True})
    assert server.json("/v2/health/ready") == (200, {"ready": True})
    status, meta = server.json("/v2")
    assert status == 200 and meta["name"] == "porta"
    assert "binary_tensor_data" in meta["extensions"]
    for path in ("/v2/models/mlp", "/v2/models/mlp/versions/1"):
        status, meta = server.json(path)
        assert status == 200
        assert meta["name"] == "mlp" and meta["versions"] == ["1"]
        assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]
        assert [o["shape"] for o in meta["outputs"]] == [[-1, 3]]
        assert meta["outputs"][0]["datatype"] == "FP32"
        assert meta["parameters"] == {"max_batch_size": 4}  # --max-batch
    assert server.json("/v2/models/mlp/ready") == (200, {"name": "mlp", "ready": True})


def test_infer_json_and_binary_match_pytorch(server, mlp):
    model, _ = mlp
    x = torch.randn(3, 4)
    want = model(x).detach()
    status, reply = server.json("/v2/models/mlp/infer", {"id": "one", **infer_body(x)})
    assert status == 200 and reply["id"] == "one" and reply["model_name"] == "mlp"
    (out,) = reply["outputs"]
    assert out["shape"] == [3, 3] and out["datatype"] == "FP32"
    torch.testing.assert_close(torch.tensor(out["data"]).reshape(3, 3), want)

    header = json.dumps({"inputs": [{"name": "x", "shape": [3, 4], "datatype": "FP32",
                                     "parameters": {"binary_data_size": 48}}],
                         "outputs": [{"name": out["name"],
                                      "parameters": {"binary_data": True}}]}).encode()
    status, headers, data = server.request(
        "/v2/models/mlp/infer", header + x.numpy().tobytes(),
        {"Inference-Header-Content-Length": str(len(header)),
         "Content-Type": "application/octet-stream"})
    assert status == 200, data
    split = int(headers["Inference-Header-Content-Length"])
    meta = json.loads(data[:split])
    assert meta["outputs"][0]["parameters"] == {"binary_data_size": 36}
    got = torch.tensor(struct.unpack("<9f", data[split:])).reshape(3, 3)
    torch.testing.assert_close(got, want)


def test_concurrent_requests_are_one_batch(server, mlp):
    """Four requests within the window are stacked (up to --max-batch 4) and
    run together, each answered with its own rows."""
    model, _ = mlp
    xs = [torch.randn(1, 4) for _ in range(4)]
    replies = [None] * 4

    def send(i):
        replies[i] = server.json("/v2/models/mlp/infer", infer_body(xs[i]))

    threads = [threading.Thread(target=send, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for x, (status, reply) in zip(xs, replies):
        assert status == 200, reply
        torch.testing.assert_close(torch.tensor(reply["outputs"][0]["data"]).reshape(1, 3),
                                   model(x).detach())
    _, _, metrics = server.request("/metrics")
    text = metrics.decode()
    assert 'porta_serve_batch_size_bucket{model="mlp",le="4"}' in text
    assert re.search(r'porta_serve_batch_size_sum\{model="mlp"\} (\d+)', text)
    full = re.search(r'porta_serve_batch_size_bucket\{model="mlp",le="2"\} (\d+)\n'
                     r'porta_serve_batch_size_bucket\{model="mlp",le="4"\} (\d+)', text)
    assert int(full.group(2)) - int(full.group(1)) >= 1  # a batch of 3 or 4 requests
    assert "porta_serve_request_duration_seconds_bucket" in text
    assert "porta_serve_memory_bytes" in text


def test_errors(server):
    status, reply = server.json("/v2/models/mlp/infer", infer_body(torch.zeros(2, 5)))
    assert status == 400
    assert "input 'x': expected shape [-1, 4], given [2, 5] (dim 1)" in reply["error"]
    body = infer_body(torch.zeros(1, 4))
    body["inputs"][0]["datatype"] = "INT32"
    body["inputs"][0]["data"] = [0, 0, 0, 0]
    status, reply = server.json("/v2/models/mlp/infer", body)
    assert status == 400 and "input 'x': expected datatype FP32, given INT32" in reply["error"]
    status, _, data = server.request("/v2/models/mlp/infer", b'{"inputs": [')
    assert status == 400 and "request JSON" in json.loads(data)["error"]
    assert server.json("/v2/models/nope")[0] == 404
    assert server.json("/v2/models/mlp/versions/7")[0] == 404
    assert server.json("/nothing")[0] == 404
    logged = "".join(server.lines)
    assert re.search(r'method="POST" path="/v2/models/mlp/infer" status=400 bytes_in=\d+ '
                     r'bytes_out=\d+ ms=[\d.]+ model="mlp"', logged)


def test_tritonclient(server, mlp):
    """The protocol as tritonclient (Triton's own client) speaks it."""
    httpclient = pytest.importorskip("tritonclient.http")
    model, _ = mlp
    client = httpclient.InferenceServerClient(server.base[len("http://"):])
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("mlp")
    meta = client.get_model_metadata("mlp")
    assert meta["inputs"][0]["shape"] == [-1, 4]
    x = torch.randn(2, 4)
    for binary in (False, True):
        tensor = httpclient.InferInput("x", [2, 4], "FP32")
        tensor.set_data_from_numpy(x.numpy(), binary_data=binary)
        output_name = meta["outputs"][0]["name"]
        result = client.infer("mlp", [tensor], outputs=[
            httpclient.InferRequestedOutput(output_name, binary_data=binary)])
        torch.testing.assert_close(torch.from_numpy(result.as_numpy(output_name)),
                                   model(x).detach())


def test_stalled_client_limits_queue_limit_and_graceful_stop(mlp):
    """A client that stalls mid-body is cut off after --idle-timeout-s; a body
    over --max-body-mib gets 413. With room for one queued request, a second
    is refused with 503; SIGTERM while the first waits in its window lets it
    finish, then the server exits 0."""
    model, path = mlp
    serving = Server(path, "--max-queue", "1", "--max-batch", "8", "--batch-delay-ms", "1500",
                     "--idle-timeout-s", "1", "--max-body-mib", "1")
    host, port = serving.base[len("http://"):].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as stalled:
        stalled.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
                        b"Content-Length: 100\r\n\r\n{")
        started = time.monotonic()
        assert stalled.recv(1024) == b""  # closed, not answered
        assert time.monotonic() - started < 5
    status, _, data = serving.request("/v2/models/mlp/infer", b" " * (2 << 20))
    assert status == 413 and b"larger than the limit of 1048576 bytes" in data
    x = torch.randn(1, 4)
    first = {}
    thread = threading.Thread(
        target=lambda: first.update(reply=serving.json("/v2/models/mlp/infer", infer_body(x))))
    thread.start()
    time.sleep(0.5)
    status, reply = serving.json("/v2/models/mlp/infer", infer_body(x))
    assert status == 503 and "1 requests are queued, the limit" in reply["error"]
    serving.process.send_signal(signal.SIGTERM)
    thread.join(timeout=30)
    assert serving.process.wait(timeout=30) == 0
    serving.reader.join(timeout=5)
    status, reply = first["reply"]
    assert status == 200
    torch.testing.assert_close(torch.tensor(reply["outputs"][0]["data"]).reshape(1, 3),
                               model(x).detach())
    assert "porta serve: stopped" in "".join(serving.lines)


def test_idle_and_dropped_connections(mlp):
    """1,000 connections open and silent (entries in one epoll set, not a
    thread each) do not hold up a request on another; a client that drops
    its connection while its request waits for its batch (the connection
    suspended) leaves the server answering, and stopping it finishes."""
    model, path = mlp
    serving = Server(path, "--max-connections", "1100", "--batch-delay-ms", "200")
    host, port = serving.base[len("http://"):].split(":")
    x = torch.randn(1, 4)
    body = json.dumps(infer_body(x)).encode()
    idle = []
    try:
        for _ in range(1000):
            idle.append(socket.create_connection((host, int(port)), timeout=10))
        with socket.create_connection((host, int(port)), timeout=10) as dropped:
            dropped.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Length: %d\r\n\r\n" % len(body) + body)
        started = time.monotonic()
        status, reply = serving.json("/v2/models/mlp/infer", infer_body(x))
        assert status == 200 and time.monotonic() - started < 5
        torch.testing.assert_close(torch.tensor(reply["outputs"][0]["data"]).reshape(1, 3),
                                   model(x).detach())
    finally:
        for connection in idle:
            connection.close()
    assert serving.stop() == 0
    assert "porta serve: stopped" in "".join(serving.lines)
