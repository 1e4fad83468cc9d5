#!/usr/bin/env bash
# CLI tests for numerics profiles: logits --dtype/--profile/knobs, info --profile, bad profiles.
# Usage: bash tests/cli_profile.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"
M=tests/golden/model/base
P=tests/golden/profile/base

for prof in hf hf-legacy meg megatron; do
  expect 0 "info --profile $prof" "$G" info --profile $prof --dtype f16
  grep -q "^profile           $prof" "$T/out" && grep -q '^scores ' "$T/out" && ok "info $prof lists knobs" || bad "info $prof: $(cat "$T/out")"
done
expect 0 "info knob on top" "$G" info --profile hf --scores baddbmm --act gelu_megatron
grep -q 'hf+scores=baddbmm+act=gelu_megatron' "$T/out" && ok "knobs named in the profile" || bad "knob name: $(head -1 "$T/out")"

for dt in f16 bf16; do
  expect 0 "logits $dt meg 1 thread" "$G" logits --model $M --tokens-npy $M/tokens.npy --dtype $dt --profile meg --out "$T/a_$dt.npy" --threads 1
  expect 0 "logits $dt meg 2 threads" "$G" logits --model $M --tokens-npy $M/tokens.npy --dtype $dt --profile meg --out "$T/b_$dt.npy" --threads 2
  cmp -s "$T/a_$dt.npy" "$T/b_$dt.npy" && ok "$dt: 1 and 2 threads bit for bit" || bad "$dt: threads change the logits"
done
expect 0 "logits f16 hf" "$G" logits --model $M --tokens-npy $M/tokens.npy --dtype f16 --profile hf --out "$T/hf.npy"
expect 0 "logits f16 hf + baddbmm" "$G" logits --model $M --tokens-npy $M/tokens.npy --dtype f16 --profile hf --scores baddbmm --out "$T/hfb.npy"
cmp -s "$T/hf.npy" "$T/hfb.npy" && bad "the scores knob changed nothing" || ok "the scores knob changes the logits"
expect 0 "logits f16 hf + the three meg overrides" "$G" logits --model $M --tokens-npy $M/tokens.npy --dtype f16 --ln fp32 \
  --scores baddbmm --act gelu_megatron:torch-cpu --out "$T/hf3.npy"
cmp -s "$T/hf3.npy" "$T/a_f16.npy" && ok "hf + three knobs == meg" || bad "hf + three knobs != meg"
if python3 -c 'import numpy' 2>/dev/null; then
  for dt in f16 bf16; do
    python3 -c "
import numpy as np, sys
a = np.load('$T/a_$dt.npy'); e = np.load('$P/meg_$dt.npy')
e = e.astype(np.float32) if e.dtype == np.float16 else (e.astype(np.uint32) << 16).view(np.float32)
sys.exit(0 if a.shape == e.shape and (a == e).mean() >= 0.99 else 1)" && ok "CLI $dt meg logits match the reference" || bad "CLI $dt meg vs golden"
  done
else echo "skip numpy comparison (no numpy)"; fi

# report: --profile adds hf against that profile to the divergence section
expect 0 "report --profile megatron --dtype bf16" "$G" report --out "$T/rep" --n 2000 --model $M --profile megatron --dtype bf16 --scores matmul-div
grep -q 'hf:bf16 vs megatron+scores=matmul-div:bf16' "$T/rep/index.html" && ok "report names the profile pair" || bad "report pair missing"
grep -q '"b":[[:space:]]*"megatron+scores=matmul-div:bf16"' "$T/rep/report.json" && ok "report.json has the pair" || bad "report.json pair: $(grep -o '"b":[^,]*' "$T/rep/report.json" | tail -2)"
expect 1 "report unknown profile" "$G" report --out "$T/rep2" --profile nope
[ -e "$T/rep2" ] && bad "report left a directory behind" || ok "report wrote nothing on a bad profile"

# bad input: one line naming the problem, exit 1 (usage 2), no output file
expect 1 "unknown profile" "$G" logits --model $M --tokens-npy $M/tokens.npy --profile nope --out "$T/x1.npy"
grep -q 'valid: hf, hf-legacy, meg, megatron' "$T/err" && ok "unknown profile lists the valid ones" || bad "message: $(cat "$T/err")"
expect 1 "bad knob value" "$G" logits --model $M --tokens-npy $M/tokens.npy --mask zero --out "$T/x2.npy"
grep -q 'finfo, -1e4 or -inf' "$T/err" && ok "bad knob lists the valid values" || bad "message: $(cat "$T/err")"
expect 1 "bad act spec" "$G" logits --model $M --tokens-npy $M/tokens.npy --act gelu_nope --out "$T/x3.npy"
expect 2 "knob without value" "$G" logits --model $M --tokens-npy $M/tokens.npy --out "$T/x4.npy" --ln
expect 1 "bf16 checkpoint in f16" "$G" logits --model tests/golden/profile/base_bf16_checkpoint --tokens-npy $M/tokens.npy --dtype f16 --out "$T/x5.npy"
grep -q 'checkpoint is bf16 and cannot run in f16' "$T/err" && ok "dtype refusal says why" || bad "message: $(cat "$T/err")"
expect 0 "bf16 checkpoint in bf16" "$G" logits --model tests/golden/profile/base_bf16_checkpoint --tokens-npy $M/tokens.npy --dtype bf16 --out "$T/x6.npy"
expect 0 "bf16 checkpoint in f32" "$G" logits --model tests/golden/profile/base_bf16_checkpoint --tokens-npy $M/tokens.npy --out "$T/x7.npy"
expect 1 "f64 is not a model dtype" "$G" logits --model $M --tokens-npy $M/tokens.npy --dtype f64 --out "$T/x8.npy"
for f in x1 x2 x3 x4 x5 x8; do [ -e "$T/$f.npy" ] && bad "output left behind: $f"; done
ls "$T" | grep -q '\.tmp\.' && bad "temporary left behind" || ok "no output left behind on failure"

finish cli_profile
