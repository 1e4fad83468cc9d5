#!/usr/bin/env python3
"""Greedy-decode goldens: transformers' generate(output_logits=True) on a small GPT-2 under the host's
torch CPU target (issue 23), for tests/test_decode.c.

A decode step runs torch's one-row kernels (MKL's one-row sgemm kernels, oneDNN's one-row brgemm,
the attention's one-row bmm slices, ATen's gemv), not the prefill's, so these goldens hold what a
user's transformers generate() gives, step by step. The model (tests/golden/decode_model/, written
here with torch.manual_seed(11): n_embd 128, 2 heads of 64, 2 layers, vocabulary 400, n_positions
96, gelu_pytorch_tanh, weights at O(1) scale) is wide enough for those kernels: its Conv1D rows
pass torch's 16^3 rule, the 2-thread K cut of the one-row kernel (K 512 >= 256) happens, and the
scores' batch crosses 16^3 at 32 keys. Per case (profile, dtype, torch threads 1 and 2): the logits
[steps, 400] of 80 greedy tokens after an 8-token prompt (prompt stored). Cases: hf in f32, f16 and
bf16; meg in f16 and bf16 (their GELUs need no MKL VML; the f32 op-by-op tanh would). Runs where
torch's kernels are the target's natively (an Intel CPU with AVX-512, no dispatch caps), or for
avx2 on an Intel CPU under the avx2 caps (make_goldens.py sets them), and writes
tests/golden/targets/<target>/decode/decode.safetensors (--target; the machine in the metadata).
  /work/venv/bin/python tools/ref/gen_decode_goldens.py --target intel-avx512-fp16
  MKL_ENABLE_INSTRUCTIONS=AVX2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 \\
      /work/venv/bin/python tools/ref/gen_decode_goldens.py --target avx2
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gm_profiles  # noqa: E402
from gen_matmul_avx2_goldens import CAPS as AVX2_CAPS  # noqa: E402
from gen_matmul_kparts_goldens import MKL_INTEL_AVX512, native_mkl_intel  # noqa: E402
from gm_inputs import cpu_model  # noqa: E402

MODEL = os.path.join("tests", "golden", "decode_model")
CASES = [("hf", "f32"), ("hf", "f16"), ("hf", "bf16"), ("meg", "f16"), ("meg", "bf16")]
PROMPT, STEPS = 8, 80


def write_model():
    torch.manual_seed(11)
    cfg = GPT2Config(vocab_size=400, n_positions=96, n_embd=128, n_layer=2, n_head=2,
                     activation_function="gelu_pytorch_tanh")
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and "ln" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p) if name.endswith("weight") else 0.1 * torch.randn_like(p))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / p.shape[0] ** 0.5 * (1.0 if "wte" in name or "wpe" in name else 1.5))
    os.makedirs(MODEL, exist_ok=True)
    model.save_pretrained(MODEL, safe_serialization=True)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="zen4", help="the host's target (make_goldens.py passes each one it makes)")
    args = ap.parse_args()
    intel = "GenuineIntel" in open("/proc/cpuinfo").read()
    avx2 = args.target == "avx2" and intel and all(os.environ.get(k) == v for k, v in AVX2_CAPS.items())
    if not avx2 and (args.target not in MKL_INTEL_AVX512 or not native_mkl_intel()):
        print(f"gen_decode_goldens: skipped for {args.target} (needs that target's CPU natively: an Intel CPU with "
              "AVX-512, no dispatch caps; targets " + ", ".join(MKL_INTEL_AVX512) + "; or avx2 under its caps on an "
              "Intel CPU)")
        return
    write_model()
    prompt = torch.randint(0, 400, (1, PROMPT), generator=torch.Generator().manual_seed(12))
    t = {"prompt": prompt.to(torch.float32)}  # ids < 2^24: exact as f32 (gptmeg reads float tensors)
    for prof, dts in CASES:
        for th in (1, 2):
            torch.set_num_threads(th)
            model = gm_profiles.load(MODEL, prof, gm_profiles.DTYPES[dts])
            logits = gm_profiles.generate(model, prompt.numpy(), STEPS)
            assert logits.shape == (STEPS, 400), logits.shape
            t[f"{prof}.{dts}.t{th}"] = logits.contiguous()
            print(f"  {prof} {dts} {th} thread(s): tokens {logits.argmax(-1)[:12].tolist()} ...")
    out = os.path.join("tests", "golden", "targets", args.target, "decode")
    os.makedirs(out, exist_ok=True)
    meta = {"torch": torch.__version__, "cases": json.dumps(CASES), "cpu": cpu_model(), "target": args.target,
            "settings": ("avx2 caps: " + " ".join(f"{k}={v}" for k, v in AVX2_CAPS.items()) if avx2 else
                         "native (no dispatch caps)") + f"; greedy generate(output_logits=True), {STEPS} steps after "
                        f"a {PROMPT}-token prompt; torch.set_num_threads(t) for <profile>.<dtype>.t<t>"}
    path = os.path.join(out, "decode.safetensors")
    save_file(t, path, metadata=meta)
    print(f"gen_decode_goldens: {len(CASES)} cases -> {path} ({meta['cpu']})")


if __name__ == "__main__":
    main()
