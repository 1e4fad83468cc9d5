#!/usr/bin/env python3
"""gptmeg's logits against transformers' on a checkpoint of your own, per profile and dtype.

Runs transformers' GPT2LMHeadModel (eager attention, PyTorch CPU, one thread) with each profile's
pieces swapped in (gm_profiles.py, as the goldens are made) and `gptmeg logits` on the same random
tokens, and prints per profile and dtype: the share of logits bit-identical, positions whose top-1
token differs, and the largest |difference|. For models too big for the test goldens (the 124M
shape: `gptmeg init --config gpt2 --out DIR`, or an HF GPT-2 directory).
  python3 tools/ref/check_fidelity.py --model DIR [--gptmeg build/gptmeg] [--tokens 32]
      [--profiles hf meg] [--dtypes f16 bf16] [--mkl]
--mkl sets GPTMEG_TORCH_MKL to this torch's libtorch_cpu.so for gptmeg, so its f32 tanh/erf/exp are
MKL VML as torch's are: with it the f32 logits are bit-identical (docs/numerics.md); without it the
op-by-op GELUs' f32 tanh is glibc's double result rounded (within about 2e-6 of torch's logits).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gm_profiles  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--gptmeg", default="build/gptmeg")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profiles", nargs="+", default=list(gm_profiles.PROFILES))
    ap.add_argument("--dtypes", nargs="+", default=["f32", "f16", "bf16"], choices=list(gm_profiles.DTYPES))
    ap.add_argument("--mkl", action="store_true")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.mkl:
        env["GPTMEG_TORCH_MKL"] = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    torch.set_num_threads(1)
    vocab = gm_profiles.load(args.model, "hf", torch.float32).config.vocab_size
    tok = np.random.default_rng(args.seed).integers(0, vocab, size=(1, args.tokens)).astype(np.int64)
    print(f"torch {torch.__version__}, model {args.model}, {args.tokens} random tokens (seed {args.seed}), "
          f"gptmeg f32 tanh/erf: {'MKL VML' if 'GPTMEG_TORCH_MKL' in env else 'glibc double, rounded'}")
    print(f"{'profile':10s} {'dtype':5s} {'bit-identical':>14s} {'top-1 differs':>14s} {'max |diff|':>11s}")
    with tempfile.TemporaryDirectory() as tmp:
        tpath, lpath = os.path.join(tmp, "tok.npy"), os.path.join(tmp, "logits.npy")
        np.save(tpath, tok)
        for dts in args.dtypes:
            for prof in args.profiles:
                ref = gm_profiles.run(gm_profiles.load(args.model, prof, gm_profiles.DTYPES[dts]), tok).float().numpy()
                r = subprocess.run([args.gptmeg, "logits", "--model", args.model, "--tokens-npy", tpath, "--out", lpath,
                                    "--dtype", dts, "--profile", prof, "--threads", "2"], capture_output=True, text=True, env=env)
                if r.returncode != 0:
                    print(r.stderr, file=sys.stderr)
                    return 1
                got = np.load(lpath)
                same = (got.view(np.uint32) == ref.view(np.uint32)).mean()
                flips = int((got.argmax(-1) != ref.argmax(-1)).sum())
                print(f"{prof:10s} {dts:5s} {100 * same:13.3f}% {flips:14d} {np.abs(got - ref).max():11.3g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
