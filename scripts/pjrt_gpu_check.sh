#!/usr/bin/env bash
# The PJRT backend's check on a machine with an NVIDIA GPU and JAX's CUDA
# PJRT plugin (jax-cuda13-pjrt with jax-cuda13-plugin[with-cuda], installed
# beforehand: the machine needs no network), in under ten minutes: build,
# `porta devices` (which must list the plugin's GPU as `pjrt  cuda`), the C
# conformance suite with the GPU beside the CPU, the training-parity
# models on the GPU, then GEMM TFLOP/s and a compiled training step on the
# GPU through PJRT against torch on CUDA (where this torch has CUDA).
# The plugin is found as `porta devices` finds it (installed jax_plugins
# packages) or from PORTA_PJRT_PLUGINS. Without a GPU or without the plugin
# it stops at once with a line saying which is missing (exit 2).
# Logs go to $OUT when set (else pjrt-gpu-check-logs/); the exit status is
# that of the first failed step, after every step has run.
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=${OUT:-pjrt-gpu-check-logs}
BUILD=${BUILD:-build-pjrt-gpu-check}
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
mkdir -p "$LOGS"
status=0

. scripts/check_steps.sh

if ! command -v nvidia-smi >/dev/null; then
    echo "pjrt_gpu_check: no NVIDIA GPU here (no nvidia-smi on PATH)" >&2
    exit 2
fi
if ! nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
    >"$LOGS/gpu.txt" 2>&1 || ! grep -q . "$LOGS/gpu.txt"; then
    echo "pjrt_gpu_check: no NVIDIA GPU here (nvidia-smi: $(head -n 1 "$LOGS/gpu.txt"))" >&2
    exit 2
fi
cat "$LOGS/gpu.txt"
if [ -z "${PORTA_PJRT_PLUGINS:-}" ] &&
    ! "$PY" -c 'import glob, jax_plugins, sys; sys.exit(not any(glob.glob(p + "/*cuda*/*.so")
for p in jax_plugins.__path__))' 2>/dev/null; then
    echo "pjrt_gpu_check: no CUDA PJRT plugin for $PY (install jax-cuda13-pjrt and" \
        "jax-cuda13-plugin[with-cuda], or set PORTA_PJRT_PLUGINS)" >&2
    exit 2
fi

export PORTA_CACHE_DIR=${PORTA_CACHE_DIR:-$PWD/$BUILD/kernel-cache}
# another compiler than the project's: its new warnings are not errors here
step build 150 bash -c "cmake -S . -B $BUILD -DCMAKE_BUILD_TYPE=Release -DPORTA_WERROR=OFF \
    >/dev/null && cmake --build $BUILD -j \$(nproc)" || exit "$status"
step devices 60 "$BUILD/porta" devices
if ! PORTA_VISIBLE_DEVICES=pjrt "$BUILD/porta" devices | grep -Eq '^porta:0  pjrt +(cuda|gpu)'; then
    echo "pjrt_gpu_check: the CUDA plugin gave no device: see $LOGS/devices.log" >&2
    exit 2
fi
# the GPU first, the CPU beside it: every case eager and fused on both,
# compared with the CPU's eager results
PORTA_VISIBLE_DEVICES=pjrt,cpu step conformance 240 "$BUILD/porta_tests" conformance

if ! "$PY" -c 'import torch' 2>/dev/null; then
    echo "== python: skipped, no torch in $PY"
    echo "pjrt_gpu_check: exit $status (logs in $LOGS)"
    exit "$status"
fi
"$PY" -c 'import torch_porta' 2>/dev/null ||
    step python-install 150 "$PY" -m pip install --no-build-isolation --no-deps -e python/ -q
export PORTA_VISIBLE_DEVICES=pjrt,cpu
step training-parity 240 "$PY" -m pytest -q -p no:cacheprovider python/tests/test_parity.py
# GEMM and a compiled training step on the GPU as porta:0 against torch on
# CUDA, same inputs, medians; TF32 stays off on both sides
step gpu-bench 180 "$PY" - <<'PYTHON'
import statistics
import sys
import time

import torch
import torch_porta

sys.path.insert(0, "bench")
import bench_torch  # noqa: E402

gpu = torch.cuda.is_available()
print(f"torch {torch.__version__}, torch CUDA {'yes' if gpu else 'no'}, "
      f"porta:0 {torch.porta.get_device_properties(0).name}")


def median_seconds(fn, synchronize, calls=10, rounds=5):
    fn()
    synchronize()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        synchronize()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


for dtype in (torch.bfloat16, torch.float16, torch.float32):
    for m, n, k in ((4096, 4096, 4096), (1000, 3000, 517)):
        a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
        pa, pb = a.to("porta"), b.to("porta")
        flop = 2 * m * n * k
        porta = flop / median_seconds(lambda: pa @ pb, torch_porta.synchronize) / 1e12
        line = f"gemm {str(dtype)[6:]:9} {m}x{n}x{k}: pjrt {porta:7.2f} TFLOP/s"
        if gpu:
            ca, cb = a.cuda(), b.cuda()
            ref = flop / median_seconds(lambda: ca @ cb, torch.cuda.synchronize) / 1e12
            want = (ca @ cb).float().cpu()
            error = (((pa @ pb).float().cpu() - want).abs().max() / want.abs().max()).item()
            line += f", torch {ref:7.2f} TFLOP/s, ratio {porta / ref:.3f}, max rel error {error:.2e}"
        print(line, flush=True)


def training(device, synchronize, compiled):
    torch.manual_seed(0)
    model = bench_torch.SmallCNN().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs, targets = (t.to(device) for t in bench_torch.cnn_batch())
    forward = torch.compile(model, backend="porta") if compiled else model

    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(forward(inputs), targets)
        loss.backward()
        optimizer.step()
    for _ in range(3):  # the compiles
        step()
    return median_seconds(step, synchronize, calls=5)


torch_porta.set_eager_mode("fused")
porta = training("porta", torch_porta.synchronize, compiled=True)
line = f"CNN training step: pjrt compiled {porta * 1e3:.2f} ms"
if gpu:
    ref = training("cuda", torch.cuda.synchronize, compiled=False)
    line += f", torch CUDA eager {ref * 1e3:.2f} ms, ratio {porta / ref:.2f}"
print(line)
PYTHON
echo "pjrt_gpu_check: exit $status (logs in $LOGS)"
exit "$status"
