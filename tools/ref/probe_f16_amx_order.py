#!/usr/bin/env python3
"""torch's f16 matmul with B transposed on a target's goldens against one f32 chain over k.

Reads tests/golden/targets/<target>/matmul/f16.safetensors (tools/ref/gen_matmul_goldens.py) and
prints, per shape, the share of f16 outputs of matmul_t, linear and baddbmm_t (alpha) whose bits
equal acc = acc + a[k] * b[k] for k = 0, 1, ... in f32 (products of f16 values exact), then
alpha * acc (+ bias). On intel-amx (oneDNN on AVX512-FP16): every output of every shape.
  python3 tools/ref/probe_f16_amx_order.py --target intel-amx
"""
import argparse
import os

import numpy as np
import torch
from safetensors.torch import load_file

ALPHA = np.float32(0.35355339059327373)


def chain(A, B):
    C = np.zeros((A.shape[0], B.shape[1]), np.float32)
    for k in range(A.shape[1]):
        C = (C + A[:, k:k + 1] * B[k:k + 1, :]).astype(np.float32)
    return C


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="intel-amx")
    args = ap.parse_args()
    g = load_file(os.path.join("tests", "golden", "targets", args.target, "matmul", "f16.safetensors"))
    s = 0
    while f"s{s}.A" in g:
        A, Bt, bias = (g[f"s{s}.{n}"].float().numpy() for n in ("A", "Bt", "bias"))
        acc = chain(A, np.ascontiguousarray(Bt.T))
        shares = []
        for op, v in (("matmul_t", acc), ("linear", bias[None, :] + acc), ("baddbmm_t", ALPHA * acc)):
            out = torch.from_numpy(v.astype(np.float32)).half()
            shares.append((out.view(torch.int16) == g[f"s{s}.{op}"].view(torch.int16)).float().mean().item())
        print(f"M {A.shape[0]:2d} K {A.shape[1]:4d}: matmul_t/linear/baddbmm_t " + "/".join(f"{x:.3f}" for x in shares))
        s += 1


if __name__ == "__main__":
    raise SystemExit(main())
