#!/usr/bin/env bash
# CLI tests for gptmeg train and gptmeg grad: a short run on the fixture text (the loss falls, the
# log has one line a step, checkpoints load back), exact resume (3 steps, save, 3 more == 6 steps,
# byte for byte), a 2-thread run, grad's file, and bad input (one 'gptmeg: ' line,
# exit 1; usage errors exit 2; no checkpoint half-written). No Python needed.
# Usage: bash tests/cli_train.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"
export GPTMEG_TORCH_TARGET=intel-amx # any target: these tests compare gptmeg with itself
printf '{"vocab_size": 557, "n_positions": 32, "n_embd": 32, "n_layer": 2, "n_head": 4}' >"$T/cfg.json"
expect 0 "init" "$G" init --config "$T/cfg.json" --seed 5 --out "$T/m" --tokenizer tests/fixtures/tok
cp tests/fixtures/eval/sample.txt "$T/text.txt"
RUN=(--data "$T/text.txt" --batch 2 --seq 16 --lr 3e-3 --warmup 2 --eval-every 3 --eval-batches 2 --seed 7)

expect 0 "train 6 steps" "$G" train --model "$T/m" "${RUN[@]}" --steps 6 --save-every 3 --threads 1 --out "$T/a"
[ "$(wc -l <"$T/a/log.jsonl")" -eq 6 ] && ok "one log line a step" || bad "log: $(cat "$T/a/log.jsonl")"
grep -q '"step": 6, "loss": ' "$T/a/log.jsonl" && grep -q '"val_loss": [0-9]' "$T/a/log.jsonl" && ok "log fields" ||
  bad "log fields: $(tail -1 "$T/a/log.jsonl")"
[ -f "$T/text.txt.tokens.npy" ] && ok "tokens cached beside the text" || bad "no token cache"
first=$(head -1 "$T/a/log.jsonl" | grep -o '"loss": [0-9.e+-]*' | cut -d' ' -f2)
last=$(tail -1 "$T/a/log.jsonl" | grep -o '"loss": [0-9.e+-]*' | cut -d' ' -f2)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' && ok "loss falls ($first -> $last)" || bad "loss $first -> $last"
for s in 000003 000006; do
  [ -f "$T/a/step-$s/model.safetensors" ] && [ -f "$T/a/step-$s/train_state.json" ] && ok "checkpoint step-$s" || bad "step-$s missing"
done
[ "$(readlink "$T/a/last")" = step-000006 ] && ok "last -> step-000006" || bad "last: $(readlink "$T/a/last")"
ls "$T/a" | grep -q '\.tmp$' && bad "a .tmp directory was left" || ok "no temporary directory left"
expect 0 "a checkpoint is a model folder with its tokenizer" "$G" eval --model "$T/a/step-000006" --text "$T/text.txt" --ctx 32 --json

expect 0 "resume at 3, run to 6" "$G" train --resume "$T/a/step-000003" "${RUN[@]}" --steps 6 --threads 1 --out "$T/b"
cmp -s "$T/a/step-000006/model.safetensors" "$T/b/step-000006/model.safetensors" && ok "resume is exact (weights)" ||
  bad "resumed weights differ"
cmp -s "$T/a/step-000006/optimizer.bin" "$T/b/step-000006/optimizer.bin" && ok "resume is exact (optimizer state)" ||
  bad "resumed moments differ"
# 2 threads: torch's layer-norm weight gradients depend on its thread count (reproduced), so only the
# first step, before any update, must give the same loss
expect 0 "the same run on 2 threads" "$G" train --model "$T/m" "${RUN[@]}" --steps 2 --threads 2 --out "$T/c"
[ "$(head -1 "$T/a/log.jsonl" | cut -d, -f2)" = "$(head -1 "$T/c/log.jsonl" | cut -d, -f2)" ] &&
  ok "2 threads: the first step's loss is the same" || bad "first loss: $(head -1 "$T/c/log.jsonl")"

# the mixed-precision recipes: bf16-megatron resumes exactly; fp16-megatron's 2^32 start overflows and skips
expect 0 "bf16-megatron 6 steps" "$G" train --model "$T/m" "${RUN[@]}" --steps 6 --save-every 3 --threads 1 --recipe bf16-megatron --out "$T/r"
grep -q '"recipe":[[:space:]]*"bf16-megatron"' "$T/r/step-000003/train_state.json" && ok "the state names the recipe" || bad "state: $(cat "$T/r/step-000003/train_state.json")"
expect 0 "bf16-megatron: resume at 3, run to 6" "$G" train --resume "$T/r/step-000003" "${RUN[@]}" --steps 6 --threads 1 --recipe bf16-megatron --out "$T/r2"
cmp -s "$T/r/step-000006/model.safetensors" "$T/r2/step-000006/model.safetensors" && ok "bf16-megatron resume is exact (main weights)" ||
  bad "bf16-megatron resumed weights differ"
