#!/usr/bin/env python3
"""Live check of a bf16 matmul order against the torch on this machine (seeded random inputs).

Set the dispatch caps (ONEDNN_MAX_CPU_ISA, ATEN_CPU_CAPABILITY) in the environment before running:
they are read when torch is imported. For each M, K, N, op and thread count prints the share of
bf16 outputs whose bits match each candidate of tools/ref/probe_bf16_amx_order.py.
  python3 tools/ref/probe_bf16_live.py --m 1 8 64 --k 768 3072 --n 64 --threads 1 2
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_bf16_amx_order as P  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--k", type=int, nargs="+", default=[768])
    ap.add_argument("--n", type=int, nargs="+", default=[64])
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--ops", nargs="+", default=["addmm", "linear", "matmul"])
    ap.add_argument("--cands", nargs="+", default=["amx", "vdp", "seq"])
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(args.seed)
    cands = {"amx": P.amx, "vdp": P.vdp, "seq": P.seq}
    for M in args.m:
        for K in args.k:
            for N in args.n:
                a = torch.randn(M, K, generator=gen).bfloat16()
                w = (torch.randn(K, N, generator=gen) / K ** 0.5).bfloat16()
                # +-2^12 at k = 3 and k = K-5, +-2^9 at K/3 and 2K/3 + 1 cancel exactly: what survives of
                # the small products (lost where they share an accumulator with them) shows the order
                a[:, 3] = a[:, K - 5] = a[:, K // 3] = a[:, 2 * K // 3 + 1] = 1.0
                w[3, :], w[K - 5, :], w[K // 3, :], w[2 * K // 3 + 1, :] = 2.0 ** 12, -2.0 ** 12, 2.0 ** 9, -2.0 ** 9
                bias = (0.1 * torch.randn(N, generator=gen)).bfloat16()
                A, B, bb = a.float().numpy(), w.float().numpy(), bias.float().numpy()
                def cand(c):
                    if c.startswith("amxk"):  # amx in K blocks of N elements, the blocks' sums added
                        return P.amx(A, B, int(c[4:]))
                    return cands[c](A, B)
                refs = {c: cand(c) for c in args.cands}
                for th in args.threads:
                    torch.set_num_threads(th)
                    for op in args.ops:
                        if op == "addmm": y = torch.addmm(bias, a, w)
                        elif op == "linear": y = torch.nn.functional.linear(a, w.T.contiguous(), bias)
                        else: y = torch.matmul(a, w)
                        yb = y.float().numpy().view(np.uint32)
                        line = f"M {M:4d} K {K:5d} N {N:5d} t{th} {op:6s}:"
                        for c in args.cands:
                            acc = refs[c]
                            out = P.bf16_bits_of(bb[None, :] + acc if op != "matmul" else acc)
                            line += f"  {c} {np.mean(out.view(np.uint32) == yb):.3f}"
                        print(line, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
