#!/usr/bin/env bash
# CLI tests for gptmeg init / info / logits (generate and eval: cli_generate.sh, cli_eval.sh).
# Usage: bash tests/cli_model.sh path/to/gptmeg   (from the repo root)
. "$(dirname "$0")/lib_cli.sh"

# npy DESCR SHAPE OUT [int values...]: writes a v1 .npy of little-endian int32 ('<i4') or int64 ('<i8').
npy() {
  local descr=$1 shape=$2 out=$3; shift 3
  { npy_header "$descr" "$shape"
    for v in "$@"; do
      local n=$v bytes=4; [ "$descr" = "<i8" ] && bytes=8
      for ((i = 0; i < bytes; i++)); do printf "\\x$(printf %02x $(( (n >> (8 * i)) & 255 )))"; done
    done; } >"$out"

}

M=tests/golden/model/base          # vocab 400, n_positions 64
expect 0 "init tiny" "$G" init --config tiny --seed 3 --out "$T/tiny"
[ -s "$T/tiny/config.json" ] && [ -s "$T/tiny/model.safetensors" ] && ok "init wrote files" || bad "init wrote files"
ls "$T/tiny" | grep -q tmp && bad "init left temporaries" || ok "init no temporaries"
expect 0 "init again same seed" "$G" init --config tiny --seed 3 --out "$T/tiny2"
cmp -s "$T/tiny/model.safetensors" "$T/tiny2/model.safetensors" && ok "init deterministic" || bad "init deterministic"
expect 0 "init from json" "$G" init --config "$M/config.json" --seed 1 --out "$T/small"
expect 0 "info" "$G" info --model "$T/tiny"
grep -q 'parameters:   3324736' "$T/out" && ok "info parameter count" || bad "info parameter count: $(cat "$T/out")"
expect 0 "info --json" "$G" info --model "$M" --json
grep -q '"parameters":' "$T/out" && grep -q '"vocab_size":	400' "$T/out" && ok "info json fields" || bad "info json fields: $(head -c 400 "$T/out")"
expect 1 "info missing dir" "$G" info --model "$T/nope"
expect 2 "info no --model" "$G" info
expect 2 "init no --out" "$G" init --config tiny
expect 1 "init bad config" "$G" init --config "$T/nope.json" --out "$T/x"

npy '<i8' '(2, 5)' "$T/tok64.npy" 1 2 3 4 5 399 0 7 8 9
npy '<i4' '(2, 5)' "$T/tok32.npy" 1 2 3 4 5 399 0 7 8 9
expect 0 "logits int64" "$G" logits --model "$M" --tokens-npy "$T/tok64.npy" --out "$T/l64.npy" --threads 1
expect 0 "logits int32 2 threads" "$G" logits --model "$M" --tokens-npy "$T/tok32.npy" --out "$T/l32.npy" --threads 2 --dtype f32 --profile hf
cmp -s "$T/l64.npy" "$T/l32.npy" && ok "int32 = int64, 1 thread = 2 threads, bit for bit" || bad "logits differ between runs"
[ "$(stat -c %s "$T/l64.npy")" -eq $((128 + 2 * 5 * 400 * 4)) ] && ok "logits size [2,5,400]" || bad "logits size $(stat -c %s "$T/l64.npy")"
head -c 128 "$T/l64.npy" | grep -q "'shape': (2, 5, 400)" && ok "logits header" || bad "logits header"
expect 0 "logits tiny (50257 vocab)" "$G" logits --model "$T/tiny" --tokens-npy "$T/tok32.npy" --out "$T/lt.npy"
# The golden tokens against the golden logits (needs numpy; skipped without it).
expect 0 "logits golden" "$G" logits --model "$M" --tokens-npy "$M/tokens.npy" --out "$T/lg.npy"
if python3 -c 'import numpy' 2>/dev/null; then
  python3 -c "
import numpy as np, sys
a = np.load('$T/lg.npy'); e = np.load('$M/logits.npy')
sys.exit(0 if a.shape == e.shape and np.abs(a - e).max() <= 1e-4 else 1)" && ok "CLI logits match transformers" || bad "CLI logits vs golden"
else echo "skip numpy comparison (no numpy)"; fi

