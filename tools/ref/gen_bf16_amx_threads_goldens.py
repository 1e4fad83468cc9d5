#!/usr/bin/env python3
"""bf16 goldens of torch's AMX products on 1 to 4 threads (intel-amx), for tests/test_bf16_amx_threads.c.

oneDNN's K blocking depends on the thread count beyond GPT-2's shapes on 1 and 2 threads
(tools/ref/onednn_amx_blocking.py, validated by check_onednn_amx_model.py): K split into 3 parts,
the K tail's own call for a transposed A whose K is not a multiple of 32, chunks that change on 3
and 4 threads. The operands are gen_bf16_amx_chunk_goldens.py's (A = value(i*K+k, 1), W =
value(k*N+n, 2), bias = value(n, 3), then cancel(A, W, K), and for K > 32, K % 32 != 0 a +2^18 / -2^18
pair in the last full tile and the partial one: the test makes the same ones), not
stored; each product holds, for every thread count, torch's rows 0, 1, M/2 and M-1 (all columns). Must run on an Intel AMX machine without dispatch caps (else SKIP). Writes
tests/golden/targets/intel-amx/bf16_amx_chunk/threads.safetensors.
  /work/venv/bin/python tools/ref/gen_bf16_amx_threads_goldens.py
"""
import json
import os
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_bf16_amx_chunk_goldens import cancel, rows, value  # noqa: E402  (the same operands and rows)
from gm_inputs import cpu_model, host_is_intel_amx  # noqa: E402

OUT = os.path.join("tests", "golden", "targets", "intel-amx", "bf16_amx_chunk")
THREADS = (1, 2, 3, 4)
# (M, K, N, op): addmm(bias, A, W), mm(A, W), linear(A, W^T, bias), mmtb(A, W^T) no bias, mmta(A^T in memory, W)
PRODUCTS = [(64, 3000, 256, "mmta"), (256, 1000, 256, "mmta"), (128, 1700, 256, "mmta"), (64, 3072, 768, "addmm"),
            (130, 3072, 768, "addmm"), (4, 3072, 16, "linear"), (200, 2304, 768, "linear"), (48, 768, 2304, "mmtb"),
            (24, 8000, 64, "mm"), (300, 768, 3072, "addmm"),
            # at most 16^3 multiply-adds (torch keeps these in ATen's gemm), and just above
            (4, 48, 16, "addmm"), (8, 16, 32, "linear"), (3, 100, 13, "mm"), (2, 32, 64, "mmtb"), (1, 64, 64, "addmm"),
            (5, 40, 20, "mmta"), (4, 48, 17, "addmm"), (8, 32, 17, "linear")]


def operands(M, K, N):
    a = value(M * K, 1, 0).view(M, K)
    w = value(K * N, 2, 0).view(K, N)
    cancel(a, w, K)
    if K % 32 and K > 32:  # +2^18 in the last full tile and -2^18 in the partial one: shows whether the tail is its own call
        full = K - K % 32
        a[:, full - 7] = a[:, K - 2] = 1.0
        w[full - 7, :], w[K - 2, :] = 2.0 ** 18, -2.0 ** 18
    return a.bfloat16(), w.bfloat16(), value(N, 3, 0).bfloat16()


def run(op, a, w, b):
    if op == "addmm": return torch.addmm(b, a, w)
    if op == "mm": return torch.mm(a, w)
    if op == "linear": return F.linear(a, w.T.contiguous(), b)
    if op == "mmtb": return torch.mm(a, w.T.contiguous().t())
    return torch.mm(a.t().contiguous().t(), w)  # mmta


def main():
    if not host_is_intel_amx():
        print("gen_bf16_amx_threads_goldens.py: SKIP: these goldens are the intel-amx target's; this host (or its dispatch caps) is another class")
        return 0
    t = {}
    for pi, (M, K, N, op) in enumerate(PRODUCTS):
        a, w, b = operands(M, K, N)
        outs = []
        for th in THREADS:
            torch.set_num_threads(th)
            y = run(op, a, w, b).float()
            outs.append(y)
            t[f"p{pi}.out{th}"] = y[rows(M)].contiguous()
        diff = [int((outs[0] != o).sum()) for o in outs[1:]]
        print(f"  p{pi} {op} {M}x{K}x{N}: outputs differing from 1 thread on 2, 3, 4 threads: {diff}")
    os.makedirs(OUT, exist_ok=True)
    meta = {"torch": torch.__version__, "cpu": cpu_model(), "products": json.dumps(PRODUCTS), "threads": json.dumps(THREADS),
            "rows": "sorted({0, min(1, M - 1), M // 2, M - 1}), every column",
            "operands": "gen_bf16_amx_chunk_goldens.py's value() and cancel()"}
    path = os.path.join(OUT, "threads.safetensors")
    save_file({k: v.contiguous() for k, v in t.items()}, path, metadata=meta)
    print(f"gen_bf16_amx_threads_goldens: {len(PRODUCTS)} products -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
