#!/usr/bin/env bash
# Builds the libFuzzer targets: libporta with clang under AddressSanitizer
# and UBSan (instrumented for coverage), then one executable per fuzz_*.c.
# Usage: fuzz/build.sh [build-dir]   (default: build-fuzz)
# Needs clang 16 or newer with libFuzzer (Debian: clang-19 libclang-rt-19-dev):
# older ones reject the CPU backend's __builtin_cpu_supports("f16c").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build-fuzz}"
if [ -z "${CC:-}" ]; then
  for candidate in clang-22 clang-19 clang-18 clang-17 clang-16 clang; do
    if command -v "$candidate" >/dev/null; then CC="$candidate"; break; fi
  done
fi
cc="${CC:-clang}"
command -v "$cc" >/dev/null ||
  { echo "fuzz/build.sh: $cc not found (apt-get install clang-19 libclang-rt-19-dev)" >&2; exit 1; }
cmake -S "$root" -B "$out" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Debug \
  -DPORTA_SANITIZE=ON -DPORTA_BUILD_TOOLS=OFF -DPORTA_WERROR=OFF \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link -O1" >/dev/null
cmake --build "$out" -j "${JOBS:-2}" --target porta_static >"$out/build.log" 2>&1 ||
  { tail -n 40 "$out/build.log" >&2; exit 1; }
for src in "$root"/fuzz/fuzz_*.c; do
  name="$(basename "$src" .c)"
  "$cc" -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root/include" -I"$root/src" "$src" "$out/libporta.a" -lpthread -lm -ldl \
    -o "$out/$name"
  echo "$out/$name"
done
