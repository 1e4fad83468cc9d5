#!/usr/bin/env bash
# CLI test for gptmeg bench gemm on small shapes: every JSON key of every record, the text table
# with the peak line, --drivers' extra column, and bad options refused.
# Usage: bash tests/cli_bench_gemm.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"
small=(--tokens 8 --square 64 --rounds 1)
if "$G" bench gemm "${small[@]}" --json --drivers >"$T/out" 2>"$T/err"; then
  n=$(grep -c '"name":' "$T/out")
  miss=""
  for f in m n k threads gflops peak_gflops pct_of_peak strip_gflops; do
    [ "$(grep -cE "\"$f\":[[:space:]]*[0-9]" "$T/out")" -eq 14 ] || miss="$miss $f"
  done
  [ "$n" -eq 14 ] && [ -z "$miss" ] && ok "bench gemm --json: 14 records with every key" || bad "bench gemm --json ($n records):$miss"
  grep -qE '"name":[[:space:]]*"lm_head fwd"' "$T/out" && grep -qE '"k":[[:space:]]*8,' "$T/out" &&
    ok "bench gemm --json: the training shapes at --tokens" || bad "bench gemm shapes: $(cat "$T/out")"
else bad "bench gemm --json: $(cat "$T/err")"; fi
"$G" bench gemm "${small[@]}" >"$T/out" 2>"$T/err" && grep -q 'FMA peak' "$T/out" && grep -q '^square' "$T/out" &&
  grep -q '^training step' "$T/out" && ok "bench gemm text" || bad "bench gemm text: $(cat "$T/out" "$T/err")"
"$G" bench gemm --threads 0 >/dev/null 2>&1; [ $? -eq 2 ] && ok "bad --threads is a usage error" || bad "bad --threads"
"$G" bench gemm --frobnicate >/dev/null 2>&1; [ $? -eq 2 ] && ok "unknown option is a usage error" || bad "unknown option"
"$G" bench gemm --help | grep -q 'FMA peak' && ok "help" || bad "help"
finish cli_bench_gemm
