#!/usr/bin/env python3
"""bf16 goldens of oneDNN's AMX K tiles for a K that is not a multiple of 32 on intel-amx (issue 23),
for tests/test_bf16_amx_tiles.c.

Under the macro heuristic, when every brgemm call of a product splits into equal even K tiles of at
most 32 elements, oneDNN skips its "extendable K" and runs the calls in tiles of that width (K 300 in
one call: ten tiles of 30, where 32-element tiles and a partial one were modelled), unless it copies
A inside the kernel (tools/ref/onednn_amx_blocking.py, tiles()). The attention's P @ V (torch.bmm of
batch x heads slices, K = the prompt's length) meets it at most prompt lengths; 3-D products also
choose their blocking over the whole batch. Each product here is run by torch on 1 thread (out1) and
2 threads (out2), and where it says so on 4 (out4):
  bmm     torch.bmm(A [B, M, K], W [B, K, N]), slices 0 and B - 1 stored, every row (rows ROWS(M)
          where M N > 19200);
  matmul  torch.matmul(A, W), no bias;     addmm  torch.addmm(bias, A, W);
  linear  F.linear(A, W.T.contiguous(), bias) (B transposed);
  mmta    torch.mm(A.t().contiguous().t(), W) (A transposed in memory, a linear's dW; no bias);
the 2-D ones store rows ROWS(M), every column (every row of one column). The operands are not
stored: rows 0 and 1 of A (of each slice) are ones, the rest value(); W's first N // 2 columns hold
a cancelling triple (+2^24, 1, -2^24 at three K positions from triple(); a column whose positions
collide holds values) and the rest value(), so the probe rows show where tiles, calls and parts
meet, the others the rounding of ordinary sums (value() is gen_bf16_amx_chunk_goldens.py's, from
index offset s M K and s K N for slice s). Then attention layers (ATTENTION below: the forward's
output and the backward's dqkv, through transformers' GPT2Attention) where the batch decides the
tiles.
Must run on an Intel CPU with AMX-BF16, oneDNN not capped. Writes
tests/golden/targets/intel-amx/bf16_amx_tiles/products.safetensors.
  /work/venv/bin/python tools/ref/gen_bf16_amx_tiles_goldens.py
"""
import json
import os

import torch
from safetensors.torch import save_file

from gen_attention_bwd_goldens import attention_grad, fnv_rows  # noqa: E402
from gen_bf16_amx_chunk_goldens import value  # noqa: E402  (the same value(idx, salt) formula, with an offset)
from gm_inputs import cpu_model, host_is_intel_amx
import gm_profiles  # noqa: E402

