#!/usr/bin/env python3
"""Where torch's f32 CPU matmul (MKL sgemm) on 2 threads runs another order than on 1, and how the
2-thread order is built (issue 23).

For each shape and op it runs torch on seeded random inputs with torch.set_num_threads(1) and (2),
prints the share of outputs that differ, and tests split models built from torch's own 1-thread
products of the pieces (so a model is exact when 2-thread MKL runs each piece as 1-thread MKL
would run it alone):
  N@j    columns [0, j) and [j, N) as two products (each with its own column tails), j in a list
  M@i    rows [0, i) and [i, M) as two products
  K@k    K in two: ((bias + A[:, :k] B[:k]) + A[:, k:] B[k:]) and (bias + (first + second))
The ops are GPT-2 124M's forward products: Conv1D addmm with B as stored (K 768 -> 2304, 768,
3072; 3072 -> 768), the lm_head's linear (B^T, no bias, 768 -> 50257) and the attention's
matmuls per head (q k^T: B^T, K 64; P v: B as stored, N 64).
With --gm PROBE (tools/ref/probe_f32_mt.c built on gptmeg) it also runs gptmeg's
gm_matmul_f32_torch_mt under --target with torch_threads 1 and 2 and prints the share of outputs
identical to torch's at the same thread count (gm1, gm2). --shapes MxKxN[t][b] probes other shapes
(t: B^T, linear; b: with bias). --gemv-threshold scans, per K, the smallest N = 8 q + 1 at which
the one-row linear splits its columns on 2 threads (matmul_torch_f32.c's GEMV_SPLIT_MIN).
--kparts MxKxN[t] ... [--threads 2 4 ...] prints, per shape and thread count, the K cut torch runs
(1: its 1-thread bits; P: K in P balanced parts, gm_f32_torch_kparts's order; ?: neither), and with
--gm whether gptmeg's result equals torch's.
--packed MxKxN ... tells, per --threads, whether torch ran its packed kernel's order (the bits of
the rows padded past 192 at one thread).
--kscan DIM LO HI MxKxN[t] bisects one dimension for the edge of the cut on each of --threads.
--kgrid K ... prints, per K, a grid over M and N of what torch.mm on 2 threads runs: '.' its
1-thread bits, 'K' the K split (a numpy emulation of gm_f32_torch_kparts's order on 2 x 12 outputs),
'?' neither.
  python3 tools/ref/probe_f32_mt.py [--rows 1 2 7 64 128 256 512] [--ops addmm linear attn]
      [--gm build-h/probe_f32_mt] [--target intel-amx] [--shapes 8x1600x100b ...] [--gemv-threshold]
"""
import argparse
import os
import subprocess
import tempfile
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
GM = {}


def gm_run(a, b, bias, trans, threads):
    """gptmeg's product as torch computes it on `threads` threads (None without --gm)."""
    if not GM.get("probe"): return None
    M, K = a.shape
    N = b.shape[0] if trans else b.shape[1]
    with tempfile.TemporaryDirectory() as d:
        a.numpy().astype(np.float32).tofile(os.path.join(d, "a.bin"))
        b.contiguous().numpy().astype(np.float32).tofile(os.path.join(d, "b.bin"))
        if bias is not None: bias.numpy().astype(np.float32).tofile(os.path.join(d, "bias.bin"))
        subprocess.run([GM["probe"], d, str(M), str(K), str(N), str(int(trans)), str(int(bias is not None)),
                        str(threads), GM["target"]], check=True)
        return np.fromfile(os.path.join(d, "gm_c.bin"), np.float32).reshape(M, N).view(np.int32)

CONV = [(768, 2304), (768, 768), (768, 3072), (3072, 768)]


def bits(t):
    return t.detach().contiguous().numpy().view(np.int32)


def run(fn, threads):
    torch.set_num_threads(threads)
    return fn()


def share(x, y):
    return float(np.mean(x == y))


