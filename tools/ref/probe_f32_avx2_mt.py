#!/usr/bin/env python3
"""How MKL's Intel AVX2 sgemm splits an f32 product over t >= 3 threads (the avx2 target; issue 23).

Run under the avx2 caps on an Intel CPU (ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2
MKL_ENABLE_INSTRUCTIONS=AVX2). For each shape MxKxN[t] (t: B^T, F.linear; else addmm with B as
stored; a seeded random bias) and thread count it runs torch's product on t threads and rebuilds
it from torch's own 1-thread products of pieces, printing every composition whose bits equal
torch's at every output:
  1        the 1-thread product;
  R<p>     rows in p parts of ceil(M / p), each part as one thread computes it alone
           (matmul_torch_f32.c: avx2_many_threads);
  G<m>x<n> a grid of m x n blocks on the big-product kernels: columns in blocks of
           ceil((N - 1) / n), the last the rest; rows balanced, but where M % m is 1 the last one
           longer (avx2_big_grid). A block of fewer than 72 rows is run by torch with zero rows
           added above it, a multiple of four, so that one thread takes the big-product kernels
           and the block keeps its own last rows (every row alike otherwise); a block of fewer
           than 72 columns with 72 zero columns before it (three panels of 24: its own leftover
           panels unchanged);
  H<t>     t x 1 blocks of ceil((M - 1) / t) rows, the last the rest, each on the big-product
           kernels (avx2_big_grid from M = N up to N 767);
  K<p>     K in p balanced parts, each part's slice as one thread computes it alone, summed
           C = (bias + part 0) + ((part 1 + part 2) + ...) (avx2_kcut).
The line ends with what gptmeg's rules predict ("rule: ..."). This is how the seventeenth session
(2026-12-07) found the row parts, the grid and the K cut, and checked them off the grid, and the
eighteenth (2026-12-07) the K cut's edges, B^T's K cut and the grid's narrow blocks.
  python3 tools/ref/probe_f32_avx2_mt.py --threads 3 4 6 8 --shapes 100x768x768 150x256x1001 100x2048x256
"""
import argparse
import os
import sys

import torch


def bits(x):
    return x.contiguous().view(torch.int32)


def one(a, b, bias):
    torch.set_num_threads(1)
    return torch.addmm(bias, a, b) if bias is not None else a @ b


