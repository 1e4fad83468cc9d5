#!/usr/bin/env python3
"""Random bf16 / f16 products, gptmeg against the real torch on this machine, output by output.

Each product draws its shape (M in 2..--max-m, K in 2..--max-k, N in 2..--max-n), an op and a
thread count (1..--max-threads), runs it in torch (random normal operands rounded to the dtype) and
in gptmeg (tools/ref/probe_lowp_products.c, under --target), rounds gptmeg's f32 result to the
dtype and counts the outputs that differ. Ops: matmul (torch.matmul), addmm (bias), linear
(F.linear, B transposed, bias), mmtb (torch.mm(x, W.t())), mmta (torch.mm(x^T view, W): a linear's
dW), bmm (torch.bmm of --batch-choices slices, bf16 only: slices 0 and the last compared). Prints
the shapes that differ and a count; exit status 1 when any differs.
  gcc -O2 -Iinclude -fopenmp tools/ref/probe_lowp_products.c build/libgptmeg.a -lsleef -lmpfr -lgmp \\
      -lcjson -lpcre2-8 -lz -lm -ldl -o build/probe_lowp_products
  python3 tools/ref/check_lowp_products.py --probe build/probe_lowp_products --dtype bf16 --count 150 \\
      --max-threads 4 [--target intel-amx] [--ops bmm]
The target's dispatch caps must be those torch runs under here (check_fidelity.py's TARGET_ENV):
by default the host's own (no caps).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

OPS = ["matmul", "addmm", "linear", "mmtb", "mmta", "bmm"]


def torch_product(op, A, W, bias):
    if op == "matmul": return torch.matmul(A, W)
    if op == "addmm": return torch.addmm(bias, A, W)
    if op == "linear": return torch.nn.functional.linear(A, W.T.contiguous(), bias)
    if op == "mmtb": return torch.mm(A, W.T.contiguous().t())
    if op == "mmta": return torch.mm(A.t().contiguous().t(), W)
    return torch.bmm(A, W)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--probe", default="build/probe_lowp_products")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    ap.add_argument("--target", default="intel-amx")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ops", nargs="+", default=None, help="default: every op of the dtype")
    ap.add_argument("--max-threads", type=int, default=2)
    ap.add_argument("--max-m", type=int, default=400)
    ap.add_argument("--max-k", type=int, default=1300)
    ap.add_argument("--max-n", type=int, default=900)
    ap.add_argument("--batch-choices", type=int, nargs="+", default=[2, 12, 24, 48])
    a = ap.parse_args()
    ops = a.ops or [o for o in OPS if a.dtype == "bf16" or o != "bmm"]
    if a.dtype == "f16" and "bmm" in ops:
        sys.exit("check_lowp_products: bmm is checked in bf16 only")
    dt = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    rng = np.random.default_rng(a.seed)
    d = tempfile.mkdtemp(prefix="lowp_")
    bad = done = 0
    for it in range(a.count):
        op = ops[int(rng.integers(len(ops)))]
        M, K, N = int(rng.integers(2, a.max_m)), int(rng.integers(2, a.max_k)), int(rng.integers(2, a.max_n))
        th = int(rng.integers(1, a.max_threads + 1))
        batch = int(rng.choice(a.batch_choices)) if op == "bmm" else 0
        if op == "bmm":
            K = min(K, a.max_m)
        if max(batch, 1) * M * N * K <= 4096:
            continue  # ATen's own gemm in torch: not the orders checked here
        torch.set_num_threads(th)
        g = torch.Generator().manual_seed(a.seed * 100003 + it)
        shape_a, shape_w = ((batch, M, K), (batch, K, N)) if batch else ((M, K), (K, N))
        A = torch.randn(*shape_a, generator=g).to(dt)
        W = torch.randn(*shape_w, generator=g).to(dt)
        bias = torch.randn(N, generator=g).to(dt)
        y = torch_product(op, A, W, bias).float()
        ta, tb, hb = op == "mmta", op in ("linear", "mmtb"), op in ("linear", "addmm")
        diff = 0
        for s in ((0, batch - 1) if batch else (None,)):
            As, Ws = (A[s], W[s]) if batch else (A, W)
            (As.t().contiguous() if ta else As).float().numpy().tofile(os.path.join(d, "a.bin"))
            (Ws.T.contiguous() if tb else Ws).float().numpy().tofile(os.path.join(d, "b.bin"))
            bias.float().numpy().tofile(os.path.join(d, "bias.bin"))
            subprocess.run([a.probe, d, a.dtype, str(M), str(K), str(N), str(int(ta)), str(int(tb)), str(int(hb)),
                            str(th), str(batch), a.target], check=True)
            c = torch.from_numpy(np.fromfile(os.path.join(d, "gm_c.bin"), np.float32).reshape(M, N)).to(dt).float()
            diff += int((c != (y[s] if batch else y)).sum().item())
        done += 1
        if diff:
            bad += 1
            print(f"differs: {a.dtype} {op} M {M} K {K} N {N}" + (f" batch {batch}" if batch else "")
                  + f" on {th} threads: {diff} outputs", flush=True)
    print(f"check_lowp_products: {a.dtype}, torch {torch.__version__}, target {a.target}: {bad} of {done} products differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