OUT = os.path.join("tests", "golden", "targets", "intel-amx", "bf16_amx_tiles")
# (M, K, N, op, batch); what the model says (1 thread / 2 threads) in the comment
PRODUCTS = [
    (300, 300, 64, "bmm", 12),    # P @ V at 300 tokens: one call, tiles of 30
    (60, 60, 64, "bmm", 12),      # 60 tokens: tiles of 30
    (150, 150, 64, "bmm", 12),    # tiles of 30
    (100, 100, 64, "bmm", 12),    # 100 = 4 x 25 (odd): extendable K, tiles of 32 and a partial one
    (300, 64, 300, "bmm", 12),    # q @ k^T at 300 tokens (K a multiple of 32)
    (300, 300, 64, "matmul", 1),  # 2-D: tiles of 30
    (300, 300, 128, "matmul", 1), # A copied in the kernel (three 32-column blocks): tiles of 32
    (300, 300, 1024, "matmul", 1),  # vertical traversal: tiles of 30
    (7, 300, 96, "linear", 1),    # B transposed: tiles of 30
    (7, 150, 768, "addmm", 1),    # A copied in the kernel: tiles of 32
    (60, 2000, 768, "linear", 1), # 2 threads: calls of 352, a K split, the last call (240) in tiles of 30
    (300, 300, 128, "bmm", 12, (1, 2, 4)),  # head size 128: on 4 threads the batch keeps tiles of 32 (2-D: 30)
    (371, 1127, 221, "mmta", 1),  # an odd K with A transposed (a dW of 1127 rows): chunks of 576, the partial tile's call
    (768, 301, 256, "mmta", 1),   # the same at 301 rows
    # one column: oneDNN's GEMV path (not AMX): the one-row B^T kernel's 16 lanes per row, one f32
    # chain over k with A transposed (operands: A's rows from 2 on hold the triples, W is ones)
    (249, 623, 1, "matmul", 1), (300, 1000, 1, "linear", 1), (300, 1000, 1, "mmta", 1),
    # tiny K: AMX declines the shape (2 M_blk K <= 126 bytes), oneDNN's AVX512_CORE_BF16 brgemm runs
    # it, one VDPBF16PS chain over the pairs
    (2, 31, 256, "matmul", 1), (4, 15, 512, "addmm", 1), (3, 20, 256, "linear", 1),
    # one slice of 128 on 4 threads: tiles of 30 (1 and 2 threads: 32), so a slice must be blocked
    # for torch's thread count, not the one it runs on
    (300, 300, 128, "bmm", 1, (1, 2, 4)),
]
SALT_A, SALT_W, SALT_BIAS = 1, 2, 3
# One attention layer (gen_attention_bwd_goldens.py's attention_grad: GPT2Attention as GPT2LMHeadModel
# runs it, its gen_values inputs): (profile, dtype, B, NH, hd, T, layer, threads). Head size 128
# with B x NH = 4 slices on 4 threads: the forward's P @ V and the backward's dS @ k are 3-D
# products whose batch keeps tiles of 32 (a 2-D product of their shape runs tiles of 30), so the
# attention must hand the kernels its batch and torch's thread count. Stored: a<i>.out, rows
# ROWS(T) of the output [B T, C]; a<i>.dqkv_fnv, FNV-1a 32 of every row of dqkv [B T, 3 C], as [B T, 2]
# f32: its high and low 16 bits.
# One head of 128 (one slice) on 4 threads runs tiles of 30 where one thread's blocking gives 32
# (these operands happen not to tell the two apart).
ATTENTION = [("hf", "bf16", 1, 4, 128, 300, 0, 4), ("hf", "bf16", 1, 1, 128, 300, 0, 4)]


