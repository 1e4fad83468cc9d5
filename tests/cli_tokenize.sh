#!/usr/bin/env bash
# CLI tests for gptmeg tokenize: round trips, JSON in/out, bad ids, usage errors (exit 0/1/2).
# Usage: bash tests/cli_tokenize.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"

M=tests/fixtures/tok
printf 'the tokenizer, DON'"'"'T\r\n  naïve <|endoftext|>\xff\xfe end' >"$T/text"
: >"$T/empty"
expect_in 0 "encode" "$T/text" "$G" tokenize --model "$M" && cp "$T/out" "$T/ids"
expect_in 0 "decode" "$T/ids" "$G" tokenize --model "$M" --decode && { cmp -s "$T/out" "$T/text" && ok "round trip bytes" || bad "round trip bytes differ"; }
grep -qw 556 "$T/ids" && ok "eot id in output" || bad "no '<|endoftext|>' id 556 in: $(cat "$T/ids")"
expect_in 0 "encode --json" "$T/text" "$G" tokenize --model "$M" --json && cp "$T/out" "$T/ids.json"
[ "$(tr -d '[],\n' <"$T/ids.json" | tr -s ' ')" = "$(tr -d '\n' <"$T/ids")" ] && ok "json lists the same ids" || bad "json ids differ"
expect_in 0 "decode json" "$T/ids.json" "$G" tokenize --model "$M" --decode && { cmp -s "$T/out" "$T/text" && ok "json round trip" || bad "json round trip differs"; }
expect_in 0 "encode empty" "$T/empty" "$G" tokenize --model "$M"
expect_in 0 "decode empty" "$T/empty" "$G" tokenize --model "$M" --decode
head -c 20000 /dev/urandom >"$T/rand"
expect_in 0 "encode random bytes" "$T/rand" "$G" tokenize --model "$M" && cp "$T/out" "$T/rids"
expect_in 0 "decode random bytes" "$T/rids" "$G" tokenize --model "$M" --decode && { cmp -s "$T/out" "$T/rand" && ok "random bytes round trip" || bad "random bytes round trip differs"; }

printf '5 6 557 7' >"$T/bad1"
expect_in 1 "id past the vocab" "$T/bad1" "$G" tokenize --model "$M" --decode && { grep -q '557' "$T/err" && grep -q 'position 2' "$T/err" && ok "message names id and position" || bad "message: $(cat "$T/err")"; }
printf '[1, -4]' >"$T/bad2"
expect_in 1 "negative id" "$T/bad2" "$G" tokenize --model "$M" --decode
printf '1 2 x3' >"$T/bad3"
expect_in 1 "not an integer" "$T/bad3" "$G" tokenize --model "$M" --decode
printf '[1, 2' >"$T/bad4"
expect_in 1 "unclosed json" "$T/bad4" "$G" tokenize --model "$M" --decode
printf '99999999999' >"$T/bad5"
expect_in 1 "id out of int32" "$T/bad5" "$G" tokenize --model "$M" --decode
expect_in 1 "missing model dir" "$T/text" "$G" tokenize --model "$T/nowhere"
mkdir -p "$T/broken" && cp "$M/merges.txt" "$T/broken/" && printf '{"a": 0,' >"$T/broken/vocab.json"
expect_in 1 "broken vocab.json" "$T/text" "$G" tokenize --model "$T/broken" && { grep -q 'vocab.json' "$T/err" && ok "names the file" || bad "message: $(cat "$T/err")"; }
expect_in 2 "no --model" "$T/text" "$G" tokenize
expect_in 2 "unknown option" "$T/text" "$G" tokenize --model "$M" --bogus
expect_in 2 "--model without value" "$T/text" "$G" tokenize --model
expect_in 0 "--help" "$T/empty" "$G" tokenize --help && { grep -q 'usage: gptmeg tokenize' "$T/out" && ok "help text" || bad "help text missing"; }

# with the real GPT-2 files: the stress text gives transformers' ids
D=../shared/data/gpt2-bpe
if [ -f "$D/vocab.json" ]; then
  expect_in 0 "gpt2 stress" tests/golden/tok/stress.txt "$G" tokenize --model "$D" --json
  want=$(python3 -c 'import json;print(json.dumps(json.load(open("tests/golden/tok/gpt2.json"))["stress"]["ids"]))' 2>/dev/null)
  if [ -n "$want" ]; then [ "$(cat "$T/out")" = "$want" ] && ok "gpt2 stress ids match transformers" || bad "gpt2 stress ids differ"; fi
else
  echo "SKIP gpt2 checks: $D not present"
fi

finish cli_tokenize
