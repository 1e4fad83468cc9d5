#!/usr/bin/env python3
"""Golden GPT-2 checkpoints + reference logits for tests/test_model.c (f32, `hf` profile).

Each config below is a tiny GPT2LMHeadModel built by transformers itself (torch seed fixed),
with weights re-drawn at O(1) scale so every knob changes the logits visibly (at the default
std 0.02 the GELU inputs sit near 0 and the variants are indistinguishable), saved with
save_pretrained(safe_serialization=True) into tests/golden/model/<name>/, plus:
  tokens.npy  int64 [B, T]      random ids in [0, vocab)
  logits.npy  f32   [B, T, V]   model(tokens).logits, attn_implementation='eager', CPU, f32
The `noprefix` config is re-written without the 'transformer.' name prefix (as the hub's
openai-community/gpt2 checkpoint is). Run from the repo root: python3 tools/ref/gen_model_goldens.py
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import GPT2Config, GPT2LMHeadModel

OUT = os.path.join("tests", "golden", "model")
BASE = dict(vocab_size=400, n_positions=64, n_embd=32, n_layer=2, n_head=4)
CONFIGS = {
    "base": dict(),
    "noprefix": dict(activation_function="gelu_new"),
    "inner_gelu": dict(n_inner=48, activation_function="gelu"),
    "fast_eps": dict(activation_function="gelu_fast", layer_norm_epsilon=1e-2),
    "ptanh_noscale": dict(activation_function="gelu_pytorch_tanh", scale_attn_weights=False),
    "python_invlayer": dict(activation_function="gelu_python", scale_attn_by_inverse_layer_idx=True, n_layer=3),
    "accurate_upcast": dict(activation_function="gelu_accurate", reorder_and_upcast_attn=True,
                            scale_attn_by_inverse_layer_idx=True),
    "quick_untied": dict(activation_function="quick_gelu", tie_word_embeddings=False),
    "gelu10": dict(activation_function="gelu_10"),
    "relu": dict(activation_function="relu", n_head=2),
    "silu": dict(activation_function="silu", n_head=8),
}
B, T = 2, 16


def redraw(model, gen):
    """O(1)-scale weights: Linear std 1/sqrt(fan_in), LN weight 1+0.2N, biases 0.1N, embeddings 1."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith("wte.weight") or name.endswith("wpe.weight") or name == "lm_head.weight":
                p.copy_(torch.randn(p.shape, generator=gen) * (0.5 if "wpe" in name else 1.0))
            else:  # Conv1D [in, out]
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[0] ** 0.5)


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    index = {}
    for i, (name, extra) in enumerate(CONFIGS.items()):
        kw = dict(BASE)
        kw.update(extra)
        cfg = GPT2Config(**kw)
        cfg._attn_implementation = "eager"
        torch.manual_seed(1000 + i)
        model = GPT2LMHeadModel(cfg).eval()
        assert model.config._attn_implementation == "eager"
        gen = torch.Generator().manual_seed(2000 + i)
        redraw(model, gen)
        d = os.path.join(OUT, name)
        if os.path.isdir(d):
            shutil.rmtree(d)
        model.save_pretrained(d, safe_serialization=True)
        for extra_file in ("generation_config.json",):
            p = os.path.join(d, extra_file)
            if os.path.exists(p):
                os.remove(p)
        if name == "noprefix":
            st = os.path.join(d, "model.safetensors")
            tensors = load_file(st)
            save_file({k.removeprefix("transformer."): v.contiguous() for k, v in tensors.items()}, st,
                      metadata={"format": "pt"})
            model = GPT2LMHeadModel.from_pretrained(d, attn_implementation="eager").eval()
        tokens = torch.randint(0, cfg.vocab_size, (B, T), generator=gen)
        with torch.no_grad():
            logits = model(tokens).logits.float().numpy()
        np.save(os.path.join(d, "tokens.npy"), tokens.numpy().astype(np.int64))
        np.save(os.path.join(d, "logits.npy"), logits.astype(np.float32))
        index[name] = dict(extra, B=B, T=T, absmax=float(np.abs(logits).max()))
        print(f"{name}: logits |max| {np.abs(logits).max():.3f}")
    with open(os.path.join(OUT, "index.json"), "w") as f:
        json.dump(dict(torch=torch.__version__, configs=index), f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