def rows(M):
    return sorted({r for r in (0, 1, 2, M // 2, M - 1) if r < M})


def triple(j, s, K):
    """Column j of slice s: u = ((j + 131 s) * 2654435761 + 7 * 40503) mod 2^32; positions
    u % K, (u >> 11) % K, (u >> 21) % K for +2^24, 1, -2^24; None when two of them coincide."""
    u = ((j + 131 * s) * 2654435761 + 7 * 40503) & 0xFFFFFFFF
    p, q, r = u % K, (u >> 11) % K, (u >> 21) % K
    return None if len({p, q, r}) < 3 else (p, q, r)


def operands(M, K, N, s):
    """A [M, K] and W [K, N] of slice s (f32 holding bf16 values). One column (N = 1): A's rows
    i >= 2 hold triple(i, s, K) where it exists (values where it does not), W is ones."""
    a = value(M * K, SALT_A, 0, s * M * K).view(M, K)
    a[:2, :] = 1.0
    if N == 1:
        for i in range(2, M):
            t = triple(i, s, K)
            if t is not None:
                a[i, :] = 0.0
                a[i, t[0]], a[i, t[1]], a[i, t[2]] = 2.0 ** 24, 1.0, -(2.0 ** 24)
        return a, torch.ones(K, 1)
    w = value(K * N, SALT_W, 0, s * K * N).view(K, N)
    for j in range(N // 2):
        t = triple(j, s, K)
        if t is None:
            continue
        w[:, j] = 0.0
        w[t[0], j], w[t[1], j], w[t[2], j] = 2.0 ** 24, 1.0, -(2.0 ** 24)
    return a, w


def main():
    if not host_is_intel_amx():
        print("gen_bf16_amx_tiles_goldens: skipped (needs an Intel CPU with AMX-BF16, oneDNN not capped)")
        return
    t = {}
    for pi, prod in enumerate(PRODUCTS):
        M, K, N, op, batch = prod[:5]
        thread_counts = prod[5] if len(prod) > 5 else (1, 2)
        ops = [operands(M, K, N, s) for s in range(batch)]
        A = torch.stack([o[0] for o in ops]).bfloat16()
        W = torch.stack([o[1] for o in ops]).bfloat16()
        bias = value(N, SALT_BIAS, 0).bfloat16()
        for threads in thread_counts:
            torch.set_num_threads(threads)
            if op == "bmm":
                y = torch.bmm(A, W)
                keep = list(range(M)) if M * N <= 19200 else rows(M)
                t[f"p{pi}.out{threads}"] = torch.stack([y[0][keep], y[batch - 1][keep]]).contiguous()
                continue
            a, w = A[0], W[0]
            if op == "matmul": y = torch.matmul(a, w)
            elif op == "addmm": y = torch.addmm(bias, a, w)
            elif op == "mmta": y = torch.mm(a.t().contiguous().t(), w)
            else: y = torch.nn.functional.linear(a, w.T.contiguous(), bias)
            t[f"p{pi}.out{threads}"] = (y if N == 1 else y[rows(M)]).contiguous()  # one column: every row
        print(f"  p{pi} {op} {M}x{K}x{N} batch {batch}: 1 vs 2 threads "
              f"{'same' if torch.equal(t[f'p{pi}.out1'], t[f'p{pi}.out2']) else 'differ'}")
    for ai, (profile, dname, B, NH, hd, T, layer, threads) in enumerate(ATTENTION):
        dqkv, o = attention_grad(profile, gm_profiles.DTYPES[dname], B, NH, hd, T, layer, threads, with_out=True)
        t[f"a{ai}.out"] = o.reshape(B * T, -1)[rows(B * T)].contiguous()
        hs = fnv_rows(dqkv.reshape(B * T, -1))  # (gptmeg reads F32 / F16 / BF16 tensors: the halves, exact in f32)
        t[f"a{ai}.dqkv_fnv"] = torch.tensor([[h >> 16, h & 0xFFFF] for h in hs], dtype=torch.float32)
        print(f"  a{ai} attention {profile} {dname} B {B} NH {NH} hd {hd} T {T} on {threads} threads")
    os.makedirs(OUT, exist_ok=True)
    meta = {"attention": json.dumps(ATTENTION), "torch": torch.__version__, "products": json.dumps(PRODUCTS), "cpu": cpu_model(),
            "rows": "bmm: slices 0 and batch - 1, every row where M N <= 19200; one column: every row; else (and 2-D) "
                    "sorted({0, 1, 2, M // 2, M - 1}) below M",
            "operands": "A = value((s*M + i)*K + k, 1) with rows 0 and 1 ones, W = value((s*K + k)*N + n, 2) with "
                        "columns n < N // 2 replaced by triple(n, s, K) where it exists, bias = value(n, 3) (the docstring's)",
            "settings": "native oneDNN (no ONEDNN_MAX_CPU_ISA / ATEN_CPU_CAPABILITY caps: brg_matmul avx10_1_512_amx); "
                        "torch.set_num_threads(t) for out<t>; ops as the docstring says",
            "onednn": "v3.13.3 (ONEDNN_VERBOSE)"}
    save_file(t, os.path.join(OUT, "products.safetensors"), metadata=meta)
    print(f"gen_bf16_amx_tiles_goldens: {len(PRODUCTS)} products -> {OUT}/products.safetensors ({meta['cpu']})")


if __name__ == "__main__":
    main()
