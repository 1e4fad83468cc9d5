#!/usr/bin/env python3
"""Which summation order reproduces torch's bf16 matmul goldens of a target (numpy f32 emulation).

Reads tests/golden/targets/<target>/matmul/bf16.safetensors (tools/ref/gen_matmul_goldens.py's
inputs and torch's outputs on that target) and, for each candidate order, prints the share of
outputs whose bf16 bits match torch's, per shape and op. Candidates:
  amx      one TDPBF16PS per 32-element K tile (as measured on the hardware with _tile_dpbf16ps,
           tools/ref/amx_tdpbf16ps_probe.c): within a tile the even-index products and the odd-index
           products run in two f32 chains E, O (k = 0, 1, ...); the accumulator C += (E + O);
           C runs on over the tiles of a K block; blocks summed as the argument says.
  vdp      the zen4 order (VDPBF16PS lane chains in K blocks of 512/1024; gptmeg's gm_matmul_bf16).
  seq      one f32 chain over k in order (widened bf16, products exact).
Usage: python3 tools/ref/probe_bf16_amx_order.py --target intel-amx [--kblock 0|N]
"""
import argparse
import os

import numpy as np
from safetensors.torch import load_file


def bf16_bits_of(x):
    """f32 -> nearest bf16 (RNE), returned as f32."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32)


def amx(A, B, kblock=0, tile=32):
    """A [M, K], B [K, N] f32 holding bf16 values. kblock: elements per K block (0: one block)."""
    M, K = A.shape
    N = B.shape[1]
    total = np.zeros((M, N), np.float32)
    blocks = [(0, K)] if not kblock else [(s, min(K, s + kblock)) for s in range(0, K, kblock)]
    for bi, (s0, s1) in enumerate(blocks):
        C = np.zeros((M, N), np.float32)
        for t0 in range(s0, s1, tile):
            E = np.zeros((M, N), np.float32)
            O = np.zeros((M, N), np.float32)
            for k in range(t0, min(s1, t0 + tile)):
                p = (A[:, k:k + 1] * B[k:k + 1, :]).astype(np.float32)
                if (k - t0) % 2 == 0:
                    E = (E + p).astype(np.float32)
                else:
                    O = (O + p).astype(np.float32)
            C = (C + (E + O).astype(np.float32)).astype(np.float32)
        total = C if bi == 0 else (total + C).astype(np.float32)
    return total


def seq(A, B):
    C = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for k in range(A.shape[1]):
        C = (C + (A[:, k:k + 1] * B[k:k + 1, :])).astype(np.float32)
    return C


def vdp(A, B):
    M, K = A.shape
    P = (K + 1) // 2
    Pb = 256 if P <= 512 else 512
    sumv = np.zeros((M, B.shape[1]), np.float32)
    acc = np.zeros_like(sumv)
    for p in range(P):
        for k in (2 * p + 1, 2 * p):
            if k < K:
                acc = (acc + A[:, k:k + 1] * B[k:k + 1, :]).astype(np.float32)
        if (p + 1) % Pb == 0 or p + 1 == P:
            sumv = acc if p < Pb else (sumv + acc).astype(np.float32)
            acc = np.zeros_like(acc)
    return sumv


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="intel-amx")
    ap.add_argument("--kblock", type=int, default=0)
    ap.add_argument("--cands", nargs="+", default=["amx", "vdp", "seq"])
    args = ap.parse_args()
    g = load_file(os.path.join("tests", "golden", "targets", args.target, "matmul", "bf16.safetensors"))
    g = {k: v.float().numpy() for k, v in g.items()}
    s = 0
    while f"s{s}.A" in g:
        A, B, Bt, bias = g[f"s{s}.A"], g[f"s{s}.B"], g[f"s{s}.Bt"], g[f"s{s}.bias"]
        line = f"M {A.shape[0]:2d} K {A.shape[1]:5d}:"
        for c in args.cands:
            fn = {"amx": lambda a, b: amx(a, b, args.kblock), "vdp": vdp, "seq": seq}[c]
            shares = []
            for op, b, with_bias in (("addmm", B, True), ("linear", Bt.T, True), ("matmul", B, False)):
                acc = fn(A, np.ascontiguousarray(b))
                out = bf16_bits_of(bias[None, :] + acc if with_bias else acc)
                shares.append(np.mean(out.view(np.uint32) == g[f"s{s}.{op}"].view(np.uint32)))
            line += f"  {c} " + "/".join(f"{x:.2f}" for x in shares)
        print(line, flush=True)
        s += 1


if __name__ == "__main__":
    raise SystemExit(main())
