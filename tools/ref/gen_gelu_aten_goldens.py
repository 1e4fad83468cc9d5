"""Goldens for torch-cpu mode of PyTorch's one-kernel GELU ops (gelu, gelu_pytorch_tanh, gelu_10).

Runs the installed torch on this CPU and stores, per case (variant x dtype x direction x length x
threads), the gm_hash64 of the output bits (NaNs canonicalised, see below), per-65536-block hashes
for long cases, and the first 40 outputs. Writes tests/golden/gelu_aten/<variant>.json.
Run from the repo root: python3 tools/ref/gen_gelu_aten_goldens.py

Inputs (tests/test_gelu_torch_aten.c rebuilds them the same way):
  f32:      x = gm_inputs.golden_f32_inputs(seed=1, n)   (starts with the special values)
  f64:      x = golden_f32_inputs(seed=1, n) widened, times (1 + 2^-30) in double
  f16/bf16: x[i] = all_u16[(offset + i) % 65536], offset 0 for n = 65536 (every pattern),
            offset (n * 7919) % 65536 otherwise
  backward: dy = golden_f32_inputs(seed=2, n) with non-finite values replaced by 1.0, rounded to
            the dtype (RNE, overflow to inf). Backward is x.grad of the forward expression.
NaN outputs are hashed as one canonical quiet NaN per dtype (f64 0x7ff8000000000000, f32
0x7fc00000, f16 0x7e00, bf16 0x7fc0): torch's NaN payload and sign bits differ between its code paths and are not part of
what torch-cpu mode promises.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gm_inputs as gi  # noqa: E402

OUT_DIR = os.path.join("tests", "golden", "gelu_aten")

VARIANTS = ["gelu", "gelu_pytorch_tanh", "gelu_10"]
F32_LENGTHS = [1, 2, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000, 4099, 16384, 16385, 20001,
               32768, 32769, 70001, 1000003]
U16_LENGTHS = [1, 2, 63, 64, 65, 127, 1000, 20001, 40001, 65536]
F64_LENGTHS = [1, 2, 15, 16, 17, 31, 33, 1000, 16385, 20001, 32769, 70001]
THREADS = [1, 2]
EXTRA_THREADS = [3, 4]  # long cases only: checks the general at::parallel_for split
BLOCK = 65536
N_FIRST = 40
TORCH_DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}


def forward(variant, x):
    if variant == "gelu":
        return F.gelu(x)
    if variant == "gelu_pytorch_tanh":
        return F.gelu(x, approximate="tanh")
    return torch.clip(F.gelu(x), -10, 10)


def make_x(dt, n):
    if dt == "f32":
        return torch.from_numpy(gi.golden_f32_inputs(1, n).copy())
    if dt == "f64":  # off the f32 grid: one double rounding of f * (1 + 2^-30)
        with np.errstate(invalid="ignore"):
            return torch.from_numpy(gi.golden_f32_inputs(1, n).astype(np.float64) * (1.0 + 2.0**-30))
    off = 0 if n == 65536 else (n * 7919) % 65536
    u = gi.all_u16()[(off + np.arange(n)) % 65536]
    return torch.from_numpy(u.view(np.int16).copy()).view(TORCH_DT[dt])


def make_dy(dt, n):
    d = gi.golden_f32_inputs(2, n)
    d = np.where(np.isfinite(d), d, np.float32(1.0)).astype(np.float32)
    if dt == "f64":
        return torch.from_numpy(d.astype(np.float64))
    return torch.from_numpy(d).to(TORCH_DT[dt])


def canonical_bits(t):
    if t.dtype == torch.float64:
        b = t.view(torch.int64).numpy().view(np.uint64).copy()
        b[torch.isnan(t).numpy()] = 0x7FF8000000000000
    elif t.dtype == torch.float32:
        b = t.view(torch.int32).numpy().view(np.uint32).copy()
        b[torch.isnan(t).numpy()] = 0x7FC00000
    else:
        b = t.view(torch.int16).numpy().view(np.uint16).copy()
        b[torch.isnan(t).numpy()] = 0x7E00 if t.dtype == torch.float16 else 0x7FC0
    return b


def run_case(variant, dt, direction, n, threads):
    torch.set_num_threads(threads)
    x = make_x(dt, n)
    if direction == "fwd":
        out = forward(variant, x)
    else:
        xg = x.clone().requires_grad_()
        forward(variant, xg).backward(make_dy(dt, n))
        out = xg.grad
    bits = canonical_bits(out.contiguous())
    case = {"variant": variant, "dtype": dt, "dir": direction, "n": n, "threads": threads,
            "hash": "%016x" % gi.hash64(bits),
            "first": ["%x" % int(v) for v in bits[:N_FIRST]]}
    if n > BLOCK:
        case["block"] = BLOCK
        case["block_hashes"] = ["%016x" % gi.hash64(bits[s:s + BLOCK]) for s in range(0, n, BLOCK)]
    return case


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    for variant in VARIANTS:
        cases = []
        # f64 only for tanh: torch's f64 erf (its bundled SLEEF erfd8) is not reproduced.
        for dt in ["f32", "f16", "bf16"] + (["f64"] if variant == "gelu_pytorch_tanh" else []):
            lengths = {"f32": F32_LENGTHS, "f64": F64_LENGTHS}.get(dt, U16_LENGTHS)
            for direction in ["fwd", "bwd"]:
                for n in lengths:
                    for th in THREADS + (EXTRA_THREADS if n > 16384 else []):
                        cases.append(run_case(variant, dt, direction, n, th))
        doc = {"generator": "tools/ref/gen_gelu_aten_goldens.py",
               "torch_version": torch.__version__,
               "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpu": gi.cpu_model(),
               # F.gelu(approximate='none') on f16 runs oneDNN only where the CPU has AVX512-FP16
               "avx512_fp16": gi.cpu_flag("avx512_fp16"),
               "onednn": torch.backends.mkldnn.is_available(),
               "variant": variant,
               "inputs": "f32: golden_f32_inputs(1, n); f16/bf16: all_u16 from offset (0 if n==65536 else n*7919%65536); "
                         "dy: golden_f32_inputs(2, n), non-finite -> 1.0, rounded to dtype",
               "nan": "NaN outputs hashed as f32 0x7fc00000 / f16 0x7e00 / bf16 0x7fc0",
               "cases": cases}
        path = os.path.join(OUT_DIR, variant + ".json")
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=0)
        os.replace(tmp, path)
        print("wrote", path, len(cases), "cases")


if __name__ == "__main__":
    main()
