#!/usr/bin/env python3
"""Activation-backward goldens from PyTorch CPU for tests/test_act_bwd.c (gm_op_act_bwd).

Each case is an activation the GPT-2 profiles can select, a dtype, a shape (N, OC) and a torch
thread count. The inputs are deterministic streams that src/core/inputs.c reproduces bit for bit
(gm_inputs.py's stream_u64), element i of the case taken from index i:
  inp[i]  = (k(11, i) * 6 * 2^-23) rounded to f32, then to the dtype     (uniform on [-6, 6))
  dout[i] = (k(12, i) * 2^-22) in the dtype                              (uniform on [-2, 2))
  bias[j] = (k(13, j) * 2^-23) in the dtype (megatron only)              (uniform on [-1, 1))
with k(s, i) = (stream_u64(s, i) >> 40) - 2^23. The backward is autograd's:
  HF activations (transformers ACT2FN[name]): y = act(inp); y.backward(dout); dinp = inp.grad.
  megatron: Megatron-LM's GeLUFunction with gptmeg's forward (tools/ref/gm_profiles.py MegatronMLP:
    inp + bias in f32, the GELU in f32, one rounding) and Megatron's backward as written:
    tmp = bias_gelu_back(g, bias, y) (torch.jit.script, which runs op by op on CPU, in the dtype),
    returned for input and bias; bias.grad is autograd's sum_to_size of tmp (sum over dim 0).
Also "sums": x.sum(dim=0) of (N, OC) tensors (x = dout's stream) in each dtype, 1 and 2 threads:
autograd's sum_to_size of a bias gradient (gm_op_sum_rows) over more shapes than the cases.
Stored per case: gm_hash64 of the output bits (dinp, and dbias for megatron; NaNs canonicalised)
and SAMPLES evenly spaced output values (index k*n // SAMPLES) so a failing test can count them.
Writes tests/golden/act_bwd/act_bwd.json. With --target NAME (run under that target's dispatch caps, tests/golden/targets/README.md) it writes
tests/golden/targets/NAME/act_bwd/act_bwd.json instead. Run from the repo root with the pinned torch
(/work/venv/bin/python). f32 tanh/erf/exp (gelu_new, gelu_fast, gelu_python, megatron) are MKL VML
calls in torch: their f32 bits depend on the CPU model, recorded in "cpu".
"""
import json
import os
import sys
import time

import numpy as np
import torch
from transformers.activations import ACT2FN

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gm_inputs as gi  # noqa: E402
from gm_profiles import MegatronFusedGeLU as GeLUFunction, bias_gelu_back  # noqa: E402

OUT = os.path.join("tests", "golden", "act_bwd", "act_bwd.json")
ACTS = ["gelu_new", "gelu_pytorch_tanh", "gelu", "gelu_fast", "gelu_python", "relu", "silu", "megatron"]
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# N*OC from 1 to ~200k: below and above the 32768 grain, chunks that end mid vector step on 2
# threads (13*2571, 67*2999), the GPT-2 MLP width (3072), a bias of one column (two-pass sum).
SHAPES = [(1, 1), (3, 7), (5, 37), (17, 1000), (13, 2571), (37000, 1), (65, 3072), (67, 2999)]
THREADS = [1, 2]
SAMPLES = 48
SUM_SHAPES = [(1, 5), (7, 50), (33, 100), (300, 130), (257, 67), (1000, 37), (64, 3072), (20, 3000), (13, 2571),
              (700, 77), (2000, 17), (40, 1003), (5000, 1), (40000, 1), (3, 40000), (129, 768), (17, 2304), (9, 3)]
CANON_NAN = {"f32": 0x7FC00000, "f16": 0x7E00, "bf16": 0x7FC0}


def stream_k(seed, n):
    z = gi.stream_u64(seed, np.arange(n, dtype=np.uint64))
    return (z >> np.uint64(40)).astype(np.int64) - (1 << 23)


