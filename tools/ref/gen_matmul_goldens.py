#!/usr/bin/env python3
"""f16 matmul goldens from PyTorch CPU (one thread) for tests/test_ops.c.

For each shape (M, K, N) the file holds random f16 operands and what torch returns for
  addmm(bias, A, B), matmul(A, B)                    B as stored [K, N]
  matmul(A, Bt.T), linear(A, Bt, bias),
  baddbmm(empty, A[None], Bt.T[None], beta=0, alpha) B transposed (Bt is [N, K])
so gm_matmul_f16_torch is checked bit for bit in both of its orders, with and without bias and
alpha, for K below, at and above the 64-element blocks of the transposed order.
Writes tests/golden/matmul/f16.safetensors; and tests/golden/matmul/bf16.safetensors with the same
products in bf16 (addmm and linear, K across oneDNN's K blocks: 512 and 1024 elements, the point
where its order departs from one chain of pairs); and tests/golden/matmul/f32.safetensors with f32
products (addmm, linear, matmul, bmm; addmm and baddbmm with alpha) for K across MKL's K blocks
(192; the halves below 384; odd K), M >= 4 and N >= 16, where torch 2.15 runs the order that
gm_matmul_f32_torch reproduces. Run from the repo root; --only f16|bf16|f32 writes one file.
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

OUT = os.path.join("tests", "golden", "matmul")
SHAPES = [(5, 8, 7), (9, 37, 20), (6, 64, 17), (7, 100, 33), (4, 768, 50), (3, 200, 3), (10, 130, 16)]
BF16_SHAPES = [(8, 64, 16), (8, 512, 16), (8, 768, 16), (8, 1000, 16), (8, 1025, 16), (8, 2048, 16), (4, 3072, 16),
               (4, 5000, 16)]
F32_SHAPES = [(4, 64, 16), (8, 191, 17), (8, 192, 16), (16, 201, 20), (5, 300, 16), (8, 384, 17), (6, 387, 16),
              (8, 768, 24), (8, 1001, 16), (4, 1600, 16), (33, 64, 70)]
ALPHA = 0.35355339059327373  # 1/sqrt(8), as transformers' scale_factor


def f32_goldens(gen):
    t = {}
    for i, (m, k, n) in enumerate(F32_SHAPES):
        a = torch.randn(m, k, generator=gen)
        b = torch.randn(k, n, generator=gen) / k ** 0.5
        bt = torch.randn(n, k, generator=gen) / k ** 0.5
        bias = 0.1 * torch.randn(n, generator=gen)
        p = f"s{i}."
        t[p + "A"], t[p + "B"], t[p + "Bt"], t[p + "bias"] = a, b, bt, bias
        t[p + "addmm"] = torch.addmm(bias, a, b)
        t[p + "addmm_alpha"] = torch.addmm(bias, a, b, alpha=ALPHA)
        t[p + "linear"] = torch.nn.functional.linear(a, bt, bias)
        t[p + "matmul"] = torch.matmul(a, b)
        t[p + "matmul_t"] = torch.matmul(a, bt.T)
        t[p + "bmm_t"] = torch.bmm(a[None], bt.T[None])[0]
        t[p + "baddbmm_t"] = torch.baddbmm(torch.empty(1, m, n), a[None], bt.T[None], beta=0, alpha=ALPHA)[0]
    save_file({k: v.contiguous() for k, v in t.items()}, os.path.join(OUT, "f32.safetensors"),
              metadata={"torch": torch.__version__, "shapes": json.dumps(F32_SHAPES), "alpha": repr(ALPHA)})
    print(f"gen_matmul_goldens: {len(F32_SHAPES)} shapes -> {OUT}/f32.safetensors")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=["f16", "bf16", "f32"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(11)
    os.makedirs(OUT, exist_ok=True)
    if args.only == "f32":
        f32_goldens(torch.Generator().manual_seed(13))
        return 0
    t = {}
    for i, (m, k, n) in enumerate(SHAPES):
        a = torch.randn(m, k, generator=gen).half()
        b = (torch.randn(k, n, generator=gen) / k ** 0.5).half()
        bt = (torch.randn(n, k, generator=gen) / k ** 0.5).half()
        bias = (0.1 * torch.randn(n, generator=gen)).half()
        p = f"s{i}."
        t[p + "A"], t[p + "B"], t[p + "Bt"], t[p + "bias"] = a, b, bt, bias
        t[p + "addmm"] = torch.addmm(bias, a, b)
        t[p + "matmul"] = torch.matmul(a, b)
        t[p + "matmul_t"] = torch.matmul(a, bt.T)
        t[p + "linear"] = torch.nn.functional.linear(a, bt, bias)
        t[p + "baddbmm_t"] = torch.baddbmm(torch.empty(1, m, n, dtype=torch.half), a[None], bt.T[None], beta=0,
                                           alpha=ALPHA)[0]
    if args.only in (None, "f16"):
        save_file({k: v.contiguous() for k, v in t.items()}, os.path.join(OUT, "f16.safetensors"),
                  metadata={"torch": torch.__version__, "shapes": json.dumps(SHAPES), "alpha": repr(ALPHA)})
        print(f"gen_matmul_goldens: {len(SHAPES)} shapes -> {OUT}/f16.safetensors")
    if args.only == "f16":
        return 0
    t = {}
    for i, (m, k, n) in enumerate(BF16_SHAPES):
        # +-2^12 at k = 3 and k = K-5 cancel exactly, so what survives of the small products (lost
        # to rounding where they share an accumulator with 2^12) shows the order in every output
        a = torch.randn(m, k, generator=gen)
        b = torch.randn(k, n, generator=gen) / k ** 0.5
        bt = torch.randn(n, k, generator=gen) / k ** 0.5
        a[:, 3] = a[:, k - 5] = 1.0
        b[3, :], b[k - 5, :], bt[:, 3], bt[:, k - 5] = 2.0 ** 12, -2.0 ** 12, 2.0 ** 12, -2.0 ** 12
        a, b, bt = a.bfloat16(), b.bfloat16(), bt.bfloat16()
        bias = (0.01 * torch.randn(n, generator=gen)).bfloat16()
        p = f"s{i}."
        t[p + "A"], t[p + "B"], t[p + "Bt"], t[p + "bias"] = a, b, bt, bias
        t[p + "addmm"] = torch.addmm(bias, a, b)
        t[p + "linear"] = torch.nn.functional.linear(a, bt, bias)
        t[p + "matmul"] = torch.matmul(a, b)
    save_file({k: v.contiguous() for k, v in t.items()}, os.path.join(OUT, "bf16.safetensors"),
              metadata={"torch": torch.__version__, "shapes": json.dumps(BF16_SHAPES)})
    print(f"gen_matmul_goldens: {len(BF16_SHAPES)} shapes -> {OUT}/bf16.safetensors")
    if args.only is None:
        f32_goldens(torch.Generator().manual_seed(13))
    return 0


if __name__ == "__main__":
    sys.exit(main())
