#!/usr/bin/env python3
"""Which K blocking of a pair-chain order reproduces a target's bf16 matmul goldens (numpy f32).

The order probed: K cut into blocks of kb elements; within a block one f32 chain from zero over
pairs counted from the block's start, the odd element of each pair first (--even-first: the even
one); the blocks' sums added in order; then + bias. For intel-avx512 (oneDNN's AVX512_CORE gemm)
the driver's k_padd gives kb: K <= 384 one block, K < 1536 (K + 1) // 2, else 768 ("rule").
Prints per golden shape the share of identical bf16 outputs for addmm / matmul / linear.
  python3 tools/ref/probe_bf16_gemm_order.py --target intel-avx512 --kb rule 256 384 768
"""
import argparse
import os
import sys

import numpy as np
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_bf16_amx_order as P  # noqa: E402


def rule_kb(K):
    return K if K <= 384 else (K + 1) // 2 if K < 1536 else 768


def chain_blocks(A, B, kb, even_first=False):
    M, K = A.shape
    total = None
    for s0 in range(0, K, kb):
        s1 = min(K, s0 + kb)
        C = np.zeros((M, B.shape[1]), np.float32)
        for k in range(s0, s1, 2):
            for kk in ((k, k + 1) if even_first else (k + 1, k)):
                if kk < s1:
                    C = (C + A[:, kk:kk + 1] * B[kk:kk + 1, :]).astype(np.float32)
        total = C if total is None else (total + C).astype(np.float32)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="intel-avx512")
    ap.add_argument("--kb", nargs="+", default=["rule"])
    ap.add_argument("--even-first", action="store_true")
    args = ap.parse_args()
    g = load_file(os.path.join("tests", "golden", "targets", args.target, "matmul", "bf16.safetensors"))
    g = {k: v.float().numpy() for k, v in g.items()}
    s = 0
    while f"s{s}.A" in g:
        A, B, Bt, bias = g[f"s{s}.A"], g[f"s{s}.B"], g[f"s{s}.Bt"], g[f"s{s}.bias"]
        K = A.shape[1]
        line = f"M {A.shape[0]:2d} K {K:5d}:"
        for kbs in args.kb:
            kb = rule_kb(K) if kbs == "rule" else int(kbs) or K
            acc = chain_blocks(A, B, kb, args.even_first)
            accl = chain_blocks(A, np.ascontiguousarray(Bt.T), kb, args.even_first)
            sh = []
            for op, y in (("addmm", bias[None, :] + acc), ("matmul", acc), ("linear", bias[None, :] + accl)):
                sh.append(np.mean(P.bf16_bits_of(y).view(np.uint32) == g[f"s{s}.{op}"].view(np.uint32)))
            line += f"  kb {kbs}: " + "/".join(f"{x:.2f}" for x in sh)
        print(line, flush=True)
        s += 1


if __name__ == "__main__":
    raise SystemExit(main())