def probe(name, M, K, N, fn, pieces, args, gm=None):
    """fn(): the product; pieces(r0, r1, c0, c1, k0, k1, with_bias): a piece at one thread;
    gm: (a, b, bias, trans) for gptmeg's side."""
    c1 = bits(run(fn, 1))
    c2 = bits(run(fn, 2))
    diff = c1 != c2
    out = f"{name:7s} M={M:4d} K={K:5d} N={N:6d}: 1 vs 2 threads differ {np.mean(diff):.4f}"
    if gm is not None and GM.get("probe"):
        out += f" gm1 {share(gm_run(*gm, 1), c1):.4f} gm2 {share(gm_run(*gm, 2), c2):.4f}"
    if not diff.any():
        print(out, flush=True)
        return
    cols = np.nonzero(diff.any(axis=0))[0]
    rows = np.nonzero(diff.any(axis=1))[0]
    out += f" (rows {rows.min()}..{rows.max()} of {M}, cols {cols.min()}..{cols.max()} of {N})"
    torch.set_num_threads(1)
    best = []
    # N splits: halves rounded to various multiples
    js = set()
    for m in (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384):
        for f in (lambda v: v // m * m, lambda v: -(-v // m) * m):
            for base in (N // 2, (N + 1) // 2):
                j = f(base)
                if 0 < j < N: js.add(j)
    for j in sorted(js):
        y = np.concatenate([bits(pieces(0, M, 0, j, 0, K, True)), bits(pieces(0, M, j, N, 0, K, True))], axis=1)
        best.append((share(y, c2), f"N@{j}"))
    if M > 1:
        for i in sorted({M // 2, (M + 1) // 2, M // 2 // 4 * 4, M // 2 // 8 * 8, M // 2 // 16 * 16} - {0}):
            y = np.concatenate([bits(pieces(0, i, 0, N, 0, K, True)), bits(pieces(i, M, 0, N, 0, K, True))], axis=0)
            best.append((share(y, c2), f"M@{i}"))
    for k in sorted({K // 2, (K + 1) // 2, K // 2 // 16 * 16, 384, 192}):
        if not 0 < k < K: continue
        p0 = pieces(0, M, 0, N, 0, k, True)
        p0n = pieces(0, M, 0, N, 0, k, False)
        p1 = pieces(0, M, 0, N, k, K, False)
        best.append((share(bits(p0 + p1), c2), f"K@{k}(b+0)+1"))
        bias_t = pieces(0, M, 0, N, 0, 0, True)
        if bias_t is not None:
            best.append((share(bits(bias_t + (p0n + p1)), c2), f"K@{k}b+(0+1)"))
    best.sort(reverse=True)
    out += "; best: " + ", ".join(f"{n} {s:.4f}" for s, n in best[:4])
    print(out, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, nargs="*", default=[1, 2, 7, 64, 128, 256, 512])
    ap.add_argument("--ops", nargs="+", default=["addmm", "linear", "attn"])
    ap.add_argument("--conv", nargs="+", default=[f"{k}x{n}" for k, n in CONV])
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--gm", help="tools/ref/probe_f32_mt.c's binary: compare gptmeg too")
    ap.add_argument("--target", default="intel-amx", help="gptmeg's torch CPU target for --gm")
    ap.add_argument("--shapes", nargs="+", default=[], help="MxKxN[t][b]: extra shapes (t: B^T, b: bias)")
    ap.add_argument("--gemv-threshold", action="store_true", help="scan the one-row linear's 2-thread column split")
    ap.add_argument("--kgrid", type=int, nargs="+", help="K values: grid of 2-thread orders over M and N")
    ap.add_argument("--kparts", nargs="+", help="MxKxN[t] shapes: the K cut torch runs on each of --threads")
    ap.add_argument("--threads", type=int, nargs="+", default=[2, 3, 4, 6, 8, 12, 16])
    ap.add_argument("--kscan", nargs=4, metavar=("DIM", "LO", "HI", "MxKxN[t]"),
                    help="bisect DIM (M, K or N) of the shape between LO and HI for the edge where "
                         "torch's bits on each --threads stop or start equalling its 1-thread bits")
    ap.add_argument("--packed", nargs="+", metavar="MxKxN",
                    help="per shape and --threads: whether torch's bits are its 1-thread packed kernel's "
                         "(the rows padded to M + 256 rows at one thread) or its plain 1-thread bits")
    ap.add_argument("--orders", nargs="+", metavar="MxKxN[t]",
                    help="per shape (t: B^T) and --threads: '1' where torch's bits are its 1-thread bits, else "
                         "every candidate order they equal (tools/ref/probe_f32_orders.c, --orders-bin: P, H or S "
                         "blocks in 1..t K parts), '?' none")
    ap.add_argument("--orders-bin", default="build-mine/probe_f32_orders", help="tools/ref/probe_f32_orders.c's binary")
    args = ap.parse_args()
    if args.orders:
        return orders(args.orders, args.threads, args.orders_bin)
    GM.update(probe=args.gm, target=args.target)
    print(f"torch {torch.__version__}; share of outputs differing between 1 and 2 threads; split models")
    if args.gemv_threshold:
        return gemv_threshold()
    if args.kgrid:
        return kgrid(args.kgrid)
    if args.kparts:
        return kparts(args.kparts, args.threads)
    if args.kscan:
        return kscan(*args.kscan, args.threads)
    if args.packed:
        return packed(args.packed, args.threads)
    for sh in args.shapes:
        trans, wb = "t" in sh, "b" in sh
        M, K, N = map(int, sh.rstrip("tb").split("x"))
        g = torch.Generator().manual_seed(M * 100003 + K * 101 + N)
        a = torch.randn(M, K, generator=g)
        b = torch.randn(N, K, generator=g) / K ** 0.5 if trans else torch.randn(K, N, generator=g) / K ** 0.5
        bias = 0.1 * torch.randn(N, generator=g) if wb else None

        def pieces(r0, r1, c0, c1, k0, k1, with_b, a=a, b=b, bias=bias, trans=trans):
            bb = bias[c0:c1] if bias is not None and with_b else None
            if k1 == k0: return None if bb is None else bb.expand(r1 - r0, c1 - c0)
            A = a[r0:r1, k0:k1]
            if trans: return torch.nn.functional.linear(A, b[c0:c1, k0:k1], bb)
            return torch.addmm(bb, A, b[k0:k1, c0:c1]) if bb is not None else torch.mm(A, b[k0:k1, c0:c1])
        fn = (lambda: torch.nn.functional.linear(a, b, bias)) if trans else \
             (lambda: torch.addmm(bias, a, b) if bias is not None else torch.mm(a, b))
        probe("linear" if trans else "addmm" if wb else "mm", M, K, N, fn, pieces, args, (a, b, bias, trans))
    for M in args.rows:
        g = torch.Generator().manual_seed(1000 + M)
        if "addmm" in args.ops:
            for kn in args.conv:
                K, N = map(int, kn.split("x"))
                a = torch.randn(M, K, generator=g)
                b = torch.randn(K, N, generator=g) / K ** 0.5
                bias = 0.1 * torch.randn(N, generator=g)

                def pieces(r0, r1, c0, c1, k0, k1, wb, a=a, b=b, bias=bias):
                    if k1 == k0:
                        return bias[c0:c1].expand(r1 - r0, c1 - c0) if wb else None
                    A, B = a[r0:r1, k0:k1], b[k0:k1, c0:c1]
                    return torch.addmm(bias[c0:c1], A, B) if wb else torch.mm(A, B)
                probe("addmm", M, K, N, lambda: torch.addmm(bias, a, b), pieces, args, (a, b, bias, False))
        if "linear" in args.ops:
            K, N = 768, args.vocab
            a = torch.randn(M, K, generator=g)
            w = torch.randn(N, K, generator=g) / K ** 0.5

            def pieces(r0, r1, c0, c1, k0, k1, wb, a=a, w=w):
                if k1 == k0: return None
                return torch.nn.functional.linear(a[r0:r1, k0:k1], w[c0:c1, k0:k1])
            probe("linear", M, K, N, lambda: torch.nn.functional.linear(a, w), pieces, args, (a, w, None, True))
        if "attn" in args.ops and M >= 2:
            T = M
            q = torch.randn(12, T, 64, generator=g)
            kk = torch.randn(12, T, 64, generator=g)
            p = torch.softmax(torch.randn(12, T, T, generator=g), -1)
            v = torch.randn(12, T, 64, generator=g)
            for nm, fn in (("qk^T", lambda: torch.matmul(q, kk.transpose(-1, -2))), ("pv", lambda: torch.matmul(p, v))):
                c1 = bits(run(fn, 1))
                c2 = bits(run(fn, 2))
                print(f"{nm:7s} M={T:4d} (12 heads): 1 vs 2 threads differ {np.mean(c1 != c2):.4f}", flush=True)
    return 0


def split_order(a, bt, K):
    """gm_f32_torch_kparts's order on 2 threads (two parts) for rows a [m, K] against bt [n, K]
    (op(B)^T), float32 exactly: each half in GM_F32_BLOCKS_INTEL_SPLIT's blocks, one FMA chain per block, the halves added."""
    from probe_f32_intel import fma32

    def half(a, b, L):
        blocks, k = [], 0
        while k < L:
            r = L - k
            n = r if r <= 384 or (L < 768 and k > 0) else (L + 1) // 2 if L < 768 else 384
            blocks.append((k, k + n))
            k += n
        c = None
        for k0, k1 in blocks:
            acc = np.zeros((a.shape[0], b.shape[0]), np.float32)
            for k in range(k0, k1):
                acc = fma32(np.repeat(a[:, k:k + 1], b.shape[0], 1), np.repeat(b[None, :, k], a.shape[0], 0), acc)
            c = acc if c is None else (c + acc).astype(np.float32)
        return c
    ks = (K + 1) // 2
    return (half(a[:, :ks], bt[:, :ks], ks) + half(a[:, ks:], bt[:, ks:], K - ks)).astype(np.float32)


def kgrid(Ks):
    Ns = [16, 32, 64, 128, 192, 256, 320, 384, 512, 768, 1024]
    for K in Ks:
        print(f"K {K} (torch.mm on 2 threads; rows M, columns N)\n  M \\ N " + " ".join(f"{n:>4}" for n in Ns))
        for M in (2, 8, 16, 32, 64, 100, 128, 192, 200, 256, 300, 400, 512):
            row = []
            for N in Ns:
                g = torch.Generator().manual_seed(M * 7 + K * 3 + N)
                a = torch.randn(M, K, generator=g)
                b = torch.randn(K, N, generator=g) / K ** 0.5
                c1 = bits(run(lambda: torch.mm(a, b), 1))
                c2 = bits(run(lambda: torch.mm(a, b), 2))
                if (c1 == c2).all():
                    row.append(".")
                    continue
                sc = split_order(a.numpy()[:2], np.ascontiguousarray(b.numpy()[:, :12].T), K)
                row.append("K" if (sc.view(np.int32) == c2[:2, :12]).all() else "?")
            print(f"  {M:5d}  " + " ".join(f"{x:>4}" for x in row), flush=True)
    return 0


def kparts(shapes, threads):
    """Per shape MxKxN[t] (t: B^T) and thread count, the K cut torch's result equals: '1' its 1-thread
    bits, 'P' a cut into P balanced parts (the first K % P one longer; each summed in
    GM_F32_BLOCKS_INTEL_SPLIT's blocks, the first onto the bias, the others added in order, then
    the two added: gm_f32_torch_kparts's order), '?' neither. The parts are built from torch's own
    1-thread products of at most 384 columns of K (one FMA chain each where M >= 16 or B is as
    stored: not the dot kernel's rows). With --gm, '=' after the entry when gptmeg's result equals
    torch's, '!' when it does not."""
    def blocks(L):
        out, k = [], 0
        while k < L:
            e = (L if L <= 384 or k > 0 else (L + 1) // 2) if L < 768 else (L if L - k <= 384 else k + 384)
            out.append((k, e))
            k = e
        return out

    for sh in shapes:
        trans = sh.endswith("t")
        M, K, N = map(int, sh.rstrip("t").split("x"))
        g = torch.Generator().manual_seed(M * 7 + K * 3 + N)
        a = torch.randn(M, K, generator=g)
        b = (torch.randn(N, K, generator=g).T if trans else torch.randn(K, N, generator=g)) / K ** 0.5
        bias = torch.randn(N, generator=g)
        torch.set_num_threads(1)
        c1 = bits(torch.addmm(bias, a, b))

        def part(k0, k1, start):
            torch.set_num_threads(1)
            c = start
            for x0, x1 in blocks(k1 - k0):
                y = a[:, k0 + x0:k0 + x1] @ b[k0 + x0:k0 + x1]
                c = y if c is None else c + y
            return c
        row = []
        for t in threads:
            ct = bits(run(lambda: torch.addmm(bias, a, b), t))
            hit = "1" if (ct == c1).all() else "?"
            for P in ([] if hit == "1" else range(2, t + 1)):
                q, r = divmod(K, P)
                cuts = [0]
                for i in range(P):
                    cuts.append(cuts[-1] + q + (i < r))
                rest = None
                for i in range(1, P):
                    y = part(cuts[i], cuts[i + 1], None)
                    rest = y if rest is None else rest + y
                if (bits(part(0, cuts[1], bias) + rest) == ct).all():
                    hit = str(P)
                    break
            if GM.get("probe"):
                hit += "=" if (gm_run(a, b.T.contiguous() if trans else b, bias, trans, t) == ct).all() else "!"
            row.append(f"{t}:{hit}")
        print(f"  {sh:>14}  " + " ".join(row), flush=True)
    return 0


def orders(shapes, threads, binary):
    """Per shape MxKxN[t] (t: B^T; with a bias, seeded per shape) and thread count t: '1' where
    torch.addmm / F.linear on t threads gives its 1-thread bits, else the candidate orders of
    tools/ref/probe_f32_orders.c whose bits equal torch's at every output (P<p>, H<p>, S<p>: K in p
    balanced parts of 384-, halves- or split-blocks, gm_f32_torch_kparts's sum; p<p>, h<p>, s<p>: the
    same in gm_f32_torch_kgroups's row-group sum, r: its parts rounded to 4), '?' none. How the
    eleventh session (2026-12-06) classified the dot kernel's shapes and few rows on 2..16 threads,
    and the twelfth few rows against N <= 64 t on 8..64."""
    for sh in shapes:
        trans = sh.endswith("t")
        M, K, N = map(int, sh.rstrip("t").split("x"))
        g = torch.Generator().manual_seed(M * 7 + K * 3 + N)
        a = torch.randn(M, K, generator=g)
        bt = torch.randn(N, K, generator=g) / K ** 0.5
        bias = torch.randn(N, generator=g)
        b = bt.T.contiguous()
        fn = (lambda: torch.nn.functional.linear(a, bt, bias)) if trans else (lambda: torch.addmm(bias, a, b))
        c1 = bits(run(fn, 1))
        row = []
        with tempfile.TemporaryDirectory() as d:
            a.numpy().tofile(os.path.join(d, "a.bin"))
            bt.numpy().tofile(os.path.join(d, "bt.bin"))
            bias.numpy().tofile(os.path.join(d, "bias.bin"))
            for t in threads:
                ct = bits(run(fn, t))
                if (ct == c1).all():
                    row.append(f"{t}:1")
                    continue
                ct.tofile(os.path.join(d, "torch.bin"))
                out = subprocess.run([binary, d, str(M), str(K), str(N), str(max(t, 2))], check=True,
                                     capture_output=True, text=True).stdout.split()
                row.append(f"{t}:{','.join(out) if out else '?'}")
        print(f"  {sh:>14}  " + " ".join(row), flush=True)
    return 0


def kscan(dim, lo, hi, shape, threads):
    """Per thread count t, bisects dimension dim of shape (the others fixed) between lo and hi for
    the edge where torch.addmm on t threads starts or stops giving its 1-thread bits (assumes one
    edge between them; inputs seeded per shape). K or N a multiple of 256 cuts where its neighbours
    may not (gm_f32_torch_kparts): a range across one can mislead the bisection."""
    trans = shape.endswith("t")
    base = dict(zip("MKN", map(int, shape.rstrip("t").split("x"))))

    def cut(v, t):
        d = dict(base, **{dim: v})
        M, K, N = d["M"], d["K"], d["N"]
        g = torch.Generator().manual_seed(M * 7 + K * 3 + N)
        a = torch.randn(M, K, generator=g)
        b = (torch.randn(N, K, generator=g).T if trans else torch.randn(K, N, generator=g)) / K ** 0.5
        bias = torch.randn(N, generator=g)
        c1 = run(lambda: torch.addmm(bias, a, b), 1)
        return not torch.equal(c1, run(lambda: torch.addmm(bias, a, b), t))

    lo, hi = int(lo), int(hi)
    for t in threads:
        x, y = lo, hi
        cx, cy = cut(x, t), cut(y, t)
        if cx == cy:
            print(f"  {shape} {dim} {x}..{y}, {t} threads: {'cut' if cx else '1-thread bits'} at both ends", flush=True)
            continue
        while y - x > 1:
            mid = (x + y) // 2
            if cut(mid, t) == cx: x = mid
            else: y = mid
        print(f"  {shape} {dim}, {t} threads: {'cut' if cx else '1-thread bits'} to {dim} {x}, "
              f"{'1-thread bits' if cx else 'cut'} from {y}", flush=True)
    return 0


def packed(shapes, threads):
    """Per shape MxKxN (B as stored) and thread count: 'P' torch's bits are those of its packed
    kernel (the rows padded with 256 zero rows, at one thread: one thread packs from 192 rows), '1'
    its 1-thread bits, 'B' both, '?' neither."""
    for sh in shapes:
        M, K, N = map(int, sh.split("x"))
        g = torch.Generator().manual_seed(M * 7 + K * 3 + N)
        a = torch.randn(M, K, generator=g)
        b = torch.randn(K, N, generator=g) / K ** 0.5
        bias = torch.randn(N, generator=g)
        c1 = run(lambda: torch.addmm(bias, a, b), 1)
        cp = run(lambda: torch.addmm(bias, torch.cat([a, torch.zeros(256, K)]), b), 1)[:M]
        row = []
        for t in threads:
            ct = run(lambda: torch.addmm(bias, a, b), t)
            p, o = torch.equal(cp, ct), torch.equal(c1, ct)
            row.append(f"{t}:{'B' if p and o else 'P' if p else '1' if o else '?'}")
        print(f"  {sh:>14}  " + " ".join(row), flush=True)
    return 0


def gemv_threshold():
    """Per K, the smallest N = 8 q + 1 (a split there shows in the column kinds) at which torch's
    one-row linear on 2 threads equals its two halves [0, ceil(N / 2)), [ceil(N / 2), N) at 1 thread."""
    for K in (1, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024, 1536, 2048, 3072, 4096, 8192):
        first = None
        for q in range(1, 1200):
            N = 8 * q + 1
            g = torch.Generator().manual_seed(N * 7 + K)
            a = torch.randn(1, K, generator=g)
            w = torch.randn(N, K, generator=g) / K ** 0.5
            lin = torch.nn.functional.linear
            c2 = bits(run(lambda: lin(a, w), 2))
            torch.set_num_threads(1)
            j = (N + 1) // 2
            y = np.concatenate([bits(lin(a, w[:j])), bits(lin(a, w[j:]))], axis=1)
            if (y == c2).all() and not (bits(lin(a, w)) == c2).all():
                first = N
                break
        print(f"K {K:5d}: first N = 8q+1 split on 2 threads: {first}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
