#!/usr/bin/env python3
"""How torch 2.15's f32 one-row product with B as stored sums (MKL's Intel AVX-512 one-row kernel:
torch.addmm(bias, x[1, K], W[K, N]), transformers' Conv1D in a decode step), and where its threads
cut K. Found with it: gm_f32_torch_row8 and gm_f32_torch_kparts's one-row rule (gptmeg/kernels.h).

  --tree K N [--col j]   the summation tree of output column j over the K products and the bias
                         ('b'): products p_i = +2^40, p_j = -2^40, every other product 1 (a = 1, so
                         products are exact); torch's result counts the ones outside the subtree
                         where i and j meet, and the subtrees give the tree
  --check                torch against the numpy emulation of the order (1 thread), GPT-2's decode
                         shapes, leftover columns, K % 8 tails, mm, alpha and beta
  --threads t [t ...]    per thread count, on a grid of K and N: '1' torch's 1-thread bits, 'P<n>'
                         K cut into n parts added in order then onto the bias, '?' neither
  --gm PROBE             with --check / --threads: also gptmeg (tools/ref/probe_f32_mt.c built as PROBE)
Run where torch's f32 sgemm is MKL's Intel AVX-512 kernel (an Intel CPU with AVX-512, no caps).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_f32_intel import fma32  # noqa: E402


def R(x):
    return np.asarray(x, dtype=np.float32)


def row8(a, B, s, alpha=1.0):
    """The one-row kernel's order: a [K], B [K, N], start s [N] (bias or zeros)."""
    K, N = B.shape
    x = R(np.float32(alpha) * a)
    n16 = N - N % 16
    out = np.empty(N, np.float32)
    F = lambda k, c, acc: fma32(np.full(acc.shape, x[k], np.float32), B[k, c], acc)  # noqa: E731
    P = lambda k, c: R(x[k] * B[k, c])  # noqa: E731
    c = slice(0, n16)
    acc = s[c].copy()
    k = 0
    for k in range(0, K - K % 8, 8):
        acc = F(k + 6, c, acc)
        acc = F(k + 4, c, acc)
        acc = R(acc + F(k + 5, c, P(k + 7, c)))
        acc = R(acc + R(F(k, c, P(k + 2, c)) + F(k + 1, c, P(k + 3, c))))
    for k in range(K - K % 8, K):
        acc = F(k, c, acc)
    out[c] = acc
    c = slice(n16, N)
    acc = s[c].copy()
    for k in range(K):
        acc = F(k, c, acc)
    out[c] = acc
    return out


