#!/usr/bin/env python3
"""Layer-norm goldens from PyTorch CPU (one thread) for tests/test_layernorm.c.

For each dtype (f32, f16, bf16) and row length N, random rows x [R, N] in the dtype and
  mean, rstd  f32 [R]: torch.native_layer_norm with f32 weight and bias (for f16/bf16 rows this
              runs ATen's reduced-type kernel and returns its f32 moments before any rounding)
  y     [R, N] in the dtype: F.layer_norm(x, (N,), w, b) with w, b random in the dtype
so gm_layernorm_f32 is checked bit for bit on the moments and on the output, for lengths with and
without a scalar tail and with one, two and three 16-step chunks (the cascade). And f32 rows whose
moments hang on the rounding of the cascade's vector merges (moments.N.x, .mean, .rstd; N 896, 1664,
3840, chunk counts no power of two): rows of numpy's default_rng(N) standard normal draws [3000, N]
* 1.3 + 0.2, those where an earlier fit of that merge, fma(d, (d * c) * m0, m2 + m2_add), missed
torch's rstd (found with a probe of gptmeg's kernel; torch's own merge is fma(m0 * d, c * d, ...)),
and the first four rows.
Writes tests/golden/layernorm/ln.safetensors. Run from the repo root.
"""
import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file

OUT = os.path.join("tests", "golden", "layernorm")
LENGTHS = [8, 17, 24, 32, 40, 64, 100, 257, 768, 1600]
ROWS = 12        # rows per length; 64 for the short rows, where one rounding shows in a few percent
EPS = 1e-5
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
MOMENT_ROWS = {896: [220, 1337, 1631, 1821, 1886, 1985, 2972], 1664: [726, 1243], 3840: [1266, 1392, 2945]}


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
    for n, picks in MOMENT_ROWS.items():
        x = np.random.default_rng(n).standard_normal((3000, n)).astype(np.float32) * np.float32(1.3) + np.float32(0.2)
        x = torch.from_numpy(x[[0, 1, 2, 3] + picks].copy())
        _, mean, rstd = torch.native_layer_norm(x, (n,), torch.ones(n), torch.zeros(n), EPS)
        t[f"moments.{n}.x"], t[f"moments.{n}.mean"], t[f"moments.{n}.rstd"] = x, mean.reshape(-1), rstd.reshape(-1)
    os.makedirs(OUT, exist_ok=True)
    save_file({k: v.contiguous() for k, v in t.items()}, os.path.join(OUT, "ln.safetensors"),
              metadata={"torch": torch.__version__, "lengths": json.dumps(LENGTHS), "eps": repr(EPS)})
    print(f"gen_layernorm_goldens: {len(DTYPES)} dtypes x {len(LENGTHS)} lengths -> {OUT}/ln.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
