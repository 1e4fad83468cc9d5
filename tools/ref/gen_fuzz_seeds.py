#!/usr/bin/env python3
"""Small seed inputs for the libFuzzer harnesses whose golden-derived seeds are large (run with
/work/venv447/bin/python from the repo root, tools/ref/requirements-megatron.txt).

fuzz/corpus/megatron/tiny_v2.pt: a Megatron-LM model_optim_rng.pt as tools/ref/gen_megatron_goldens.py
writes it (Namespace args, checkpoint_version 2, `encoder` / `self_attention` names, optimizer state,
Python/NumPy/torch RNG state) for a tiny GPT-2: hidden 8, 2 heads, 1 layer, padded vocab 16,
8 positions, ffn 32, f16. The golden-sized seed (87 kB, hidden 32) spends most of each execution
moving tensor bytes; this one keeps every structure the loader walks at a tenth of the size.
"""
import os

import torch

import gen_megatron_goldens as g


def tiny():
    g.D, g.H, g.L, g.V, g.P, g.I = 8, 2, 1, 16, 8, 32
    g.HD = g.D // g.H
    m = g.model(7, torch.float16)
    sd = g.full_ckpt(g.shard_sd(m, 2.0, 1, 0, 1, 0, "encoder", "self_attention"),
                     g.args_ns(1, 1, torch.float16), 2.0)
    out = os.path.join("fuzz", "corpus", "megatron")
    os.makedirs(out, exist_ok=True)
    torch.save(sd, os.path.join(out, "tiny_v2.pt"))


if __name__ == "__main__":
    tiny()
