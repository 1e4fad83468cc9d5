#!/usr/bin/env python3
"""Where torch's CPU matmul starts a new accumulator along K, for one dtype and shape.

For each k, one output column gets +2^24 at k - 1, 1 at k and -2^24 at k + 1 (times a row of ones):
the 1 survives only if it lands in an accumulator the +2^24 never touched, so the surviving k are
the starts of K blocks (bf16 works in pairs: k - 1 odd, k even, k + 2 the cancelling term). This is
how gptmeg's bf16 order (K blocks of 512/1024 elements, docs/numerics.md) and torch's f32 order on
this CPU (blocks of 192) were found. Prints the block starts for each M and K asked.
  python3 tools/ref/probe_gemm_order.py --dtype bf16 --m 1 32 512 --k 768 3072 [--op addmm|linear]
"""
import argparse

import torch


def block_starts(dtype, M, K, op):
    big = 2.0 ** 24
    if dtype == torch.bfloat16:  # pairs (2p, 2p+1): the instruction adds the odd product first
        cols = list(range(0, K // 2 - 2))
        W = torch.zeros(K, len(cols))
        for n in cols:
            W[2 * n + 1, n], W[2 * n + 2, n], W[2 * n + 4, n] = big, 1.0, -big
        where = [2 * (n + 1) for n in cols]
    else:
        cols = list(range(0, K - 2))
        W = torch.zeros(K, len(cols))
        for n in cols:
            W[n, n], W[n + 1, n], W[n + 2, n] = big, 1.0, -big
        where = [n + 1 for n in cols]
    x = torch.ones(M, K, dtype=dtype)
    W, bias = W.to(dtype), torch.zeros(len(cols), dtype=dtype)
    y = torch.addmm(bias, x, W) if op == "addmm" else torch.nn.functional.linear(x, W.T.contiguous(), bias)
    return [k for k, v in zip(where, y[0].float().tolist()) if v != 0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtype", default="bf16", choices=["f32", "bf16"])
    ap.add_argument("--m", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--k", type=int, nargs="+", default=[768, 3072])
    ap.add_argument("--op", default="addmm", choices=["addmm", "linear"])
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    print(f"torch {torch.__version__}, {args.dtype} {args.op}, {args.threads} thread(s)")
    for M in args.m:
        for K in args.k:
            s = block_starts(dt, M, K, args.op)
            more = "" if len(s) <= 16 else f" ... ({len(s)})"
            print(f"M={M:4d} K={K:5d}: new accumulators at k = {s[:16]}{more}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