def big(a, b, bias):
    """The block on the big-product kernels: zero rows above it (a multiple of four) up to 72, and
    below 72 columns 72 zero columns before it."""
    pad = max(0, -(-(72 - a.shape[0]) // 4) * 4)
    z = torch.cat([torch.zeros(pad, a.shape[1]), a], 0)
    if b.shape[1] >= 72:
        return one(z, b, bias)[pad:]
    K = b.shape[0]
    if b.stride(0) == 1 and b.shape[1] > 1:  # B^T (a transposed view): kept one
        bb = torch.cat([torch.zeros(72, K), b.T], 0).T
    else:
        bb = torch.cat([torch.zeros(K, 72), b], 1)
    return one(z, bb, None if bias is None else torch.cat([torch.zeros(72), bias]))[pad:, 72:]


def grid_rows(M, m):
    q, r = divmod(M, m)
    if r == 1:
        return [i * q for i in range(m)] + [M]
    c = [0]
    for i in range(m):
        c.append(c[-1] + q + (i < r))
    return c


def grid_cols(N, n):
    w = (N + n - 2) // n
    return [min(N, i * w) for i in range(n)] + [N]


def compositions(a, b, bias, t):
    M, K = a.shape
    N = b.shape[1]
    out = {"1": lambda: one(a, b, bias)}
    for p in range(2, t + 1):
        w = -(-M // p)
        out[f"R{p}"] = lambda w=w: torch.cat([one(a[i:i + w], b, bias) for i in range(0, M, w)], 0)
    for m in range(1, t + 1):
        for n in range(1, t + 1):
            if m * n != t:
                continue
            r, c = grid_rows(M, m), grid_cols(N, n)

            def g(r=r, c=c, m=m, n=n):
                return torch.cat([torch.cat([big(a[r[i]:r[i + 1]], b[:, c[j]:c[j + 1]], bias[c[j]:c[j + 1]])
                                             for j in range(n) if c[j + 1] > c[j]], 1)
                                  for i in range(m) if r[i + 1] > r[i]], 0)
            out[f"G{m}x{n}"] = g
    h = (M + t - 2) // t  # t x 1, rows as the columns are cut
    hr = [min(M, i * h) for i in range(t)] + [M]
    out[f"H{t}"] = lambda: torch.cat([big(a[hr[i]:hr[i + 1]], b, bias) for i in range(t) if hr[i + 1] > hr[i]], 0)
    for p in range(2, t + 1):
        q, rr = divmod(K, p)
        cuts = [0]
        for i in range(p):
            cuts.append(cuts[-1] + q + (i < rr))

        def kc(cuts=cuts, p=p):
            parts = [one(a[:, cuts[i]:cuts[i + 1]], b[cuts[i]:cuts[i + 1]], bias if i == 0 else None) for i in range(p)]
            rest = parts[1]
            for x in parts[2:]:
                rest = rest + x
            return parts[0] + rest
        out[f"K{p}"] = kc
    return out


def rule(M, N, K, trans_b, t):
    """gptmeg's avx2 rules for t >= 3 threads (alpha 1, op(A) = A), as matmul_torch_f32.c applies them."""
    if 3 <= t <= 16 and 72 <= M <= 378 and 72 <= N <= 378 and K >= 3 * M + N + 242:
        if K >= 378 * t or (M > 16 * t and (N > 128 or M > 128)):
            return f"K{t}"
    if K >= 256 and (N >= 256 or (N >= 56 and t <= 8)) and 48 < M <= 16 * t:
        p = 2 if M <= 96 else 3
        while t % p:
            p += 1
        if N < 256:
            d = t // p
            while d > 1 and (t % d or N <= 64 * (d - 1)):
                d -= 1
            p = t // d
        return f"R{p}"
    if K < 256 or M <= 16 * t or M < (56 if trans_b else 72) or M > 384:
        return "1" if K < 256 or N < 256 or M <= 48 or M >= 72 else "1 (big-product kernels)"
    if not 3 <= t <= 16 or N in (768, 769):
        return "1"
    n = t
    if N > 769:
        n = 1
        for d in range(2, t + 1):
            if t % d == 0 and (d == t or d & (d - 1) == 0) and (N + d - 2) // d > 384:
                n = d
    elif M >= N:
        return f"H{t}" if N >= 128 else "1"
    elif N < 160:
        return "1"
    w = (N + n - 2) // n
    if N > 769 and (w < 72 or N - (n - 1) * w < 72):
        return "1"
    return f"G{t // n}x{n}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", nargs="+", required=True, help="MxKxN[t]")
    ap.add_argument("--threads", type=int, nargs="+", default=[3, 4, 6, 8])
    args = ap.parse_args()
    caps = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
    if any(os.environ.get(k) != v for k, v in caps.items()):
        print("probe_f32_avx2_mt: set " + " ".join(f"{k}={v}" for k, v in caps.items()), file=sys.stderr)
        return 2
    for sh in args.shapes:
        trans = sh.endswith("t")
        M, K, N = map(int, sh.rstrip("t").split("x"))
        g = torch.Generator().manual_seed(M * 7 + K * 3 + N)
        a = torch.randn(M, K, generator=g)
        b = (torch.randn(N, K, generator=g) / K ** 0.5).T if trans else torch.randn(K, N, generator=g) / K ** 0.5
        bias = torch.randn(N, generator=g)
        for t in args.threads:
            torch.set_num_threads(t)
            ct = bits(torch.addmm(bias, a, b))
            hits = [name for name, f in compositions(a, b, bias, t).items() if bool((bits(f()) == ct).all())]
            print(f"  {sh:>16} t {t:2d}: {' '.join(hits) or '?'}   rule: {rule(M, N, K, trans, t)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
