#!/usr/bin/env python3
"""PyTorch checkpoint goldens for tests/test_torchfile.c, from tests/golden/model/base.

Writes tests/golden/checkpoints/<case>/ (each with the base config.json):
  zip/          pytorch_model.bin, torch.save's zip format
  legacy/       pytorch_model.bin, torch.save(..., _use_new_zipfile_serialization=False)
  st_shards/    model-0000{1,2}-of-00002.safetensors + model.safetensors.index.json
  bin_shards/   pytorch_model-0000{1,2}-of-00002.bin + pytorch_model.bin.index.json
The .bin state dicts exercise what the C reader must handle: lm_head.weight saved as the same
storage as transformer.wte.weight (tied), one transposed (non-contiguous) view
(h.0.attn.c_proj.weight, strides (1, 32)), and ln_1.weight/ln_1.bias of layer 1 as two views at
different offsets of one storage. Every tensor holds the same values as the safetensors twin.
Run from the repo root with the pinned torch: python3 tools/ref/gen_bin_goldens.py
"""
import json
import os
import shutil
from collections import OrderedDict

import torch
from safetensors.torch import load_file, save_file

SRC = os.path.join("tests", "golden", "model", "base")
OUT = os.path.join("tests", "golden", "checkpoints")


def state_dict():
    base = load_file(os.path.join(SRC, "model.safetensors"))
    sd = OrderedDict()
    for k in sorted(base):
        sd[k] = base[k].clone()
    # One transposed view: same values, strides (1, rows).
    w = sd["transformer.h.0.attn.c_proj.weight"]
    sd["transformer.h.0.attn.c_proj.weight"] = w.t().contiguous().t()
    assert not sd["transformer.h.0.attn.c_proj.weight"].is_contiguous()
    # Two views of one storage at offsets 0 and 32.
    both = torch.cat([sd["transformer.h.1.ln_1.weight"], sd["transformer.h.1.ln_1.bias"]])
    sd["transformer.h.1.ln_1.weight"] = both[:32]
    sd["transformer.h.1.ln_1.bias"] = both[32:]
    # Tied head: the same tensor (so the same storage) under a second name.
    sd["lm_head.weight"] = sd["transformer.wte.weight"]
    return base, sd


def fresh(case):
    d = os.path.join(OUT, case)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    shutil.copy(os.path.join(SRC, "config.json"), d)
    return d


def main():
    base, sd = state_dict()
    torch.save(sd, os.path.join(fresh("zip"), "pytorch_model.bin"))
    torch.save(sd, os.path.join(fresh("legacy"), "pytorch_model.bin"), _use_new_zipfile_serialization=False)
    names = sorted(base)
    halves = [names[: len(names) // 2], names[len(names) // 2:]]
    d = fresh("st_shards")
    wm = {}
    for i, part in enumerate(halves):
        fn = f"model-{i + 1:05d}-of-00002.safetensors"
        save_file({k: base[k] for k in part}, os.path.join(d, fn), metadata={"format": "pt"})
        wm.update({k: fn for k in part})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": sum(t.numel() * 4 for t in base.values())}, "weight_map": wm}, f, indent=2)
    d = fresh("bin_shards")
    wm = {}
    for i, part in enumerate(halves):
        fn = f"pytorch_model-{i + 1:05d}-of-00002.bin"
        torch.save(OrderedDict((k, sd[k]) for k in part), os.path.join(d, fn))
        wm.update({k: fn for k in part})
    with open(os.path.join(d, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": sum(t.numel() * 4 for t in base.values())}, "weight_map": wm}, f, indent=2)
    # Self-check: torch itself reads every file back (weights_only) to the same values.
    for case in ("zip", "legacy"):
        back = torch.load(os.path.join(OUT, case, "pytorch_model.bin"), weights_only=True)
        for k in base:
            assert torch.equal(back[k], base[k]), (case, k)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
