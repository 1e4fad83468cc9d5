#!/usr/bin/env python3
"""Reference loss and gradients of one training step: `model(tokens, labels=tokens).loss.backward()`.

The peer is transformers' GPT2LMHeadModel (eager attention, eval mode: dropout off) on PyTorch CPU,
loaded from the golden checkpoints of gen_model_goldens.py with each numerics profile's pieces
swapped in by gm_profiles.load (the same forward as gen_profile_goldens.py). The Megatron GELU
keeps Megatron-LM's custom backward (fused_bias_gelu.py's GeLUFunction, written as plain ops as
gen_gelu_ops_goldens.py does): "meg" applies it to c_fc's output with a zero bias in the dtype;
"megatron" to c_fc's output without its bias and the bias, with gptmeg's forward (input.float() +
bias.float(), the GELU in f32, one rounding: gm_profiles.MegatronMLP) and Megatron's backward as
written, op by op in the dtype (bias_gelu_back; torch.jit.script runs it op by op on CPU), the
same tensor returned for input and bias (gen_act_bwd_goldens.py's definition).

Writes tests/golden/targets/intel-amx/grad/index.json: per config (checkpoint and T), dtype, profile and thread count (1, 2), the f32
loss as hex bits and, per parameter (checkpoint names; wte's gradient includes the tied
lm_head's), gm_hash64 of its gradient's bits in the dtype (f16/bf16 as 16-bit patterns), plus
the full f32 gradients of base/hf and base/megatron (one thread) as safetensors for diagnosis.
The CPU and torch's dispatch are recorded: matmul orders differ by CPU class (docs/numerics.md,
"Torch CPU targets"), so tests/test_grad.c reads these under the target that made them.
Run from the repo root: python3 tools/ref/gen_grad_goldens.py
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gm_inputs  # noqa: E402
from gm_inputs import cpu_model  # noqa: E402
import gm_profiles  # noqa: E402

SRC = os.path.join("tests", "golden", "model")
OUT = os.path.join("tests", "golden", "targets", "intel-amx", "grad")  # the CPU class that made them
# name[@T]: the checkpoint of tests/golden/model/<name> and its tokens, cut to their first T positions
# (13: softmax rows whose length is not a multiple of ATen's 16 lanes)
CONFIGS = ["base", "base@13", "python_invlayer", "fast_eps", "quick_untied"]
PROFILES = gm_profiles.PROFILES
DTYPES = gm_profiles.DTYPES
THREADS = [1, 2]
FULL = [("base", "hf"), ("base", "megatron")]


class MegGelu(torch.nn.Module):
    def forward(self, x):
        return gm_profiles.GeLUFunction.apply(x, torch.zeros(x.shape[-1:], dtype=x.dtype))


class MegatronMLP(torch.nn.Module):
    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    def forward(self, h):
        fc = self.mlp.c_fc
        y = torch.matmul(h, fc.weight)
        g = gm_profiles.MegatronFusedGeLU.apply(y, fc.bias)
        return self.mlp.c_proj(g)


def load(name, profile, dt):
    model = gm_profiles.load(os.path.join(SRC, name), profile, dt)
    for blk in model.transformer.h:
        if profile == "meg":
            blk.mlp.act = MegGelu()
        elif profile == "megatron":
            blk.mlp = MegatronMLP(blk.mlp.mlp)  # gm_profiles wrapped it; keep its Conv1Ds
    return model


def grads_of(model, tokens):
    attention = {"hf": gm_profiles.ORIGINAL_EAGER, "hf-legacy": gm_profiles.legacy_attention,
                 "meg": gm_profiles.meg_attention, "megatron": gm_profiles.megatron_attention}[model.gm_profile]
    gm_profiles.modeling_gpt2.eager_attention_forward = attention
    try:
        ids = torch.as_tensor(tokens).long()
        model.zero_grad(set_to_none=True)
        loss = model(ids, labels=ids).loss
        loss.backward()
    finally:
        gm_profiles.modeling_gpt2.eager_attention_forward = gm_profiles.ORIGINAL_EAGER
    named = {}
    for n, p in model.named_parameters():  # tied lm_head is not listed again: wte's grad holds both
        named[n.replace(".mlp.mlp.", ".mlp.")] = p.grad.detach().clone()
    return loss.detach(), named


def bits(t):
    if t.dtype == torch.float32:
        return t.contiguous().view(torch.int32).numpy().view(np.uint32)
    return t.contiguous().view(torch.int16).numpy().view(np.uint16)


def host_is_intel_amx():
    with open("/proc/cpuinfo") as f:
        text = f.read()
    return "GenuineIntel" in text and " amx_bf16" in text and not any(
        os.environ.get(k) for k in ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS"))


def main():
    if not host_is_intel_amx():
        print("gen_grad_goldens.py: SKIP: these goldens are the intel-amx target's; this host (or its dispatch caps) is another class")
        return 0
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    index = dict(torch=torch.__version__, cpu=cpu_model(), threads=THREADS,
                 env={k: os.environ.get(k) for k in ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")},
                 hash="gm_hash64 of the gradient's bits in the dtype (tools/ref/gm_inputs.py)", configs={})
    for key in CONFIGS:
        name, _, cut = key.partition("@")
        tokens = np.load(os.path.join(SRC, name, "tokens.npy"))
        if cut:
            tokens = tokens[:, :int(cut)]
        index["configs"][key] = dict(model=name, T=int(tokens.shape[1]))
        for dn, dt in DTYPES.items():
            for prof in PROFILES:
                for th in THREADS:
                    torch.set_num_threads(th)
                    model = load(name, prof, dt)
                    loss, g = grads_of(model, tokens)
                    case = dict(loss=f"{int(loss.view(torch.int32).item()) & 0xffffffff:08x}",
                                loss_value=float(loss), grads={n: f"{gm_inputs.hash64(bits(t)):016x}"
                                                            for n, t in g.items()})
                    index["configs"][key][f"{prof}_{dn}_t{th}"] = case
                    if (key, prof) in FULL and dn == "f32" and th == 1:
                        save_file({n: t.contiguous() for n, t in g.items()}, os.path.join(OUT, f"{name}_{prof}_f32.safetensors"),
                                  metadata={"loss": case["loss"]})
                    print(f"{key} {dn} {prof} threads={th}: loss {float(loss):.6f}")
    torch.set_num_threads(1)
    with open(os.path.join(OUT, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
