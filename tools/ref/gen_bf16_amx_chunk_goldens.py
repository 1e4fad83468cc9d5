#!/usr/bin/env python3
"""bf16 goldens of oneDNN's AMX K chunks for B as stored (GPT-2's Conv1D addmm) on intel-amx
(issue 23), for tests/test_bf16_amx_chunk.c.

torch 2.15 runs bf16 addmm(bias, x, W) (W [K, N] as stored) as oneDNN's brgemm on AMX tiles; K is
cut into chunks (a new f32 accumulator per brgemm call) whose size oneDNN's cost model picks from
M, N, K and the thread count (tools/ref/probe_bf16_amx_blocks.py --mrange). Each product here is
one of GPT-2's four Conv1D shapes (K, N) (or the lm_head backward's dX, mm of K 50257, N 768) at an M on either side of a change of the chunk, run on 1
thread (out1) and 2 threads (out2). The operands are not stored: A [M, K], W [K, N] and the bias
[N] come from value(idx, salt) below (bf16-exact, mantissas and exponents spread so that sums
round) with the exactly cancelling large products of cancel(), which the test rebuilds. Only rows ROWS(M) and the first and last 32 columns of each
output are stored (bf16, as torch returns them). Must run on an Intel CPU with AMX-BF16, oneDNN not
capped (the machine is recorded in the metadata). Writes
tests/golden/targets/intel-amx/bf16_amx_chunk/addmm.safetensors.
  /work/venv/bin/python tools/ref/gen_bf16_amx_chunk_goldens.py
"""
import json
import os

import torch
from safetensors.torch import save_file

from gm_inputs import cpu_model, host_is_intel_amx

OUT = os.path.join("tests", "golden", "targets", "intel-amx", "bf16_amx_chunk")
# (M, K, N[, op]): around the chunk changes measured on 1 and 2 threads; op addmm unless "mm" or "linear"
PRODUCTS = [
    (24, 768, 768), (25, 768, 768), (40, 768, 768), (46, 768, 768), (86, 768, 768),
    (40, 768, 2304), (200, 768, 2304),
    (64, 768, 3072), (230, 768, 3072),
    (8, 3072, 768), (20, 3072, 768), (31, 3072, 768), (100, 3072, 768), (160, 3072, 768), (256, 3072, 768),
    (300, 3072, 768),
    # GPT-2 124M's lm_head backward dX: dlogits @ wte (wte [50257, 768] as stored), mm without bias
    (40, 50257, 768, "mm"), (100, 50257, 768, "mm"), (128, 50257, 768, "mm"),
    # B transposed (the Conv1D backward's dX = dY @ W^T): F.linear(A, W^T contiguous, bias)
    (400, 768, 768, "linear"), (64, 768, 3072, "linear"), (100, 2304, 768, "linear"), (300, 2304, 768, "linear"),
    (34, 3072, 768, "linear"), (128, 3072, 768, "linear"), (200, 3072, 768, "linear"),
    # past 520 rows (K 3072 on 2 threads: 1536 to 640 rows, 768 from 641)
    (600, 3072, 768), (700, 3072, 768),
    # past 520 rows with B transposed and the lm_head's dX (probe_bf16_amx_blocks.py --mrange 500 1100 1)
    (767, 768, 768, "linear"), (768, 768, 768, "linear"), (704, 768, 3072, "linear"), (705, 768, 3072, "linear"),
    (640, 2304, 768, "linear"), (641, 2304, 768, "linear"), (700, 2304, 768, "linear"), (768, 2304, 768, "linear"),
    (640, 3072, 768, "linear"), (641, 3072, 768, "linear"),
    (704, 50257, 768, "mm"), (705, 50257, 768, "mm"),
    # the linears' dW (A transposed in memory, K = the batch's rows: x^T @ dY), no bias
    (768, 864, 768, "mmta"), (768, 1024, 768, "mmta"), (768, 896, 3072, "mmta"), (3072, 1568, 768, "mmta"),
    (768, 4096, 2304, "mmta"),
    # ... where 2 threads take another chunk than 1
    (768, 768, 768, "mmta"), (768, 2464, 2304, "mmta"), (3072, 2720, 768, "mmta"), (768, 3424, 3072, "mmta"),
]
COLS = 32  # the first and last COLS columns are stored
SALT_A, SALT_W, SALT_BIAS = 1, 2, 3


