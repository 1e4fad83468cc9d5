#!/usr/bin/env python3
"""torch 2.15's order for a bf16 product of ONE row against a transposed weight, checked live.

The case: y = F.linear(x, W[, bias]) with x [1, K] (or [K], or [1, 1, K]) bf16 and W [N, K] bf16
contiguous, and torch.mm(x, W.t()): the lm_head of a decode step. On this machine (Sapphire Rapids,
oneDNN v3.13.3 in torch 2.15) ONEDNN_VERBOSE shows brg_matmul:avx512_core_bf16 with wei `ba` for
every one of these ops when N * K > 4096 (1-D x included: it reaches the same oneDNN matmul); for
M >= 2 the AMX kernel runs instead (tools/ref/probe_bf16_amx_order.py).

The order (N * K > 4096), per output column n, found with cancelling +-1 pairs and 2^-30 markers
(--probe) and confirmed on random inputs (every output, every shape and thread count tried):
  * K is read in pairs p = 0 .. P-1 (elements 2p, 2p+1; P = ceil(K / 2), an odd K's last pair has
    a zero second element) and the pairs are dealt to 16 lanes of one accumulator: pair p goes to
    lane p % 16 (one zmm holds 32 bf16 of x and of W's row n; VDPBF16PS).
  * Each lane runs ONE f32 chain from zero over its pairs in increasing p (p = l, l + 16, l + 32,
    ...): acc = (acc + x[2p+1] W[n,2p+1]) + x[2p] W[n,2p], odd element first, both additions rounded
    (RNE), bf16 subnormal inputs read as zero, every product and sum flushed to zero when subnormal.
    No K blocking: one chain per lane over all of K (checked up to K = 16384); a K that is not a
    multiple of 32 just leaves the high lanes short in the last step (zeros).
  * The 16 lanes are reduced in f32 (plain additions, no flushing) as: t[l] = acc[l] + acc[l + 8]
    (l < 8), u[l] = t[l] + t[l + 4] (l < 4), then (u[0] + u[1]) + (u[2] + u[3]) -- halving 8, 4,
    then adjacent pairs (1), then the two pair sums (2).
  * Bias (F.linear with bias, oneDNN's sum post-op on a dst pre-filled with the bf16 bias) is added
    once to the reduced sum in f32: r = s + bias; then r is rounded to bf16 (RNE); an f32 subnormal
    result becomes a signed zero.
  * Nothing depends on N or the thread count (N 1 .. 50257, threads 1, 2, 4 all identical), nor on
    the op (linear, linear + bias, mm(x, W.t()), 1-D x, 3-D x).
    Covered: K 64, 65, 96, 768, 777, 800, 1000, 1001, 2304, 2305, 3072, 4096-16384; N 1, 2, 3, 17, 64,
    300, 333, 512, 1000, 2304, 50257; threads 1, 2, 4 (on 2 vCPUs): 100% of outputs.
For N * K <= 4096 torch does not call oneDNN (ATen's mkldnn size check, M * N * K > 16^3; the 1-D x
case checks N * K the same way): ATen's bf16 dot runs instead, the `dot` order of
tools/ref/probe_bf16_aten_order.py (64 chains, tree, tails; + bias in f32), 100% on the shapes tried,
and that path neither reads subnormals as zero nor flushes them (a subnormal result stays a bf16
subnormal).
Source: the stored oneDNN snapshot (v3.8.0-dev, March 2025) has no such one-row kernel (its brgemm
for bf16 repacks B into N-blocked VNNI layouts, N across the lanes), so the kernel in
v3.13.3 was not read; the order above is measured only.

Prints, per K, N, threads and op, the share of identical bf16 outputs for the order above (`gemv`)
and rival orders that differ in one point (even element first, lane tree 8-4-2-1, one VDPBF16PS
chain per column, ATen's dot), so the check shows it discriminates.
  python3 tools/ref/probe_bf16_onerow_t.py                  # the default shapes, threads 1 2 4
  python3 tools/ref/probe_bf16_onerow_t.py --k 768 --n 50257 --threads 1 2
  python3 tools/ref/probe_bf16_onerow_t.py --probe          # the structural probes only
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_bf16_aten_order as AT  # noqa: E402

f32 = np.float32
TINY = np.finfo(f32).tiny


def daz(v):
    v = np.asarray(v, f32)
    return np.where(np.abs(v) < TINY, f32(0), v).astype(f32)


def ftz(v):
    return np.where(np.abs(v) < TINY, np.copysign(f32(0), v), v).astype(f32)


def lane_chains(x, w, odd_first=True, lanes=16):
    """x [K], w [N, K] (bf16 values in f32) -> [N, lanes]: pair p into lane p % lanes, VDPBF16PS steps."""
    N, K = w.shape
    P = (K + 1) // 2
    S = (P + lanes - 1) // lanes
    xa = np.zeros(2 * S * lanes, f32)
    xa[:K] = daz(x)
    wa = np.zeros((N, 2 * S * lanes), f32)
    wa[:, :K] = daz(w)
    xa = xa.reshape(S, lanes, 2)
    wa = wa.reshape(N, S, lanes, 2)
    acc = np.zeros((N, lanes), f32)
    first, second = (1, 0) if odd_first else (0, 1)
    for s in range(S):
        acc = ftz(acc + xa[s, :, first] * wa[:, s, :, first])
        acc = ftz(acc + xa[s, :, second] * wa[:, s, :, second])
    return acc


def tree_8_4_1_2(acc):
    t = (acc[:, :8] + acc[:, 8:]).astype(f32)
    u = (t[:, :4] + t[:, 4:]).astype(f32)
    return ((u[:, 0] + u[:, 1]).astype(f32) + (u[:, 2] + u[:, 3]).astype(f32)).astype(f32)


def tree_halving(acc):  # 8, 4, 2, 1
    a = acc
    while a.shape[1] > 1:
        h = a.shape[1] // 2
        a = (a[:, :h] + a[:, h:]).astype(f32)
    return a[:, 0]


def gemv(x, w):  # the order found (sum before bias)
    return tree_8_4_1_2(lane_chains(x, w))


def rival_even_first(x, w):
    return tree_8_4_1_2(lane_chains(x, w, odd_first=False))


def rival_halving(x, w):
    return tree_halving(lane_chains(x, w))


def rival_one_chain(x, w):  # one VDPBF16PS chain per column over all K (oneDNN's order for B as stored)
    return lane_chains(x, w, lanes=1)[:, 0]


def rival_aten_dot(x, w):
    return AT.dot(x[None, :], np.ascontiguousarray(w.T))[0]


CANDS = {"gemv": gemv, "evenfirst": rival_even_first, "tree8421": rival_halving,
         "onechain": rival_one_chain, "atendot": rival_aten_dot}


def bf16_bits(v):  # RNE to bf16, f32 subnormals to signed zero (oneDNN's down-conversion)
    v = ftz(np.asarray(v, f32))
    u = v.view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32)


def torch_op(op, x, w, b):
    if op == "linear":
        return F.linear(x, w)[0]
    if op == "linear_b":
        return F.linear(x, w, b)[0]
    if op == "mm_t":
        return torch.mm(x, w.t())[0]
    if op == "linear1d":
        return F.linear(x[0], w)
    if op == "linear1d_b":
        return F.linear(x[0], w, b)
    if op == "linear3d_b":
        return F.linear(x[None], w, b)[0, 0]
    raise ValueError(op)


def live(args):
    gen = torch.Generator().manual_seed(args.seed)
    shapes = [(k, n) for k in args.k for n in args.n] + [tuple(s) for s in args.shape]
    for K, N in shapes:
        x = torch.randn(1, K, generator=gen).bfloat16()
        w = (torch.randn(N, K, generator=gen) / K ** 0.5).bfloat16()
        # +-2^12 at k = 3 and K-5 and +-2^9 at K/3 and 2K/3 + 1 cancel exactly: the small products that
        # share a chain or a tree node with them before they cancel are lost, so the result shows the order
        x[0, 3] = x[0, K - 5] = x[0, K // 3] = x[0, 2 * K // 3 + 1] = 1.0
        w[:, 3], w[:, K - 5] = 2.0 ** 12, -2.0 ** 12
        w[:, K // 3], w[:, 2 * K // 3 + 1] = 2.0 ** 9, -2.0 ** 9
        if K >= 64:  # and +-2^12 in lanes 0 and 1 (k = 0 and 32j + 2), which meet at the third tree level
            j = 32 * ((K - 1) // 64) + 2
            x[0, 0] = x[0, j] = 1.0
            w[:, 0], w[:, j] = 2.0 ** 12, -2.0 ** 12
        b = (0.1 * torch.randn(N, generator=gen)).bfloat16()
        X, W, B = x.float().numpy()[0], w.float().numpy(), b.float().numpy()
        sums = {c: CANDS[c](X, W) for c in args.cands}
        refs = {c: (bf16_bits(s), bf16_bits((s + B).astype(f32))) for c, s in sums.items()}
        for th in args.threads:
            torch.set_num_threads(th)
            for op in args.ops:
                y = torch_op(op, x, w, b).float().numpy().view(np.uint32)
                line = f"K {K:5d} N {N:5d} t{th} {op:10s}:"
                for c in args.cands:
                    ref = refs[c][1 if op.endswith("_b") else 0]
                    line += f"  {c} {np.mean(y == ref):.4f}"
                print(line, flush=True)


def probe(K=768):
    """Structural probes, x = 1: column m holds +1 at i, -1 at j and 2^-30 at m; the marker is lost (0)
    iff it meets the +1 or the -1 before they cancel. Prints the lost positions; then subnormal probes."""
    torch.set_num_threads(1)
    for i, j in [(0, 1), (0, 2), (0, 4), (0, 8), (0, 16), (0, 32), (0, 64), (0, K - 2)]:
        w = torch.zeros(K, K)
        w[torch.arange(K), torch.arange(K)] = 2.0 ** -30
        w[:, i], w[:, j] = 1.0, -1.0
        y = F.linear(torch.ones(1, K).bfloat16(), w.bfloat16()).float().numpy()[0]
        lost = [m for m in range(K) if m not in (i, j) and y[m] == 0]
        emu = gemv(np.ones(K, f32), w.bfloat16().float().numpy())
        same = np.mean(bf16_bits(emu) == y.view(np.uint32))
        lanes = sorted({(m // 2) % 16 for m in lost})
        print(f"+1 at {i}, -1 at {j}: {len(lost)} markers lost, lanes {lanes}; emulation agrees {same:.4f}")
    K, N = 256, 64  # N * K > 4096: oneDNN (smaller products take ATen, which neither reads nor flushes to 0)
    x, w, b = torch.ones(1, K), torch.zeros(N, K), torch.zeros(N)
    x[0, 200], w[0, 200] = 2.0 ** -130, 2.0 ** 100                                    # bf16 subnormal input
    w[1, 1], w[1, 0], w[1, 2] = 1.5 * 2 ** -126, -2.0 ** -126, 2.0 ** -120           # lane sum subnormal
    w[2, 0], w[2, 16], w[2, 8] = 1.5 * 2 ** -126, -2.0 ** -126, 2.0 ** -120          # tree sum subnormal
    x[0, 100], w[3, 100], w[3, 2] = 2.0 ** -70, 2.0 ** -60, 2.0 ** -124               # product subnormal
    w[4, 0], w[4, 33], w[4, 32] = 1.0, -1.0, 2.0 ** -30                               # odd element first
    w[5, 0], w[5, 16] = 1.5 * 2 ** -126, -2.0 ** -126                                  # result subnormal
    w[6, 0], b[6] = -1.5 * 2 ** -126, 2.0 ** -126                                      # + bias subnormal
    y = F.linear(x.bfloat16(), w.bfloat16(), b.bfloat16()).float().numpy()[0]
    emu = bf16_bits((gemv(x.bfloat16().float().numpy()[0], w.bfloat16().float().numpy())
                     + b.bfloat16().float().numpy()).astype(f32))
    names = ["subnormal x read as 0", "lane chain flushes", "tree keeps subnormal", "product flushed",
             "odd element first", "subnormal result -> 0", "bias result -> -0"]
    for c, nm in enumerate(names):
        print(f"{nm:22s}: torch {float(y[c]):>14.7g}  emulation {'agrees' if emu[c] == y.view(np.uint32)[c] else 'DIFFERS'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, nargs="+", default=[64, 96, 768, 800, 1000, 2304, 3072])
    ap.add_argument("--n", type=int, nargs="+", default=[64, 512, 2304])
    ap.add_argument("--shape", type=int, nargs=2, action="append", default=[[768, 50257], [64, 32], [48, 80]],
                    metavar=("K", "N"), help="extra K N pairs (default: the lm_head, two N*K <= 4096)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--ops", nargs="+", default=["linear", "linear_b", "mm_t", "linear1d", "linear1d_b",
                                                   "linear3d_b"])
    ap.add_argument("--cands", nargs="+", default=list(CANDS))
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--probe", action="store_true", help="only the structural and subnormal probes")
    args = ap.parse_args()
    if args.probe:
        probe()
        return 0
    live(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
