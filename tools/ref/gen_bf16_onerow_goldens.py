#!/usr/bin/env python3
"""bf16 goldens of torch's one-row products against a transposed weight (the lm_head of a decode
step) under intel-amx, for tests/test_bf16_onerow.c.

torch 2.15 runs y = F.linear(x[1, K], W[N, K] (+ bias)) and torch.mm(x, W.t()) in bf16 as oneDNN's
brgemm on AVX512_CORE_BF16 when N * K > 4096 (16 lane chains of pairs, then a fixed lane tree:
tools/ref/probe_bf16_onerow_t.py), and as ATen's bf16 dot when N * K <= 4096. Each product here
holds seeded operands with cancelling +-2^12 and +-2^9 pairs (so the order shows in the bits,
probe_bf16_onerow_t.py's inputs), whether the op had a bias (with_bias) and torch's outputs on 1 and 2 threads (out1, out2: the same bits,
the test checks both). Shapes: K across 16-pair lanes and odd K, N small (the order does not
depend on N) and both sides of N * K = 4096. Must run on an Intel AMX machine with no dispatch
caps (the machine is recorded in the metadata; elsewhere it prints SKIP). Writes
tests/golden/targets/intel-amx/matmul/bf16_onerow.safetensors.
  /work/venv/bin/python tools/ref/gen_bf16_onerow_goldens.py
"""
import json
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from gm_inputs import cpu_model, host_is_intel_amx

OUT = os.path.join("tests", "golden", "targets", "intel-amx", "matmul")
# (K, N, op): op linear (no bias), linear_b (bias), mm_t (torch.mm(x, W.t()))
CASES = [(64, 80, "linear"), (64, 64, "linear"), (64, 48, "linear"), (96, 40, "linear_b"), (65, 70, "linear"),
         (768, 40, "linear"), (768, 40, "linear_b"), (768, 33, "mm_t"), (777, 24, "linear"), (1000, 17, "linear_b"),
         (1001, 16, "mm_t"), (2304, 16, "linear"), (3072, 16, "linear_b"), (16, 128, "linear"), (40, 100, "linear_b")]


def operands(gen, K, N):
    x = torch.randn(1, K, generator=gen).bfloat16()
    w = (torch.randn(N, K, generator=gen) / K ** 0.5).bfloat16()
    x[0, 3] = x[0, K - 5] = x[0, K // 3] = x[0, 2 * K // 3 + 1] = 1.0
    w[:, 3], w[:, K - 5] = 2.0 ** 12, -2.0 ** 12
    w[:, K // 3], w[:, 2 * K // 3 + 1] = 2.0 ** 9, -2.0 ** 9
    if K >= 64:  # +-2^12 in lanes 0 and 1, which meet late in the lane tree
        j = 32 * ((K - 1) // 64) + 2
        x[0, 0] = x[0, j] = 1.0
        w[:, 0], w[:, j] = 2.0 ** 12, -2.0 ** 12
    b = (0.1 * torch.randn(N, generator=gen)).bfloat16()
    return x, w, b


def run(op, x, w, b):
    if op == "linear":
        return F.linear(x, w)
    if op == "linear_b":
        return F.linear(x, w, b)
    return torch.mm(x, w.t())


def main():
    if not host_is_intel_amx():
        print("gen_bf16_onerow_goldens.py: SKIP: these goldens are the intel-amx target's; this host (or its dispatch caps) is another class")
        return 0
    os.makedirs(OUT, exist_ok=True)
    gen = torch.Generator().manual_seed(23)
    t = {}
    for i, (K, N, op) in enumerate(CASES):
        x, w, b = operands(gen, K, N)
        p = f"s{i}."
        t[p + "x"], t[p + "W"], t[p + "bias"] = x.float(), w.float(), b.float()
        t[p + "with_bias"] = torch.tensor([1.0 if op == "linear_b" else 0.0])
        for th in (1, 2):
            torch.set_num_threads(th)
            t[p + f"out{th}"] = run(op, x, w, b).float()
    meta = {"torch": torch.__version__, "cpu": cpu_model(), "cases": json.dumps(CASES),
            "env": json.dumps({k: os.environ.get(k) for k in ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")})}
    path = os.path.join(OUT, "bf16_onerow.safetensors")
    save_file({k: v.contiguous() for k, v in t.items()}, path, metadata=meta)
    print(f"gen_bf16_onerow_goldens: {len(CASES)} products -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