def rows(M):
    return sorted({0, min(1, M - 1), M // 2, M - 1})


def value(n, salt, shift, offset=0):
    """value(idx, salt) for idx = offset..offset+n-1: u = (idx * 2654435761 + salt * 40503) mod 2^32;
    +-(128 + (u >> 8) % 128) * 2^-(7 + (u >> 15) % 10 + shift), minus when bit 31 of u is set. Exact in bf16."""
    idx = torch.arange(offset, offset + n, dtype=torch.int64)
    u = (idx * 2654435761 + salt * 40503) & 0xFFFFFFFF
    mant = (128 + (u >> 8) % 128).to(torch.float64)
    e = (7 + (u >> 15) % 10 + shift).to(torch.float64)
    sign = torch.where((u >> 31) & 1 == 1, -1.0, 1.0).to(torch.float64)
    return (sign * mant * torch.pow(2.0, -e)).to(torch.float32)


def cancel(a, w, K):
    """Large products that cancel exactly: A[:, k] = 1 at k = 3, K - 5, K // 3, 2K // 3 + 1 and W's rows
    there +2^18, -2^18, +2^14, -2^14, so that the small products' rounding shows where they shared an
    accumulator with the large ones (which K chunk holds what), even after the output's bf16 rounding."""
    for k, v in ((3, 2.0 ** 18), (K - 5, -2.0 ** 18), (K // 3, 2.0 ** 14), (2 * K // 3 + 1, -2.0 ** 14)):
        a[:, k] = 1.0
        w[k, :] = v


def main():
    if not host_is_intel_amx():
        print("gen_bf16_amx_chunk_goldens: skipped (needs an Intel CPU with AMX-BF16, oneDNN not capped)")
        return
    t = {}
    for pi, prod in enumerate(PRODUCTS):
        M, K, N = prod[:3]
        op = prod[3] if len(prod) > 3 else "addmm"
        a = value(M * K, SALT_A, 0).view(M, K)
        w = value(K * N, SALT_W, 0).view(K, N)
        cancel(a, w, K)
        a, w = a.bfloat16(), w.bfloat16()
        bias = value(N, SALT_BIAS, 0).bfloat16()
        cols = list(range(COLS)) + list(range(N - COLS, N))
        outs = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            if op == "addmm": y = torch.addmm(bias, a, w)
            elif op == "mm": y = torch.mm(a, w)
            elif op == "mmta": y = torch.mm(a.t().contiguous().t(), w)
            else: y = torch.nn.functional.linear(a, w.T.contiguous(), bias)
            outs.append(y)
            t[f"p{pi}.out{threads}"] = y[rows(M)][:, cols].contiguous()
        same = torch.equal(outs[0], outs[1])
        print(f"  p{pi} {op} {M}x{K}x{N}: 1 vs 2 threads {'same' if same else 'differ'}")
    os.makedirs(OUT, exist_ok=True)
    meta = {"torch": torch.__version__, "products": json.dumps(PRODUCTS), "cpu": cpu_model(),
            "rows": "sorted({0, 1, M // 2, M - 1})", "cols": f"0..{COLS - 1} and N-{COLS}..N-1",
            "operands": "A = value(i*K+k, 1), W = value(k*N+n, 2), bias = value(n, 3) (the docstring's value), then cancel(A, W, K)",
            "settings": "native oneDNN (no ONEDNN_MAX_CPU_ISA / ATEN_CPU_CAPABILITY caps: brg_matmul avx10_1_512_amx); "
                        "torch.set_num_threads(1) for out1, (2) for out2; bf16 addmm(bias, A, W), or mm(A, W) where "
                        "the product says mm (no bias), F.linear(A, W.T.contiguous(), bias) where it says linear, "
                        "mm(A.t().contiguous().t(), W) where it says mmta (A transposed in memory, no bias)",
            "onednn": "v3.13.3 (ONEDNN_VERBOSE)"}
    save_file(t, os.path.join(OUT, "addmm.safetensors"), metadata=meta)
    print(f"gen_bf16_amx_chunk_goldens: {len(PRODUCTS)} products -> {OUT}/addmm.safetensors ({meta['cpu']})")


if __name__ == "__main__":
    main()
