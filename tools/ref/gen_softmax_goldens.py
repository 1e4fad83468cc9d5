#!/usr/bin/env python3
"""Softmax goldens from PyTorch CPU (one thread) for tests/test_softmax.c.

For each dtype (f32, f16, bf16) and row length L: random score rows x [R, L] in the dtype, a count of
visible entries per row (vis, stored as f32) (the rest set to the dtype's finfo.min, as transformers masks), and
torch.softmax(x_masked, dim=-1) in the dtype, so gm_softmax_row_f32 is checked bit for bit in both of
ATen's kernels (f32, reduced-type) for lengths below, at and past its 16-lane vectors.
Writes tests/golden/softmax/softmax.safetensors. Run from the repo root.
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

OUT = os.path.join("tests", "golden", "softmax")
LENGTHS = [1, 5, 15, 16, 17, 24, 31, 32, 48, 64, 100, 257]
ROWS = 48  # per length; 1000 for 17 and 24, where the two kernels' tails part in ~0.1% of 16-bit rows
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def main():
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(9)
    t = {}
    for name, dt in DTYPES.items():
        for n in LENGTHS:
            rows = 1000 if n in (17, 24) else ROWS
            x = (3 * torch.randn(rows, n, generator=gen)).to(dt)
            vis = torch.randint(1, n + 1, (rows,), generator=gen, dtype=torch.int32)
            xm = x.clone()
            for r in range(rows):
                xm[r, int(vis[r]):] = torch.finfo(dt).min
            p = f"{name}.{n}."
            t[p + "x"], t[p + "vis"], t[p + "y"] = x, vis.float(), torch.softmax(xm, dim=-1)
    os.makedirs(OUT, exist_ok=True)
    save_file({k: v.contiguous() for k, v in t.items()}, os.path.join(OUT, "softmax.safetensors"),
              metadata={"torch": torch.__version__, "lengths": json.dumps(LENGTHS),
                        "cpu_capability": torch.backends.cpu.get_cpu_capability()})
    print(f"gen_softmax_goldens: {len(DTYPES)} dtypes x {len(LENGTHS)} lengths -> {OUT}/softmax.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
