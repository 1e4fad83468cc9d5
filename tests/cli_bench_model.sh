#!/usr/bin/env bash
# CLI test for gptmeg bench model on a small shape (fast): runs, prints every JSON field, and
# refuses bad options. Usage: bash tests/cli_bench_model.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"
printf '{"vocab_size": 1000, "n_positions": 64, "n_embd": 32, "n_layer": 2, "n_head": 4}' >"$T/cfg.json"
small=(--config "$T/cfg.json" --prefill 48 --prompt 16 --decode 8 --gemm 128 --threads 2)
if "$G" bench model "${small[@]}" --json >"$T/out" 2>"$T/err"; then
  miss=""
  for f in gemm_gflops prefill_tokens_per_s prefill_pct_of_gemm decode_tokens_per_s decode_ms_per_token vm_hwm_bytes \
           weights_bytes kv_bytes_prefill logits_bytes prefill_all_logits_tokens_per_s prefill_all_logits_pct_of_gemm \
           vm_hwm_all_logits_bytes vm_hwm_over_weights_kv weights_f32_bytes weights_copy_bytes decode_step_weight_bytes; do
    grep -q "\"$f\":[0-9]" "$T/out" || miss="$miss $f"
  done
  [ -z "$miss" ] && ok "bench model --json fields" || bad "missing:$miss in $(cat "$T/out")"
else bad "bench model --json: $(cat "$T/err")"; fi
"$G" bench model "${small[@]}" >"$T/out" 2>"$T/err" && grep -q '^prefill' "$T/out" && grep -q '^decode' "$T/out" &&
  grep -q 'VmHWM' "$T/out" && grep -q '^all-logits prefill' "$T/out" && ok "bench model text" || bad "bench model text: $(cat "$T/out" "$T/err")"
"$G" bench model "${small[@]}" --dtype f16 >"$T/out" 2>"$T/err" && grep -q '^decode' "$T/out" && grep -q 'VmHWM' "$T/out" &&
  grep -q '^gemm .* f16 (gptmeg' "$T/out" && ok "bench model --dtype f16 text" || bad "bench model f16: $(cat "$T/out" "$T/err")"
for d in f32 f16 bf16; do
  "$G" bench model "${small[@]}" --dtype $d --json >"$T/out" 2>"$T/err" && grep -q '"gemm_dtype_gflops":[0-9]' "$T/out" &&
    grep -q '"prefill_pct_of_dtype_gemm":[0-9]' "$T/out" && ok "bench model --dtype $d --json: its own gemm" ||
    bad "bench model $d json: $(cat "$T/out" "$T/err")"
done
"$G" bench model "${small[@]}" --json | grep -q '"gemm_gflops":[0-9]' && ok "the OpenBLAS rate beside it" || bad "no gemm_gflops"
"$G" bench model --config "$T/cfg.json" --prefill 65 >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 1 ] && grep -q 'n_positions 64' "$T/err" && ok "prefill > n_positions refused" || bad "prefill > n_positions: rc $rc $(cat "$T/err")"
"$G" bench model --threads 0 >/dev/null 2>&1; [ $? -eq 2 ] && ok "bad --threads is a usage error" || bad "bad --threads"
"$G" bench model --dtype f64 >/dev/null 2>&1; [ $? -eq 2 ] && ok "bad --dtype is a usage error" || bad "bad --dtype"
"$G" bench model --help | grep -q 'prefill' && ok "help" || bad "help"
finish cli_bench_model
