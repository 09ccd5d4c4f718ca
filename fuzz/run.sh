#!/usr/bin/env bash
# Runs each fuzz target (every fuzz/fuzz_*.c) for SECONDS (default 60) from the seed corpus in
# fuzz/corpus/<target>/ (new inputs go to a scratch copy, not the repository).
# Fails on the first crash, leak, timeout or sanitizer report; the failing
# input is left in the build directory as <target>-crash-* (or leak-, ...).
# Usage: fuzz/run.sh [seconds] [build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
out="${2:-$root/build-fuzz}"
mkdir -p "$out"
out="$(cd "$out" && pwd)" # the targets run from inside it
"$root/fuzz/build.sh" "$out" >/dev/null
for src in "$root"/fuzz/fuzz_*.c; do
  target="$(basename "$src" .c)"
  work="$out/corpus-$target"
  mkdir -p "$work"
  cp -n "$root/fuzz/corpus/$target/"* "$work/" 2>/dev/null || true
  log="$out/$target.log"
  echo "== $target for ${seconds}s (log: $log)"
  dict=()
  [ -f "$root/fuzz/$target.dict" ] && dict=(-dict="$root/fuzz/$target.dict")
  set +e
  (cd "$out" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "./$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/$target-" "${dict[@]}" "$work" >"$log" 2>&1)
  rc=$?
  set -e
  grep -E "^stat::number_of_executed_units" "$log" || true
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$log" >&2
    echo "fuzz/run.sh: $target failed (exit $rc); the input is in $out/$target-*" >&2
    exit 1
  fi
done
