#!/usr/bin/env bash
# CLI tests for NGC's Megatron zip and the recorded profile: every model command takes the .zip
# (tests/golden/megatron_zip, tools/ref/gen_ngc_goldens.py) as --model; gptmeg convert from the
# zip; a directory whose config.json records "gptmeg_profile" (convert writes megatron) and a
# Megatron checkpoint run under that profile when --profile is not given: logits without
# --profile equal those with --profile megatron and differ from --profile hf; an unknown
# recorded profile is one error line; info states the profile and the real file size.
# Usage: bash tests/cli_ngc.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"

Z=tests/golden/megatron_zip
{ npy_header '<i4' '(1, 6)'; for v in 5 17 99 3 127 64; do
    for ((i = 0; i < 4; i++)); do printf "\\x$(printf %02x $(( (v >> (8 * i)) & 255 )))"; done; done; } >"$T/tok.npy"
L() { "$G" logits --tokens-npy "$T/tok.npy" --threads 1 "$@"; }

for z in stored deflated nested; do
  expect 0 "$z.zip: info" "$G" info --model "$Z/$z.zip" || continue
  grep -q '^profile: *megatron' "$T/out" && ok "$z.zip: info states megatron" || bad "$z.zip: info states megatron"
  sz=$(stat -c %s "$Z/$z.zip")
  grep -q "^file: *megatron-lm zip (TP 1, PP 1, checkpoint_version 0), f16, $sz bytes" "$T/out" && ok "$z.zip: info file size $sz" ||
    bad "$z.zip: info file line: $(grep '^file' "$T/out")"
  expect 0 "$z.zip: logits --profile megatron" L --model "$Z/$z.zip" --out "$T/$z.meg.npy" --profile megatron
  expect 0 "$z.zip: logits on ref --profile megatron" L --model "$Z/ref" --out "$T/ref.meg.npy" --profile megatron
  cmp -s "$T/$z.meg.npy" "$T/ref.meg.npy" && ok "$z.zip: logits equal the converter's directory's" || bad "$z.zip: logits equal ref's"
  expect 0 "$z.zip: convert" "$G" convert --from "$Z/$z.zip" --out "$T/c_$z" || continue
  cmp -s "$T/c_$z/model.safetensors" "$T/c_stored/model.safetensors" && ok "$z.zip: same conversion as stored.zip" ||
    bad "$z.zip: same conversion as stored.zip"
done

# The recorded profile: convert -> logits without --profile.
C=$T/c_stored
expect 0 "converted: logits, no --profile" L --model "$C" --out "$T/none.npy"
expect 0 "converted: logits --profile megatron" L --model "$C" --out "$T/meg.npy" --profile megatron
expect 0 "converted: logits --profile hf" L --model "$C" --out "$T/hf.npy" --profile hf
cmp -s "$T/none.npy" "$T/meg.npy" && ok "no --profile = --profile megatron" || bad "no --profile = --profile megatron"
cmp -s "$T/none.npy" "$T/hf.npy" && bad "no --profile differs from --profile hf (they are equal)" || ok "no --profile differs from --profile hf"
# The note, once, on stderr (GPTMEG_QUIET silences it, as the other notes).
GPTMEG_QUIET= L --model "$C" --out "$T/n2.npy" >"$T/out" 2>"$T/err"
[ "$(grep -c "profile megatron (recorded in $C/config.json" "$T/err")" = 1 ] && ok "stderr says the recorded profile once" ||
  bad "stderr: $(cat "$T/err")"
expect 0 "converted: info" "$G" info --model "$C"
grep -q "^profile: *megatron (recorded in $C/config.json" "$T/out" && ok "info: recorded profile" || bad "info: $(grep '^profile' "$T/out")"
expect 0 "HF dir: info" "$G" info --model tests/golden/model/base
grep -q '^profile: *hf (the default: none recorded' "$T/out" && ok "info: hf by default" || bad "info: $(grep '^profile' "$T/out")"
# The Megatron zip itself: megatron by default.
expect 0 "zip: logits, no --profile" L --model "$Z/stored.zip" --out "$T/znone.npy"
cmp -s "$T/znone.npy" "$T/meg.npy" && ok "zip: no --profile = megatron" || bad "zip: no --profile = megatron"
# eval and grad on the zip (its default, megatron) equal those on the converter's directory under --profile megatron.
expect 0 "zip: eval" "$G" eval --model "$Z/deflated.zip" --tokens-npy "$T/tok.npy" --threads 1 && cp "$T/out" "$T/ev.zip"
expect 0 "ref: eval --profile megatron" "$G" eval --model "$Z/ref" --tokens-npy "$T/tok.npy" --threads 1 --profile megatron
cmp -s "$T/out" "$T/ev.zip" && ok "zip: eval = ref's" || bad "zip: eval = ref's: $(cat "$T/ev.zip") vs $(cat "$T/out")"
expect 0 "zip: grad" "$G" grad --model "$Z/stored.zip" --tokens-npy "$T/tok.npy" --out "$T/gz.safetensors" --threads 1
expect 0 "ref: grad --profile megatron" "$G" grad --model "$Z/ref" --tokens-npy "$T/tok.npy" --out "$T/gr.safetensors" --threads 1 --profile megatron
cmp -s "$T/gz.safetensors" "$T/gr.safetensors" && ok "zip: gradients = ref's" || bad "zip: gradients = ref's"
# A bad record.
mkdir -p "$T/badp" && cp "$C/model.safetensors" "$T/badp/" &&
  sed -E 's/"gptmeg_profile":[[:space:]]*"megatron"/"gptmeg_profile": "nvidia"/' "$C/config.json" >"$T/badp/config.json"
expect 1 "unknown recorded profile" L --model "$T/badp" --out "$T/x.npy"
grep -q 'gptmeg_profile.*"nvidia" is not a profile' "$T/err" && ok "unknown profile named" || bad "message: $(cat "$T/err")"
expect 0 "unknown recorded profile, --profile given" L --model "$T/badp" --out "$T/x.npy" --profile hf
expect 1 "info: unknown recorded profile" "$G" info --model "$T/badp"
# info on a Megatron directory: the rank files' total size (it printed 0 bytes before).
M=tests/golden/megatron/v3_tp2_pp2
want=$(cat "$M"/iter_0000010/mp_rank_*/model_optim_rng.pt | wc -c)
expect 0 "megatron dir: info" "$G" info --model "$M"
grep -q "^file: *megatron-lm (TP 2, PP 2, checkpoint_version 3), f16, $want bytes" "$T/out" && ok "megatron dir: info size $want" ||
  bad "megatron dir: $(grep '^file' "$T/out") (want $want bytes)"
# Hostile zips through the CLI: one line each.
for h in bomb crc no_entry outside size_big two_ranks; do
  expect 1 "hostile $h.zip" "$G" info --model "$Z/hostile/$h.zip"
done
finish cli_ngc
