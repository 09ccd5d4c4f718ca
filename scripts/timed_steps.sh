#!/usr/bin/env bash
# Runs make targets one after another, each in a make of its own, and ends
# with a table of each step's wall time, also when a step fails: then the
# table names it, the steps after it are not run, and the exit status is 1.
# Usage: scripts/timed_steps.sh TARGET...   (from the Makefile: $(MAKE) reaches
# here as MAKE, with the command line's variables in MAKEFLAGS)
set -uo pipefail
make_command=${MAKE:-make}
steps=("$@")
declare -A seconds result
failed=""
for step in "${steps[@]}"; do
  if [ -n "$failed" ]; then
    result[$step]="not run"
    continue
  fi
  echo "== make $step"
  start=$EPOCHREALTIME
  if "$make_command" --no-print-directory "$step"; then
    result[$step]=ok
  else
    result[$step]=FAILED
    failed=$step
  fi
  seconds[$step]=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
done

total=0
echo
printf '%-20s %8s  %s\n' step seconds result
for step in "${steps[@]}"; do
  printf '%-20s %8s  %s\n' "$step" "${seconds[$step]:--}" "${result[$step]}"
  total=$((total + ${seconds[$step]:-0}))
done
printf '%-20s %8s\n' total "$total"
if [ -n "$failed" ]; then
  echo "step '$failed' failed: its output follows '== make $failed' above" >&2
  exit 1
fi
