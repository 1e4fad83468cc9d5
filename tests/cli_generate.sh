#!/usr/bin/env bash
# CLI tests for gptmeg generate (and init --tokenizer): determinism, seeds, top-k 1 = greedy,
# the n_positions stop, and bad input (one 'gptmeg: ' line, exit 1; usage errors exit 2).
# Usage: bash tests/cli_generate.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"
same() { cmp -s "$1" "$2" && ok "$3" || bad "$3: '$(head -c 100 "$1")' vs '$(head -c 100 "$2")'"; }

# A small model over the fixture tokenizer (557 tokens, '<|endoftext|>' = 556), n_positions 64.
TOK=tests/fixtures/tok
printf '{"vocab_size": 557, "n_positions": 64, "n_embd": 32, "n_layer": 2, "n_head": 4}' >"$T/cfg.json"
expect 0 "init --tokenizer" "$G" init --config "$T/cfg.json" --seed 1 --out "$T/m" --tokenizer "$TOK"
[ -s "$T/m/vocab.json" ] && [ -s "$T/m/merges.txt" ] && cmp -s "$T/m/vocab.json" "$TOK/vocab.json" && ok "tokenizer copied" || bad "tokenizer copied"
M="$T/m"
P="The numbers agree"
expect 0 "greedy" "$G" generate --model "$M" --prompt "$P" --max-new-tokens 12 --temperature 0
cp "$T/out" "$T/greedy"
[ -s "$T/greedy" ] && ok "greedy wrote text" || bad "greedy wrote nothing"
expect 0 "greedy again, 2 threads" "$G" generate --model "$M" --prompt "$P" --max-new-tokens 12 --temperature 0 --threads 2
same "$T/out" "$T/greedy" "greedy deterministic across runs and threads"
expect 0 "top-k 1" "$G" generate --model "$M" --prompt "$P" --max-new-tokens 12 --temperature 0.9 --top-k 1 --seed 5
same "$T/out" "$T/greedy" "top-k 1 equals greedy"
expect 0 "seed 7" "$G" generate --model "$M" --prompt "$P" --max-new-tokens 20 --seed 7 --top-k 50 --top-p 0.95
cp "$T/out" "$T/s7"
expect 0 "seed 7 again, 1 thread" "$G" generate --model "$M" --prompt "$P" --max-new-tokens 20 --seed 7 --top-k 50 --top-p 0.95 --threads 1
same "$T/out" "$T/s7" "same seed, same text"
differ=0
for s in 8 9 10; do
  "$G" generate --model "$M" --prompt "$P" --max-new-tokens 20 --seed $s --top-k 50 --top-p 0.95 >"$T/o$s" 2>/dev/null
  cmp -s "$T/o$s" "$T/s7" || differ=$((differ + 1))
done
[ $differ -eq 3 ] && ok "other seeds, other text" || bad "only $differ of 3 other seeds differ from seed 7"
expect 0 "max-new-tokens 0" "$G" generate --model "$M" --prompt "$P" --max-new-tokens 0
[ ! -s "$T/out" ] && ok "nothing generated" || bad "max-new-tokens 0 wrote $(cat "$T/out")"
expect 0 "runs into n_positions" "$G" generate --model "$M" --prompt "$P" --max-new-tokens 500 --temperature 0
grep -q 'n_positions 64' "$T/err" && ok "n_positions stop said on stderr" || bad "n_positions message: $(cat "$T/err")"
expect 0 "--profile hf" "$G" generate --model "$M" --prompt "$P" --max-new-tokens 12 --temperature 0 --profile hf
same "$T/out" "$T/greedy" "--profile hf is the default"

