#!/usr/bin/env bash
# Creates the project's virtual environment, puts the `porta` command and the
# demo in it, and prepares the demo's data set (scikit-learn's bundled copy
# of the UCI handwritten digits; nothing is downloaded at run time).
set -euo pipefail
venv=${1:-.venv}
build=${2:-build}
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check scikit-learn
install -m 755 "$build/porta" "$venv/bin/porta"
install -m 755 "$build/train_digits" "$venv/bin/train_digits"
if [ ! -s "$build/digits.csv" ]; then
    "$venv/bin/python" scripts/export_digits.py "$build/digits.csv"
fi
echo "set up: $venv/bin/porta ($("$venv/bin/porta" --version))"
