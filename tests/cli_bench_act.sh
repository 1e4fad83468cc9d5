#!/usr/bin/env bash
# CLI test for gptmeg bench act on an L1-sized case (fast): every JSON key of every record, one
# record per spec, dtype and direction, the text table, and bad options refused as usage errors.
# Usage: bash tests/cli_bench_act.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"
small=(--n 4096 --threads 2 --spec gelu_new:accurate --spec quick_gelu:torch-cpu --dtype f32 --dtype bf16)
if "$G" bench act "${small[@]}" --rounds 2 --json >"$T/out" 2>"$T/err"; then
  miss=""
  for f in spec dtype direction n threads melem_per_s gb_per_s memcpy_gb_per_s ratio_to_memcpy; do
    c=$(grep -cE "\"$f\":[[:space:]]*[\"0-9]" "$T/out")
    [ "$c" -eq 8 ] || miss="$miss $f($c)"
  done
  [ -z "$miss" ] && ok "bench act --json: 8 records with every key" || bad "bench act --json:$miss in $(cat "$T/out")"
  grep -qE '"spec":[[:space:]]*"quick_gelu:torch-cpu"' "$T/out" && grep -qE '"direction":[[:space:]]*"bwd"' "$T/out" &&
    grep -qE '"n":[[:space:]]*4096' "$T/out" && ok "bench act --json values" || bad "bench act values: $(cat "$T/out")"
else bad "bench act --json: $(cat "$T/err")"; fi
"$G" bench act --n 4096 --threads 1 --spec gelu --dtype f16 >"$T/out" 2>"$T/err" && grep -q '^spec .*ratio$' "$T/out" &&
  [ "$(grep -c '^gelu:accurate  *f16 ' "$T/out")" -eq 2 ] && ok "bench act text" || bad "bench act text: $(cat "$T/out" "$T/err")"
for opt in "--rounds 0" "--threads 0" "--dtype f64" "--spec nosuch" "--n 0" "--bogus"; do
  # shellcheck disable=SC2086
  "$G" bench act $opt >/dev/null 2>"$T/err"; rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l <"$T/err")" -le 2 ] && ok "bench act $opt is a usage error" || bad "bench act $opt: rc $rc $(cat "$T/err")"
done
"$G" bench act --help | grep -q 'ratio_to_memcpy' && ok "help" || bad "help"
finish cli_bench_act