cmp -s "$T/r/step-000006/optimizer.bin" "$T/r2/step-000006/optimizer.bin" && ok "bf16-megatron resume is exact (optimizer state)" ||
  bad "bf16-megatron resumed moments differ"
cmp -s "$T/a/step-000006/model.safetensors" "$T/r/step-000006/model.safetensors" && bad "bf16-megatron gave the f32 run's weights" ||
  ok "bf16-megatron differs from f32"
expect 1 "resume a bf16-megatron checkpoint as f32" "$G" train --resume "$T/r/step-000003" "${RUN[@]}" --steps 6 --out "$T/e14"
grep -q "recipe 'bf16-megatron', not 'f32'" "$T/err" && ok "recipe mismatch message" || bad "recipe mismatch message: $(cat "$T/err")"
expect 0 "fp16-megatron 4 steps" "$G" train --model "$T/m" "${RUN[@]}" --steps 4 --save-every 2 --threads 1 --recipe fp16-megatron --out "$T/f"
grep -q '"grad_norm": null, "loss_scale": 4294967296, "skipped": true' "$T/f/log.jsonl" && ok "fp16: the 2^32 start skips steps" ||
  bad "fp16 log: $(cat "$T/f/log.jsonl")"
grep -q '"loss_scaler"' "$T/f/step-000002/train_state.json" && grep -q '"hysteresis_tracker"' "$T/f/step-000002/train_state.json" &&
  ok "fp16: the scaler is in the state" || bad "fp16 state: $(cat "$T/f/step-000002/train_state.json")"
expect 0 "fp16-megatron: resume at 2, run to 4" "$G" train --resume "$T/f/step-000002" "${RUN[@]}" --steps 4 --threads 1 --recipe fp16-megatron --out "$T/f2"
cmp -s "$T/f/step-000004/model.safetensors" "$T/f2/step-000004/model.safetensors" && cmp -s "$T/f/step-000004/train_state.json" "$T/f2/step-000004/train_state.json" &&
  ok "fp16-megatron resume is exact (weights, scaler)" || bad "fp16-megatron resume differs"
# fp16-deepspeed from 2^18, window 1: step 1 overflows and halves at once (no hysteresis), step 3 grows
# the scale back (before its own unscale, as FP16_Optimizer does), step 4 overflows again: across the cut at 3
expect 0 "fp16-deepspeed 6 steps" "$G" train --model "$T/m" "${RUN[@]}" --steps 6 --save-every 3 --threads 1 --recipe fp16-deepspeed --loss-scale 262144 --loss-scale-window 1 --out "$T/d"
grep -q '"step": 1, .*"grad_norm": null, "loss_scale": 262144, "skipped": true' "$T/d/log.jsonl" &&
  grep -q '"step": 2, .*"loss_scale": 131072, "skipped": false' "$T/d/log.jsonl" && grep -q '"step": 4, .*"loss_scale": 262144, "skipped": true' "$T/d/log.jsonl" &&
  ok "fp16-deepspeed: skips, halves at once, grows back" || bad "fp16-deepspeed log: $(cat "$T/d/log.jsonl")"
grep -q '"cur_scale_f64_bits"' "$T/d/step-000003/train_state.json" && ok "fp16-deepspeed: the scaler is in the state" ||
  bad "fp16-deepspeed state: $(cat "$T/d/step-000003/train_state.json")"
# the scale and the window come back from the checkpoint (FP16_Optimizer.load_state_dict), not from the options
expect 0 "fp16-deepspeed: resume at 3, run to 6" "$G" train --resume "$T/d/step-000003" "${RUN[@]}" --steps 6 --threads 1 --recipe fp16-deepspeed --out "$T/d2"
cmp -s "$T/d/step-000006/model.safetensors" "$T/d2/step-000006/model.safetensors" && cmp -s "$T/d/step-000006/train_state.json" "$T/d2/step-000006/train_state.json" &&
  cmp -s "$T/d/step-000006/optimizer.bin" "$T/d2/step-000006/optimizer.bin" &&
  ok "fp16-deepspeed resume is exact (weights, scaler, moments)" || bad "fp16-deepspeed resume differs"
