#!/usr/bin/env python3
"""f32 matmul goldens of torch's 2-thread orders under MKL's Intel AVX-512 sgemm (issue 23), for
tests/test_matmul_f32_mt.c.

torch.set_num_threads(2) runs other orders than one thread for some of GPT-2's forward shapes
(tools/ref/probe_f32_mt.py): a K split at ceil(K / 2) for tall K (the MLP's c_proj, addmm 3072 ->
768 with bias, M 2..384) and, for one row against B^T (the lm_head of a decode step), a column
split at ceil(N / 2) once N reaches a K-dependent minimum. Each product holds torch's result
on 1 thread (out1) and on 2 threads (out2) from random f32 operands shared by its group, so the test checks both orders and
that they differ. Shapes are shrunk to keep the file small (N = 16 for the K split, whose region
depends on M N K, here on both sides of its threshold; K 16..768 for the column split, on both
sides of its minimum N). Must run on an Intel
CPU with AVX-512 (MKL's Intel AVX-512 kernels: the intel-amx target; the machine is recorded in
the metadata). Writes tests/golden/targets/intel-amx/matmul_mt/f32_mt.safetensors.
  /work/venv/bin/python tools/ref/gen_matmul_mt_goldens.py
"""
import json
import os
import platform

import torch
from safetensors.torch import save_file

OUT = os.path.join("tests", "golden", "targets", "intel-amx", "matmul_mt")
# Groups of products sharing one A [MA, K] and one B: B [K, NB] as stored (addmm = Conv1D's
# addmm(bias, A[:M], B), mm = A[:M] @ B, linear_b = F.linear(A[:M], B^T contiguous, bias)), or for
# the one-row linears W [NB, K] (F.linear(A[:1], W[:N])). Each product: (op, M, N).
GROUPS = [
    # K 3072 (GPT-2's c_proj): M N K = 196608 splits, 2 and 3 rows (below 192001) do not
    ("B", 4, 3072, 16, [("addmm", 4, 16), ("addmm", 3, 16), ("addmm", 2, 16), ("mm", 4, 16), ("linear_b", 4, 16)]),
    # the threshold: 16 x 800 x 16 = 204800 splits, 15 x 800 x 16 = 192000 does not, 12 x 800 x 16 neither
    ("B", 16, 800, 16, [("addmm", 16, 16), ("addmm", 15, 16), ("mm", 16, 16), ("mm", 12, 16)]),
    # the one-row linear's column split: K 768 from N 41 (33 not), K 64 from 129 (121 not), K 16 from 513 (505 not)
    ("W", 1, 768, 41, [("linear", 1, 41), ("linear", 1, 33), ("linear", 1, 38)]),
    ("W", 1, 64, 129, [("linear", 1, 129), ("linear", 1, 121), ("linear", 1, 126)]),
    ("W", 1, 16, 513, [("linear", 1, 513), ("linear", 1, 505)]),
    # few rows, B as stored: 379 <= N <= 755 keeps one thread's bits, 378 and 756 split. B is not
    # stored: B[k, n] = ((31 k + 17 n) % 97 - 48) / 64 (formula_b; the test builds the same values)
    ("F", 2, 800, 756, [("mm", 2, 378), ("mm", 2, 379), ("mm", 2, 755), ("mm", 2, 756)]),
]


def formula_b(k, n):
    """B [k, n] with B[k, n] = ((31 k + 17 n) % 97 - 48) / 64, exact in float32."""
    kk = torch.arange(k).view(k, 1)
    nn = torch.arange(n).view(1, n)
    return (((31 * kk + 17 * nn) % 97 - 48).to(torch.float32) / 64).contiguous()


def cpu_line():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"): return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def intel_amx_host():
    """Whether this machine runs MKL's Intel AVX-512 sgemm as the intel-amx target does (an Intel CPU
    with AVX-512 and AMX, MKL not capped); else the goldens would hold another target's bits."""
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return False
    flags = set()
    for line in info.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    return ("GenuineIntel" in info and {"avx512f", "amx_tile"} <= flags
            and not os.environ.get("MKL_ENABLE_INSTRUCTIONS") and not os.environ.get("MKL_CBWR"))


def main():
    if not intel_amx_host():
        print("gen_matmul_mt_goldens: skipped (needs an Intel CPU with AVX-512 and AMX, MKL not capped)")
        return
    gen = torch.Generator().manual_seed(23)
    t = {}
    for gi, (kind, ma, k, nb, prods) in enumerate(GROUPS):
        a = torch.randn(ma, k, generator=gen)
        if kind == "F": b = formula_b(k, nb)
        else: b = torch.randn(nb, k, generator=gen) / k ** 0.5 if kind == "W" else torch.randn(k, nb, generator=gen) / k ** 0.5
        bias = 0.1 * torch.randn(nb, generator=gen)
        p = f"s{gi}."
        t[p + "A"], t[p + "bias"] = a, bias
        if kind != "F": t[p + kind] = b
        for pi, (op, m, n) in enumerate(prods):
            outs = []
            for threads in (1, 2):
                torch.set_num_threads(threads)
                if op == "addmm": c = torch.addmm(bias[:n], a[:m], b[:, :n])
                elif op == "mm": c = torch.mm(a[:m], b[:, :n])
                elif op == "linear_b": c = torch.nn.functional.linear(a[:m], b[:, :n].T.contiguous(), bias[:n])
                else: c = torch.nn.functional.linear(a[:m], b[:n])
                t[p + f"p{pi}.out{threads}"] = c
                outs.append(c)
            same = torch.equal(outs[0], outs[1])
            print(f"  s{gi}.p{pi} {op} {m}x{k}x{n}: 1 vs 2 threads {'same' if same else 'differ'}")
    os.makedirs(OUT, exist_ok=True)
    meta = {"torch": torch.__version__, "groups": json.dumps(GROUPS), "cpu": cpu_line(),
            "settings": "native (no ONEDNN_MAX_CPU_ISA / ATEN_CPU_CAPABILITY / MKL_ENABLE_INSTRUCTIONS caps); "
                        "torch.set_num_threads(1) for out1, (2) for out2; seed 23",
            "mkl": str(torch.backends.mkl.is_available())}
    save_file({k: v.contiguous() for k, v in t.items()}, os.path.join(OUT, "f32_mt.safetensors"), metadata=meta)
    print(f"gen_matmul_mt_goldens: {len(GROUPS)} groups -> {OUT}/f32_mt.safetensors ({meta['cpu']})")


if __name__ == "__main__":
    main()
