"""Goldens for torch-cpu mode of the GELU variants written as separate tensor ops.

Variants: gelu_python, gelu_new, gelu_accurate, gelu_fast, gelu_megatron, openai_gelu, quick_gelu.
The HF ones are transformers' own activation modules (ACT2FN); gelu_megatron is Megatron-LM's
fused_bias_gelu.py written as plain torch ops (no jit on CPU), bias = a zero tensor, with its
custom backward through a torch.autograd.Function; openai_gelu is Megatron's formula.

Runs the installed torch on this CPU and writes tests/golden/gelu_ops/<variant>.json holding, per
case (dtype x direction x length x threads), gm_hash64 of the output bits of all `count` tensors
concatenated (NaNs canonicalised to one quiet NaN per dtype: f32 0x7fc00000, f16 0x7e00,
bf16 0x7fc0, since torch's NaN sign/payload is not part of what torch-cpu promises) and the first
outputs in hex. tests/test_gelu_torch_ops.c rebuilds the inputs the same way:
  f32:      tensor j of a case is elements j*n .. j*n+n-1 of gm_inputs.golden_f32_inputs(1, count*n)
  f16/bf16: x[i] = all_u16[(offset + i) % 65536], offset 0 for n = 65536 (every pattern once),
            offset (n * 7919) % 65536 otherwise; tensor j starts at offset + j*n
  dy:       element i (over the concatenated tensors) = ((stream_u64(2, i) >> 40) - 2^23) * 2^-22,
            uniform on [-2, 2), rounded to the dtype (RNE); x.grad of the forward expression.
The '3x3 experiment' is recorded by tools/ref/gen_gelu_3x3_goldens.py.
Run from the repo root: python3 tools/ref/gen_gelu_ops_goldens.py [--quick]
"""
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from transformers.activations import ACT2FN, GELUActivation

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gm_inputs as gi  # noqa: E402
from gm_profiles import GeLUFunction  # noqa: E402

OUT_DIR = os.path.join("tests", "golden", "gelu_ops")
VARIANTS = ["gelu_python", "gelu_new", "gelu_accurate", "gelu_fast", "gelu_megatron", "openai_gelu",
            "quick_gelu"]
F32_LENGTHS = [1, 9, 15, 16, 17, 31, 33, 1000, 4099, 70001, 1000003]
U16_LENGTHS = [1, 9, 17, 63, 65, 127, 1000, 4099, 65536, 70001]
THREADS = [1, 2]
N_FIRST = 16
TENSOR_BUDGET = 20000  # elements per short-length case: count = max(1, TENSOR_BUDGET // n)
TORCH_DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
CANON_NAN = {"f32": 0x7FC00000, "f16": 0x7E00, "bf16": 0x7FC0}


def openai_gelu(x):  # Megatron-LM openai_gelu / gelu_impl
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x)))


def forward_fn(variant):
    if variant == "gelu_megatron":
        return lambda x: GeLUFunction.apply(x, torch.zeros(x.shape[-1:], dtype=x.dtype))
    if variant == "openai_gelu":
        return openai_gelu
    if variant == "gelu_python":
        return GELUActivation(use_gelu_python=True)
    return ACT2FN[variant]


# ---- inputs ----------------------------------------------------------------------------------------
def case_count(n):
    return max(1, TENSOR_BUDGET // n)


def make_x(dt, n, count):
    if dt == "f32":
        return torch.from_numpy(gi.golden_f32_inputs(1, n * count).copy())
    off = 0 if n == 65536 else (n * 7919) % 65536
    u = gi.all_u16()[(off + np.arange(n * count)) % 65536]
    return torch.from_numpy(u.view(np.int16).copy()).view(TORCH_DT[dt])


def make_dy(dt, total):
    z = gi.stream_u64(2, np.arange(total, dtype=np.uint64))
    k = (z >> np.uint64(40)).astype(np.int64) - (1 << 23)
    return torch.from_numpy(k.astype(np.float64) * 2.0**-22).to(TORCH_DT[dt])


def bits(t, dt):
    if dt == "f32":
        u = t.contiguous().view(torch.int32).numpy().view(np.uint32).copy()
        u[np.isnan(t.numpy())] = CANON_NAN[dt]
    else:
        u = t.contiguous().view(torch.int16).numpy().view(np.uint16).copy()
        u[np.isnan(t.float().numpy())] = CANON_NAN[dt]
    return u


def run_case(variant, dt, direction, n, count, threads):
    torch.set_num_threads(threads)
    fn = forward_fn(variant)
    xs = make_x(dt, n, count)
    dys = make_dy(dt, n * count) if direction == "bwd" else None
    outs = []
    for j in range(count):
        x = xs[j * n:(j + 1) * n].clone()
        if direction == "fwd":
            with torch.no_grad():
                outs.append(fn(x))
        else:
            x.requires_grad_(True)
            fn(x).backward(dys[j * n:(j + 1) * n].clone())
            outs.append(x.grad.detach())
    out = torch.cat(outs)
    b = bits(out, dt)
    return {"dtype": dt, "dir": direction, "n": n, "count": count, "threads": threads,
            "hash": "%016x" % gi.hash64(b), "first": ["%x" % int(v) for v in b[:N_FIRST]]}


def main():
    quick = "--quick" in sys.argv
    os.makedirs(OUT_DIR, exist_ok=True)
    t0 = time.time()
    for variant in VARIANTS:
        cases = []
        for dt in ["f32", "bf16", "f16"]:
            lengths = F32_LENGTHS if dt == "f32" else U16_LENGTHS
            if quick:
                lengths = [n for n in lengths if n <= 4099]
            for n in lengths:
                for direction in ["fwd", "bwd"]:
                    for threads in THREADS:
                        if threads > 1 and n < 32768 and n not in (9, 4099):
                            continue  # one chunk below the grain; 9 and 4099 check that
                        cases.append(run_case(variant, dt, direction, n, case_count(n), threads))
        doc = {"generator": "tools/ref/gen_gelu_ops_goldens.py", "torch": torch.__version__,
               "transformers": transformers.__version__,
               "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpu": gi.cpu_model(),
               "torch_lib": os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"),
               "variant": variant, "cases": cases}
        with open(os.path.join(OUT_DIR, variant + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
        print("%s: %d cases, %.1fs" % (variant, len(cases), time.time() - t0))


if __name__ == "__main__":
    main()
