#!/usr/bin/env bash
# The 124M load benchmark of issue 24: `gptmeg init --config gpt2 --seed 3` writes model.safetensors,
# the pinned venv's torch.save writes the same tensors as pytorch_model.bin (zip format, wte and
# lm_head.weight one shared storage, as transformers' state dict holds them), then
# `gptmeg bench load` times both (docs/performance.md, "Loading checkpoints").
# Usage: bash bench/load_bin_vs_safetensors.sh [GPTMEG [PYTHON [ROUNDS]]]   (from the repo root)
set -eu
G=${1:-build/gptmeg}
PY=${2:-/work/venv/bin/python}
ROUNDS=${3:-7}
if ! "$PY" -c 'import torch, safetensors' 2>/dev/null; then
  echo "bench/load_bin_vs_safetensors.sh: $PY has no torch/safetensors (pip install -r tools/ref/requirements.txt); skipped"
  exit 0
fi
D=$(mktemp -d /tmp/gptmeg_load.XXXXXX)
trap 'rm -rf "$D"' EXIT
"$G" init --config gpt2 --seed 3 --out "$D" >/dev/null
"$PY" -c 'import sys, torch; from safetensors.torch import load_file
d = sys.argv[1]; sd = load_file(d + "/model.safetensors"); sd["lm_head.weight"] = sd["transformer.wte.weight"]
torch.save(sd, d + "/pytorch_model.bin")' "$D"
# Both files rewritten by the same writer (dd, 64 MiB blocks): how a file was written decides the
# page cache's folio sizes and so the cost of faulting its mapping in (torch.save's small writes
# made the .bin's pages twice as slow to map as gptmeg's large ones, with no reader involved:
# docs/performance.md). Equal layouts leave the readers' own difference.
for f in model.safetensors pytorch_model.bin; do
  dd if="$D/$f" of="$D/$f.tmp" bs=64M status=none && mv "$D/$f.tmp" "$D/$f"
done
ls -l "$D"/model.safetensors "$D"/pytorch_model.bin | awk '{print $5, $NF}'
"$G" bench load --model "$D" --rounds "$ROUNDS"
