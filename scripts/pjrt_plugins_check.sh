#!/usr/bin/env bash
# On a machine without TPUs or NVIDIA GPUs: installs libtpu and JAX's CUDA
# PJRT plugin (about 270 MB) into a temporary prefix, not the project's
# virtual environment (every process there would load them), and checks
# that `porta devices` reports each as unavailable with the plugin's own
# reason within 10 seconds.
# Usage: scripts/pjrt_plugins_check.sh [PORTA]   (default .venv/bin/porta)
set -euo pipefail
porta=${1:-.venv/bin/porta}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
python3 -m pip install --quiet --disable-pip-version-check --no-deps \
    --target "$prefix/lib/python3/site-packages" libtpu jax-cuda13-pjrt

begin=$EPOCHREALTIME
out=$(VIRTUAL_ENV=$prefix "$porta" devices 2>&1)
seconds=$(awk "BEGIN { printf \"%.2f\", $EPOCHREALTIME - $begin }")
echo "$out"
echo "porta devices took $seconds s"
status=0
for plugin in libtpu.so xla_cuda_plugin.so; do
    if ! grep -q "^pjrt: unavailable ($plugin: " <<<"$out"; then
        echo "FAIL: no 'pjrt: unavailable ($plugin: ...)' line" >&2
        status=1
    fi
done
if awk "BEGIN { exit !($seconds >= 10) }"; then
    echo "FAIL: the probe took $seconds s (10 s allowed)" >&2
    status=1
fi
exit $status
