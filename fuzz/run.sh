#!/usr/bin/env bash
# Runs each fuzz target (every fuzz/fuzz_*.c) for SECONDS (default 60) from the seed corpus in
# fuzz/corpus/<target>/ (new inputs go to a scratch copy, not the repository).
# FUZZ_JOBS targets (default: one per core) run at once, each in a process of
# its own on a core of its own, so each still gets its SECONDS of fuzzing.
# Fails on any crash, leak, timeout or sanitizer report; the failing
# input is left in the build directory as <target>-crash-* (or leak-, ...).
# Usage: fuzz/run.sh [seconds] [build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
out="${2:-$root/build-fuzz}"
jobs="${FUZZ_JOBS:-$(nproc)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)" # the targets run from inside it
"$root/fuzz/build.sh" "$out" >/dev/null

# Fuzzes one target; its output goes to its log.
fuzz_target() {
  local target="$1" work="$out/corpus-$1" dict=()
  mkdir -p "$work"
  cp -n "$root/fuzz/corpus/$target/"* "$work/" 2>/dev/null || true
  [ -f "$root/fuzz/$target.dict" ] && dict=(-dict="$root/fuzz/$target.dict")
  cd "$out" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "./$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/$target-" "${dict[@]}" "$work" \
    >"$out/$target.log" 2>&1
}

targets=()
for src in "$root"/fuzz/fuzz_*.c; do targets+=("$(basename "$src" .c)"); done
failed=()
for ((first = 0; first < ${#targets[@]}; first += jobs)); do
  batch=("${targets[@]:first:jobs}")
  pids=()
  for target in "${batch[@]}"; do
    echo "== $target for ${seconds}s (log: $out/$target.log)"
    fuzz_target "$target" &
    pids+=($!)
  done
  for i in "${!batch[@]}"; do
    target="${batch[$i]}"
    rc=0
    wait "${pids[$i]}" || rc=$?
    grep -E "^stat::number_of_executed_units" "$out/$target.log" | sed "s/^/$target: /" || true
    if [ "$rc" -ne 0 ]; then
      tail -n 60 "$out/$target.log" >&2
      echo "fuzz/run.sh: $target failed (exit $rc); the input is in $out/$target-*" >&2
      failed+=("$target")
    fi
  done
done
[ "${#failed[@]}" -eq 0 ]
