"""Probe: F.gelu as the installed torch runs it under one torch CPU target's dispatch caps.

Set the target's environment before running (gptmeg/target.h torch_env; for example
ONEDNN_MAX_CPU_ISA=AVX512_CORE for intel-avx512), then:
    python3 tools/ref/probe_target_gelu.py NAME
writes /tmp/probe_gelu_NAME.npz: for bf16 and f16, every one of the 65536 bit patterns through
F.gelu (approximate 'none' and 'tanh'), forward and the backward with dy = 1; for f32, 65536
randn*4 inputs (seed 1) the same way. Comparing two targets' files shows which patterns differ
(how docs/numerics.md 5.1 was measured). One thread.
"""
import sys

import numpy as np
import torch
import torch.nn.functional as F


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "native"
    torch.set_num_threads(1)
    out = {}
    pats = np.arange(65536, dtype=np.uint16).view(np.int16)
    for dn, dt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
        x = torch.from_numpy(pats.copy()).view(dt)
        for approx in ("none", "tanh"):
            out[f"{dn}_{approx}_fwd"] = F.gelu(x, approximate=approx).view(torch.int16).numpy().view(np.uint16)
            xg = x.clone().requires_grad_(True)
            F.gelu(xg, approximate=approx).backward(torch.ones_like(xg))
            out[f"{dn}_{approx}_bwd1"] = xg.grad.view(torch.int16).numpy().view(np.uint16)
    xf = (np.random.default_rng(1).standard_normal(65536) * 4).astype(np.float32)
    out["f32_x"] = xf
    for approx in ("none", "tanh"):
        x = torch.from_numpy(xf)
        out[f"f32_{approx}_fwd"] = F.gelu(x, approximate=approx).numpy()
        xg = x.clone().requires_grad_(True)
        F.gelu(xg, approximate=approx).backward(torch.ones_like(xg))
        out[f"f32_{approx}_bwd1"] = xg.grad.numpy()
    np.savez(f"/tmp/probe_gelu_{name}.npz", **out)
    print(name, "capability", torch.backends.cpu.get_cpu_capability(), "->", f"/tmp/probe_gelu_{name}.npz")


if __name__ == "__main__":
    main()
