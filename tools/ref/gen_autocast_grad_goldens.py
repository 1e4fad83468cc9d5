#!/usr/bin/env python3
"""Reference loss and gradients of one bf16-autocast training step (issue 25, recipe bf16-autocast):

    model = GPT2LMHeadModel (f32 parameters, eager attention, eval mode: dropout off)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(tokens, labels=tokens).loss
    loss.backward()                          (outside autocast, as usual)

on PyTorch 2.15.0 CPU / transformers 4.57.3, the golden checkpoints of gen_model_goldens.py, profiles
hf (transformers' own eager attention: it adds the model's f32 causal mask to the bf16 scores, so
under autocast the softmax runs in f32), hf-legacy and meg (gm_profiles' pieces, as gen_grad_goldens.py
loads them; see PROFILES). Every gradient is f32 (the parameters'); the linears'
weight and bias gradients are bf16 values widened by the cast's backward.

Writes tests/golden/targets/intel-amx/grad_autocast/index.json: per config, profile and thread count (1, 2)
the f32 loss as hex bits and, per parameter (checkpoint names; wte's gradient includes the tied
lm_head's), gm_hash64 of its f32 gradient's bits. Read by tests/test_grad_autocast.c under the
intel-amx target (the bf16 matmuls are oneDNN's AMX kernels on this CPU class).
`--dump DIR` also writes every case's full gradients as safetensors into DIR (for diagnosis; not
committed). Run from the repo root: python3 tools/ref/gen_autocast_grad_goldens.py
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_grad_goldens as gg  # noqa: E402
import gm_inputs  # noqa: E402

OUT = os.path.join("tests", "golden", "targets", "intel-amx", "grad_autocast")
CONFIGS = ["base", "base@13", "python_invlayer", "quick_untied"]
THREADS = [1, 2]
# hf: transformers' eager attention (adds the model's f32 mask: the scores promoted, softmax in f32);
# hf-legacy and meg: gm_profiles' attention (no f32 mask: softmax in bf16), meg's layer norms
# (F.layer_norm of x.float(): f32 anyway) and its Megatron GELU (custom backward) on the bf16 c_fc output.
# megatron is left out: its MegatronMLP adds the f32 c_fc bias parameter to the bf16 matmul (the bias is
# not an autocast op's input, so it is never cast), a mix the ops do not model.
PROFILES = ["hf", "hf-legacy", "meg"]
ATTENTION = {"hf": gg.gm_profiles.ORIGINAL_EAGER, "hf-legacy": gg.gm_profiles.legacy_attention,
             "meg": gg.gm_profiles.meg_attention}


def autocast_grads(name, profile, tokens):
    model = gg.load(name, profile, torch.float32)
    ids = torch.as_tensor(tokens).long()
    model.zero_grad(set_to_none=True)
    gg.gm_profiles.modeling_gpt2.eager_attention_forward = ATTENTION[profile]
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(ids, labels=ids).loss
        loss.backward()
    finally:
        gg.gm_profiles.modeling_gpt2.eager_attention_forward = gg.gm_profiles.ORIGINAL_EAGER
    assert loss.dtype == torch.float32
    named = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    return loss.detach(), named


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", help="also write every case's gradients as safetensors into this directory")
    args = ap.parse_args()
    if not gg.host_is_intel_amx():
        print("gen_autocast_grad_goldens.py: SKIP: these goldens are the intel-amx target's; this host is another class")
        return 0
    os.makedirs(OUT, exist_ok=True)
    index = dict(torch=torch.__version__, cpu=gm_inputs.cpu_model(), threads=THREADS, profiles=PROFILES,
                 autocast="torch.autocast('cpu', dtype=torch.bfloat16) around the forward and loss; backward outside",
                 env={k: os.environ.get(k) for k in ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")},
                 hash="gm_hash64 of the f32 gradient's bits (tools/ref/gm_inputs.py)", configs={})
    for key in CONFIGS:
        name, _, cut = key.partition("@")
        tokens = np.load(os.path.join(gg.SRC, name, "tokens.npy"))
        if cut:
            tokens = tokens[:, :int(cut)]
        index["configs"][key] = dict(model=name, T=int(tokens.shape[1]))
        for prof, th in [(p, t) for p in PROFILES for t in THREADS]:
            torch.set_num_threads(th)
            loss, g = autocast_grads(name, prof, tokens)
            assert all(t.dtype == torch.float32 for t in g.values())
            index["configs"][key][f"{prof}_t{th}"] = dict(
                loss=f"{int(loss.view(torch.int32).item()) & 0xffffffff:08x}", loss_value=float(loss),
                grads={n: f"{gm_inputs.hash64(gg.bits(t)):016x}" for n, t in g.items()})
            if args.dump:
                os.makedirs(args.dump, exist_ok=True)
                save_file({n: t.contiguous() for n, t in g.items()},
                          os.path.join(args.dump, f"{key.replace('@', '_')}_{prof}_t{th}.safetensors"))
            print(f"{key} {prof} threads={th}: loss {float(loss):.6f}")
    torch.set_num_threads(1)
    with open(os.path.join(OUT, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
