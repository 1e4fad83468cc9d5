#!/usr/bin/env python3
"""f32 matmul goldens of MKL's Intel AVX2 sgemm's packed path (the avx2 target; issue 23), for
tests/test_matmul_avx2_packed.c.

Under MKL_ENABLE_INSTRUCTIONS=AVX2 torch's f32 products with at least 72 rows and 72 columns (B as
stored) or 56 and 56 (B^T) run MKL's kernels for big products: every row alike, the columns in
panels of 24 (the leftover as a panel of 16, then 8, 4, 2, 1: the panels of 8, 4 and 2 in even/odd
pairs, the others one FMA chain per block), K >= 384 in blocks of 192 (the rest one block), the
blocks added in order onto the bias (gptmeg: GM_F32_BLOCKS_AVX2_BIG; docs/numerics.md, "f32 matmul
under avx2"). Smaller products run the 4..6-row kernels (rows in groups of six, but every row alike
for B as stored when M is a multiple of 16 from 80). The products sit on both sides of each
threshold (rows, columns, K, the row multiple) and hold every kind of leftover panel.
The operands are formulas the test rebuilds (A[i, k] =
((37 i + 71 k) % 1009 - 504) / 503, B[k, n] = ((31 k + 17 n) % 97 - 48) / 64, float32, correctly
rounded; B^T is B's transpose made contiguous; the bias random and stored); each output's first 16
and last 8 columns are stored. Runs under the avx2 target's caps (ONEDNN_MAX_CPU_ISA=AVX2
ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2, which make_goldens.py sets for it) on an
Intel CPU; writes tests/golden/targets/avx2/matmul_avx2/packed.safetensors.
  MKL_ENABLE_INSTRUCTIONS=AVX2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 \\
      /work/venv/bin/python tools/ref/gen_matmul_avx2_goldens.py --target avx2
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gm_inputs import cpu_model, formula_a, formula_b  # noqa: E402

MA, KA, NB = 384, 3072, 3080
# (op, M, K, N[, torch threads]): addmm(bias, A, B) with B as stored, linear = F.linear(A, B^T
# contiguous, bias), mm_ta below; one thread unless given
PRODUCTS = [
    ("addmm", 72, 768, 72),    # the big products' corner (B as stored)
    ("addmm", 71, 768, 72),    # one row fewer: the 4..6-row kernels
    ("addmm", 72, 768, 71),    # one column fewer: likewise
    ("addmm", 128, 768, 766),  # N % 24 = 22: a panel of 16, six pair columns
    ("addmm", 128, 1000, 765),  # K 960 + 40; N % 24 = 21: 16, four pair columns, a chain
    ("addmm", 96, 3072, 768),  # GPT-2's MLP c_proj
    ("addmm", 128, 385, 128),  # K 192 + 193; N % 24 = 8: eight pair columns
    ("addmm", 128, 300, 120),  # K below 384: the 4..6-row kernels' blocks (two halves), panels of 24
    ("linear", 56, 768, 767),  # B^T corner; N % 24 = 23: 16, six pair columns, a chain
    ("linear", 54, 768, 64),   # two rows fewer: the 4..6-row kernels
    ("linear", 64, 768, 56),   # B^T, N 56: eight pair columns
    ("linear", 64, 768, 55),   # N 55: the 4..6-row kernels
    ("addmm", 128, 128, 64),   # B as stored, 64 columns, 128 rows (a multiple of 16): no 2-row group
    ("addmm", 80, 128, 64),    # 80 rows: the fewest measured to be taken whole
    # op(A) = A^T (mm_ta = torch.mm(At.t(), B), At [K, M] = formula_a(K, M)): the 4..6-row kernels
    # with K blocks of 96 (a rest of at most 96 one block, below 192 two halves)
    ("mm_ta", 64, 65, 64),     # one block
    ("mm_ta", 64, 100, 64),    # two halves
    ("mm_ta", 64, 200, 64),    # 96, then 52 + 52
    ("mm_ta", 30, 777, 16),    # eight blocks of 96, then 53 + 52 (ceil first)
    ("mm_ta", 120, 128, 71),   # 7 pair columns
    # torch.set_num_threads(2), where measured (K >= 767 and N >= 766, or N >= 384 with M >= 64):
    # the big-product kernels on each half of the columns, [0, floor(N / 2)) and the rest
    ("addmm", 64, 3072, 768, 2),  # GPT-2's c_proj at T 64 (1 thread: the 4..6-row kernels)
    ("linear", 32, 768, 766, 2),  # B^T; halves of 383: pair columns in each
    ("addmm", 64, 768, 767, 2),   # odd N: 383 + 384
    ("addmm", 100, 1000, 401, 2),  # 200 + 201
    ("addmm", 2, 767, 768, 2),    # two rows
    # one row (a decode step): B as stored one FMA chain over K from the bias; B^T eight lane chains
    # (gm_f32_torch_gemv8); on t threads B as stored cuts K into t parts where K >= 128 t, N < 501 t
    ("addmm", 1, 768, 768), ("addmm", 1, 3072, 768), ("linear", 1, 768, 767), ("addmm", 1, 13, 20),
    ("linear", 1, 13, 20), ("addmm", 1, 768, 768, 2), ("addmm", 1, 3072, 768, 2), ("linear", 1, 768, 766, 2),
    ("addmm", 1, 255, 100, 2), ("addmm", 1, 256, 100, 2),
    # a last row alone: the 4..6-row kernels run it as a group of two (even/odd pairs, R(a*b) added)
    ("addmm", 7, 768, 768), ("linear", 13, 300, 120), ("addmm", 19, 100, 37),
    # the big-product kernels' rows in groups of four: M % 4 = 2 and 3 leave a group of two (every
    # column one FMA chain), M % 4 = 1 and 3 a last row alone (the columns after the panels of 24
    # and 16 in even/odd pairs, an odd N's last one included)
    ("addmm", 73, 768, 77), ("addmm", 74, 768, 77), ("addmm", 75, 768, 77), ("linear", 57, 768, 761),
    ("linear", 59, 500, 745), ("linear", 58, 768, 766),
    # on 2 threads, each half of the columns (383 + 383) with a last row alone
    ("addmm", 41, 768, 766, 2),
    # the 4..6-row kernels' leftover columns N % 16 of 9 to 15: one FMA chain (a part-filled panel
    # of 16), as the whole panels (1 to 8 leftover columns: the pairs)
    ("linear", 13, 64, 29), ("linear", 12, 200, 41), ("addmm", 30, 100, 25), ("addmm", 24, 64, 40),
    # B as stored: the 4..6-row kernels' row blocks (48 while more than 96 rows remain, then the
    # rest, halved where more than 72): 77 is 39 + 38, 122 is 48 + 37 + 37, 100 is 48 + 52; B^T one block
    ("addmm", 77, 77, 64), ("addmm", 122, 300, 50), ("addmm", 100, 64, 40), ("linear", 122, 64, 40),
    # 2 threads, B as stored, K and N multiples of 64 (avx2_two_threads): K in halves (8..64 rows from
    # K 768 with N <= 352; 65..128 from K 1024), the column halves on the big-product kernels (2..7
    # rows there; from 33 rows for N 192..1280, N <= 256 up to 128 rows), the 1-thread order at N 128
    ("addmm", 40, 768, 256, 2), ("addmm", 100, 1024, 256, 2), ("addmm", 5, 1024, 256, 2), ("addmm", 100, 768, 320, 2),
    ("addmm", 48, 256, 768, 2), ("addmm", 128, 256, 256, 2), ("addmm", 64, 512, 128, 2),
    # 2 threads, B^T with 56..128 rows, 65..128 columns, K <= 512: the 4..6-row kernels (a
    # 65-character lm_head), where one thread runs the big-product kernels
    ("linear", 100, 384, 65, 2), ("linear", 128, 256, 100, 2),
    # 2 threads, B^T: the K halves on the same edges as B as stored
    ("linear", 40, 768, 256, 2), ("linear", 100, 1024, 192, 2),
    # t >= 3 threads, K and N >= 256 (avx2_many_threads): 49..16 t rows in p parts of ceil(M / p),
    # each in its own 1-thread order, p the smallest divisor of t >= 2 (to 96 rows) or >= 3 (above);
    # above 16 t rows the big-product kernels, also for 49..71 rows (which one thread runs on the
    # 4..6-row kernels)
    ("addmm", 50, 768, 768, 4), ("linear", 61, 768, 768, 6), ("addmm", 101, 768, 768, 8), ("addmm", 97, 300, 300, 12),
    ("addmm", 61, 3072, 768, 3), ("linear", 68, 768, 512, 4),
    # above 16 t rows from N 3072 (avx2_column_parts): the columns in t parts of ceil((N - 1) / t),
    # the last the rest, each with its own leftover panels (770 = 32 x 24 + 2)
    ("linear", 100, 768, 3080, 4),
    # ... on 3, 5 and 6 threads, B as stored too
    ("addmm", 100, 768, 3080, 6), ("linear", 100, 768, 3080, 5), ("addmm", 72, 768, 3080, 3),
    # N not a multiple of t: parts of ceil((N - 1) / t), i.e. ceil(N / t) but where N % t is 1
    ("linear", 100, 768, 3078, 4), ("linear", 100, 768, 3079, 5), ("linear", 100, 768, 3077, 4),
    ("linear", 60, 768, 3077, 3),  # B^T from 56 rows (the big-product kernels on one thread)
    # grids of tm x tn blocks above 16 t rows (avx2_big_grid): 2 x 2 on 4 threads (N 770..1537),
    # 3 x 2 on 6 (rows 33 + 33 + 34: M % 3 = 1 lengthens the last), 3 x 1 on 3 (N 900: thirds of
    # 300 columns are not above 384)
    ("addmm", 100, 256, 1001, 4), ("addmm", 100, 256, 1001, 6), ("linear", 100, 256, 900, 3),
    # 6 threads, N 2001: 3 x 2 (tn among t and the powers of two; thirds would be 2 x 3); N 768 on 6
    # threads: torch's 1-thread bits (1 x 6 would put pair columns at each block's end)
    ("addmm", 100, 256, 2001, 6), ("addmm", 100, 256, 768, 6),
    # B as stored, K >= 1536 against N up to 368 (avx2_kcut): K in t balanced parts (on 4 threads
    # 501 + 500 + 500 + 500), C = (bias + part 0) + ((part 1 + part 2) + part 3); on 6 and 8 threads
    # from K 3072 also where fewer rows would run the row parts
    ("addmm", 100, 2001, 97, 4), ("addmm", 100, 1537, 336, 3), ("addmm", 72, 3072, 336, 6), ("addmm", 100, 3072, 144, 8),
    # ... wherever K >= 3 M + N + 242 (M and N 72..378), with every part at least 378 deep (K >= 378 t)
    # or more rows than the row parts take (M > 16 t; with N <= 128, M > 128): on 6 threads at 150
    # rows, K 1024; the edge on 4 threads (K - 3 M - N = 242 cut, 241 not); 1140 >= 378 x 3 at 100 rows
    # and 128 columns; 132 rows and 128 columns on 8; 12 threads; 378 rows cut, 379 not; N 378 on 5
    ("addmm", 150, 1024, 256, 6), ("addmm", 175, 1024, 257, 4), ("addmm", 175, 1024, 258, 4), ("addmm", 100, 1140, 128, 3),
    ("addmm", 132, 2048, 128, 8), ("addmm", 300, 2048, 256, 12), ("addmm", 378, 1520, 72, 4), ("addmm", 379, 1520, 72, 4),
    ("addmm", 90, 2000, 378, 5),
    # up to N 767 the columns split only where M < N, in blocks of any width (1 x 6 in blocks of 34,
    # 1 x 8 of 38 against B^T); from M = N the rows (235 x 223 on 3 threads: one thread's bits here)
    ("addmm", 150, 768, 200, 6), ("linear", 150, 512, 300, 8), ("addmm", 235, 768, 223, 3),
    # ... the rows in blocks of ceil((M - 1) / t), the last the rest (51, 51, 51, 49); the row parts
    # from N 160 (halves on 6 threads at 85 rows); the grid and the K cut from 49 rows
    ("linear", 202, 768, 200, 4), ("addmm", 85, 512, 248, 6), ("addmm", 64, 256, 256, 3), ("addmm", 60, 1024, 200, 3),
    # the grid on any thread count from 3 to 16: 1 x 7 narrow and from N 770, 5 x 2 on 10 (tn among 10 and
    # 2), 10 x 1 from M = N, 12 threads below N 50000
    ("addmm", 120, 256, 700, 7), ("linear", 120, 256, 3080, 7), ("addmm", 170, 256, 1000, 10), ("addmm", 300, 256, 200, 10),
    ("linear", 200, 256, 1000, 12),
    # the row parts below 256 columns: column parts d need N > 64 (d - 1), the rows in t / d parts
    # (the 65-character lm_head in quarters on 8 threads; 128 columns in thirds on 6, 129 in halves;
    # 64 in quarters on 4; 190 in quarters on 8, 224 in halves)
    ("linear", 64, 384, 65, 8), ("addmm", 60, 256, 128, 6), ("addmm", 60, 256, 129, 6), ("linear", 56, 384, 64, 4),
    ("addmm", 80, 512, 190, 8), ("addmm", 80, 512, 224, 8),
    # one thread, the big-product kernels' pair panels: chains over whole groups of four, a block's
    # last len % 4 products FMA'd onto the sum (830 = 4 x 192 + 62; 300 = 150 + 150; 875: 107)
    ("addmm", 80, 830, 300), ("addmm", 128, 300, 128), ("linear", 80, 875, 300),
]
CAPS = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="zen4", help="the target make_goldens.py runs (this one writes for avx2 only)")
    args = ap.parse_args()
    intel = "GenuineIntel" in open("/proc/cpuinfo").read()
    if args.target != "avx2" or not intel or any(os.environ.get(k) != v for k, v in CAPS.items()):
        print(f"gen_matmul_avx2_goldens: skipped for {args.target} (needs an Intel CPU under the avx2 caps: "
              + " ".join(f"{k}={v}" for k, v in CAPS.items()) + ")")
        return
    torch.set_num_threads(1)
    a_all, b_all = torch.from_numpy(formula_a(MA, KA)), torch.from_numpy(formula_b(KA, NB))
    bias_all = 0.1 * torch.randn(NB, generator=torch.Generator().manual_seed(23))
    t = {"bias": bias_all}
    for pi, (op, m, k, n, *th) in enumerate(PRODUCTS):
        torch.set_num_threads(th[0] if th else 1)
        a, b, bias = a_all[:m, :k].contiguous(), b_all[:k, :n].contiguous(), bias_all[:n]
        if op == "addmm": c = torch.addmm(bias, a, b)
        elif op == "linear": c = torch.nn.functional.linear(a, b.T.contiguous(), bias)
        else: c = torch.mm(torch.from_numpy(formula_a(k, m)).t(), b)
        t[f"p{pi}.first"] = c[:, :16].clone()
        t[f"p{pi}.last"] = c[:, n - 8:].clone()
        print(f"  p{pi} {op} {m}x{k}x{n}, {th[0] if th else 1} thread(s)")
    out = os.path.join("tests", "golden", "targets", "avx2", "matmul_avx2")
    os.makedirs(out, exist_ok=True)
    meta = {"torch": torch.__version__, "products": json.dumps(PRODUCTS), "cpu": cpu_model(), "target": "avx2",
            "settings": " ".join(f"{k}={v}" for k, v in CAPS.items()) + "; 1 thread unless the product names 2; bias seed 23; A and B by "
                        "formula (see the generator); each output's first 16 and last 8 columns"}
    path = os.path.join(out, "packed.safetensors")
    save_file(t, path, metadata=meta)
    print(f"gen_matmul_avx2_goldens: {len(PRODUCTS)} products -> {path} ({meta['cpu']})")


if __name__ == "__main__":
    main()
