#!/usr/bin/env python3
"""Live check of `gptmeg grad` against torch's loss.backward() on a model of any shape (GPT-2 124M by
default), where the goldens (gen_grad_goldens.py) only hold small models.

Makes a random checkpoint with `gptmeg init --config CONFIG --seed S`, random token ids [B, T], runs
`gptmeg grad` and transformers' GPT2LMHeadModel (eval mode, eager attention, the profile's pieces
swapped in as gen_grad_goldens.py does) under the same torch thread count, and prints per dtype the
loss bits of both and, per parameter, how many gradient elements differ and the largest difference.
Exit status 1 when anything differs. Run from the repo root with the pinned torch
(tools/ref/requirements.txt); f32 runs of op-by-op tanh GELUs need GPTMEG_TORCH_MKL (set here to
torch's own library unless already set).

  python3 tools/ref/check_grad_fidelity.py --gptmeg build/gptmeg [--config gpt2] [--dtypes f32 bf16]
      [--profiles hf meg] [--batch 2] [--seq 64] [--threads 1]

`--dtypes autocast`: the f32 model's forward under torch.autocast('cpu', dtype=torch.bfloat16), backward
outside (recipe bf16-autocast's step; `gptmeg grad --autocast`), f32 gradients compared bit for bit.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_grad_goldens as gg  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--gptmeg", default="build/gptmeg")
ap.add_argument("--config", default="gpt2")
ap.add_argument("--dtypes", nargs="+", default=["f32", "bf16"], choices=["f32", "f16", "bf16", "autocast"])
ap.add_argument("--profiles", nargs="+", default=["hf"], choices=gg.PROFILES)
ap.add_argument("--batch", type=int, default=2)
ap.add_argument("--seq", type=int, default=64)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--list", action="store_true", help="also name every tensor that differs, with its count")
args = ap.parse_args()


def load_dir(d, profile, dt):
    model = gg.gm_profiles.load(d, profile, dt)
    for blk in model.transformer.h:
        if profile == "meg":
            blk.mlp.act = gg.MegGelu()
        elif profile == "megatron":
            blk.mlp = gg.MegatronMLP(blk.mlp.mlp)
    return model


def autocast_grads(model, ids):
    """gg.grads_of with the forward under torch.autocast('cpu', bfloat16) and the backward outside it."""
    gg.gm_profiles.modeling_gpt2.eager_attention_forward = {
        "hf": gg.gm_profiles.ORIGINAL_EAGER, "hf-legacy": gg.gm_profiles.legacy_attention,
        "meg": gg.gm_profiles.meg_attention, "megatron": gg.gm_profiles.megatron_attention}[model.gm_profile]
    try:
        ids = torch.as_tensor(ids).long()
        model.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(ids, labels=ids).loss
        loss.backward()
    finally:
        gg.gm_profiles.modeling_gpt2.eager_attention_forward = gg.gm_profiles.ORIGINAL_EAGER
    return loss.detach(), {n.replace(".mlp.mlp.", ".mlp."): p.grad.detach().clone() for n, p in model.named_parameters()}


def main():
    env = dict(os.environ)
    env.setdefault("GPTMEG_TORCH_MKL", os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
    torch.set_num_threads(args.threads)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        mdir = os.path.join(tmp, "m")
        subprocess.run([args.gptmeg, "init", "--config", args.config, "--seed", str(args.seed), "--out", mdir],
                       check=True, capture_output=True, env=env)
        vocab = load_dir(mdir, "hf", torch.float32).config.vocab_size
        ids = np.random.default_rng(args.seed).integers(0, vocab, size=(args.batch, args.seq), dtype=np.int32)
        np.save(os.path.join(tmp, "ids.npy"), ids)
        for dn in args.dtypes:
            for prof in args.profiles:
                out = os.path.join(tmp, f"g_{dn}_{prof}.safetensors")
                ac = dn == "autocast"
                subprocess.run([args.gptmeg, "grad", "--model", mdir, "--tokens-npy", os.path.join(tmp, "ids.npy"),
                                *(["--autocast"] if ac else ["--dtype", dn]), "--profile", prof, "--threads",
                                str(args.threads), "--out", out], check=True, capture_output=True, env=env)
                mine = load_file(out)
                model = load_dir(mdir, prof, torch.float32 if ac else gg.DTYPES[dn])
                loss, ref = autocast_grads(model, ids) if ac else gg.grads_of(model, ids)
                same_loss = mine["loss"].float().view(torch.int32).item() == loss.float().view(torch.int32).item()
                ndiff = total = 0
                worst = ("", 0.0)
                for name, g in ref.items():
                    a, b = mine[name].float(), g.float()
                    d = (a.view(torch.int32) != b.view(torch.int32)) if dn == "f32" else (mine[name] != g)
                    k = int(d.sum())
                    ndiff += k
                    total += g.numel()
                    if k:
                        m = float((a - b).abs().max())
                        if args.list:
                            print(f"  {name}: {k}/{g.numel()} differ, largest {m:.3g}")
                        if m > worst[1]:
                            worst = (name, m)
                print(f"{args.config} {dn} {prof} B={args.batch} T={args.seq} threads={args.threads}: loss "
                      f"{'identical' if same_loss else 'differs'} ({float(loss):.6f}); gradients: {total - ndiff}/{total} "
                      f"elements bit-identical" + (f", largest difference {worst[1]:.3g} in {worst[0]}" if ndiff else ""))
                bad += (not same_loss) or ndiff > 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
