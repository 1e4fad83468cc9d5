#!/usr/bin/env python3
"""Golden activation dumps for tests/test_diverge.c and tests/cli_diverge.sh, from transformers.

Runs tools/ref/dump_activations.py (forward hooks on transformers' GPT2LMHeadModel, eager
attention, PyTorch CPU, one thread) on tests/golden/model/base with its tokens.npy, and writes
  tests/golden/diverge/base_hf_f16.safetensors   every probe point, profile hf, f16
(f32 tensors holding f16 values, gptmeg's names). `gptmeg diverge --against` on it reproduces the
logits bit for bit (the hf profile in f16 is exact on `base`).
Run from the repo root: python3 tools/ref/gen_diverge_goldens.py
"""
import os
import subprocess
import sys

BASE = os.path.join("tests", "golden", "model", "base")
OUT = os.path.join("tests", "golden", "diverge")
CASES = [("hf", "f16")]


def main():
    os.makedirs(OUT, exist_ok=True)
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dump_activations.py")
    for profile, dtype in CASES:
        out = os.path.join(OUT, f"base_{profile}_{dtype}.safetensors")
        subprocess.run([sys.executable, tool, "--model", BASE, "--profile", profile, "--dtype", dtype,
                        "--tokens-npy", os.path.join(BASE, "tokens.npy"), "--out", out], check=True)
        size = os.path.getsize(out)
        if size > 300 * 1024:
            sys.exit(f"gen_diverge_goldens: {out} is {size} bytes, over the 300 KB budget")
        print(f"gen_diverge_goldens: {out} ({size} bytes)")


if __name__ == "__main__":
    main()