expect 1 "resume an fp16-deepspeed checkpoint as fp16-megatron" "$G" train --resume "$T/d/step-000003" "${RUN[@]}" --steps 6 --recipe fp16-megatron --out "$T/e15"
grep -q "recipe 'fp16-deepspeed', not 'fp16-megatron'" "$T/err" && ok "fp16 recipe mismatch message" || bad "fp16 recipe mismatch message: $(cat "$T/err")"
expect 2 "--loss-scale-window without fp16-deepspeed" "$G" train --model "$T/m" --data "$T/text.txt" --steps 2 --recipe fp16-megatron --loss-scale-window 4 --out "$T/e16"
# bf16-autocast on the f32 checkpoint: f32 weights in the checkpoints, exact resume, other bits than f32 and bf16-megatron
expect 0 "bf16-autocast 6 steps" "$G" train --model "$T/m" "${RUN[@]}" --steps 6 --save-every 3 --threads 1 --recipe bf16-autocast --out "$T/ac"
grep -q '"recipe":[[:space:]]*"bf16-autocast"' "$T/ac/step-000003/train_state.json" && ok "bf16-autocast: the state names the recipe" ||
  bad "autocast state: $(cat "$T/ac/step-000003/train_state.json")"
grep -q '"step": 6, .*"loss_scale": 1, "skipped": false, "val_loss": [0-9]' "$T/ac/log.jsonl" && ok "bf16-autocast: log with validation" ||
  bad "autocast log: $(tail -1 "$T/ac/log.jsonl")"
expect 0 "bf16-autocast: resume at 3, run to 6" "$G" train --resume "$T/ac/step-000003" "${RUN[@]}" --steps 6 --threads 1 --recipe bf16-autocast --out "$T/ac2"
cmp -s "$T/ac/step-000006/model.safetensors" "$T/ac2/step-000006/model.safetensors" && cmp -s "$T/ac/step-000006/optimizer.bin" "$T/ac2/step-000006/optimizer.bin" &&
  ok "bf16-autocast resume is exact (weights, moments)" || bad "bf16-autocast resume differs"
if cmp -s "$T/a/step-000006/model.safetensors" "$T/ac/step-000006/model.safetensors" ||
  cmp -s "$T/r/step-000006/model.safetensors" "$T/ac/step-000006/model.safetensors"; then
  bad "bf16-autocast gave the f32 or bf16-megatron run's weights"
else ok "bf16-autocast differs from f32 and bf16-megatron"; fi
expect 1 "bf16-autocast on a bf16 checkpoint" "$G" train --model tests/golden/profile/base_bf16_checkpoint --data "$T/text.txt" --tokenizer tests/fixtures/tok --steps 1 --batch 1 --seq 8 --recipe bf16-autocast --out "$T/e17"
grep -q 'bf16 weights, but recipe bf16-autocast trains an f32 checkpoint' "$T/err" && ok "autocast/checkpoint dtype message" || bad "autocast dtype message: $(cat "$T/err")"
expect 1 "bf16-autocast under profile megatron" "$G" train --model "$T/m" "${RUN[@]}" --steps 1 --recipe bf16-autocast --profile megatron --out "$T/e18"
grep -q 'profiles hf, hf-legacy and meg only' "$T/err" && ok "autocast profile message" || bad "autocast profile message: $(cat "$T/err")"

# grad: the loss and every gradient in one file
npy_header '<i4' '(1, 8)' >"$T/ids.npy"
printf '\x05\x00\x00\x00\x07\x00\x00\x00\x09\x00\x00\x00\x05\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x05\x00\x00\x00\x07\x00\x00\x00' >>"$T/ids.npy"
expect 0 "grad" "$G" grad --model "$T/m" --tokens-npy "$T/ids.npy" --out "$T/g.safetensors"
grep -q '^loss ' "$T/out" && [ -s "$T/g.safetensors" ] && ok "grad prints the loss and writes the file" || bad "grad: $(cat "$T/out")"
expect 0 "grad bf16" "$G" grad --model "$T/m" --tokens-npy "$T/ids.npy" --dtype bf16 --out "$T/gb.safetensors"
expect 0 "grad --autocast" "$G" grad --model "$T/m" --tokens-npy "$T/ids.npy" --autocast --out "$T/ga.safetensors"
grep -q 'f32 under bf16 autocast' "$T/out" && [ -s "$T/ga.safetensors" ] && ok "grad --autocast writes f32 gradients" || bad "grad --autocast: $(cat "$T/out")"
expect 2 "grad --autocast with --dtype bf16" "$G" grad --model "$T/m" --tokens-npy "$T/ids.npy" --autocast --dtype bf16 --out "$T/gx.safetensors"
expect 1 "grad: tokens outside the vocabulary" "$G" grad --model tests/golden/model/base --tokens-npy tests/golden/eval/tokens.npy --out "$T/x.safetensors"
[ ! -e "$T/x.safetensors" ] && ok "no file after a failure" || bad "a file was written after a failure"
expect 2 "grad: no --out" "$G" grad --model "$T/m" --tokens-npy "$T/ids.npy"

