#!/usr/bin/env python3
"""Where torch's bf16 matmul on AMX (intel-amx) starts a new K block, for one M, K, N and op.

On AMX each 32-element K tile is one TDPBF16PS: C += (E + O), the even- and odd-index products
each in an f32 chain (tools/ref/amx_tdpbf16ps_probe.c), so a cancelling pair inside one tile tells
nothing. Across tiles: column j gets +2^24 at the first element of tile t = j mod (K/32 - 2), 1 at
tile t + 1 and -2^24 at tile t + 2 (times rows of ones): the 1 survives only when tile t + 1 starts
a K block whose sum is added to the blocks before it (C = big, then 1 - big). Prints the element
index of every block start found, per shape, op and thread count.
  python3 tools/ref/probe_bf16_amx_blocks.py --m 7 130 --k 768 3072 --n 768 --ops addmm linear
Ops (oneDNN flags trans_a, trans_b, with_sum; see OPS): addmm (bias, A, W as stored), matmul (A, W),
linear (A, W^T, bias), mmtb (torch.mm(A, W.t()) with W [N, K] contiguous, no bias: Conv1D's dX and
F.linear without bias, e.g. the lm_head; ONEDNN_VERBOSE shows F.linear(x, W) and torch.mm(x, W.t())
create the same primitive, a cache hit), mmta (A given transposed in memory, as the linears' dW =
x^T @ dY: M = the layer's width, K = the batch's rows), bmm (torch.bmm of --batch slices, each
A [M, K] and B [K, N] contiguous: the attention's q @ k^T and P @ V, which torch hands to oneDNN as
one 3-D matmul, src and wei "abc"; every slice holds the same probe and must give the same result).
"""
import argparse
import functools
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onednn_amx_blocking as model  # noqa: E402

# op -> (trans_a, trans_b, with_sum) as oneDNN receives them (ONEDNN_VERBOSE: src ab/ba, wei ab/ba,
# attr-post-ops:sum)
OPS = {"addmm": (False, False, True), "matmul": (False, False, False), "linear": (False, True, True),
       "mmtb": (False, True, False), "mmta": (True, False, False), "bmm": (False, False, False)}
BATCH = [12]  # slices of the bmm op (--batch)


def run_op(op, x, W, Wt=None):
    """C = x @ W for W [K, N] (bf16), as op hands it to oneDNN; Wt: W.T.contiguous() if at hand."""
    bias = torch.zeros(W.shape[1], dtype=torch.bfloat16)
    if op == "addmm": return torch.addmm(bias, x, W)
    if op == "matmul": return torch.matmul(x, W)
    if op == "mmta": return torch.mm(x.t().contiguous().t(), W)  # A transposed in memory: dW = x^T @ dY
    if op == "bmm":
        b = BATCH[0]
        y = torch.bmm(x.expand(b, -1, -1).contiguous(), W.expand(b, -1, -1).contiguous())
        if not all(torch.equal(y[0], y[i]) for i in range(1, b)):
            raise SystemExit("bmm: the slices differ")
        return y[0]
    Wt = W.T.contiguous() if Wt is None else Wt
    if op == "linear": return torch.nn.functional.linear(x, Wt, bias)
    if op == "mmtb": return torch.mm(x, Wt.t())
    raise ValueError(op)


@functools.lru_cache(maxsize=8)
def probe_weight(K, N):
    big = 2.0 ** 24
    T = K // 32
    W = torch.zeros(K, N)
    j = torch.arange(N)
    t = j % (T - 2)
    W[32 * t, j], W[32 * (t + 1), j], W[32 * (t + 2), j] = big, 1.0, -big
    return W.bfloat16()


def starts(M, K, N, op):
    T = K // 32
    W = probe_weight(K, N)
    x = torch.ones(M, K, dtype=torch.bfloat16)
    y = run_op(op, x, W)
    hit = (y.float().abs() != 0).any(dim=0).tolist()
    found, seen = set(), {}
    for j in range(N):
        b = 32 * (j % (T - 2) + 1)
        seen.setdefault(b, set()).add(bool(hit[j]))
        if hit[j]:
            found.add(b)
    # a start seen in some columns and not in others: the chunk depends on the column (N block)
    mixed = sorted(b for b, v in seen.items() if len(v) > 1)
    rows_differ = any((y[i] != y[0]).any().item() for i in range(M))
    return sorted(found), rows_differ, mixed


