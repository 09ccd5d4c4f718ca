#!/usr/bin/env bash
# The CUDA backend's check on a machine with an NVIDIA GPU, in a few
# minutes: build, `porta devices`, the CUDA C tests (which must find the
# GPU and NVRTC), the whole C suite, then the Python suite with the GPU as
# the device "porta". Needs no network: NVRTC comes from the toolkit, from
# PORTA_NVRTC_LIBRARY, or from an installed nvidia-cuda-nvrtc-cu12 wheel;
# Python runs only where .venv (or python3) already has torch.
# Logs go to $OUT when set (else cuda-check-logs/), seven files at most;
# the exit status is that of the first failed step, after every step has
# run. The steps' time limits add up to under ten minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=${OUT:-cuda-check-logs}
BUILD=${BUILD:-build-cuda-check}
mkdir -p "$LOGS"
status=0

step() { # step NAME SECONDS COMMAND...: runs it with a time limit, logged
    local name=$1 limit=$2
    shift 2
    echo "== $name"
    local start=$SECONDS
    timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1
    local rc=$?
    tail -n 15 "$LOGS/$name.log"
    echo "== $name: exit $rc after $((SECONDS - start)) s"
    if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then status=$rc; fi
    return "$rc"
}

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
else
    echo "== python: skipped, no torch in $PY"
fi
echo "cuda_check: exit $status (logs in $LOGS)"
exit "$status"
