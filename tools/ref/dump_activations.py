#!/usr/bin/env python3
"""Dumps every activation of transformers' GPT-2 under a numerics profile, with gptmeg's names.

  python3 tools/ref/dump_activations.py --model DIR --profile hf --dtype f16 \\
      --tokens-npy T.npy --out acts.safetensors

Forward hooks on the real modules (and a wrapper around softmax for the scores and
probabilities) record, per layer l, the points gptmeg's forward probes (docs/numerics.md):
  embed, h.l.ln_1, h.l.qkv, h.l.scores, h.l.probs, h.l.attn, h.l.attn_out, h.l.resid_attn,
  h.l.ln_2, h.l.fc, h.l.act, h.l.mlp, h.l.resid, ln_f, logits
as f32 tensors holding the dtype's values (rows N = B*T; scores/probs [B, H, T, T] with the
masked entries set to 0), so `gptmeg diverge --against FILE` can compare a run with them.
The logits are checked against an unhooked run of the same model: the hooks change nothing.
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gm_profiles  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--profile", default="hf", choices=gm_profiles.PROFILES)
    ap.add_argument("--dtype", default="f32", choices=list(gm_profiles.DTYPES))
    ap.add_argument("--tokens-npy", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=1, help="torch's thread count (gptmeg diverge --threads alike)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    tokens = np.load(a.tokens_npy).astype(np.int64)
    if tokens.ndim == 1:
        tokens = tokens[None, :]
    B, T = tokens.shape
    model = gm_profiles.load(a.model, a.profile, gm_profiles.DTYPES[a.dtype])
    plain = gm_profiles.run(model, tokens)
    n_layer = model.config.n_layer
    out = {}

    def put(name, t):
        out[name] = t.detach().float().reshape(-1, t.shape[-1]).contiguous() if t.dim() == 3 else t.detach().float().contiguous()

    def hook(name, use_input=False):
        def f(mod, inp, outp):
            t = inp[0] if use_input else (outp[0] if isinstance(outp, tuple) else outp)
            put(name, t)
        return f

    hs = []
    tr = model.transformer
    hs.append(tr.drop.register_forward_hook(hook("embed")))
    for l, blk in enumerate(tr.h):
        p = f"h.{l}."
        hs.append(blk.ln_1.register_forward_hook(hook(p + "ln_1")))
        hs.append(blk.attn.c_attn.register_forward_hook(hook(p + "qkv")))
        hs.append(blk.attn.c_proj.register_forward_hook(hook(p + "attn", use_input=True)))
        hs.append(blk.attn.c_proj.register_forward_hook(hook(p + "attn_out")))
        hs.append(blk.ln_2.register_forward_hook(hook(p + "resid_attn", use_input=True)))
        hs.append(blk.ln_2.register_forward_hook(hook(p + "ln_2")))
        mlp = blk.mlp.mlp if isinstance(blk.mlp, gm_profiles.MegatronMLP) else blk.mlp
        if isinstance(blk.mlp, gm_profiles.MegatronMLP):  # c_fc's matmul runs without the module
            hs.append(blk.mlp.register_forward_hook(
                lambda mod, inp, outp, p=p, m=mlp: put(p + "fc", torch.matmul(inp[0], m.c_fc.weight))))
        else:
            hs.append(mlp.c_fc.register_forward_hook(hook(p + "fc")))
        hs.append(mlp.c_proj.register_forward_hook(hook(p + "act", use_input=True)))
        hs.append(mlp.c_proj.register_forward_hook(hook(p + "mlp")))
        hs.append(blk.register_forward_hook(hook(p + "resid")))
    hs.append(tr.ln_f.register_forward_hook(hook("ln_f")))

    calls = [0]
    real_softmax = F.softmax
    dtype = gm_profiles.DTYPES[a.dtype]

    def softmax(x, dim=None, **kw):  # attention's softmax: x is the scores with the mask applied
        y = real_softmax(x, dim=dim, **kw)
        l = calls[0] % n_layer
        calls[0] += 1
        tq, tk = x.shape[-2], x.shape[-1]
        keep = torch.ones(tq, tk, dtype=torch.bool).tril(tk - tq)
        out[f"h.{l}.scores"] = torch.where(keep, x.float(), torch.zeros((), dtype=torch.float32)).contiguous()
        out[f"h.{l}.probs"] = torch.where(keep, y.to(dtype).float(), torch.zeros((), dtype=torch.float32)).contiguous()
        return y

    F.softmax = softmax
    try:
        logits = gm_profiles.run(model, tokens)
    finally:
        F.softmax = real_softmax
        for h in hs:
            h.remove()
    if not torch.equal(logits, plain):
        sys.exit("dump_activations: the hooked run differs from the plain run")
    put("logits", logits)
    if calls[0] != n_layer:
        sys.exit(f"dump_activations: saw {calls[0]} softmax calls for {n_layer} layers")
    save_file(out, a.out, metadata={"profile": a.profile, "dtype": a.dtype, "torch": torch.__version__,
                                    "B": str(B), "T": str(T)})
    print(f"dump_activations: {len(out)} tensors -> {a.out}")


if __name__ == "__main__":
    main()