# bad input
printf 'tiny' >"$T/short.txt"
expect 1 "text too short for one sequence" "$G" train --model "$T/m" --data "$T/short.txt" --steps 2 --seq 16 --out "$T/e1"
expect 1 "T beyond n_positions" "$G" train --model "$T/m" --data "$T/text.txt" --steps 2 --seq 33 --out "$T/e2"
grep -q 'n_positions 32' "$T/err" && ok "n_positions message" || bad "n_positions message: $(cat "$T/err")"
expect 1 "fp16-megatron on a bf16 checkpoint" "$G" train --model tests/golden/profile/base_bf16_checkpoint --data "$T/text.txt" --tokenizer tests/fixtures/tok --steps 1 --batch 1 --seq 8 --recipe fp16-megatron --out "$T/e11"
grep -q 'bf16 weights, but recipe fp16-megatron trains an f32 or f16 checkpoint' "$T/err" && ok "recipe/checkpoint dtype message" ||
  bad "recipe/checkpoint dtype message: $(cat "$T/err")"
npy_header '<i4' '(1, 1, 8)' >"$T/b18.npy"
printf '\x05\x00\x00\x00\x07\x00\x00\x00\x09\x00\x00\x00\x05\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x05\x00\x00\x00\x07\x00\x00\x00' >>"$T/b18.npy"
expect 0 "bf16-megatron on a bf16 checkpoint (its main weights: the exact widening)" "$G" train --model tests/golden/profile/base_bf16_checkpoint --batches-npy "$T/b18.npy" --steps 1 --batch 1 --seq 8 --recipe bf16-megatron --out "$T/e12"
expect 2 "--loss-scale without fp16-megatron" "$G" train --model "$T/m" --data "$T/text.txt" --steps 2 --loss-scale 1024 --out "$T/e13"
expect 1 "f32 recipe on a bf16 checkpoint" "$G" train --model tests/golden/profile/base_bf16_checkpoint --data "$T/text.txt" --tokenizer tests/fixtures/tok --steps 1 --batch 1 --seq 8 --out "$T/e10"
grep -q 'bf16 weights' "$T/err" && ok "checkpoint dtype message" || bad "checkpoint dtype message: $(cat "$T/err")"
expect 2 "an unknown recipe" "$G" train --model "$T/m" --data "$T/text.txt" --steps 2 --recipe nope --out "$T/e4"
expect 1 "resume with another batch shape" "$G" train --resume "$T/a/step-000003" --data "$T/text.txt" --batch 3 --seq 16 --steps 6 --out "$T/e5"
grep -q 'batches of 2 x 16' "$T/err" && ok "batch-shape message" || bad "batch-shape message: $(cat "$T/err")"
expect 1 "resume from a model folder" "$G" train --resume "$T/m" "${RUN[@]}" --steps 6 --out "$T/e6"
expect 1 "batches of the wrong shape" "$G" train --model "$T/m" --batches-npy "$T/ids.npy" --steps 1 --batch 2 --seq 16 --out "$T/e7"
expect 1 "dropout on" "$G" train --model "$T/m" --data "$T/text.txt" --steps 2 --dropout 0.1 --out "$T/e11"
grep -q 'not reproduced' "$T/err" && ok "dropout message" || bad "dropout message: $(cat "$T/err")"
expect 2 "no data" "$G" train --model "$T/m" --steps 2 --out "$T/e8"
expect 2 "both --model and --resume" "$G" train --model "$T/m" --resume "$T/a/last" --data "$T/text.txt" --steps 2 --out "$T/e9"
finish cli_train
