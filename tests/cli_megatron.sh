#!/usr/bin/env bash
# CLI tests for Megatron-LM checkpoints: gptmeg convert (config.json + model.safetensors, the
# tensors of transformers' converter, tests/golden/megatron/*/ref), and logits on the Megatron
# directory under --profile megatron equal to those on the converted directory.
# Usage: bash tests/cli_megatron.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"

{ npy_header '<i4' '(1, 6)'; for v in 5 17 99 3 127 64; do
    for ((i = 0; i < 4; i++)); do printf "\\x$(printf %02x $(( (v >> (8 * i)) & 255 )))"; done; done; } >"$T/tok.npy"
for c in v0_tp1 v0_tp2 v2_tp1 v3_tp2_pp2 v1_tp1 ds_tp1_pp1 ds_tp2_pp2 ds_flat ds_nopipe; do
  M=tests/golden/megatron/$c
  expect 0 "$c: convert" "$G" convert --from "$M" --out "$T/$c" || continue
  grep -Eq '"gptmeg_profile":[[:space:]]*"megatron"' "$T/$c/config.json" && ok "$c: profile recorded" || bad "$c: profile recorded"
  expect 0 "$c: info" "$G" info --model "$M" && grep -q '^profile: *megatron' "$T/out" && ok "$c: info states megatron" || bad "$c: info states megatron"
  expect 0 "$c: logits megatron dir" "$G" logits --model "$M" --tokens-npy "$T/tok.npy" --out "$T/$c.meg.npy" --profile megatron --threads 1
  expect 0 "$c: logits converted dir" "$G" logits --model "$T/$c" --tokens-npy "$T/tok.npy" --out "$T/$c.hf.npy" --profile megatron --threads 1
  cmp -s "$T/$c.meg.npy" "$T/$c.hf.npy" && ok "$c: identical logits" || bad "$c: identical logits"
done
expect 0 "convert --dtype f32 --trim-vocab (vocab 128: nothing trimmed)" "$G" convert --from tests/golden/megatron/v0_tp2 --out "$T/f32" --dtype f32 --trim-vocab
expect 1 "convert from a HF directory" "$G" convert --from tests/golden/model/base --out "$T/x"
expect 1 "bad args global" "$G" convert --from tests/golden/megatron/hostile/bad_args --out "$T/y"
expect 2 "convert without --out" "$G" convert --from tests/golden/megatron/v0_tp1
finish cli_megatron
