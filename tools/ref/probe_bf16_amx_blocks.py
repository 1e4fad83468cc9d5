#!/usr/bin/env python3
"""Where torch's bf16 matmul on AMX (intel-amx) starts a new K block, for one M, K, N and op.

On AMX each 32-element K tile is one TDPBF16PS: C += (E + O), the even- and odd-index products
each in an f32 chain (tools/ref/amx_tdpbf16ps_probe.c), so a cancelling pair inside one tile tells
nothing. Across tiles: column j gets +2^24 at the first element of tile t = j mod (K/32 - 2), 1 at
tile t + 1 and -2^24 at tile t + 2 (times rows of ones): the 1 survives only when tile t + 1 starts
a K block whose sum is added to the blocks before it (C = big, then 1 - big). Prints the element
index of every block start found, per shape, op and thread count.
  python3 tools/ref/probe_bf16_amx_blocks.py --m 7 130 --k 768 3072 --n 768 --ops addmm linear
"""
import argparse

import torch


def starts(M, K, N, op):
    big = 2.0 ** 24
    T = K // 32
    W = torch.zeros(K, N)
    for j in range(N):
        t = j % (T - 2)
        W[32 * t, j], W[32 * (t + 1), j], W[32 * (t + 2), j] = big, 1.0, -big
    x = torch.ones(M, K, dtype=torch.bfloat16)
    W = W.bfloat16()
    bias = torch.zeros(N, dtype=torch.bfloat16)
    if op == "addmm": y = torch.addmm(bias, x, W)
    elif op == "matmul": y = torch.matmul(x, W)
    else: y = torch.nn.functional.linear(x, W.T.contiguous(), bias)
    found = set()
    for j in range(N):
        if y[:, j].float().abs().max().item() != 0:
            found.add(32 * (j % (T - 2) + 1))
    rows_differ = any((y[i] != y[0]).any().item() for i in range(M))
    return sorted(found), rows_differ


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, nargs="+", default=[7, 130])
    ap.add_argument("--k", type=int, nargs="+", default=[768, 3072])
    ap.add_argument("--n", type=int, nargs="+", default=[768])
    ap.add_argument("--ops", nargs="+", default=["addmm", "linear"])
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    args = ap.parse_args()
    print(f"torch {torch.__version__}")
    for th in args.threads:
        torch.set_num_threads(th)
        for M in args.m:
            for K in args.k:
                for N in args.n:
                    for op in args.ops:
                        s, differ = starts(M, K, N, op)
                        print(f"t{th} M {M:4d} K {K:5d} N {N:5d} {op:6s}: block starts {s}"
                              + (" (rows differ)" if differ else ""), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