# --prompt-ids (ids in, ids out) and --logits-out: the same tokens as the text prompt's
ids_npy() { # ids_npy OUT ID...: a [n] '<i4' .npy
  local out=$1; shift
  { npy_header '<i4' "($#,)"
    for id in "$@"; do h=$(printf '%08x' "$id"); printf "\\x${h:6:2}\\x${h:4:2}\\x${h:2:2}\\x${h:0:2}"; done; } >"$out"
}
printf '%s' "$P" >"$T/p.txt"
expect 0 "tokenize the prompt" "$G" tokenize --model "$M" <"$T/p.txt"
read -r -a PIDS <"$T/out"
ids_npy "$T/p.npy" "${PIDS[@]}"
expect 0 "--prompt-ids --logits-out" "$G" generate --model "$M" --prompt-ids "$T/p.npy" --max-new-tokens 12 --temperature 0 --logits-out "$T/l.npy"
[ "$(wc -w <"$T/out")" -eq 12 ] && ok "12 ids printed" || bad "--prompt-ids printed '$(cat "$T/out")'"
"$G" tokenize --model "$M" --decode <"$T/out" >"$T/ids_text"
same "$T/ids_text" "$T/greedy" "--prompt-ids continues as the text prompt does"
sz=$(stat -c %s "$T/l.npy"); want=$((12 * 557 * 4))
[ "$sz" -gt "$want" ] && [ "$sz" -le $((want + 256)) ] && ok "--logits-out holds [12, 557] f32" || bad "--logits-out is $sz bytes (want $want + header)"
expect 1 "--logits-out into a missing folder" "$G" generate --model "$M" --prompt-ids "$T/p.npy" --max-new-tokens 2 --logits-out "$T/nope/l.npy"
[ ! -e "$T/nope" ] && ok "nothing written" || bad "--logits-out wrote into $T/nope"
ids_npy "$T/oov.npy" 5 557
expect 1 "--prompt-ids outside the vocabulary" "$G" generate --model "$M" --prompt-ids "$T/oov.npy"
grep -q 'outside the vocabulary' "$T/err" && ok "out-of-vocabulary message" || bad "out-of-vocabulary message: $(cat "$T/err")"
{ npy_header '<i4' '(2, 1)'; printf '\x05\x00\x00\x00\x06\x00\x00\x00'; } >"$T/two.npy"
expect 1 "--prompt-ids of two sequences" "$G" generate --model "$M" --prompt-ids "$T/two.npy"
grep -q 'one sequence' "$T/err" && ok "two sequences message" || bad "two sequences message: $(cat "$T/err")"
expect 2 "--prompt and --prompt-ids" "$G" generate --model "$M" --prompt "$P" --prompt-ids "$T/p.npy"

# bad input
expect 1 "empty prompt" "$G" generate --model "$M" --prompt ""
grep -q 'prompt is empty' "$T/err" && ok "empty prompt message" || bad "empty prompt message: $(cat "$T/err")"
expect 0 "init without tokenizer" "$G" init --config "$T/cfg.json" --seed 1 --out "$T/bare"
expect 1 "no vocab.json" "$G" generate --model "$T/bare" --prompt "$P"
grep -q 'vocab.json' "$T/err" && grep -q -- '--tokenizer' "$T/err" && ok "missing vocab message" || bad "missing vocab message: $(cat "$T/err")"
cp "$T/m/vocab.json" "$T/bare/vocab.json"
expect 1 "no merges.txt" "$G" generate --model "$T/bare" --prompt "$P"
grep -q 'merges.txt' "$T/err" && ok "missing merges message" || bad "missing merges message: $(cat "$T/err")"
expect 0 "--tokenizer DIR" "$G" generate --model "$T/bare" --tokenizer "$TOK" --prompt "$P" --max-new-tokens 12 --temperature 0
same "$T/out" "$T/greedy" "--tokenizer gives the same text"
expect 1 "--tokenizer missing dir" "$G" generate --model "$M" --tokenizer "$T/nope" --prompt "$P"
expect 1 "unknown profile" "$G" generate --model "$M" --prompt "$P" --profile nope
expect 1 "missing model" "$G" generate --model "$T/nope" --tokenizer "$TOK" --prompt "$P"
long=$(printf 'word %.0s' $(seq 1 80))
expect 1 "prompt longer than n_positions" "$G" generate --model "$M" --prompt "$long"
expect 2 "no --prompt" "$G" generate --model "$M"
expect 2 "top-p 0" "$G" generate --model "$M" --prompt "$P" --top-p 0
expect 2 "negative temperature" "$G" generate --model "$M" --prompt "$P" --temperature -1
expect 2 "bad top-k" "$G" generate --model "$M" --prompt "$P" --top-k x
expect 2 "unknown option" "$G" generate --model "$M" --prompt "$P" --frobnicate
expect 1 "init: tokenizer larger than the vocab" "$G" init --config tests/golden/model/base/config.json --out "$T/x" --tokenizer "$TOK"
[ ! -e "$T/x" ] && ok "nothing written" || bad "init wrote $T/x"
expect 0 "generate --help" "$G" generate --help

# The GPT-2 vocabulary (../shared/data), when present.
BPE=../shared/data/gpt2-bpe
if [ -s "$BPE/vocab.json" ]; then
  expect 0 "init tiny --tokenizer gpt2" "$G" init --config tiny --seed 2 --out "$T/tiny" --tokenizer "$BPE"
  expect 0 "generate gpt2 vocab" "$G" generate --model "$T/tiny" --prompt "Hello, world" --max-new-tokens 8 --temperature 0
  cp "$T/out" "$T/g1"
  expect 0 "generate gpt2 vocab again" "$G" generate --model "$T/tiny" --prompt "Hello, world" --max-new-tokens 8 --temperature 0
  same "$T/out" "$T/g1" "gpt2 vocab greedy deterministic"
else
  echo "SKIP gpt2 vocabulary tests: $BPE is absent"
fi

finish cli_generate
