#!/usr/bin/env bash
# Creates the project's virtual environment with PyTorch (the CPU wheel) and
# the torch_porta package, puts the `porta` command and the demo in it, and
# prepares the demo's data set (scikit-learn's bundled copy of the UCI
# handwritten digits; nothing is downloaded at run time).
set -euo pipefail
venv=${1:-.venv}
build=${2:-build}
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check)
# torch pinned to the CPU build; an unpinned torch would pull a CUDA build.
"${pip[@]}" torch==2.13.0 numpy pytest expecttest scikit-learn safetensors
# pytest-xdist: `make test` runs the Python tests in two processes
"${pip[@]}" pytest-xdist==3.8.0
# GPT-2 and BERT built from transformers' configs (random weights, nothing
# downloaded) for the export tests; ONNX Runtime for bench/bench_onnxruntime.py
"${pip[@]}" transformers==5.24.0 onnxruntime==1.32.0 onnx==1.23.2 onnxscript==0.7.2
# Triton's HTTP client (pure Python, ~65 MB with gevent and aiohttp): the
# proof that porta serve speaks the Open Inference Protocol as others do
"${pip[@]}" "tritonclient[http]==2.73.0"
# NVRTC alone (no GPU, no toolkit): the tests compile every CUDA kernel with it
"${pip[@]}" nvidia-cuda-nvrtc-cu12
# XLA's CPU PJRT plugin, so the PJRT backend has a device here ("pjrt  cpu");
# xla-cpu-pjrt for OpenXLA's pjrt_c_api.h, which tests/test_pjrt_api.c
# compares Porta's declarations with (its own plugin is not loaded: the
# probe takes the first XLA CPU plugin it finds). Both bundle XLA itself.
"${pip[@]}" --no-deps lammps-jax-pjrt-cpu==0.11.2 xla-cpu-pjrt==0.0.1
# torch_porta's native device is C++ built against the torch installed above
# (its headers and C++ ABI), so pip builds it in this environment.
"${pip[@]}" scikit-build-core==1.1.2
"${pip[@]}" --no-build-isolation -e python/
install -m 755 "$build/porta" "$venv/bin/porta"
install -m 755 "$build/train_digits" "$venv/bin/train_digits"
if [ ! -s "$build/digits.csv" ]; then
    "$venv/bin/python" scripts/export_digits.py "$build/digits.csv"
fi
echo "set up: $venv/bin/porta ($("$venv/bin/porta" --version))"
