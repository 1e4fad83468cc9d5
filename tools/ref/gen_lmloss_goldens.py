#!/usr/bin/env python3
"""Training-loss goldens from PyTorch CPU for tests/test_lmloss.c (gm_op_lmloss_fwd/bwd).

transformers 4.57.3 GPT2LMHeadModel's loss is ForCausalLMLoss (transformers/loss/loss_utils.py):
logits.float(), labels padded with -100 and shifted by one, F.cross_entropy(ignore_index=-100,
reduction='mean') over all B*T rows. This script calls that function itself on logits (B, T, V) in
the dtype (requires_grad) and runs loss.backward(): the golden is the loss, the log_softmax output
torch saves for the backward (logp, f32) and logits.grad (dlogits, in the dtype).

Inputs are deterministic streams that src/core/inputs.c reproduces bit for bit (gm_inputs.py):
  logits[i] = (k(21, i) * 10 * 2^-23) rounded to f32, then to the dtype   (uniform on [-10, 10))
  labels[i] = -100 where stream_u64(22, i) >> 61 == 0 (one in eight), else stream_u64(23, i) % V
with k(s, i) = (stream_u64(s, i) >> 40) - 2^23. Stored per case: the loss's f32 bits, the number
scored, and gm_hash64 of logp's and dlogits' bits with SAMPLES evenly spaced values of each.
Writes tests/golden/lmloss/lmloss.json. With --target NAME (run under that target's dispatch caps, tests/golden/targets/README.md) it writes
tests/golden/targets/NAME/lmloss/lmloss.json instead. Run from the repo root with /work/venv/bin/python.
"""
import json
import os
import sys
import time

import numpy as np
import torch
from transformers.loss.loss_utils import ForCausalLMLoss

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gm_inputs as gi  # noqa: E402

OUT = os.path.join("tests", "golden", "lmloss", "lmloss.json")
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# (V, B, T): V in {7, 50, 1000, 50257}; rows below and above 16 (the log-softmax's lanes), a row
# with nothing scored (1x1), 4,800 rows (nll's cascade climbs three levels)
CASES = [(7, 1, 1), (7, 2, 5), (7, 8, 600), (50, 3, 17), (50, 2, 40), (1000, 2, 5), (1000, 4, 64),
         (50257, 2, 5), (50257, 3, 17)]
THREADS = [1, 2]
SAMPLES = 48


def stream_k(seed, n):
    z = gi.stream_u64(seed, np.arange(n, dtype=np.uint64))
    return (z >> np.uint64(40)).astype(np.int64) - (1 << 23)


def inputs(dt, V, B, T):
    n = B * T * V
    x = torch.from_numpy((stream_k(21, n).astype(np.float64) * 10.0 * 2.0**-23).astype(np.float32)).to(dt)
    idx = np.arange(B * T, dtype=np.uint64)
    ign = (gi.stream_u64(22, idx) >> np.uint64(61)) == 0
    lab = (gi.stream_u64(23, idx) % np.uint64(V)).astype(np.int64)
    lab[ign] = -100
    return x.reshape(B, T, V), torch.from_numpy(lab).reshape(B, T)


def bits(t):
    t = t.detach().contiguous().reshape(-1)
    if t.dtype == torch.float32:
        u = t.view(torch.int32).numpy().view(np.uint32).copy()
        u[np.isnan(t.numpy())] = 0x7FC00000
    else:
        u = t.view(torch.int16).numpy().view(np.uint16).copy()
        u[np.isnan(t.float().numpy())] = 0x7E00 if t.dtype == torch.float16 else 0x7FC0
    return u


def summary(u):
    n = len(u)
    idx = sorted(set(k * n // SAMPLES for k in range(SAMPLES)))
    return {"hash": "%016x" % gi.hash64(u), "samples": [int(u[i]) for i in idx]}


def run_case(dn, V, B, T, threads):
    torch.set_num_threads(threads)
    x, lab = inputs(DTYPES[dn], V, B, T)
    x = x.clone().requires_grad_(True)
    saved = {}

    def pack(t):  # the log_softmax output autograd saves (the only (B*T, V) f32 tensor saved)
        if t.dtype == torch.float32 and t.dim() == 2 and t.shape == (B * T, V) and t.grad_fn is not None \
                and "LogSoftmax" in type(t.grad_fn).__name__:
            saved["logp"] = t.detach().clone()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = ForCausalLMLoss(x, lab, V)
    loss.backward()
    scored = int(((torch.nn.functional.pad(lab, (0, 1), value=-100)[..., 1:]) != -100).sum())
    logp = saved.get("logp")
    if logp is None:  # the hook did not see it: recompute it the same way
        logp = torch.log_softmax(x.detach().float().reshape(-1, V), dim=1)
    return {"dtype": dn, "V": V, "B": B, "T": T, "threads": threads, "n_scored": scored,
            "loss": int(bits(loss.reshape(1))[0]), "logp": summary(bits(logp)), "dlogits": summary(bits(x.grad))}


def main():
    global OUT
    t0 = time.time()
    target = "intel-amx" if "act_bwd" in OUT else "any AVX512"
    if "--target" in sys.argv:
        target = sys.argv[sys.argv.index("--target") + 1]
        OUT = os.path.join("tests", "golden", "targets", target, *OUT.split(os.sep)[2:])
    cases = [run_case(dn, V, B, T, th) for dn in DTYPES for (V, B, T) in CASES for th in THREADS]
    doc = {"generator": "tools/ref/gen_lmloss_goldens.py", "torch": torch.__version__,
           "transformers": __import__("transformers").__version__, "cpu": gi.cpu_model(),
           "cpu_capability": torch.backends.cpu.get_cpu_capability(), "target": target,
           "env": {k: os.environ[k] for k in ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")
                   if k in os.environ}, "samples": SAMPLES,
           "note": "no dispatch caps (ATen AVX512); log_softmax/nll_loss have no matmul: the same on zen4",
           "cases": cases}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"gen_lmloss_goldens: {len(cases)} cases in {time.time() - t0:.0f}s -> {OUT} ({os.path.getsize(OUT)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
