#!/usr/bin/env python3
"""Torch's f32 mean and rstd of its CPU layer norm (f32, or the reduced-type f16/bf16 kernel), for random rows.

torch.native_layer_norm on an f16/bf16 input with f32 weight and bias runs the same reduced-type
kernel (layer_norm_kernel_mixed_type) but returns mean and rstd in f32, so the moments can be
compared bit for bit before any rounding to the dtype hides them. Writes OUT.npz with, for each
row length N: x{N} [R, N] (f32 values of the dtype), mean{N} [R], rstd{N} [R] (f32).
Used to find which roundings ATen's kernels make (docs/numerics.md, Fidelity); --dtype f32 probes the f32 kernel.
  python3 tools/ref/probe_layernorm_f16.py --out /tmp/ln_probe.npz [--dtype f16] [--rows 200]
"""
import argparse

import numpy as np
import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16", "f32"])
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--lengths", type=int, nargs="+", default=[8, 16, 24, 32, 40, 48, 64, 768])
    ap.add_argument("--eps", type=float, default=1e-5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[args.dtype]
    rng = np.random.default_rng(1)
    out = {}
    for n in args.lengths:
        x = torch.tensor(rng.standard_normal((args.rows, n)).astype(np.float32) * 1.3 + 0.2).to(dt)
        _, mean, rstd = torch.native_layer_norm(x, (n,), torch.ones(n), torch.zeros(n), args.eps)
        out[f"x{n}"] = x.float().numpy()
        out[f"mean{n}"] = mean.reshape(-1).numpy()
        out[f"rstd{n}"] = rstd.reshape(-1).numpy()
    np.savez(args.out, **out)
    print(f"torch {torch.__version__}, cpu capability {torch.backends.cpu.get_cpu_capability()}: wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
