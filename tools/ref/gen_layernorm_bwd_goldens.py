#!/usr/bin/env python3
"""Layer-norm backward goldens from PyTorch CPU autograd for tests/test_layernorm_bwd.c.

For each dtype (f32, f16, bf16) and shape (N rows, C channels): random x [N, C], w, b [C] and the
incoming gradient dy [N, C], all in the dtype, and the gradients autograd writes for
  native  y = F.layer_norm(x, (C,), w, b, eps)                                  (profile "hf")
  fp32    y = F.layer_norm(x.float(), (C,), w.float(), b.float(), eps).to(dtype)  (profile "meg")
after y.backward(dy): dx [N, C] and dw, db [C] in the dtype, with torch.set_num_threads(1), (2), and
(3), (4) (oversubscribed on a 2-core machine; the split does not depend on cores): ATen reduces
dgamma/dbeta through one buffer per thread, so they depend on the thread count; dx does not, which
this script asserts, so dx is stored once.
For f32 the two rules are one graph: only "native" is stored (the script asserts they agree).
Writes tests/golden/layernorm_bwd/ln_bwd.safetensors (metadata: torch version, CPU, capability).
Run from the repo root with the pinned python (/work/venv/bin/python).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gm_inputs import cpu_model  # noqa: E402
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join("tests", "golden", "layernorm_bwd")
SHAPES = [(c, n) for c in (8, 24, 64) for n in (1, 3, 16, 64)] + [(768, n) for n in (1, 3)]
# Rows whose length leaves a partial vector (ATen's AVX2 kernels: 8 f32 lanes, 16-element f16/bf16
# steps), with x far from 0 (mean OFFSET): db * mean - ds then cancels, so dx shows the last bits of
# the ds/db reductions even after rounding to f16/bf16.
TAIL_SHAPES = [(5, 32), (12, 32), (40, 32), (44, 32)]
OFFSET = 300.0
# GPT-2's width over many rows (each thread's buffer accumulates N / T rows): inputs from an integer
# hash that tests/test_layernorm_bwd.c computes too (hash_inputs), so only dw, db (1 to 4 threads)
# and the dx of rows DX_ROWS are stored.
BIG = [(768, 256)]
DX_ROWS = [0, 255]


def h24(i):
    """The top 24 bits of i * 2654435761 (mod 2^32), as an integer in [0, 2^24)."""
    return ((i * 2654435761) & 0xFFFFFFFF) >> 8


def hash_inputs(c, n, dt):
    """x[i] = (h24(i) - 2^23 + 2^21) 2^-21, dy[i] = (h24(i + 1000003) - 2^23) 2^(i % 5 - 25),
    w[j] = (2^23 + h24(j + 77) / 2 (floor) - 2^22) 2^-23, b[j] = (h24(j + 999) - 2^23) 2^-26:
    each exact in f32, then rounded to the dtype."""
    x = [(h24(i) - (1 << 23) + (1 << 21)) * 2.0 ** -21 for i in range(n * c)]
    dy = [(h24(i + 1000003) - (1 << 23)) * 2.0 ** (i % 5 - 25) for i in range(n * c)]
    w = [((1 << 23) + (h24(j + 77) >> 1) - (1 << 22)) * 2.0 ** -23 for j in range(c)]
    b = [(h24(j + 999) - (1 << 23)) * 2.0 ** -26 for j in range(c)]

    def f(v, *shape):
        return torch.tensor(v, dtype=torch.float32).to(dt).view(*shape)
    return f(x, n, c), f(w, c), f(b, c), f(dy, n, c)
EPS = 1e-5
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def grads(rule, x, w, b, dy, threads):
    torch.set_num_threads(threads)
    x, w, b = (t.detach().clone().requires_grad_(True) for t in (x, w, b))
    if rule == "native":
        y = F.layer_norm(x, (x.shape[-1],), w, b, EPS)
    else:
        y = F.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float(), EPS).to(x.dtype)
    y.backward(dy)
    return x.grad, w.grad, b.grad


def same(a, b):
    iv = {2: torch.int16, 4: torch.int32}
    return a.dtype == b.dtype and torch.equal(a.view(iv[a.element_size()]), b.view(iv[b.element_size()]))


def main():
    gen = torch.Generator().manual_seed(25)
    t = {}
    thread_dep = 0
    for name, dt in DTYPES.items():
        for c, n in SHAPES + TAIL_SHAPES:
            off = OFFSET if (c, n) in TAIL_SHAPES else 0.2
            x = (torch.randn(n, c, generator=gen) * 1.3 + off).to(dt)
            w = (1 + 0.5 * torch.randn(c, generator=gen)).to(dt)
            b = (0.1 * torch.randn(c, generator=gen)).to(dt)
            dy = (torch.randn(n, c, generator=gen) * 0.7).to(dt)
            p = f"{name}.{c}.{n}."
            t[p + "x"], t[p + "w"], t[p + "b"], t[p + "dy"] = x, w, b, dy
            for rule in ("native", "fp32"):
                g1 = grads(rule, x, w, b, dy, 1)
                g2 = grads(rule, x, w, b, dy, 2)
                g3 = grads(rule, x, w, b, dy, 3)
                g4 = grads(rule, x, w, b, dy, 4)
                for g in (g2, g3, g4):
                    assert same(g1[0], g[0]), f"{p}{rule}: dx depends on the thread count"
                if name == "f32" and rule == "fp32":
                    for u, v in zip(g1, t_native):
                        assert same(u, v), f"{p}: the f32 rules differ"
                    for u, v in zip(g2, t_native2):
                        assert same(u, v), f"{p}: the f32 rules differ (2 threads)"
                    continue
                if rule == "native":
                    t_native, t_native2 = g1, g2
                q = p + rule + "."
                t[q + "dx"] = g1[0]
                t[q + "t1.dw"], t[q + "t1.db"] = g1[1], g1[2]
                t[q + "t2.dw"], t[q + "t2.db"] = g2[1], g2[2]
                t[q + "t3.dw"], t[q + "t3.db"] = g3[1], g3[2]
                t[q + "t4.dw"], t[q + "t4.db"] = g4[1], g4[2]
                thread_dep += (not same(g1[1], g2[1])) + (not same(g1[2], g2[2]))
        for c, n in BIG:
            x, w, b, dy = hash_inputs(c, n, dt)
            for rule in ("native", "fp32"):
                if name == "f32" and rule == "fp32":
                    continue
                g = [grads(rule, x, w, b, dy, th) for th in (1, 2, 3, 4)]
                for gt in g[1:]:
                    assert same(g[0][0], gt[0]), f"{name} big {rule}: dx depends on the thread count"
                q = f"{name}.big.{c}.{n}.{rule}."
                t[q + "dx_rows"] = g[0][0][DX_ROWS]
                for th in range(4):
                    t[q + f"t{th + 1}.dw"], t[q + f"t{th + 1}.db"] = g[th][1], g[th][2]
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "ln_bwd.safetensors")
    save_file({k: v.contiguous() for k, v in t.items()}, path,
              metadata={"torch": torch.__version__, "shapes": json.dumps(SHAPES + TAIL_SHAPES), "eps": repr(EPS),
                        "cpu": cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                        "threads": "1, 2, 3, 4 (t1..t4)"})
    print(f"gen_layernorm_bwd_goldens: {len(DTYPES)} dtypes x {len(SHAPES) + len(TAIL_SHAPES)} shapes -> {path} "
          f"({os.path.getsize(path)} bytes; dw/db differ between 1 and 2 threads in {thread_dep} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
