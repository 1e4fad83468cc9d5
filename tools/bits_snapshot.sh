#!/usr/bin/env bash
# Writes the SHA-256 of every output a set of gptmeg commands produces, one line per output, so two
# builds can be compared bit for bit: the check behind "behaviour unchanged" in a restructuring.
# Usage: tools/bits_snapshot.sh path/to/gptmeg OUTFILE      (from the repo root; about a minute)
#        diff before.txt after.txt
set -eu
G=$(realpath "$1"); OUT=$2
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
M=tests/golden/model/base
run() { local name=$1; shift; "$@" >"$W/stdout" 2>"$W/stderr" || echo "$name: exit $?" >>"$W/sums"; }
sum() { echo "$1 $(sha256sum <"$2" | cut -c1-64)" >>"$W/sums"; }
# JSON: without the wall-clock fields ("seconds", "generated"), the only ones that vary by run.
sumj() { echo "$1 $(grep -v '"seconds":\|"generated":\|"torch_target":' "$2" | sha256sum | cut -c1-64)" >>"$W/sums"; }
: >"$W/sums"
for m in base relu silu gelu10 quick_untied inner_gelu python_invlayer fast_eps ptanh_noscale noprefix accurate_upcast; do
  d=tests/golden/model/$m
  for dt in f32 f16 bf16; do
    for p in hf hf-legacy meg megatron; do
      for th in 1 2; do
        run "logits $m $dt $p $th" "$G" logits --model "$d" --tokens-npy "$d/tokens.npy" --dtype "$dt" \
          --profile "$p" --threads "$th" --out "$W/l.npy"
        sum "logits $m $dt $p t$th" "$W/l.npy"
      done
    done
  done
done
for p in hf meg megatron; do
  run "diverge $p" "$G" diverge --model "$M" --a hf:f16 --b "$p:bf16" --tokens-npy "$M/tokens.npy" --json
  sumj "diverge hf:f16 $p:bf16" "$W/stdout"
done
run "init" "$G" init --config tiny --seed 3 --out "$W/tiny"
sum "init" "$W/tiny/model.safetensors"
run "generate" "$G" generate --model "$W/tiny" --tokenizer ../shared/data/gpt2-bpe --prompt "Hello there" --max-new-tokens 20 --temperature 0.8 \
  --top-k 50 --top-p 0.95 --seed 1 --dtype f16 --profile meg
sum "generate" "$W/stdout"
run "eval" "$G" eval --model "$W/tiny" --ctx 32 --stride 16 --text tests/fixtures/eval/sample.txt --tokenizer tests/fixtures/tok --json \
  --dtype bf16 --profile megatron
sumj "eval" "$W/stdout"
run "report" "$G" report --out "$W/rep"
for f in "$W"/rep/*.json; do sumj "report $(basename "$f")" "$f"; done
for v in gelu_new gelu_pytorch_tanh gelu quick_gelu; do
  for mode in exact eager fused torch-cpu accurate; do
    for dt in f32 f16 bf16; do
      run "act $v $mode $dt" "$G" act compare "$v:$mode" "$v:exact" --dtype "$dt" --len 4097 --trials 3 --json
      sumj "act compare $v:$mode $dt" "$W/stdout"
    done
  done
done
cp "$W/sums" "$OUT"
echo "$(wc -l <"$OUT") outputs hashed into $OUT"
