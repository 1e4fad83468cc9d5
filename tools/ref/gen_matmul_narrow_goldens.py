#!/usr/bin/env python3
"""f32 goldens of the last 1 or 2 columns of B^T that MKL's Intel AVX-512 sgemm leaves to a narrow
kernel on 3 to 24 threads (issue 23), for tests/test_matmul_f32_narrow.c.

F.linear(A [M, K], W [N, K], bias) of few rows on t threads shares the columns out in chunks of
ceil(N / nt) rounded up to 16; a last chunk of 1 or 2 columns runs another kernel: 16 lanes, two
sets over steps of 32 for even rows, one for odd rows, halved (gptmeg/kernels.h,
gm_f32_torch_narrow_dot; found with +-2^40 pairs against ones, FPRev-style). Where that holds
(gm_f32_torch_narrow): the dot kernel's shapes that run the unpacked order (nt = t), and the
row-grouped K cut (nt = t / kg; its rows' parity by group from 17 rows; a group of 16 rows keeps the
cut's own order). The products: a 384-wide GPT-2's lm_head against 65 characters (nanoGPT's
Shakespeare) at 8 to 31 tokens on 3 to 24 threads, 2 leftover columns (34), K below 384 (302) and
K 495 and 604, the row-grouped cut's work edge where t / kg is odd (320320 keeps the 1-thread
order, 320400 cuts), and shapes beside those where MKL runs no narrow chunk. The operands are formulas the test rebuilds (gm_inputs.formula_a and
formula_b, W = B[:K, :N]^T made contiguous; the bias random and stored); whole outputs are stored.
Runs where torch's f32 sgemm is MKL's Intel AVX-512 kernel, natively (an Intel CPU with AVX-512, no
dispatch caps), and writes tests/golden/targets/<target>/matmul_mt/f32_narrow.safetensors for the
host's target (--target, one of the four that run that kernel); the machine is in the metadata.
  /work/venv/bin/python tools/ref/gen_matmul_narrow_goldens.py --target intel-avx512-fp16
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_matmul_kparts_goldens import MKL_INTEL_AVX512, native_mkl_intel  # noqa: E402
from gm_inputs import cpu_model, formula_a, formula_b  # noqa: E402

NB = 220  # the bias: as long as the widest product
# (M, K, N, thread counts): F.linear(A, W, bias), W [N, K]
PRODUCTS = [
    # the dot kernel's shapes in the unpacked order: a 1-column last chunk on 3 and 4 threads, none on 2
    (8, 384, 65, [1, 2, 3, 4]),
    (11, 604, 34, [1, 3]),
    (10, 302, 193, [1, 8]),
    # the row-grouped cut (8, 12, 16 threads), and on 10 and 14 below its work edge (the unpacked order)
    (12, 384, 65, [1, 8, 10, 12, 14, 16]),
    (13, 384, 65, [1, 16]),
    # 17..31 rows: each row's parity in its group; a group of 16 rows keeps the cut's order
    (17, 384, 65, [1, 16, 24]),
    (31, 384, 65, [1, 16]),
    (20, 495, 50, [1, 16]),
    # the row-grouped cut's work edge where t / kg is odd
    (11, 364, 80, [1, 10]),
    (8, 445, 90, [1, 10]),
    # where MKL runs none: a last chunk of 3 columns at 12 rows, K above 1024 (unpacked) or 800 (row
    # groups), more than 98 columns on more than 10 threads
    (12, 355, 35, [1, 4]),
    (12, 2227, 50, [1, 9]),
    (14, 2107, 17, [1, 10]),
    (10, 302, 209, [1, 20]),
    # the row-grouped cut in 4 parts (K 1600 on 16 threads) and 2 (K 2047 on 14): narrow; 16 + 2 columns
    # on 10 threads and 20 rows at K 1600 keep the cut's order
    (4, 1600, 145, [1, 16]),
    (4, 1600, 146, [1, 16]),
    (9, 2047, 34, [1, 14]),
    (7, 2680, 18, [1, 10]),
    (20, 1600, 97, [1, 64]),
    # K below 384 (a 256-wide GPT-2's lm_head against 65 characters): 2..15 rows outside the dot kernel
    # on 3 and 4 threads, 17..31 rows in two groups without a K cut from the cut's work edges (17 rows
    # on 8 threads and 19 on 10 below them), none against 97 columns
    (12, 256, 65, [1, 3, 4]),
    (20, 256, 65, [1, 8, 10, 12, 16]),
    (17, 256, 65, [1, 8]),
    (19, 256, 65, [1, 10]),
    (31, 256, 65, [1, 16]),
    (27, 340, 97, [1, 8]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="zen4", help="the host's target (make_goldens.py passes each one it makes)")
    args = ap.parse_args()
    if args.target not in MKL_INTEL_AVX512 or not native_mkl_intel():
        print(f"gen_matmul_narrow_goldens: skipped for {args.target} (needs that target's CPU natively: an Intel "
              "CPU with AVX-512, no dispatch caps; targets " + ", ".join(MKL_INTEL_AVX512) + ")")
        return
    bias_all = 0.1 * torch.randn(NB, generator=torch.Generator().manual_seed(31))
    t = {"bias": bias_all}
    for pi, (m, k, n, threads) in enumerate(PRODUCTS):
        a = torch.from_numpy(formula_a(m, k))
        w = torch.from_numpy(formula_b(k, n)).T.contiguous()
        outs = {}
        for th in threads:
            torch.set_num_threads(th)
            outs[th] = torch.nn.functional.linear(a, w, bias_all[:n]).contiguous()
            t[f"p{pi}.t{th}"] = outs[th]
        same = [th for th in threads if torch.equal(outs[th], outs[1])]
        print(f"  p{pi} linear {m}x{k}x{n}: threads {threads}, the 1-thread bits on {same}")
    out = os.path.join("tests", "golden", "targets", args.target, "matmul_mt")
    os.makedirs(out, exist_ok=True)
    meta = {"torch": torch.__version__, "products": json.dumps(PRODUCTS), "cpu": cpu_model(), "target": args.target,
            "settings": "native (no dispatch caps); torch.set_num_threads(t) for p<i>.t<t>; bias seed 31; "
                        "A and B by formula (see the generator); W = B^T contiguous; whole outputs"}
    path = os.path.join(out, "f32_narrow.safetensors")
    save_file(t, path, metadata=meta)
    print(f"gen_matmul_narrow_goldens: {len(PRODUCTS)} products -> {path} ({meta['cpu']})")


if __name__ == "__main__":
    main()
