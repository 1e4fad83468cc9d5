#!/usr/bin/env python3
"""Reference logits of the four GPT-2 numerics profiles (NUMERICS.md section 6) in f32, f16, bf16.

The peer is transformers' GPT2LMHeadModel (attn_implementation='eager') on PyTorch CPU, one thread,
loaded from the golden checkpoints of gen_model_goldens.py (run that first; `make goldens` does)
and cast with model.to(dtype). Each profile is the real HF model with the named pieces replaced:

  hf         transformers as it is (mask finfo(dtype).min, softmax in the dtype, config activation)
  hf-legacy  hf with the v4.19 mask: where(causal, w, tensor(-1e4).to(dtype))
  meg        the three GPTMeg overrides: layer_norm(x.float(), w.float(), b.float()).to(dtype);
             scores = baddbmm(empty, q, k^T, beta=0, alpha=1/sqrt(hd) [/(layer+1)]) in the dtype;
             activation = Megatron's gelu as written, op by op (TorchScript does not fuse on CPU) on c_fc's output
  megatron   Megatron-DeepSpeed: the same layer norm; query-key layer scaling
             (alpha = scale/L, L = layer_idx+1, then scores.float()*L, masked_fill -10000.0,
             softmax in f32, cast back); c_fc without its bias, then the bias-GELU fused in f32
             (x = y.float() + b.float(), Megatron's formula in f32, one cast back)

meg and megatron ignore reorder_and_upcast_attn (their scores rule replaces it); hf-legacy keeps
the upcast path as it is (v4.19's upcast path already masked with finfo(f32).min).

Writes tests/golden/profile/<config>/<profile>_<dtype>.npy: the logits [B, T, V] in the dtype
(f32 '<f4', f16 '<f2', bf16 as '<u2' bit patterns), for the tokens of tests/golden/model/<config>.
Run from the repo root: python3 tools/ref/gen_profile_goldens.py
"""
import json
import os
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gm_profiles  # noqa: E402

SRC = os.path.join("tests", "golden", "model")
OUT = os.path.join("tests", "golden", "profile")
CONFIGS = ["base", "python_invlayer", "accurate_upcast", "fast_eps"]
PROFILES = gm_profiles.PROFILES
DTYPES = gm_profiles.DTYPES
def save(path, logits):
    if logits.dtype == torch.bfloat16:
        arr = logits.contiguous().view(torch.int16).numpy().view(np.uint16)
    else:
        arr = logits.numpy()
    np.save(path, arr)


def main():
    torch.set_num_threads(1)
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    index = {}
    for name in CONFIGS:
        tokens = np.load(os.path.join(SRC, name, "tokens.npy"))
        os.makedirs(os.path.join(OUT, name))
        index[name] = {}
        for dn, dt in DTYPES.items():
            ref = {}
            for prof in PROFILES:
                logits = gm_profiles.run(gm_profiles.load(os.path.join(SRC, name), prof, dt), tokens)
                ref[prof] = logits.float()
                save(os.path.join(OUT, name, f"{prof}_{dn}.npy"), logits)
            d = (ref["hf"] - ref["meg"]).abs().max().item()
            top1 = (ref["hf"].argmax(-1) == ref["meg"].argmax(-1)).float().mean().item()
            index[name][dn] = dict(hf_vs_meg_max_abs=d, hf_vs_meg_top1_equal=top1)
            print(f"{name} {dn}: |hf - meg| max {d:.4g}, top-1 equal {top1:.3f}")
    # A bf16 checkpoint (save_pretrained of model.to(bfloat16)) for the dtype-conversion rules.
    ck = os.path.join(OUT, "base_bf16_checkpoint")
    m = gm_profiles.GPT2LMHeadModel.from_pretrained(os.path.join(SRC, "base")).to(torch.bfloat16)
    m.save_pretrained(ck, safe_serialization=True)
    gc = os.path.join(ck, "generation_config.json")
    if os.path.exists(gc):
        os.remove(gc)
    with open(os.path.join(OUT, "index.json"), "w") as f:
        json.dump(dict(torch=torch.__version__, profiles=PROFILES, configs=index), f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
