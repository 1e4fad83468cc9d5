#!/usr/bin/env python3
"""Which summation order torch's f32 CPU matmul (MKL sgemm) runs here, shape by shape.

For each shape and op (addmm with B as stored; linear, B transposed; with and without alpha) it
runs torch on seeded random inputs and compares, bit for bit, the first rows against candidate
orders computed exactly in float32 (np.float32 FMA emulated through exact float64 products and a
correctly rounded sum, see fma32), and prints the share of identical outputs per candidate:
  zen4   K blocks of gm_f32_torch_block_end (192), alpha folded into B       (MKL's AMD kernel)
  H-a    K blocks of 384, a rest below 768 in two halves (ceil first), alpha on each block's sum
  P-b    K blocks of 384 then the remainder, alpha folded into B
Within a block: one FMA chain from zero; C = bias, then C += each block (in order). These are
gm_matmul_f32_torch's orders (include/gptmeg/kernels.h); a row reading 1.000 names torch's order.
  python3 tools/ref/probe_f32_intel.py [--threads 1] [--shapes 8x1000x16 200x1000x200 ...]
Run it with MKL_ENABLE_INSTRUCTIONS=AVX2 in the environment to see MKL's AVX2 kernels instead.
"""
import argparse
import numpy as np
import torch

ALPHA = 0.35355339059327373


def fma32(a, b, c):
    """Correctly rounded float32 a * b + c, elementwise (float32 arrays): the product is exact in
    float64; the float64 sum s and its error (TwoSum) decide the one case where rounding s to
    float32 could round twice wrongly: s exactly halfway between two float32, with a non-zero error."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = c.astype(np.float64)
    s = p + c64
    bb = s - p
    err = (p - (s - bb)) + (c64 - bb)
    r = s.astype(np.float32)
    r64 = r.astype(np.float64)
    nb = np.nextafter(r, np.where(s > r64, np.float32(np.inf), np.float32(-np.inf)).astype(np.float32))
    mid = (r64 + nb.astype(np.float64)) / 2
    fix = (s == mid) & (s != r64) & (err != 0) & ((nb.astype(np.float64) - r64) * err > 0)
    return np.where(fix, nb, r).astype(np.float32)


def blocks(K, kind):
    if kind == "zen4":
        if K <= 192: return [(0, K)]
        if K < 384:
            e = K & ~1
            return [(0, e // 2), (e // 2, e)] + ([(e, K)] if e < K else [])
        out, k = [], 0
        while K - k > 192: out.append((k, k + 192)); k += 192
        return out + [(k, K)]
    out, k = [], 0
    while k < K:
        r = K - k
        n = r if r <= 384 else (r + 1) // 2 if kind == "H-a" and r < 768 else 384
        out.append((k, k + n)); k += n
    return out


def candidate(a, Bop, bias, alpha, kind):
    """a [K] one row, Bop [K, N] (op(B)); the row of C in this candidate order."""
    K, N = Bop.shape
    b_scale = np.float32(1.0) if kind == "H-a" else np.float32(alpha)
    post = np.float32(alpha) if kind == "H-a" else np.float32(1.0)
    c = None if bias is None else bias.astype(np.float32).copy()
    for k0, k1 in blocks(K, kind):
        acc = np.zeros(N, np.float32)
        for k in range(k0, k1):
            acc = fma32(np.full(N, a[k], np.float32), (b_scale * Bop[k]).astype(np.float32), acc)
        if post != 1: acc = (post * acc).astype(np.float32)
        c = acc if c is None else (c + acc).astype(np.float32)
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rows", type=int, default=2, help="rows of C compared")
    ap.add_argument("--shapes", nargs="+", default=["4x64x16", "8x300x16", "8x1000x16", "16x1000x64", "200x1000x200",
                                                    "33x64x70", "8x1000x70", "64x1000x768"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s); share of identical outputs per candidate order")
    for sh in args.shapes:
        M, K, N = (int(x) for x in sh.split("x"))
        g = torch.Generator().manual_seed(M * 100003 + K * 101 + N)
        a = torch.randn(M, K, generator=g)
        b = torch.randn(K, N, generator=g) / K ** 0.5
        bt = torch.randn(N, K, generator=g) / K ** 0.5
        bias = 0.1 * torch.randn(N, generator=g)
        runs = {"addmm": (torch.addmm(bias, a, b), b.numpy(), bias.numpy(), 1.0),
                "addmm a": (torch.addmm(bias, a, b, alpha=ALPHA), b.numpy(), bias.numpy(), ALPHA),
                "linear": (torch.nn.functional.linear(a, bt, bias), bt.T.numpy(), bias.numpy(), 1.0),
                "bt a": (torch.baddbmm(torch.empty(1, M, N), a[None], bt.T[None], beta=0, alpha=ALPHA)[0],
                         bt.T.numpy(), None, ALPHA)}
        for name, (ref, Bop, bs, al) in runs.items():
            ref = ref.numpy()
            row = []
            for kind in ("zen4", "H-a", "P-b"):
                same = [np.mean(candidate(a.numpy()[i], np.ascontiguousarray(Bop), bs, al, kind).view(np.int32)
                                == ref[i].view(np.int32)) for i in range(min(args.rows, M))]
                row.append(f"{kind} {np.mean(same):.3f}")
            print(f"M={M:4d} K={K:5d} N={N:4d} {name:8s}: " + "  ".join(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
