#!/usr/bin/env python3
"""Linear backward (issue 25): torch autograd's bits against gptmeg's gm_op_linear_bwd, shape by shape.

Runs torch 2.15's autograd of GPT-2's two linears on seeded inputs (Conv1D: addmm(b, x.view(-1, C), W),
W [C, OC]; lm_head: F.linear(x, W) without bias, W [V, C], x 3-D as GPT2LMHeadModel passes it), writes
the inputs, runs a probe binary built on gptmeg (argv: dir N C OC trans threads dtype; it writes
gm_dx.bin, gm_dw.bin, gm_db.bin; tools/ref/probe_linear_bwd.c) and prints the share of bit-identical outputs per gradient.
  python3 tools/ref/probe_linear_bwd.py PROBE [--threads 1 2] [--dtype f32] [--shapes 4x16x48 1x768x50257t ...]
"""
import argparse, os, subprocess, tempfile
import numpy as np
import torch

DT = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def run_torch(N, C, OC, trans, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, N, C, generator=g).to(dtype).requires_grad_()
    if trans:
        w = (torch.randn(OC, C, generator=g) * 0.1).to(dtype).requires_grad_()
        y = torch.nn.functional.linear(x, w)
        b = None
    else:
        w = (torch.randn(C, OC, generator=g) * 0.1).to(dtype).requires_grad_()
        b = (torch.randn(OC, generator=g) * 0.1).to(dtype).requires_grad_()
        y = torch.addmm(b, x.view(-1, C), w).view(1, N, OC)
    dy = torch.randn(1, N, OC, generator=g).to(dtype)
    y.backward(dy)
    f = lambda t: t.detach().float().numpy().reshape(-1)
    return dict(inp=f(x), w=f(w), dout=f(dy), dx=f(x.grad), dw=f(w.grad), db=None if b is None else f(b.grad))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("probe")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--shapes", nargs="+", default=["4x16x48", "64x768x2304", "8x16x64t"])
    a = ap.parse_args()
    for th in a.threads:
        torch.set_num_threads(th)
        for s in a.shapes:
            trans = s.endswith("t")
            N, C, OC = map(int, s.rstrip("t").split("x"))
            r = run_torch(N, C, OC, trans, DT[a.dtype], 1000 + N + C + OC)
            with tempfile.TemporaryDirectory() as d:
                for k in ("inp", "w", "dout"):
                    r[k].astype(np.float32).tofile(os.path.join(d, k + ".bin"))
                subprocess.run([a.probe, d, str(N), str(C), str(OC), str(int(trans)), str(th), a.dtype], check=True)
                out = []
                for k in ("dx", "dw", "db"):
                    if r[k] is None: continue
                    got = np.fromfile(os.path.join(d, "gm_" + k + ".bin"), dtype=np.float32)
                    same = (got.view(np.uint32) == r[k].astype(np.float32).view(np.uint32))
                    out.append(f"{k} {same.mean():.4f}")
            print(f"threads {th} {a.dtype} N={N} C={C} OC={OC} {'lm_head' if trans else 'conv1d'}: " + "  ".join(out), flush=True)


if __name__ == "__main__":
    main()
