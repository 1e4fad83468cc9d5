#!/usr/bin/env python3
"""Layer-norm goldens from PyTorch CPU (one thread) for tests/test_layernorm.c.

For each dtype (f32, f16, bf16) and row length N, random rows x [R, N] in the dtype and
  mean, rstd  f32 [R]: torch.native_layer_norm with f32 weight and bias (for f16/bf16 rows this
              runs ATen's reduced-type kernel and returns its f32 moments before any rounding)
  y     [R, N] in the dtype: F.layer_norm(x, (N,), w, b) with w, b random in the dtype
so gm_layernorm_f32 is checked bit for bit on the moments and on the output, for lengths with and
without a scalar tail and with one, two and three 16-step chunks (the cascade).
Writes tests/golden/layernorm/ln.safetensors. Run from the repo root.
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

OUT = os.path.join("tests", "golden", "layernorm")
LENGTHS = [8, 17, 24, 32, 40, 64, 100, 257, 768, 1600]
ROWS = 12        # rows per length; 64 for the short rows, where one rounding shows in a few percent
EPS = 1e-5
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def main():
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(5)
    t = {}
    for name, dt in DTYPES.items():
        for n in LENGTHS:
            rows = 64 if n <= 100 else ROWS
            x = (torch.randn(rows, n, generator=gen) * 1.3 + 0.2).to(dt)
            w = (1 + 0.2 * torch.randn(n, generator=gen)).to(dt)
            b = (0.1 * torch.randn(n, generator=gen)).to(dt)
            _, mean, rstd = torch.native_layer_norm(x, (n,), torch.ones(n), torch.zeros(n), EPS)
            p = f"{name}.{n}."
            t[p + "x"], t[p + "w"], t[p + "b"] = x, w, b
            t[p + "mean"], t[p + "rstd"] = mean.reshape(-1).float(), rstd.reshape(-1).float()
            t[p + "y"] = torch.nn.functional.layer_norm(x, (n,), w, b, EPS)
    os.makedirs(OUT, exist_ok=True)
    save_file({k: v.contiguous() for k, v in t.items()}, os.path.join(OUT, "ln.safetensors"),
              metadata={"torch": torch.__version__, "lengths": json.dumps(LENGTHS), "eps": repr(EPS)})
    print(f"gen_layernorm_goldens: {len(DTYPES)} dtypes x {len(LENGTHS)} lengths -> {OUT}/ln.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
