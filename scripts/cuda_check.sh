#!/usr/bin/env bash
# The CUDA backend's check on a machine with an NVIDIA GPU, in a few
# minutes: build, `porta devices`, the CUDA C tests (which must find the
# GPU and NVRTC), the whole C suite, then the Python suite with the GPU as
# the device "porta", and GEMM TFLOP/s (bf16, fp16, fp32) against
# torch.matmul on the same GPU. Needs no network: NVRTC comes from the toolkit, from
# PORTA_NVRTC_LIBRARY, or from an installed nvidia-cuda-nvrtc-cu12 wheel;
# Python runs only where .venv (or python3) already has torch.
# Logs go to $OUT when set (else cuda-check-logs/), eight files at most;
# the exit status is that of the first failed step, after every step has
# run. The steps' time limits add up to under ten minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=${OUT:-cuda-check-logs}
BUILD=${BUILD:-build-cuda-check}
mkdir -p "$LOGS"
status=0

. scripts/check_steps.sh

nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv \
    >"$LOGS/gpu.txt" 2>&1 || true
cat "$LOGS/gpu.txt"

# NVRTC: the variable, the loader's path, a toolkit, a pip wheel (CUDA 12
# or 13; .12 first, as the loader does)
if [ -z "${PORTA_NVRTC_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc.so.1[23] '; then
    for version in 12 13; do
        found=$(find /usr/local /opt /usr/lib "$PWD/.venv" -name "libnvrtc.so.$version" \
            2>/dev/null | head -n 1)
        if [ -n "$found" ]; then export PORTA_NVRTC_LIBRARY=$found; break; fi
    done
fi
echo "NVRTC: ${PORTA_NVRTC_LIBRARY:-libnvrtc.so.12 from the library path}"
export PORTA_CACHE_DIR=${PORTA_CACHE_DIR:-$PWD/$BUILD/kernel-cache}

# another compiler than the project's: its new warnings are not errors here
step build 150 bash -c "cmake -S . -B $BUILD -DCMAKE_BUILD_TYPE=Release -DPORTA_WERROR=OFF \
    >/dev/null && cmake --build $BUILD -j \$(nproc)" || exit "$status"
step devices 30 "$BUILD/porta" devices
PORTA_VISIBLE_DEVICES=cuda "$BUILD/porta" devices | grep -q '^porta:0  cuda' ||
    { echo "no CUDA device: see $LOGS/devices.log"; [ "$status" -ne 0 ] || status=1; }
PORTA_REQUIRE_CUDA=1 PORTA_REQUIRE_NVRTC=1 step c-tests-cuda 120 "$BUILD/porta_tests" cuda
# every C test, the cross-backend conformance suite among them, with the GPU
# present (primitives whose CUDA kernels are not written yet fail there)
step c-tests-all 150 "$BUILD/porta_tests"

PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
if "$PY" -c 'import torch' 2>/dev/null; then
    "$PY" -c 'import torch_porta' 2>/dev/null ||
        step python-install 150 "$PY" -m pip install --no-build-isolation --no-deps -e python/ -q
    # the whole suite in a few minutes: in parallel where pytest-xdist is there
    # (PYTEST_ARGS overrides the selection)
    parallel=""
    "$PY" -c 'import xdist' 2>/dev/null && parallel="-n 8"
    # shellcheck disable=SC2086
    PORTA_VISIBLE_DEVICES=cuda step python-tests 240 "$PY" -m pytest -q -p no:cacheprovider \
        ${PYTEST_ARGS:-$parallel python/tests}
    # GEMM TFLOP/s on the GPU as porta:0 against torch.matmul on the same GPU
    # (where this torch has CUDA), same inputs; TF32 stays off on both sides
    PORTA_VISIBLE_DEVICES=cuda step gemm-bench 90 "$PY" - <<'PYTHON'
import time
import torch
import torch_porta

def tflops(a, b, synchronize, shape, rounds=20):
    torch.matmul(a, b)
    synchronize()
    start = time.perf_counter()
    for _ in range(rounds):
        torch.matmul(a, b)
    synchronize()
    m, n, k = shape
    return 2 * m * n * k * rounds / (time.perf_counter() - start) / 1e12

gpu = torch.cuda.is_available()
print(f"torch {torch.__version__}, torch CUDA {'yes' if gpu else 'no'}")
for dtype in (torch.bfloat16, torch.float16, torch.float32):
    for m, n, k in ((4096, 4096, 4096), (2048, 2048, 2048), (1000, 3000, 517)):
        a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
        pa, pb = a.to("porta"), b.to("porta")
        porta = tflops(pa, pb, torch_porta.synchronize, (m, n, k))
        line = f"{str(dtype)[6:]:9} {m}x{n}x{k}: porta {porta:7.2f} TFLOP/s"
        if gpu:
            ca, cb = a.cuda(), b.cuda()
            ref = tflops(ca, cb, torch.cuda.synchronize, (m, n, k))
            want = (ca @ cb).float().cpu()
            got = (pa @ pb).float().cpu()
            error = ((got - want).abs().max() / want.abs().max()).item()
            line += (f", torch {ref:7.2f} TFLOP/s, ratio {porta / ref:.3f}, "
                     f"max rel error {error:.2e}")
        print(line, flush=True)
PYTHON
else
    echo "== python: skipped, no torch in $PY"
fi
echo "cuda_check: exit $status (logs in $LOGS)"
exit "$status"
