#!/usr/bin/env python3
"""Which order torch 2.15 uses for an f16 product of ONE row against a transposed weight on this CPU
(torch.mm(dy[1, OC], W[C, OC].t()): the linear backward's dX of one row, a decode step's lm_head).

Compares live torch (1 thread) with emulations: K-blocked f32 chains (oneDNN's order for more rows) and
L interleaved f32 chains (element k into chain k % L) halved pairwise (L/2, ..., 1). On the intel-amx
class (Sapphire Rapids, AVX512-FP16) only L = 64 matches every output: ATen's gemv,
fp16_dot_with_fp32_arith, not oneDNN. Prints the mismatch count per candidate.
Then one row against W as stored (torch.mm(x[1, K], W[K, N]): decode's Conv1D, the lm_head's dX of one
row): one f32 chain over all of K matches (K 768 to 50257, 1 and 2 threads), K blocks do not.

  python3 tools/ref/probe_f16_onerow.py
"""
import numpy as np
import torch

torch.set_num_threads(1)
f32 = np.float32


def halve(a):
    a = a.copy()
    n = a.shape[0]
    while n > 1:
        n //= 2
        a[:n] = (a[:n] + a[n:2 * n]).astype(f32)
    return a[0]


def lanes(x, w, L):  # x [K], w [N, K] (f16 values in f32): L chains, then halved
    acc = np.zeros((L, w.shape[0]), f32)
    for k in range(x.shape[0]):
        acc[k % L] = (acc[k % L] + f32(x[k]) * w[:, k]).astype(f32)
    return halve(acc)


def blocks(x, w, bs):  # one chain per K block, blocks added in order
    tot = None
    for k0 in range(0, x.shape[0], bs):
        acc = np.zeros(w.shape[0], f32)
        for k in range(k0, min(x.shape[0], k0 + bs)):
            acc = (acc + f32(x[k]) * w[:, k]).astype(f32)
        tot = acc if tot is None else (tot + acc).astype(f32)
    return tot


def main():
    g = torch.Generator().manual_seed(5)
    score, total = {}, 0
    for C, OC in [(768, 2304), (768, 768), (3072, 768), (768, 3072)] * 3:
        W = torch.randn(C, OC, generator=g).half() * 0.05
        dy = torch.randn(1, OC, generator=g).half()
        ref = torch.mm(dy, W.t()).float().numpy()[0]
        x, w = dy.float().numpy()[0], W.float().numpy()
        total += C
        for name, f in [("lanes%d" % L, lambda L=L: lanes(x, w, L)) for L in (16, 32, 64, 128)] + \
                       [("blocks%d" % b, lambda b=b: blocks(x, w, b)) for b in (512, 1024, 1 << 30)]:
            v = f().astype(np.float16).astype(f32)
            score[name] = score.get(name, 0) + int((v != ref).sum())
    for name, bad in sorted(score.items(), key=lambda kv: kv[1]):
        print(f"{name:10s} {bad} of {total} outputs differ")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for K, N in [(768, 2304), (3072, 768), (50257, 768)]:
            W = (torch.randn(K, N, generator=g) * 0.05).half()
            x = (torch.randn(1, K, generator=g) * 0.01).half()
            ref = torch.mm(x, W).float().numpy()[0]
            wt = np.ascontiguousarray(W.float().numpy().T)
            res = {bs: int((blocks(x.float().numpy()[0], wt, bs).astype(np.float16).astype(f32) != ref).sum())
                   for bs in (K, 512, 1024, 4096) if bs <= K}
            print(f"B as stored, {threads} thread(s), K {K} N {N}: differing outputs per K block "
                  f"(K = one chain): {res}")


if __name__ == "__main__":
    main()
