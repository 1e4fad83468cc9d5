#!/usr/bin/env python3
"""f32 goldens of torch's one-row products under MKL's Intel AVX-512 sgemm, on 1 to 16 threads
(issue 23), for tests/test_matmul_f32_onerow.c: its one-row kernel with B as stored, and its one-row
kernel against B^T with alpha (a decode step's baddbmm scores).

torch.addmm(bias, x[1, K], W[K, N]) (transformers' Conv1D in a decode step) and mm of one row run
MKL's one-row kernel: the columns in whole groups of 16 take K in steps of 8 in a fixed pattern,
the N % 16 leftover columns one FMA chain; on t threads, where K >= 128 t and N < 501 t (41 <= N
<= 69: K >= 1000), K is cut into t parts summed alone and added in order, then onto the bias
(tools/ref/probe_f32_row8.py; gptmeg/kernels.h, gm_f32_torch_row8). Each product here is run by
torch.set_num_threads(t) for several t: GPT-2 124M's decode shapes (768 -> 768, 2304, 3072; 3072
-> 768), both sides of every threshold (K 255/256 on 2 threads, 383/384 on 3, N 1001/1002 on 2,
2003/2004 on 4, N 40/41 and 69/70 at K 999/1000), leftover columns and K % 8 tails, mm without
bias and addmm with alpha 0.3. Against B^T (addmm_t: torch.addmm(bias, a, W.t(), alpha), W [N, K]
contiguous; beta 0 without bias: baddbmm's scores of one query row): C = fma(alpha, r, bias) with r
the alpha = 1 kernel's sum, on 1 and 2 threads (the column split of 2 threads alike). bf16 one-row
products against B^T as a decode step's attention runs them (probe_bf16: torch.matmul(q [2, 1, 64],
k [2, N, 64]^T), a batch whose M N K passes torch's 16^3 rule though one slice may not, and the
plain F.linear(a [1, 64], W [N, 64]) of the same shape): a = ones and column n of k ones but
+2^40 at i_n = 7 n % 64 and -2^40 at j_n = (13 n + 5) % 64 (+1 if equal), so each output counts
the ones outside the subtree where i_n and j_n meet: the order itself, not a rounding of it. The operands are formulas the test rebuilds (gm_inputs.formula_a's
row 0 and formula_b, both correctly rounded float32; the bias random and stored); whole rows are
stored (W = B[:K, :N]^T made contiguous). Runs where torch's f32 sgemm is MKL's Intel AVX-512 kernel, natively (an Intel CPU with
AVX-512, no dispatch caps), and writes tests/golden/targets/<target>/matmul_onerow/f32_onerow.safetensors
for the host's target (--target, one of the four that run that kernel); the machine is recorded in
the metadata.
  /work/venv/bin/python tools/ref/gen_matmul_onerow_goldens.py --target intel-avx512-fp16
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

KA, NB = 3072, 3072  # the largest K and N; products read a[:K] and B[:K, :N]
# (op, K, N, alpha, thread counts): addmm(bias, a, B, alpha=alpha), mm(a, B), addmm_t(bias, a, W.t(), alpha)
# or mm_t (beta 0, no bias)
PRODUCTS = [
    ("addmm", 768, 768, 1.0, [1, 2, 3, 4, 8]),
    ("addmm", 768, 2304, 1.0, [1, 2, 4, 5]),
    ("addmm", 768, 3072, 1.0, [1, 2, 8]),
    ("addmm", 3072, 768, 1.0, [1, 2, 3, 4, 5, 6, 7, 8, 12, 16]),
    ("addmm", 255, 100, 1.0, [1, 2]),
    ("addmm", 256, 100, 1.0, [1, 2]),
    ("addmm", 383, 100, 1.0, [1, 3]),
    ("addmm", 384, 100, 1.0, [1, 3]),
    ("addmm", 768, 1001, 1.0, [1, 2]),
    ("addmm", 768, 1002, 1.0, [1, 2]),
    ("addmm", 1000, 2003, 1.0, [1, 4]),
    ("addmm", 1000, 2004, 1.0, [1, 4]),
    ("addmm", 999, 40, 1.0, [1, 2]),
    ("addmm", 999, 41, 1.0, [1, 2]),
    ("addmm", 1000, 41, 1.0, [1, 2]),
    ("addmm", 999, 69, 1.0, [1, 2]),
    ("addmm", 999, 70, 1.0, [1, 2]),
    ("addmm", 100, 50, 1.0, [1]),
    ("addmm", 13, 40, 1.0, [1]),
    ("addmm", 5, 3, 1.0, [1]),
    ("mm", 1000, 1009, 1.0, [1, 2]),
    ("addmm", 768, 768, 0.3, [1]),
    ("addmm_t", 768, 768, 0.3, [1, 2]),
    ("addmm_t", 768, 2053, 0.3, [1, 2]),
    ("addmm_t", 64, 17, 0.3, [1]),
    ("mm_t", 64, 300, 0.125 / 3, [1, 2]),
    ("bmm_bf16_t", 64, 40, 1.0, [1]),
    ("bmm_bf16_t", 64, 70, 1.0, [1]),
    ("linear_bf16_t", 64, 40, 1.0, [1]),
    ("mm_t", 1024, 8193, 1.0, [1, 3, 4, 8]),
    ("mm_t", 768, 8193, 1.0, [1, 6]),
    # below 8192 columns on 3..8 threads: t chunks from the 2-thread split's smallest N (a 65-character
    # lm_head; 57 columns at K 384 stay whole)
    ("mm_t", 384, 65, 1.0, [1, 3, 8]),
    ("mm_t", 384, 57, 1.0, [1, 3]),
    ("mm_t", 1600, 33, 1.0, [1, 5, 7]),
    # below 8192 columns on 9 to 32 threads: t chunks from 2280 multiply-adds a thread (9..12) or 4700
    # and 3 columns (13..32), else one (a 65-character lm_head in a decode step)
    ("mm_t", 768, 65, 1.0, [1, 9, 12, 14, 16]),
    ("mm_t", 1024, 100, 1.0, [1, 10, 16, 20, 32]),
    ("mm_t", 384, 65, 1.0, [1, 10, 11, 16]),
    ("mm_t", 1790, 57, 1.0, [1, 20]),
]


def probe_bf16(n, k):
    """k [n, 64]: ones, +2^40 at i_n, -2^40 at j_n (bf16 values)."""
    w = torch.ones(n, k)
    for c in range(n):
        i, j = 7 * c % k, (13 * c + 5) % k
        if j == i:
            j = (j + 1) % k
        w[c, i], w[c, j] = 2.0 ** 40, -(2.0 ** 40)
    return w.bfloat16()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="zen4", help="the host's target (make_goldens.py passes each one it makes)")
    args = ap.parse_args()
    if args.target not in MKL_INTEL_AVX512 or not native_mkl_intel():
        print(f"gen_matmul_onerow_goldens: skipped for {args.target} (needs that target's CPU natively: an Intel "
              "CPU with AVX-512, no dispatch caps; targets " + ", ".join(MKL_INTEL_AVX512) + ")")
        return
    a_all, b_all = torch.from_numpy(formula_a(1, KA)), torch.from_numpy(formula_b(KA, NB))
    bias_all = 0.1 * torch.randn(NB, generator=torch.Generator().manual_seed(29))
    t = {"bias": bias_all}
    for pi, (op, k, n, alpha, threads) in enumerate(PRODUCTS):
        # wider than the shared B (the t-chunk column split, mm_t, no bias): B by the same formula
        b = b_all[:k, :n].contiguous() if n <= NB else torch.from_numpy(formula_b(k, n))
        a, bias = a_all[:, :k].contiguous(), bias_all[:n] if n <= NB else None
        outs = {}
        for th in threads:
            torch.set_num_threads(th)
            if op == "addmm": outs[th] = torch.addmm(bias, a, b, alpha=alpha)
            elif op == "mm": outs[th] = torch.mm(a, b)
            elif op == "addmm_t": outs[th] = torch.addmm(bias, a, b.T.contiguous().t(), alpha=alpha)
            elif op == "mm_t": outs[th] = torch.addmm(torch.zeros(n), a, b.T.contiguous().t(), beta=0, alpha=alpha)
            elif op == "bmm_bf16_t":
                w = probe_bf16(n, k)
                outs[th] = torch.matmul(torch.ones(2, 1, k).bfloat16(), torch.stack([w, w]).transpose(-1, -2))[0].float()
            else: outs[th] = torch.nn.functional.linear(torch.ones(1, k).bfloat16(), probe_bf16(n, k)).float()
            t[f"p{pi}.t{th}"] = outs[th].contiguous()
        same = [th for th in threads if torch.equal(outs[th], outs[1])]
        print(f"  p{pi} {op} 1x{k}x{n} alpha {alpha}: threads {threads}, the 1-thread bits on {same}")
    out = os.path.join("tests", "golden", "targets", args.target, "matmul_onerow")
    os.makedirs(out, exist_ok=True)
    meta = {"torch": torch.__version__, "products": json.dumps(PRODUCTS), "cpu": cpu_model(), "target": args.target,
            "settings": "native (no dispatch caps); torch.set_num_threads(t) for p<i>.t<t>; bias seed 29; "
                        "a and B by formula (see the generator); whole rows"}
    path = os.path.join(out, "f32_onerow.safetensors")
    save_file(t, path, metadata=meta)
    print(f"gen_matmul_onerow_goldens: {len(PRODUCTS)} products -> {path} ({meta['cpu']})")


if __name__ == "__main__":
    main()
