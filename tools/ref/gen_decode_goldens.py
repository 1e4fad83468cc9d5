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
[steps, 400] of 80 greedy tokens after an 8-token prompt (prompt stored), and of 20 after its first
2 tokens (<profile>.<dtype>.short.t<t>: hf f32, meg f16 and bf16), and (not for avx2, whose 3 x 3 x 64
q @ k^T is not modelled) of 12 after its first 3 in hf f32 (hf.f32.p3.t<t>). Cases: hf in f32, f16 and
bf16; meg in f16 and bf16 (their GELUs need no MKL VML; the f32 op-by-op tanh would). Runs where
torch's kernels are the target's: on an Intel CPU with AVX-512 under exactly the target's dispatch
caps (check_fidelity.py's TARGET_ENV: none for the host's own class, e.g. ONEDNN_MAX_CPU_ISA=AVX512_CORE
for intel-avx512; make_goldens.py sets them), and writes
tests/golden/targets/<target>/decode/decode.safetensors (--target; the machine in the metadata).
  /work/venv/bin/python tools/ref/gen_decode_goldens.py --target intel-avx512-fp16
  ONEDNN_MAX_CPU_ISA=AVX512_CORE /work/venv/bin/python tools/ref/gen_decode_goldens.py --target intel-avx512
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
from check_fidelity import PRODUCIBLE, TARGET_ENV, host_target  # noqa: E402
from gm_inputs import cpu_model  # noqa: E402

MODEL = os.path.join("tests", "golden", "decode_model")
CASES = [("hf", "f32"), ("hf", "f16"), ("hf", "bf16"), ("meg", "f16"), ("meg", "bf16")]
PROMPT, STEPS = 8, 80
# the first 2 prompt tokens, 20 steps: the first steps' bmm slices (at most 6 keys) take ATen's
# small kernel in torch, cache or not
SHORT_CASES, SHORT_PROMPT, SHORT_STEPS = [("hf", "f32"), ("meg", "f16"), ("meg", "bf16")], 2, 20


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
    ap.add_argument("--target", default="zen4", help="the target (make_goldens.py passes each one it makes)")
    ap.add_argument("--gptmeg", default="build/gptmeg", help="to read the host's target (gptmeg info --cpu)")
    args = ap.parse_args()
    caps = ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR")
    env = {k: os.environ[k] for k in caps if os.environ.get(k)}
    host = host_target(args.gptmeg) if os.path.exists(args.gptmeg) else None
    want = {} if args.target == host else TARGET_ENV.get(args.target)
    if args.target == "zen4" or host is None or args.target not in PRODUCIBLE.get(host, []) or env != want:
        print(f"gen_decode_goldens: skipped for {args.target} (needs an Intel host that produces it, under exactly "
              f"its caps {want}; this host: {host}, caps {env}; build gptmeg first: --gptmeg)")
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
    for prof, dts in SHORT_CASES:
        for th in (1, 2):
            torch.set_num_threads(th)
            model = gm_profiles.load(MODEL, prof, gm_profiles.DTYPES[dts])
            logits = gm_profiles.generate(model, prompt[:, :SHORT_PROMPT].numpy(), SHORT_STEPS)
            assert logits.shape == (SHORT_STEPS, 400), logits.shape
            t[f"{prof}.{dts}.short.t{th}"] = logits.contiguous()
    if args.target != "avx2":  # hf f32 after 3 tokens: MKL's Intel AVX-512 3 x 3 x 64 q @ k^T in the prefill
        for th in (1, 2):
            torch.set_num_threads(th)
            model = gm_profiles.load(MODEL, "hf", torch.float32)
            t[f"hf.f32.p3.t{th}"] = gm_profiles.generate(model, prompt[:, :3].numpy(), 12).contiguous()
    out = os.path.join("tests", "golden", "targets", args.target, "decode")
    os.makedirs(out, exist_ok=True)
    meta = {"torch": torch.__version__, "cases": json.dumps(CASES), "cpu": cpu_model(), "target": args.target,
            "settings": ("caps: " + " ".join(f"{k}={v}" for k, v in env.items()) if env else
                         "native (no dispatch caps)") + f"; greedy generate(output_logits=True), {STEPS} steps after "
                        f"a {PROMPT}-token prompt; torch.set_num_threads(t) for <profile>.<dtype>.t<t>"}
    path = os.path.join(out, "decode.safetensors")
    save_file(t, path, metadata=meta)
    print(f"gen_decode_goldens: {len(CASES)} cases -> {path} ({meta['cpu']})")


if __name__ == "__main__":
    main()
