#!/usr/bin/env bash
# CLI tests for gptmeg train-compare: A against A is zero at every step (losses, gradients, weights),
# hf against meg is not, the noise baseline runs, --json parses (its fields), --svg is written, and bad
# input gives one 'gptmeg: ' line and exit 1 (usage errors exit 2). No Python needed; about a second.
# Usage: bash tests/cli_train_compare.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"
export GPTMEG_TORCH_TARGET=intel-amx # any target: these tests compare gptmeg with itself
printf '{"vocab_size": 557, "n_positions": 32, "n_embd": 32, "n_layer": 2, "n_head": 4}' >"$T/cfg.json"
expect 0 "init" "$G" init --config "$T/cfg.json" --seed 5 --out "$T/m" --tokenizer tests/fixtures/tok
cp tests/fixtures/eval/sample.txt "$T/text.txt"
RUN=(--model "$T/m" --data "$T/text.txt" --batch 2 --seq 16 --lr 3e-3 --warmup 2 --seed 7 --steps 5)

expect 0 "A vs A" "$G" train-compare "${RUN[@]}" --a hf --b hf:f32 --json
cp "$T/out" "$T/aa.json"
n0=$(grep -c '"weights_equal":	true' "$T/aa.json")
nd=$(grep -c '"loss_diff":	0,' "$T/aa.json")
ng=$(grep -c '"grad_rel":	0,' "$T/aa.json")
[ "$n0" -eq 5 ] && [ "$nd" -eq 5 ] && [ "$ng" -eq 5 ] && ok "A vs A: weights, losses and gradients identical at all 5 steps" ||
  bad "A vs A: weights_equal $n0, loss_diff 0 $nd, grad_rel 0 $ng of 5"
grep -q '"first_weights_differ":	null' "$T/aa.json" && grep -q '"first_loss_outside":	null' "$T/aa.json" &&
  ok "A vs A: no first divergence" || bad "A vs A first divergence: $(grep first_ "$T/aa.json")"

# run A is `gptmeg train` step by step: the same batches (seed), optimizer and schedule give its losses
expect 0 "gptmeg train, the same run" "$G" train "${RUN[@]}" --eval-every 0 --out "$T/tr"
tl=$(grep -o '"loss": [0-9.e+-]*' "$T/tr/log.jsonl" | cut -d' ' -f2 | tr '\n' ' ')
cl=$(grep -o '"loss_a":	[0-9.e+-]*' "$T/aa.json" | cut -f2 | while read -r x; do printf '%.9g ' "$x"; done)
[ -n "$tl" ] && [ "$tl" = "$cl" ] && ok "run A's losses are gptmeg train's ($tl)" || bad "train losses '$tl', run A '$cl'"

expect 0 "hf vs meg with noise, json and svg" "$G" train-compare "${RUN[@]}" --a hf --b meg --noise --json --svg "$T/p.svg"
cp "$T/out" "$T/hm.json"
for f in '"a":	"hf"' '"b":	"meg"' '"per_step":' '"grad_rel_groups":' '"h.1":' '"ln_f":' '"weight_drift":' \
  '"first_loss_outside":' '"noise":	{' '"drift_vs_noise":' '"tolerance":'; do
  grep -qF "$f" "$T/hm.json" && ok "json has $f" || bad "json lacks $f"
done
# warmup 2: step 1 runs at lr 0 (transformers' warmup starts at 0), so the weights first move at step 2
grep -q '^	"first_weights_differ":	2,' "$T/hm.json" && ok "hf vs meg: the weights differ from step 2 (lr 0 at step 1)" ||
  bad "hf vs meg: $(grep first_weights "$T/hm.json")"
ab=$(sed '/"noise":	{/,$d' "$T/hm.json")
[ "$(grep -c '"weights_equal":	false' <<<"$ab")" -eq 4 ] && [ "$(grep -c '"grad_rel":	0,' <<<"$ab")" -eq 0 ] &&
  ok "hf vs meg: gradients differ at all 5 steps, weights at steps 2-5" || bad "hf vs meg: $ab"