def parts(a, B, bias, P, alpha=1.0):
    K, N = B.shape
    cuts = [p * (K // P) + min(p, K % P) for p in range(P + 1)]
    z = np.zeros(N, np.float32)
    acc = None
    for p in range(P):
        r = row8(a[cuts[p]:cuts[p + 1]], B[cuts[p]:cuts[p + 1]], z, alpha)
        acc = r if acc is None else R(acc + r)
    return R(bias + acc)


def operands(K, N, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(1, K, generator=g), torch.randn(K, N, generator=g), torch.randn(N, generator=g)


def bits(x):
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def gm(probe, a, B, bias, t):
    with tempfile.TemporaryDirectory() as d:
        a.numpy().tofile(os.path.join(d, "a.bin"))
        B.numpy().tofile(os.path.join(d, "b.bin"))
        bias.numpy().tofile(os.path.join(d, "bias.bin"))
        K, N = B.shape
        subprocess.run([probe, d, "1", str(K), str(N), "0", "1", str(t), "intel-avx512"], check=True)
        return np.fromfile(os.path.join(d, "gm_c.bin"), np.float32)


def tree(K, N, col):
    torch.set_num_threads(1)
    L = K + 1  # leaf K: the bias
    D = np.zeros((L, L), int)
    for i in range(L):
        for j in range(i + 1, L):
            a, B, bias = torch.ones(1, K), torch.ones(K, N), torch.ones(N)
            for leaf, v in ((i, 2.0 ** 40), (j, -2.0 ** 40)):
                if leaf == K:
                    bias[:] = v
                else:
                    B[leaf, :] = v
            D[i, j] = D[j, i] = (L - 2) - int(torch.addmm(bias, a, B)[0, col])
    nodes = {i: ("b" if i == K else str(i), {i}) for i in range(L)}
    while len(nodes) > 1:  # merge the two subtrees that meet lowest
        ks = list(nodes)
        d, x, y = min((max(D[p, q] for p in nodes[x][1] for q in nodes[y][1]), x, y)
                      for xi, x in enumerate(ks) for y in ks[xi + 1:])
        nodes[x] = (f"({nodes[x][0]} + {nodes[y][0]})", nodes[x][1] | nodes[y][1])
        del nodes[y]
    print(f"K {K} N {N} column {col}: {next(iter(nodes.values()))[0]}")


def check(probe):
    torch.set_num_threads(1)
    for K, N in [(768, 768), (768, 2304), (768, 3072), (3072, 768), (50257, 768), (100, 50), (13, 40), (5, 3),
                 (1000, 100), (64, 31)]:
        a, B, bias = operands(K, N, K + N)
        row = f"{K:6d} x {N:5d}:"
        for name, al, be, ref in (("addmm", 1.0, 1.0, torch.addmm(bias, a, B)), ("mm", 1.0, 0.0, torch.mm(a, B)),
                                  ("alpha .3 beta .7", 0.3, 0.7, torch.addmm(bias, a, B, alpha=0.3, beta=0.7))):
            s = R(np.float32(be) * bias.numpy()) if be else np.zeros(N, np.float32)
            emu = row8(a.numpy()[0], B.numpy(), s, al)
            row += f"  {name} {100 * (bits(emu) == bits(ref.numpy()[0])).mean():.1f}%"
        if probe:
            row += f"  gptmeg {100 * (bits(gm(probe, a, B, bias, 1)) == bits(torch.addmm(bias, a, B).numpy()[0])).mean():.1f}%"
        print(row, flush=True)


def thread_grid(ts, probe):
    Ks = [200, 255, 256, 384, 512, 768, 999, 1000, 1536, 3072]
    Ns = [16, 40, 41, 69, 70, 100, 768, 1001, 1002, 1503, 2004, 2304, 3072]
    for t in ts:
        torch.set_num_threads(t)
        print(f"{t} threads   " + " ".join(f"{n:>5}" for n in Ns))
        for K in Ks:
            cells = []
            for N in Ns:
                a, B, bias = operands(K, N, 7 * K + N)
                ref = bits(torch.addmm(bias, a, B).numpy()[0])
                an, Bn, bn = a.numpy()[0], B.numpy(), bias.numpy()
                c = "1" if (bits(row8(an, Bn, bn)) == ref).all() else "?"
                for P in range(2, 17):
                    if c == "?" and K >= P and (bits(parts(an, Bn, bn, P)) == ref).all():
                        c = f"P{P}"
                if probe and not (bits(gm(probe, a, B, bias, t)) == ref).all():
                    c += "!"  # gptmeg differs
                cells.append(f"{c:>5}")
            print(f"  K {K:5d}   " + " ".join(cells), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", nargs=2, type=int, metavar=("K", "N"))
    ap.add_argument("--col", type=int, default=0)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--threads", nargs="+", type=int)
    ap.add_argument("--gm", help="tools/ref/probe_f32_mt.c's binary")
    args = ap.parse_args()
    if args.tree:
        tree(*args.tree, args.col)
    if args.check:
        check(args.gm)
    if args.threads:
        thread_grid(args.threads, args.gm)
    if not (args.tree or args.check or args.threads):
        ap.print_help()


if __name__ == "__main__":
    main()