@functools.lru_cache(maxsize=8)
def split_weight(K, N, chunk):
    n = -(-K // chunk)
    big = 2.0 ** 24
    W = torch.zeros(K, N)
    j = torch.arange(N)
    s = 1 + j % (n - 2)
    W[(s - 1) * chunk, j], W[s * chunk, j], W[(s + 1) * chunk, j] = big, 1.0, -big
    return W.bfloat16()


def splits(M, K, N, op, chunk):
    """Where the chunks' sums are split into partial sums added at the end (oneDNN's K split across
    threads, nthr_k > 1: (c0 + c1) + (c2 + c3) rather than ((c0 + c1) + c2) + c3), for chunks of `chunk`
    elements: columns of group s get +2^24 at the start of chunk s - 1, 1 at chunk s, -2^24 at chunk
    s + 1; the 1 survives only when a partial sum starts at chunk s. Returns the element index of
    every such start (chunks s with s + 1 < the number of chunks; later splits change nothing)."""
    n = -(-K // chunk)
    if n < 3:
        return []
    W = split_weight(K, N, chunk)
    x = torch.ones(M, K, dtype=torch.bfloat16)
    y = run_op(op, x, W, transposed(K, N, chunk) if op in ("linear", "mmtb") else None)
    hit = (y.float().abs() != 0).any(dim=0).tolist()
    return sorted({(1 + j % (n - 2)) * chunk for j in range(N) if hit[j]})


def tail_probe(M, K, N, op):
    """Whether the K tail (the last partial 32-element tile, at b = K - K % 32; K % 32 != 0) starts
    an accumulation of its own: column j gets -2^24 at tile j (j = 0 .. b/32 - 2), +2^24 at the
    tile before b and 1 at b. The 1 survives when b is summed after the sum holding b - 32 has met
    the one holding tile j (((..-big..) + big) + 1), and is lost when b - 32 and b are in one
    chain that meets tile j's later ((big + 1) rounds to big). Returns a string of '1' (survives)
    and '0' per column j (at most N columns)."""
    b = K - K % 32
    if K % 32 == 0 or b < 64:
        return ""
    n = min(b // 32 - 1, N)
    big = 2.0 ** 24
    W = torch.zeros(K, N)
    j = torch.arange(n)
    W[32 * j, j] = -big
    W[b - 32, j] = big
    W[b, j] = 1.0
    x = torch.ones(M, K, dtype=torch.bfloat16)
    y = run_op(op, x, W.bfloat16())
    return "".join("1" if v else "0" for v in (y[:, :n].float() != 0).any(dim=0).tolist())


@functools.lru_cache(maxsize=8)
def transposed(K, N, chunk):
    return split_weight(K, N, chunk).T.contiguous()


def mixed_cols(M, K, N, op, b):
    """The columns j (probing start b) where the start b is seen."""
    big = 2.0 ** 24
    T = K // 32
    t = b // 32 - 1
    W = torch.zeros(K, N)
    W[32 * t, :], W[32 * (t + 1), :], W[32 * (t + 2), :] = big, 1.0, -big
    x = torch.ones(M, K, dtype=torch.bfloat16)
    y = run_op(op, x, W.bfloat16())
    hit = (y.float().abs() != 0).any(dim=0).tolist()
    runs, j = [], 0
    while j < N:
        k = j
        while k < N and hit[k] == hit[j]:
            k += 1
        runs.append(f"{j}-{k - 1}:{'y' if hit[j] else 'n'}")
        j = k
    return " ".join(runs)


def scan(th, fixed, N, op, rng, over_k):
    """Rows M (or, over_k, K) from rng[0] below rng[1] in steps of rng[2], the other fixed: prints the
    first M (K) of every run with the same chunk starts, partial sums and per-column starts."""
    last = None
    for v in range(*rng):
        M, K = (fixed, v) if over_k else (v, fixed)
        s, differ, mixed = starts(M, K, N, op)
        chunk = s[0] if s else 0
        sp = splits(M, K, N, op, chunk) if chunk and th > 1 else []  # (one thread never splits K)
        key = (chunk if over_k else tuple(s), tuple(mixed), tuple(sp))
        if key != last:
            where = f"M {M:5d} N {N:5d} {op:6s} from K {K:5d}" if over_k else f"K {K:5d} N {N:5d} {op:6s} from M {M:4d}"
            print(f"t{th} {where}: chunk {chunk} starts {s[:4] if over_k else s}"
                  + (f" partial sums from {sp}" if sp else "")
                  + (f" (by column: {mixed})" if mixed else ""), flush=True)
            last = key


def order_check(M, K, N, op, th, triples, samples, seed=0):
    """torch's outputs against the model's whole order (onednn_amx_blocking.simulate): `triples`
    columns of +2^24, 1, -2^24 at three random K positions (rows of ones: the 1 survives or not by
    where calls, tiles, chains and parts meet), and `samples` outputs of a product of random bf16
    operands. Returns (triples differing, samples differing); (None, None) where the model says the
    product does not run on AMX."""
    batch = BATCH[0] if op == "bmm" else 1
    mop = "matmul" if op == "bmm" else op
    if model.implementation(M, N, K, mop, th, batch) != "amx":
        return None, None
    rng = np.random.default_rng(seed)
    bad_t = 0
    if triples:
        W = np.zeros((K, N), np.float32)
        cols = [rng.choice(K, 3, replace=False) for _ in range(N)]
        for j, (p, q, r) in enumerate(cols):
            W[p, j], W[q, j], W[r, j] = 2.0 ** 24, 1.0, -(2.0 ** 24)
        done = 0
        while done < triples:
            y = run_op(op, torch.ones(M, K, dtype=torch.bfloat16), torch.from_numpy(W).bfloat16()).float()[0].numpy()
            n = min(N, triples - done)
            bad_t += sum(model.simulate(W[:, j], M, N, K, mop, th, batch) != y[j] for j in range(n))
            done += n
            cols = [rng.choice(K, 3, replace=False) for _ in range(N)]
            W[:] = 0
            for j, (p, q, r) in enumerate(cols):
                W[p, j], W[q, j], W[r, j] = 2.0 ** 24, 1.0, -(2.0 ** 24)
    bad_s = 0
    if samples:
        g = torch.Generator().manual_seed(seed)
        A = torch.randn(M, K, generator=g).bfloat16()
        B = torch.randn(K, N, generator=g).bfloat16()
        y = run_op(op, A, B).float().numpy()
        An, Bn = A.float().numpy(), B.float().numpy()
        for _ in range(samples):
            i, j = int(rng.integers(M)), int(rng.integers(N))
            v = model.simulate((An[i] * Bn[:, j]).astype(np.float32), M, N, K, mop, th, batch)
            bad_s += torch.tensor(float(v)).bfloat16().float().item() != y[i, j]
    return bad_t, bad_s


def each_shape(args):
    """(threads, M, K, N, op) for every combination of the arguments, torch's thread count set."""
    for th in args.threads:
        torch.set_num_threads(th)
        for M in args.m:
            for K in args.k:
                for N in args.n:
                    for op in args.ops:
                        yield th, M, K, N, op


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, nargs="+", default=[7, 130])
    ap.add_argument("--k", type=int, nargs="+", default=[768, 3072])
    ap.add_argument("--n", type=int, nargs="+", default=[768])
    ap.add_argument("--ops", nargs="+", default=["addmm", "linear"])
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--batch", type=int, default=12, help="slices of the bmm op (default 12: GPT-2 124M's heads)")
    ap.add_argument("--mrange", type=int, nargs=3, metavar=("FROM", "TO", "STEP"),
                    help="rows FROM, FROM + STEP, ... below TO (instead of --m); prints only where the starts change")
    ap.add_argument("--cols", action="store_true", help="for a start seen in some columns only, which")
    ap.add_argument("--krange", type=int, nargs=3, metavar=("FROM", "TO", "STEP"),
                    help="K FROM, FROM + STEP, ... below TO (FROM >= 96) at each --m, --n, op and thread count; prints "
                         "only where the chunk changes (the linears' dW: --ops mmta, K = the batch's rows)")
    ap.add_argument("--triples", type=int, default=0,
                    help="check the model's whole order (calls, tiles, chains, parts) on this many cancelling triples "
                         "per shape against torch, instead of listing block starts")
    ap.add_argument("--samples", type=int, default=0,
                    help="with --triples: also this many outputs of a product of random bf16 operands")
    args = ap.parse_args()
    BATCH[0] = args.batch
    print(f"torch {torch.__version__}")
    if args.krange or args.mrange:
        # one of M (--mrange: each --k) or K (--krange: each --m) scanned; a line where the chunk changes
        for th in args.threads:
            torch.set_num_threads(th)
            for fixed in (args.m if args.krange else args.k):
                for N in args.n:
                    for op in args.ops:
                        scan(th, fixed, N, op, args.krange or args.mrange, bool(args.krange))
        return 0
    if args.triples:
        total = 0
        for th, M, K, N, op in each_shape(args):
            bt, bs = order_check(M, K, N, op, th, args.triples, args.samples)
            if bt is None:
                print(f"t{th} M {M:4d} K {K:5d} N {N:5d} {op:6s}: not AMX (not modelled here)")
                continue
            total += bt + bs
            mop, b = ("matmul", BATCH[0]) if op == "bmm" else (op, 1)
            print(f"t{th} M {M:4d} K {K:5d} N {N:5d} {op:6s}: tiles {model.tiles(M, N, K, mop, th, b)} "
                  f"triples {args.triples - bt}/{args.triples}"
                  + (f" random {args.samples - bs}/{args.samples}" if args.samples else ""), flush=True)
        print("all as modelled" if total == 0 else f"{total} differ")
        return 1 if total else 0
    for th, M, K, N, op in each_shape(args):
        s, differ, mixed = starts(M, K, N, op)
        print(f"t{th} M {M:4d} K {K:5d} N {N:5d} {op:6s}: block starts {s}"
              + (" (rows differ)" if differ else "")
              + (f" (by column: {mixed})" if mixed else ""), flush=True)
        if mixed and args.cols:
            for b in mixed:
                print(f"    start {b}: columns {mixed_cols(M, K, N, op, b)}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