awk '/"final_weight_drift"/ { gsub(/[,\t ]/, ""); split($0, a, ":"); if (a[2] + 0 > 0) n++ } END { exit n != 2 }' "$T/hm.json" &&
  ok "hf vs meg and the noise run have non-zero final drift" || bad "final drifts: $(grep final_weight_drift "$T/hm.json")"
grep -q '^<svg' "$T/p.svg" && grep -q '</svg>' "$T/p.svg" && ok "svg written" || bad "svg: $(head -c 200 "$T/p.svg")"
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["per_step"]) == 5 and len(d["noise"]["per_step"]) == 5' "$T/hm.json" &&
    ok "json parses (python3)" || bad "json does not parse"
fi

expect 0 "a knob spec, text table" "$G" train-compare "${RUN[@]}" --steps 2 --a hf --b hf+act=gelu_pytorch_tanh:torch-cpu
grep -q 'A = hf, B = hf+act=gelu_pytorch_tanh:torch-cpu' "$T/out" && grep -q 'first step after which the weights differ' "$T/out" &&
  ok "text table names the sides and the first difference" || bad "text: $(cat "$T/out")"

# given batches [steps, B, T]
npy_header '<i4' '(2, 2, 16)' >"$T/b.npy"
for i in $(seq 0 63); do v=$(( (i * 37 + 11) % 557 )); printf "\\x$(printf %02x $((v & 255)))\\x$(printf %02x $((v >> 8)))\\x00\\x00"; done >>"$T/b.npy"
expect 0 "--batches-npy" "$G" train-compare --model "$T/m" --batches-npy "$T/b.npy" --batch 2 --seq 16 --steps 2 --a hf --b meg --json
grep -q '"steps":	2,' "$T/out" && ok "--batches-npy: 2 steps" || bad "--batches-npy: $(head -c 300 "$T/out")"
expect 1 "--batches-npy: too few batches" "$G" train-compare --model "$T/m" --batches-npy "$T/b.npy" --batch 2 --seq 16 --steps 3 --a hf --b meg
expect 1 "--batches-npy: another shape" "$G" train-compare --model "$T/m" --batches-npy "$T/b.npy" --batch 1 --seq 16 --steps 2 --a hf --b meg

# bad input
expect 1 "an unknown profile" "$G" train-compare "${RUN[@]}" --a hf --b nope
expect 1 "an unknown knob" "$G" train-compare "${RUN[@]}" --a hf --b hf+nope=1
expect 1 "a knob without a value" "$G" train-compare "${RUN[@]}" --a hf --b hf+act
expect 1 "f16 is refused" "$G" train-compare "${RUN[@]}" --a hf:f16 --b hf
grep -q 'f32 runs only' "$T/err" && ok "f16 message" || bad "f16 message: $(cat "$T/err")"
expect 1 "T beyond n_positions" "$G" train-compare "${RUN[@]}" --seq 33 --a hf --b meg
printf 'tiny' >"$T/short.txt"
expect 1 "text too short" "$G" train-compare --model "$T/m" --data "$T/short.txt" --steps 2 --seq 16 --a hf --b meg
expect 1 "a missing model" "$G" train-compare --model "$T/none" --data "$T/text.txt" --steps 2 --seq 16 --a hf --b meg
expect 1 "svg into a missing folder" "$G" train-compare "${RUN[@]}" --a hf --b meg --svg "$T/no/p.svg"
expect 1 "a bf16 checkpoint" "$G" train-compare --model tests/golden/profile/base_bf16_checkpoint --tokenizer tests/fixtures/tok --data "$T/text.txt" --steps 1 --batch 1 --seq 8 --a hf --b meg
grep -q 'bf16 weights' "$T/err" && ok "checkpoint dtype message" || bad "checkpoint dtype message: $(cat "$T/err")"
expect 2 "no --b" "$G" train-compare "${RUN[@]}" --a hf
expect 2 "no data" "$G" train-compare --model "$T/m" --steps 2 --a hf --b meg
expect 2 "a bad --steps" "$G" train-compare "${RUN[@]}" --steps 0 --a hf --b meg
expect 2 "an unknown option" "$G" train-compare "${RUN[@]}" --a hf --b meg --frobnicate 1
expect 0 "help" "$G" train-compare --help
finish cli_train_compare
