#!/usr/bin/env bash
# CLI tests for gptmeg diverge: usage errors (exit 2), bad profiles / knobs / dumps / dtypes (exit 1,
# one 'gptmeg: ' line), the JSON keys, the SVG, --dump and --against (itself, and transformers'
# golden dump of hf f16 on base: logits bit for bit), and no output left behind on failure.
# Usage: bash tests/cli_diverge.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"
# no temporary or partial outputs in $T/o
no_outputs() { [ -z "$(ls -A "$T/o")" ] && ok "$1: nothing left behind" || bad "$1: left $(ls "$T/o")"; }

M=tests/golden/model/base
K=$M/tokens.npy
GOLD=tests/golden/diverge/base_hf_f16.safetensors
mkdir -p "$T/o"

expect 0 "help" "$G" diverge --help
grep -q -- '--a-knob' "$T/out" && ok "help names the knob flags" || bad "help lacks --a-knob"
expect 2 "no arguments" "$G" diverge
expect 2 "no --b" "$G" diverge --model $M --a hf --tokens-npy $K
expect 2 "no tokens" "$G" diverge --model $M --a hf --b meg
expect 2 "both token sources" "$G" diverge --model $M --a hf --b meg --tokens-npy $K --prompt hi
expect 2 "--rtol without --atol" "$G" diverge --model $M --a hf --b meg --tokens-npy $K --rtol 1e-3
expect 2 "--ulp with --rtol/--atol" "$G" diverge --model $M --a hf --b meg --tokens-npy $K --rtol 1 --atol 1 --ulp 2
expect 2 "unknown option" "$G" diverge --model $M --a hf --b meg --tokens-npy $K --frobnicate 1
expect 2 "--against with --b" "$G" diverge --model $M --a hf --b meg --tokens-npy $K --against $GOLD
expect 2 "knob without =" "$G" diverge --model $M --a hf --b meg --tokens-npy $K --b-knob scores
expect 2 "missing value" "$G" diverge --model $M --a

expect 1 "unknown profile" "$G" diverge --model $M --a hf --b nope:f16 --tokens-npy $K
grep -q 'megatron' "$T/err" && ok "unknown profile lists the valid ones" || bad "unknown profile: $(cat "$T/err")"
expect 1 "unknown dtype" "$G" diverge --model $M --a hf:f8 --b meg --tokens-npy $K
grep -q 'bf16' "$T/err" && ok "unknown dtype lists the valid ones" || bad "unknown dtype: $(cat "$T/err")"
expect 1 "unknown knob value" "$G" diverge --model $M --a hf --b meg --b-knob scores=sideways --tokens-npy $K
grep -q 'baddbmm' "$T/err" && ok "unknown knob value lists the valid ones" || bad "knob value: $(cat "$T/err")"
expect 1 "unknown knob" "$G" diverge --model $M --a hf --b meg --b-knob colour=red --tokens-npy $K
expect 1 "missing model" "$G" diverge --model "$T/none" --a hf --b meg --tokens-npy $K
expect 1 "missing tokens file" "$G" diverge --model $M --a hf --b meg --tokens-npy "$T/none.npy"

# text and JSON
expect 0 "hf vs meg f16 (text)" "$G" diverge --model $M --a hf:f16 --b meg:f16 --tokens-npy $K
grep -q 'first outside' "$T/out" && grep -q '^top-1:' "$T/out" && ok "text marks first_outside and top-1" || bad "text: $(head -c 400 "$T/out")"
expect 0 "hf vs meg f16 (json, svg, dump)" "$G" diverge --model $M --a hf:f16 --b meg:f16 --tokens-npy $K --json --svg "$T/o/p.svg" --dump "$T/o/a.safetensors"
if python3 -c 'import json' 2>/dev/null; then
  python3 - "$T/out" <<'PY' && ok "json keys" || bad "json keys"
import json, sys
j = json.load(open(sys.argv[1]))
p = j["points"]
assert len(p) == 27, len(p)
for q in p:
    for k in ("layer", "point", "max_abs", "max_rel", "rms_rel", "max_ulp", "outside_fraction", "added", "inherited"):
        assert k in q, k
    for k in ("max_abs", "rms_rel"):
        assert k in q["added"] and k in q["inherited"]
assert j["first_outside"]["point"] in ("scores", "probs"), j["first_outside"]
for k in ("positions", "differ", "near_ties", "flips"):
    assert k in j["top1"]
assert j["top1"]["positions"] == 32
PY
else grep -q '"inherited"' "$T/out" && grep -q '"near_ties"' "$T/out" && ok "json keys (grep)" || bad "json keys"; fi
head -c 5 "$T/o/p.svg" | grep -q '<svg' && ok "svg written" || bad "svg"
expect 0 "against its own dump" "$G" diverge --model $M --a hf:f16 --against "$T/o/a.safetensors" --tokens-npy $K --json
grep -q '"first_outside":	null' "$T/out" && ! grep -q '"max_abs":	[1-9]' "$T/out" && ok "own dump: all zero" || bad "own dump: $(head -c 400 "$T/out")"
rm -f "$T/o/"*
expect 0 "--ulp" "$G" diverge --model $M --a hf:f16 --b meg:f16 --tokens-npy $K --ulp 100000 --json
grep -q '"ulp":	100000' "$T/out" && grep -q '"first_outside":	null' "$T/out" && ok "--ulp tolerance" || bad "--ulp: $(head -c 300 "$T/out")"
expect 0 "knob flags" "$G" diverge --model $M --a hf:f16 --b hf:f16 --b-knob scores=baddbmm --tokens-npy $K --json
grep -q '"b":	"hf+scores=baddbmm:f16"' "$T/out" && ok "--b-knob applied" || bad "--b-knob: $(head -c 300 "$T/out")"

