#!/usr/bin/env python3
"""Embedding backward goldens from PyTorch CPU autograd for tests/test_embedding_bwd.c.

GPT2Model's embedding (transformers 4.57.3) in the dtype:
    h = wte(input_ids) + wpe(position_ids),  position_ids = arange(T)[None]  (broadcast over B)
and h.backward(dout): dwte [V, C] (embedding_dense_backward: the rows of repeated ids added in
token order) and dwpe [P, C] (the broadcast's sum over the batch, then the embedding backward).
For each dtype (f32, f16, bf16) and B in {1, 2, 4}, T in {1, 5, 16}: tokens with many repeats,
dout of mixed magnitudes (so that the order and the rounding of the adds show), with
torch.set_num_threads(1) and (2): the script asserts the two agree (also on a larger case past
ATen's parallel grain sizes, not stored) and stores one result.
Larger batches (BIG: B from 17 to 64, where ATen's sum over the batch is its cascade sum, and past
its 32768-element grain, where it runs in parallel) take their tokens and dout from an integer hash
that tests/test_embedding_bwd.c computes too (hash_inputs), so only dwte and dwpe are stored.
Writes tests/golden/embedding_bwd/emb_bwd.safetensors. Run from the repo root with the pinned python.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gm_inputs import cpu_model  # noqa: E402
from safetensors.torch import save_file

OUT = os.path.join("tests", "golden", "embedding_bwd")
V, P, C = 37, 16, 40
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# (B, T, C): groups of 32 columns and the interleaved rest (64, 5, 40); in parallel (48, 15, 50);
# all interleaved (20, 3, 8); fewer columns than a vector (17, 1, 6); the cascade's levels (64, 2, 16)
BIG = [(64, 5, 40), (48, 15, 50), (20, 3, 8), (17, 1, 6), (64, 2, 16)]


def hash_inputs(B, T, c, v, dt):
    """Element i of dout: the top 24 bits of i * 2654435761 (mod 2^32), centred, times 2^(i % 9 - 4),
    rounded to the dtype (exact in f32); token i: (i * 40503) % v."""
    n = B * T * c
    vals = []
    for i in range(n):
        u = (i * 2654435761) & 0xFFFFFFFF
        vals.append(((u >> 8) - (1 << 23)) * 2.0 ** (-23 + (i % 9) - 4))
    dout = torch.tensor(vals, dtype=torch.float64).to(dt).view(B * T, c)
    tok = torch.tensor([(i * 40503) % v for i in range(B * T)]).view(B, T)
    return tok, dout


def same(a, b):
    iv = {2: torch.int16, 4: torch.int32}
    return a.dtype == b.dtype and torch.equal(a.view(iv[a.element_size()]), b.view(iv[b.element_size()]))


def grads(tok, dout, v, p, c, dt, threads):
    torch.set_num_threads(threads)
    B, T = tok.shape
    wte = torch.nn.Embedding(v, c).to(dt)
    wpe = torch.nn.Embedding(p, c).to(dt)
    pos = torch.arange(T).unsqueeze(0)
    h = wte(tok) + wpe(pos)
    h.backward(dout.view(B, T, c))
    return wte.weight.grad, wpe.weight.grad


def data(gen, B, T, v, c, dt):
    tok = torch.randint(0, 6, (B, T), generator=gen)                      # many repeats ...
    wide = torch.rand(B, T, generator=gen) < 0.3
    tok = torch.where(wide, torch.randint(0, v, (B, T), generator=gen), tok)  # ... and some others
    scale = torch.pow(2.0, torch.randint(-6, 5, (B * T, 1), generator=gen).float())
    dout = (torch.randn(B * T, c, generator=gen) * scale).to(dt)
    return tok, dout


def main():
    gen = torch.Generator().manual_seed(26)
    t = {}
    for name, dt in DTYPES.items():
        for B in (1, 2, 4):
            for T in (1, 5, 16):
                tok, dout = data(gen, B, T, V, C, dt)
                g1 = grads(tok, dout, V, P, C, dt, 1)
                g2 = grads(tok, dout, V, P, C, dt, 2)
                assert same(g1[0], g2[0]) and same(g1[1], g2[1]), f"{name} B={B} T={T}: threads change the bits"
                p = f"{name}.{B}.{T}."
                t[p + "tok"] = tok.to(torch.int32).float()  # ids < 2^24: exact in f32
                t[p + "dout"], t[p + "dwte"], t[p + "dwpe"] = dout, g1[0], g1[1]
        for B, T, c in BIG:
            tok, dout = hash_inputs(B, T, c, V, dt)
            g1 = grads(tok, dout, V, P, c, dt, 1)
            g2 = grads(tok, dout, V, P, c, dt, 2)
            assert same(g1[0], g2[0]) and same(g1[1], g2[1]), f"{name} B={B} T={T} C={c}: threads change the bits"
            p = f"{name}.big.{B}.{T}.{c}."
            t[p + "dwte"], t[p + "dwpe"] = g1[0], g1[1]
        # past ATen's grain sizes (embedding backward: 1000 rows; the sum: 32768 elements): not stored
        tok, dout = data(gen, 8, 64, 2048, 768, dt)
        a, b = grads(tok, dout, 2048, 64, 768, dt, 1), grads(tok, dout, 2048, 64, 768, dt, 2)
        assert same(a[0], b[0]) and same(a[1], b[1]), f"{name} large: threads change the bits"
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "emb_bwd.safetensors")
    save_file({k: v.contiguous() for k, v in t.items()}, path,
              metadata={"torch": torch.__version__, "V": str(V), "P": str(P), "C": str(C), "cpu": cpu_model(),
                        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                        "threads": "1 and 2 agree (asserted); stored once"})
    print(f"gen_embedding_bwd_goldens: {len(DTYPES)} dtypes x 9 shapes -> {path} ({os.path.getsize(path)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
