#!/usr/bin/env python3
"""ATen's cpublas bf16 gemm orders (the avx2 target, where oneDNN takes no bf16) against goldens or live torch.

  nt   B as stored [K, N] (addmm, matmul): four partial sums, element k into sum k % 4 for
       k < K - K % 4, the rest into sum 0, then ((s0 + s1) + s2) + s3.
  dot  B^T stored [N, K] (linear): 64 chains (8 registers of 8 lanes), element k into chain k % 64
       for k < K - K % 64, tree-reduced (c + 32, + 16, ..., + 1); then an 8-lane tail over whole
       16-element groups (low 8 before high 8), tree-reduced and added; then the rest one by one.
Products are exact in f32; then + bias. Prints the share of identical bf16 outputs.
  python3 tools/ref/probe_bf16_aten_order.py --target avx2
  ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 python3 tools/ref/probe_bf16_aten_order.py --live --m 1 8 64
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_bf16_amx_order as P  # noqa: E402

f32 = np.float32


def tree(vs):
    while len(vs) > 1:
        h = len(vs) // 2
        vs = [(vs[j] + vs[j + h]).astype(f32) for j in range(h)]
    return vs[0]


def nt(A, B):
    M, K = A.shape
    s = [np.zeros((M, B.shape[1]), f32) for _ in range(4)]
    K4 = K & ~3
    for k in range(K):
        i = k % 4 if k < K4 else 0
        s[i] = (s[i] + A[:, k:k + 1] * B[k:k + 1, :]).astype(f32)
    return (((s[0] + s[1]).astype(f32) + s[2]).astype(f32) + s[3]).astype(f32)


def dot(A, B):
    M, K = A.shape
    z = np.zeros((M, B.shape[1]), f32)
    v = [z.copy() for _ in range(64)]
    t = [z.copy() for _ in range(8)]
    K64, K16 = K & ~63, K & ~15
    for k in range(K64):
        v[k % 64] = (v[k % 64] + A[:, k:k + 1] * B[k:k + 1, :]).astype(f32)
    s = tree(v)
    for k in range(K64, K16):
        t[k % 8] = (t[k % 8] + A[:, k:k + 1] * B[k:k + 1, :]).astype(f32)
    s = (s + tree(t)).astype(f32)
    for k in range(K16, K):
        s = (s + A[:, k:k + 1] * B[k:k + 1, :]).astype(f32)
    return s


def share(y, ref):
    return np.mean(P.bf16_bits_of(y).view(np.uint32) == ref.view(np.uint32))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="avx2")
    ap.add_argument("--live", action="store_true")
    ap.add_argument("--m", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--k", type=int, nargs="+", default=[768, 3072])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if not args.live:
        from safetensors.torch import load_file
        g = load_file(os.path.join("tests", "golden", "targets", args.target, "matmul", "bf16.safetensors"))
        g = {k: v.float().numpy() for k, v in g.items()}
        s = 0
        while f"s{s}.A" in g:
            A, B, Bt, bias = g[f"s{s}.A"], g[f"s{s}.B"], g[f"s{s}.Bt"], g[f"s{s}.bias"]
            acc = nt(A, B)
            print(f"M {A.shape[0]:2d} K {A.shape[1]:5d}: addmm {share(bias[None, :] + acc, g[f's{s}.addmm']):.3f}"
                  f"  matmul {share(acc, g[f's{s}.matmul']):.3f}"
                  f"  linear {share(bias[None, :] + dot(A, np.ascontiguousarray(Bt.T)), g[f's{s}.linear']):.3f}")
            s += 1
        return 0
    import torch
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(11)
    for M in args.m:
        for K in args.k:
            N = args.n
            a = torch.randn(M, K, generator=gen).bfloat16()
            w = (torch.randn(K, N, generator=gen) / K ** 0.5).bfloat16()
            b = (0.1 * torch.randn(N, generator=gen)).bfloat16()
            A, B, bb = a.float().numpy(), w.float().numpy(), b.float().numpy()
            y1 = torch.addmm(b, a, w).float().numpy()
            y2 = torch.nn.functional.linear(a, w.T.contiguous(), b).float().numpy()
            print(f"M {M:4d} K {K:5d} N {N:5d} t{args.threads}: addmm {share(bb[None, :] + nt(A, B), y1):.4f}"
                  f"  linear {share(bb[None, :] + dot(A, B), y2):.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