# transformers' activations (tools/ref/gen_diverge_goldens.py): hf f16 reproduces them bit for bit
expect 0 "against the transformers golden" "$G" diverge --model $M --a hf:f16 --against $GOLD --tokens-npy $K --json
if python3 -c 'import json' 2>/dev/null; then
  python3 -c "import json,sys; j=json.load(open('$T/out')); l=j['points'][-1]; sys.exit(0 if l['point']=='logits' and l['max_abs']==0 and j['first_outside'] is None else 1)" \
    && ok "golden: logits bit-identical" || bad "golden: $(tail -c 400 "$T/out")"
fi

# bad dumps: not safetensors, wrong shapes; nothing left behind
echo "not a safetensors file" >"$T/bad.safetensors"
expect 1 "against a non-safetensors file" "$G" diverge --model $M --a hf:f16 --against "$T/bad.safetensors" --tokens-npy $K --dump "$T/o/d.safetensors"
no_outputs "bad --against"
head -c 1000 /dev/zero >/dev/null
expect 1 "against a dump of other shapes" "$G" diverge --model tests/golden/model/relu --a hf:f16 --against $GOLD --tokens-npy tests/golden/model/relu/tokens.npy --svg "$T/o/p.svg"
grep -q "tensor '" "$T/err" && ok "shape mismatch names the tensor" || bad "shape mismatch: $(cat "$T/err")"
no_outputs "bad shapes"
expect 1 "svg into a missing folder" "$G" diverge --model $M --a hf --b meg --tokens-npy $K --svg "$T/no/such/p.svg"

# a checkpoint stored in f16 cannot run in bf16: the message says why
if python3 -c 'import json, struct' 2>/dev/null; then
  mkdir -p "$T/m16" && cp $M/config.json "$T/m16/"
  python3 - $M/model.safetensors "$T/m16/model.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); data = b[8 + n:]
out, hdr, off = [], {}, 0
for k, v in h.items():
    if k == "__metadata__": hdr[k] = v; continue
    s, e = v["data_offsets"]
    xs = struct.unpack("<%df" % ((e - s) // 4), data[s:e])
    raw = struct.pack("<%de" % len(xs), *xs)
    hdr[k] = {"dtype": "F16", "shape": v["shape"], "data_offsets": [off, off + len(raw)]}
    out.append(raw); off += len(raw)
j = json.dumps(hdr).encode(); j += b" " * ((8 - len(j) % 8) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(j)) + j + b"".join(out))
PY
  expect 1 "f16 checkpoint in bf16" "$G" diverge --model "$T/m16" --a hf:f16 --b hf:bf16 --tokens-npy $K
  grep -q 'bf16' "$T/err" && ok "dtype refusal says why: $(cat "$T/err")" || bad "dtype refusal: $(cat "$T/err")"
  expect 0 "f16 checkpoint in f16" "$G" diverge --model "$T/m16" --a hf:f16 --b meg:f16 --tokens-npy $K
fi

# --prompt through the model folder's tokenizer
BPE=../shared/data/gpt2-bpe
if [ -f $BPE/vocab.json ]; then
  expect 0 "init tiny with tokenizer" "$G" init --config tiny --seed 1 --out "$T/tiny" --tokenizer $BPE
  expect 0 "--prompt" "$G" diverge --model "$T/tiny" --a hf --b meg:f16 --prompt "Hello, world. This is a test." --json
  grep -q "\"T\":	9" "$T/out" && ok "--prompt tokenized (9 tokens)" || bad "--prompt: $(grep '"T"' "$T/out")"
  expect 1 "--prompt without a tokenizer" "$G" diverge --model $M --a hf --b meg --prompt "hi"
else
  echo "SKIP --prompt: $BPE absent"
fi

# the report's divergence section: the embedded default (tiny, in memory) and --model
expect 0 "report with the divergence section" "$G" report --n 1000 --out "$T/rep" --json
grep -q 'GPT-2 numerics divergence' "$T/rep/index.html" && grep -q "hf and meg agree within PyTorch's f32 tolerance in f32" "$T/rep/index.html" \
  && ok "report states the f32/f16 observation" || bad "report section: $(grep -o 'hf and meg[^<]*' "$T/rep/index.html" | head -1)"
grep -q '"statement"' "$T/rep/report.json" && ok "report.json has the section" || bad "report.json lacks the section"
expect 0 "report --model" "$G" report --n 1000 --out "$T/rep2" --model $M --json
grep -q 'tests/golden/model/base' "$T/rep2/index.html" && ok "report --model uses the checkpoint" || bad "report --model"
finish cli_diverge
