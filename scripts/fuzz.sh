#!/usr/bin/env bash
# Coverage-guided fuzzing of the loaders (docs/reliability.md). Usage:
#   scripts/fuzz.sh SECONDS [HARNESS...]     (no HARNESS: every fuzz/fuzz_*.c)
# Builds the libFuzzer harnesses with clang in $FUZZ_BUILD (default build-fuzz, -DGPTMEG_FUZZ=ON),
# then runs each for SECONDS on a working copy of its seed corpus ($FUZZ_BUILD/corpus/NAME, seeded
# from the committed fuzz/corpus/NAME, which is never written). One fuzzer process at a time.
# A crash, leak, sanitizer report or timeout fails the script; the input that did it is saved as
# $FUZZ_BUILD/artifacts/NAME-crash-... and the command to replay it is printed.
# Without clang's libFuzzer the script prints one SKIP line and exits 0 (FUZZ_REQUIRE=1: fails).
# FUZZ_RUNS=N (make fuzz-smoke, part of make test): N inputs each with -seed=1 from a fresh copy of
# the seed corpus instead of SECONDS, so the run is the same on every machine (no flaky CI).
# FUZZ_UNTIL=N (the campaign of docs/reliability.md): N inputs each on the working corpus, any seed
# (and at most SECONDS each when SECONDS is not 0);
# each harness's line (executions, seconds, coverage and features at start and end) is appended to
# $FUZZ_BUILD/campaign.txt.
# Each harness runs with the dictionaries of the formats it reads (fuzz/dict/, concatenated into
# $FUZZ_BUILD/dict/NAME.dict): see dicts_for below.
set -eu

secs=${1:?usage: scripts/fuzz.sh SECONDS [HARNESS...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-build-fuzz}
cc=${FUZZ_CC:-clang}
case "$build" in /*) ;; *) build="$root/$build" ;; esac

# Is libFuzzer there? Link a one-function fuzzer.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
if ! command -v "$cc" >/dev/null 2>&1 || ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
  if [ "${FUZZ_REQUIRE:-0}" = 1 ]; then
    echo "FAIL fuzz: $cc with libFuzzer (libclang_rt.fuzzer) is not available here (install clang)"
    exit 1
  fi
  echo "SKIP fuzz: $cc with libFuzzer (libclang_rt.fuzzer) is not available here"
  exit 0
fi

cmake -S "$root" -B "$build" -DGPTMEG_FUZZ=ON -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j "${JOBS:-$(nproc)}" >/dev/null

if [ $# -eq 0 ]; then
  set --
  for f in "$root"/fuzz/fuzz_*.c; do n=$(basename "$f" .c); set -- "$@" "${n#fuzz_}"; done
fi
# The formats each harness's input holds.
dicts_for() {
  case "$1" in
    config) echo json ;;
    safetensors) echo safetensors json ;;
    npy) echo npy ;;
    tok_load) echo json tok ;;
    tok_encode) echo tok ;;
    pickle) echo pickle megatron ;;
    torch_bin) echo zip torch_legacy pickle ;;
    megatron*) echo zip torch_legacy pickle megatron ;;
    *) echo "" ;;
  esac
}
mkdir -p "$build/artifacts" "$build/dict"
for h in "$@"; do
  work="$build/corpus/$h"
  limit=(-max_total_time="$secs")
  if [ -n "${FUZZ_RUNS:-}" ]; then
    rm -rf "$work"
    limit=(-runs="$FUZZ_RUNS" -seed=1)
  fi
  mkdir -p "$work"
  cp -n "$root/fuzz/corpus/$h"/* "$work"/ 2>/dev/null || true
  if [ -n "${FUZZ_UNTIL:-}" ]; then limit=(-runs="$FUZZ_UNTIL"); fi
  if [ -n "${FUZZ_UNTIL:-}" ] && [ "$secs" != 0 ]; then limit+=(-max_total_time="$secs"); fi
  dict=()
  : >"$build/dict/$h.dict"
  for d in $(dicts_for "$h"); do cat "$root/fuzz/dict/$d.dict" >>"$build/dict/$h.dict"; done
  if [ -s "$build/dict/$h.dict" ]; then dict=(-dict="$build/dict/$h.dict"); fi
  log="$build/fuzz_$h.log"
  if [ -n "${FUZZ_RUNS:-}" ]; then echo "== fuzz_$h: $FUZZ_RUNS inputs (seed 1) on $work"; else echo "== fuzz_$h: ${secs}s on $work"; fi
  if ! ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "$build/fuzz_$h" "${limit[@]}" "${dict[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$h-" "$work" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "FAIL fuzz_$h: see $log; replay: $build/fuzz_$h $build/artifacts/$h-<crash file>"
    exit 1
  fi
  # The last status line and the final stats: executions, coverage, speed.
  grep -E '^#[0-9]+' "$log" | tail -n 1
  grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec' "$log" | tr '\n' ' '
  echo
  if [ -n "${FUZZ_UNTIL:-}" ]; then
    start=$(grep -m1 -E '^#[0-9]+[[:space:]]+INITED' "$log" | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)
    end=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)
    execs=$(grep -oE 'stat::number_of_executed_units: +[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
    rate=$(grep -oE 'stat::average_exec_per_sec: +[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
    secs_run=$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | grep -oE 'in [0-9]+' | grep -oE '[0-9]+' || true)
    printf '%s\t%s\texecs %s\tsecs %s\texec/s %s\tstart %s\tend %s\tcrashes 0\n' "$(date -u +%FT%TZ)" "fuzz_$h" \
      "$execs" "${secs_run:-?}" "$rate" "$start" "$end" >>"$build/campaign.txt"
  fi
done
