#!/usr/bin/env bash
# CLI tests for gptmeg eval: perplexity of golden ids against transformers' recipe
# (tests/golden/eval/index.json), text through a model folder's tokenizer, thread independence,
# and bad input (one 'gptmeg: ' line, exit 1; usage errors exit 2). No Python needed.
# Usage: bash tests/cli_eval.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"
# jfield KEY FILE: the number after "KEY": in a one-line JSON object
jfield() { grep -o "\"$1\":[-0-9.e+]*" "$2" | head -1 | cut -d: -f2; }
# golden CTX STRIDE FIELD: the field of the base case with that ctx and stride in index.json
golden() {
  awk -v c="$1" -v s="$2" -v f="\"$3\":" '
    /"text"/ { done = 1 }
    !done && /"ctx":/ { gsub(/[ ,]/, ""); split($0, a, ":"); ctx = a[2] }
    !done && /"stride":/ { gsub(/[ ,]/, ""); split($0, a, ":"); st = a[2] }
    !done && index($0, f) { v = $0; gsub(/[ ,]/, "", v); split(v, a, ":"); val[ctx "/" st] = a[2] }
    END { print val[c "/" s] }' tests/golden/eval/index.json
}

B=tests/golden/model/base   # vocab 400, n_positions 64
IDS=tests/golden/eval/tokens.npy
for cs in "64 32" "64 47" "16 5"; do
  set -- $cs
  expect 0 "eval ids ctx $1 stride $2" "$G" eval --model "$B" --tokens-npy "$IDS" --ctx "$1" --stride "$2" --json
  got=$(jfield ppl "$T/out"); want=$(golden "$1" "$2" ppl)
  nt=$(jfield n_tokens "$T/out"); wnt=$(golden "$1" "$2" n_tokens)
  if [ -n "$got" ] && [ -n "$want" ] && awk -v a="$got" -v e="$want" 'BEGIN { d = (a - e) / e; exit !(d < 1e-4 && d > -1e-4) }' && [ "$nt" = "$wnt" ]; then
    ok "ppl $got matches transformers $want ($nt tokens)"
  else bad "ctx $1 stride $2: ppl '$got' vs '$want', n_tokens '$nt' vs '$wnt'"; fi
done
expect 0 "defaults ctx = n_positions, stride = ctx" "$G" eval --model "$B" --tokens-npy "$IDS" --json
[ "$(jfield ctx "$T/out")" = 64 ] && [ "$(jfield stride "$T/out")" = 64 ] && ok "defaults" || bad "defaults: $(cat "$T/out")"
grep -q '"nll":' "$T/out" && grep -q '"n_windows":5' "$T/out" && ok "json fields" || bad "json fields: $(cat "$T/out")"
expect 0 "text output" "$G" eval --model "$B" --tokens-npy "$IDS" --ctx 64 --stride 32 --threads 1
cp "$T/out" "$T/t1"
grep -q '^ppl ' "$T/t1" && ok "text line" || bad "text line: $(cat "$T/t1")"
[ ! -s "$T/err" ] && ok "no progress bar when stderr is not a terminal" || bad "stderr: $(cat "$T/err")"
expect 0 "2 threads" "$G" eval --model "$B" --tokens-npy "$IDS" --ctx 64 --stride 32 --threads 2
cmp -s "$T/out" "$T/t1" && ok "1 and 2 threads print the same" || bad "threads differ: $(cat "$T/out") vs $(cat "$T/t1")"

# text through the model folder's tokenizer (the fixture tokenizer, 557 tokens)
printf '{"vocab_size": 557, "n_positions": 64, "n_embd": 32, "n_layer": 2, "n_head": 4}' >"$T/cfg.json"
expect 0 "init with tokenizer" "$G" init --config "$T/cfg.json" --seed 3 --out "$T/m" --tokenizer tests/fixtures/tok
TXT=tests/fixtures/eval/sample.txt
expect 0 "eval text" "$G" eval --model "$T/m" --text "$TXT" --ctx 64 --stride 48 --json
n_in=$(jfield n_input "$T/out"); ppl=$(jfield ppl "$T/out")
[ "${n_in:-0}" -gt 500 ] && awk -v p="$ppl" 'BEGIN { exit !(p > 400 && p < 700) }' && ok "text: $n_in tokens, ppl $ppl (near-uniform over 557)" || bad "text eval: $(cat "$T/out")"
expect 0 "--tokenizer DIR" "$G" eval --model "$B" --tokens-npy "$IDS" --tokenizer tests/fixtures/tok --ctx 64 --stride 32 --threads 1
cmp -s "$T/out" "$T/t1" && ok "--tokenizer is ignored for ids" || bad "--tokenizer with ids"

# bad input
printf '' >"$T/empty.txt"
printf 'a' >"$T/one.txt"
expect 1 "text file missing" "$G" eval --model "$T/m" --text "$T/nope.txt"
expect 1 "text file empty" "$G" eval --model "$T/m" --text "$T/empty.txt"
grep -q 'empty' "$T/err" && ok "empty message" || bad "empty message: $(cat "$T/err")"
expect 1 "one token" "$G" eval --model "$T/m" --text "$T/one.txt"
expect 1 "ctx > n_positions" "$G" eval --model "$T/m" --text "$TXT" --ctx 65
grep -q 'n_positions 64' "$T/err" && ok "ctx message" || bad "ctx message: $(cat "$T/err")"
expect 1 "ctx 1" "$G" eval --model "$T/m" --text "$TXT" --ctx 1
expect 1 "stride > ctx" "$G" eval --model "$T/m" --text "$TXT" --ctx 32 --stride 33
expect 1 "stride > default ctx" "$G" eval --model "$T/m" --text "$TXT" --stride 65
expect 1 "stride 0" "$G" eval --model "$T/m" --text "$TXT" --stride 0
expect 1 "stride negative" "$G" eval --model "$T/m" --text "$TXT" --stride -4
expect 1 "no vocab files in the model folder" "$G" eval --model "$B" --text "$TXT"
grep -q 'vocab.json' "$T/err" && ok "missing vocab message" || bad "missing vocab message: $(cat "$T/err")"
expect 1 "ids outside the vocabulary" "$G" eval --model "$B" --text "$TXT" --tokenizer tests/fixtures/tok
expect 1 "not an npy" "$G" eval --model "$B" --tokens-npy "$TXT"
expect 1 "missing model" "$G" eval --model "$T/nope" --tokens-npy "$IDS"
expect 1 "unknown profile" "$G" eval --model "$B" --tokens-npy "$IDS" --profile nope
expect 2 "no --text" "$G" eval --model "$B"
expect 2 "both --text and --tokens-npy" "$G" eval --model "$B" --text "$TXT" --tokens-npy "$IDS"
expect 2 "bad --ctx" "$G" eval --model "$B" --tokens-npy "$IDS" --ctx x
expect 2 "bad --threads" "$G" eval --model "$B" --tokens-npy "$IDS" --threads 0
expect 2 "unknown option" "$G" eval --model "$B" --tokens-npy "$IDS" --frobnicate
expect 0 "eval --help" "$G" eval --help

finish cli_eval