# bad inputs: one line, exit 1, no output left behind
npy '<i4' '(1, 3)' "$T/oov.npy" 1 400 2
expect 1 "token outside vocab" "$G" logits --model "$M" --tokens-npy "$T/oov.npy" --out "$T/o1.npy"
grep -q 'outside the vocabulary' "$T/err" && ok "oov message" || bad "oov message: $(cat "$T/err")"
npy '<i4' '(1, 3)' "$T/neg.npy" 1 -1 2
expect 1 "negative token" "$G" logits --model "$M" --tokens-npy "$T/neg.npy" --out "$T/o2.npy"
args=(); for ((i = 0; i < 65; i++)); do args+=(1); done
npy '<i4' '(1, 65)' "$T/long.npy" "${args[@]}"
expect 1 "longer than n_positions" "$G" logits --model "$M" --tokens-npy "$T/long.npy" --out "$T/o3.npy"
grep -q 'n_positions 64' "$T/err" && ok "length message" || bad "length message: $(cat "$T/err")"
head -c 100 "$T/tok32.npy" >"$T/trunc.npy"
expect 1 "truncated tokens" "$G" logits --model "$M" --tokens-npy "$T/trunc.npy" --out "$T/o4.npy"
npy '<i4' '(2, 9)' "$T/liar.npy" 1 2 3
expect 1 "header lies about size" "$G" logits --model "$M" --tokens-npy "$T/liar.npy" --out "$T/o5.npy"
printf 'garbage' >"$T/garbage.npy"
expect 1 "not npy" "$G" logits --model "$M" --tokens-npy "$T/garbage.npy" --out "$T/o6.npy"
npy '<i4' '(6,)' "$T/rank1.npy" 1 2 3 4 5 6
npy '<i4' '(1, 6)' "$T/row.npy" 1 2 3 4 5 6
expect 0 "1-D tokens are one sequence" "$G" logits --model "$M" --tokens-npy "$T/rank1.npy" --out "$T/l1d.npy"
expect 0 "the same as [1, 6]" "$G" logits --model "$M" --tokens-npy "$T/row.npy" --out "$T/lrow.npy"
cmp -s "$T/l1d.npy" "$T/lrow.npy" && ok "[T] gives [1, T, V], bit for bit" || bad "1-D tokens differ from [1, T]"
npy '<i4' '(1, 2, 3)' "$T/rank3.npy" 1 2 3 4 5 6
expect 1 "3-D tokens" "$G" logits --model "$M" --tokens-npy "$T/rank3.npy" --out "$T/o7.npy"
grep -q 'rank3.npy: tokens must be a \[B, T\] or \[T\] array .*3 dimensions' "$T/err" && ok "rank message" || bad "rank message: $(cat "$T/err")"
npy '<f4' '(1, 2)' "$T/floats.npy" 0 0
expect 1 "float tokens" "$G" logits --model "$M" --tokens-npy "$T/floats.npy" --out "$T/o7.npy"
grep -q 'floats.npy: token ids must be int32 or int64 (the file holds <f4)' "$T/err" && ok "dtype message" || bad "dtype message: $(cat "$T/err")"
cp -r "$M" "$T/badmodel"; head -c 5000 "$M/model.safetensors" >"$T/badmodel/model.safetensors"
expect 1 "truncated checkpoint" "$G" logits --model "$T/badmodel" --tokens-npy "$T/tok32.npy" --out "$T/o8.npy"
grep -q 'model.safetensors' "$T/err" && ok "checkpoint message names the file" || bad "checkpoint message: $(cat "$T/err")"
expect 1 "f64 refused (f16/bf16: cli_profile.sh)" "$G" logits --model "$M" --tokens-npy "$T/tok32.npy" --out "$T/o9.npy" --dtype f64
expect 1 "unknown profile" "$G" logits --model "$M" --tokens-npy "$T/tok32.npy" --out "$T/o9.npy" --profile nope
expect 2 "bad threads" "$G" logits --model "$M" --tokens-npy "$T/tok32.npy" --out "$T/o9.npy" --threads 0
expect 2 "missing --out" "$G" logits --model "$M" --tokens-npy "$T/tok32.npy"
ls "$T" | grep -qE '^o[0-9]|tmp\.' && bad "failed runs left files: $(ls "$T")" || ok "no half-written outputs"

expect 2 "generate without arguments" "$G" generate
expect 2 "eval without arguments" "$G" eval
expect 0 "logits --help" "$G" logits --help

# torch CPU targets: named, detected, chosen by flag or environment; a bad name lists the known ones.
expect 0 "info --cpu" "$G" info --cpu
grep -q '^torch target: zen4 (GPTMEG_TORCH_TARGET)' "$T/out" && ok "info names the target and its source" || bad "info target: $(grep target "$T/out")"
grep -q '^  this cpu: ' "$T/out" && ok "info names this CPU's target" || bad "info this cpu"
expect 0 "info --cpu --torch-target avx2" "$G" info --cpu --torch-target avx2
grep -q '^torch target: avx2 (--torch-target)' "$T/out" && grep -q '^  matmul     f32   part ' "$T/out" &&
  grep -q '^  layer_norm f32   exact ' "$T/out" && ok "the flag wins; ops reproduced in part are named" || bad "info avx2: $(cat "$T/out")"
