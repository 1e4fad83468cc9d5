#!/usr/bin/env python3
"""Linear backward goldens (issue 25) from torch 2.15 CPU autograd, for tests/test_linear_bwd.c.

GPT-2's two linears, as transformers 4.57.3 runs them:
  Conv1D  (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj): y = torch.addmm(b, x.view(-1, C), W),
          W [C, OC]; x is (1, N, C)
  lm_head (nn.Linear without bias, tied to wte): y = F.linear(x, W), W [OC, C] (OC = V); x (1, N, C)
and y.backward(dy): x.grad (N, C), W.grad, b.grad (OC) in the dtype. Inputs are exact f32 values of a
counter stream (value(seed, i) = ((stream_u64(seed, i) >> 40) - 2^23) * 2^-23, in [-1, 1); the
weight times 1/8), rounded to the dtype by torch (RNE), so the test rebuilds them bit for bit
(gm_stream_u64). Each gradient is stored as gm_hash64 of its f32 bytes (widened exactly from the
dtype), and, on one thread when it has at most 768 elements (db: 64), as its f32 bytes too (base64,
little-endian; the test then counts the identical outputs). Every case runs on 1 and 2 torch threads (torch.set_num_threads).
Writes tests/golden/targets/intel-amx/linear_bwd/linear_bwd.json: made on this machine (Intel
Sapphire Rapids class, torch CPU target intel-amx: ATen capability AVX512, MKL's Intel AVX-512 sgemm,
oneDNN AMX) with no dispatch caps in the environment. Run from the repo root:
  /work/venv/bin/python tools/ref/gen_linear_bwd_goldens.py
"""
import base64
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from gm_inputs import cpu_model, hash64, stream_u64  # noqa: E402

OUT = os.path.join("tests", "golden", "targets", "intel-amx", "linear_bwd")
DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
ROWS = [1, 4, 8, 16, 64, 256]
CONV = [(16, 48), (16, 16), (16, 64), (64, 16), (768, 2304), (768, 768), (768, 3072), (3072, 768)]
LMHEAD = [(16, 64), (768, 64), (16, 50257), (768, 50257)]
# past the grid: dW and dX with MKL's K split on 2 threads (K = rows, odd K), the sum's thread split
EXTRA = [(1024, 16, 48, False), (2048, 64, 16, False), (8, 16, 4097, True), (64, 768, 801, False),
         (600, 100, 200, False), (3, 5, 7, False), (5, 7, 3, True), (512, 768, 2304, False), (640, 768, 768, False)]


def values(seed, n, scale):
    z = stream_u64(seed, np.arange(n, dtype=np.uint64))
    k = (z >> np.uint64(40)).astype(np.int64) - 8388608
    return (k.astype(np.float32) * np.float32(2.0 ** -23) * np.float32(scale)).astype(np.float32)


def case(N, C, OC, trans, dname, threads):
    dt = DT[dname]
    seed = (N * 1000003 + C * 1009 + OC * 7 + trans) & 0xffffffff
    x = torch.from_numpy(values(seed, N * C, 1.0)).to(dt).view(1, N, C).requires_grad_()
    wv = torch.from_numpy(values(seed + 1, C * OC, 0.125)).to(dt)
    dy = torch.from_numpy(values(seed + 2, N * OC, 1.0)).to(dt).view(1, N, OC)
    grads = {}
    if trans:
        w = wv.view(OC, C).requires_grad_()
        torch.nn.functional.linear(x, w).backward(dy)
    else:
        w = wv.view(C, OC).requires_grad_()
        b = torch.zeros(OC, dtype=dt, requires_grad=True)
        torch.addmm(b, x.view(-1, C), w).view(1, N, OC).backward(dy)
        grads["db"] = b.grad
    grads["dx"], grads["dw"] = x.grad, w.grad
    out = {"N": N, "C": C, "OC": OC, "trans": bool(trans), "dtype": dname, "threads": threads, "seed": seed}
    for k, g in grads.items():
        f = g.detach().float().contiguous().numpy().reshape(-1)
        out[k] = {"hash": "%016x" % hash64(f)}
        if f.size <= 768 and threads == 1 and (k != "db" or f.size <= 64):
            out[k]["bits"] = base64.b64encode(f.astype("<f4").tobytes()).decode()
    return out


def main():
    shapes = [(n, c, oc, False) for n in ROWS for c, oc in CONV] + [(n, c, v, True) for n in ROWS for c, v in LMHEAD]
    shapes += EXTRA
    dtypes = sys.argv[1:] or ["f32", "f16", "bf16"]
    cases = []
    for dname in dtypes:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            for (N, C, OC, trans) in shapes:
                cases.append(case(N, C, OC, trans, dname, threads))
            print(dname, threads, "done", flush=True)
    meta = {"torch": torch.__version__, "cpu": cpu_model(), "target": "intel-amx",
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "mkl": torch.backends.mkl.is_available(),
            "env": {k: os.environ.get(k) for k in ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")},
            "inputs": "value(seed, i) = ((gm_stream_u64(seed, i) >> 40) - 2^23) * 2^-23; x seed, w seed + 1 (x 1/8), "
                      "dy seed + 2; rounded to the dtype",
            "threads": "torch.set_num_threads(threads) per case"}
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "linear_bwd.json"), "w") as f:
        json.dump({"meta": meta, "cases": cases}, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