def inputs(dt, n, oc):
    x = torch.from_numpy((stream_k(11, n).astype(np.float64) * 6.0 * 2.0**-23).astype(np.float32)).to(dt)
    dy = torch.from_numpy(stream_k(12, n).astype(np.float64) * 2.0**-22).to(dt)
    b = torch.from_numpy(stream_k(13, oc).astype(np.float64) * 2.0**-23).to(dt)
    return x, dy, b


def bits(t, dn):
    t = t.detach().contiguous()
    if dn == "f32":
        u = t.view(torch.int32).numpy().view(np.uint32).copy()
    else:
        u = t.view(torch.int16).numpy().view(np.uint16).copy()
    u[np.isnan(t.float().numpy())] = CANON_NAN[dn]
    return u.reshape(-1)


def summary(u):
    n = len(u)
    idx = sorted(set(k * n // SAMPLES for k in range(SAMPLES)))
    return {"hash": "%016x" % gi.hash64(u), "samples": [int(u[i]) for i in idx]}


def run_case(act, dn, n_rows, oc, threads):
    torch.set_num_threads(threads)
    dt = DTYPES[dn]
    x, dy, b = inputs(dt, n_rows * oc, oc)
    x = x.reshape(n_rows, oc).clone().requires_grad_(True)
    dy = dy.reshape(n_rows, oc)
    case = {"act": act, "dtype": dn, "N": n_rows, "OC": oc, "threads": threads}
    if act == "megatron":
        b = b.clone().requires_grad_(True)
        GeLUFunction.apply(x, b).backward(dy)
        case["dbias"] = summary(bits(b.grad, dn))
    else:
        ACT2FN[act](x).backward(dy)
    case["dinp"] = summary(bits(x.grad, dn))
    return case


def main():
    global OUT
    t0 = time.time()
    target = "intel-amx" if "act_bwd" in OUT else "any AVX512"
    if "--target" in sys.argv:
        target = sys.argv[sys.argv.index("--target") + 1]
        OUT = os.path.join("tests", "golden", "targets", target, *OUT.split(os.sep)[2:])
    cases = []
    for act in ACTS:
        for dn in DTYPES:
            for (n_rows, oc) in SHAPES:
                for th in THREADS:
                    cases.append(run_case(act, dn, n_rows, oc, th))
    sums = []
    for dn, dt in DTYPES.items():
        for (n_rows, oc) in SUM_SHAPES:
            for th in THREADS:
                torch.set_num_threads(th)
                _, dy, _ = inputs(dt, n_rows * oc, oc)
                sums.append({"dtype": dn, "N": n_rows, "OC": oc, "threads": th,
                             "sum": summary(bits(dy.reshape(n_rows, oc).sum(0), dn))})
    # Megatron scripts bias_gelu_back; scripted, it runs op by op on CPU: the same bits as run eagerly
    scripted = torch.jit.script(bias_gelu_back)
    for dn, dt in DTYPES.items():
        x, dy, b = inputs(dt, 65 * 3072, 3072)
        x, dy = x.reshape(65, 3072), dy.reshape(65, 3072)
        eager = bias_gelu_back(dy, b, x)
        for _ in range(3):  # past the profiling executor's warm-up runs
            assert np.array_equal(bits(scripted(dy, b, x), dn), bits(eager, dn)), f"scripted != eager ({dn})"
    doc = {"generator": "tools/ref/gen_act_bwd_goldens.py", "torch": torch.__version__,
           "cpu": gi.cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability(), "target": target,
           "env": {k: os.environ[k] for k in ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")
                   if k in os.environ},
           "mkl": torch.backends.mkl.is_available(), "samples": SAMPLES,
           "note": "intel-amx target (this CPU, no dispatch caps); f32 gelu_new/gelu_fast/gelu_python/"
                   "megatron go through MKL VML (CPU-model dependent)",
           "cases": cases, "sums": sums}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"gen_act_bwd_goldens: {len(cases)} cases in {time.time() - t0:.0f}s -> {OUT} "
          f"({os.path.getsize(OUT)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