expect 0 "--torch-target=NAME, after other options" "$G" info --profile meg --dtype bf16 --torch-target=intel-amx
grep -q '^torch target intel-amx; not exact there: .*matmul' "$T/out" && ok "info --profile names the target" || bad "profile target: $(tail -1 "$T/out")"
expect 2 "unknown target" "$G" info --cpu --torch-target nehalem
grep -q "unknown torch CPU target 'nehalem' (known: zen4, intel-amx, intel-avx512-bf16, intel-avx512, avx2, intel-avx512-fp16)" "$T/err" &&
  ok "unknown target lists the known ones" || bad "unknown target message: $(cat "$T/err")"
expect 2 "--torch-target without a value" "$G" info --cpu --torch-target
GPTMEG_TORCH_TARGET=bogus "$G" info --cpu >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q "GPTMEG_TORCH_TARGET: unknown torch CPU target 'bogus'" "$T/err" && ok "bad GPTMEG_TORCH_TARGET refused" || bad "bad env: $rc $(cat "$T/err")"
expect 0 "diverge names the target" "$G" diverge --model "$M" --a hf:f16 --b meg:f16 --tokens-npy "$M/tokens.npy" --torch-target intel-avx512
grep -q '^torch target: intel-avx512; not reproduced there: ' "$T/out" && ok "diverge prints the target" || bad "diverge target: $(head -3 "$T/out")"
# A target whose fast kernels this CPU (or the GPTMEG_SIMD cap) lacks: one note on stderr, --quiet silences it.
GPTMEG_QUIET= GPTMEG_SIMD=avx2 "$G" act list --torch-target intel-amx >"$T/out" 2>"$T/err"
[ "$(grep -c '^note: torch target intel-amx: this CPU (or GPTMEG_SIMD) lacks avx512f.*amx-bf16.*scalar twins run' "$T/err")" -eq 1 ] &&
  ok "one note when the fast kernels cannot run" || bad "note: $(cat "$T/err")"
GPTMEG_QUIET= GPTMEG_SIMD=avx2 "$G" act list --torch-target intel-amx --quiet >"$T/out" 2>"$T/err"
[ ! -s "$T/err" ] && ok "--quiet silences the note" || bad "--quiet: $(cat "$T/err")"
GPTMEG_QUIET= GPTMEG_SIMD=avx2 "$G" act list --torch-target avx2 >"$T/out" 2>"$T/err"
[ ! -s "$T/err" ] && ok "no note when the fast kernels run" || bad "avx2 note: $(cat "$T/err")"

# torch's library (MKL VML for the f32 op-by-op GELUs) is found without GPTMEG_TORCH_MKL.
mkdir -p "$T/venv/lib/python3.11/site-packages/torch/lib" "$T/py/bin" "$T/py/lib/python3.12/site-packages/torch/lib"
: >"$T/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"
: >"$T/py/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so"
printf '#!/bin/sh\n' >"$T/py/bin/python3"; chmod +x "$T/py/bin/python3"
env -u GPTMEG_TORCH_MKL VIRTUAL_ENV="$T/venv" "$G" info --cpu >"$T/out" 2>&1
grep -q "from $T/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so (\$VIRTUAL_ENV)" "$T/out" &&
  grep -q "has no MKL VML" "$T/out" && ok "torch found through VIRTUAL_ENV (an empty stand-in: no VML)" || bad "venv search: $(grep -A1 tanh "$T/out")"
env -u GPTMEG_TORCH_MKL -u VIRTUAL_ENV -u CONDA_PREFIX PATH="$T/py/bin:$PATH" "$G" info --cpu >"$T/out" 2>&1
grep -q "from $T/py/bin/../lib/python3.12/site-packages/torch/lib/libtorch_cpu.so (python3 on PATH)" "$T/out" &&
  ok "torch found beside a python3 on PATH" || bad "PATH search: $(grep -A1 tanh "$T/out")"
GPTMEG_TORCH_MKL=none VIRTUAL_ENV="$T/venv" "$G" info --cpu >"$T/out" 2>&1
grep -q "no torch installation found" "$T/out" && grep -q '^  gelu ops   f32   NOT ' "$T/out" &&
  ok "GPTMEG_TORCH_MKL=none turns the search off; f32 gelu ops then not exact" || bad "none: $(grep -A1 tanh "$T/out")"

finish cli_model
