#!/usr/bin/env python3
"""gptmeg's logits against transformers' on a checkpoint of your own, per profile and dtype.

Runs transformers' GPT2LMHeadModel (eager attention, PyTorch CPU, --threads threads) with each profile's
pieces swapped in (gm_profiles.py, as the goldens are made) and `gptmeg logits` on the same random
tokens, and prints per profile and dtype: the share of logits bit-identical, positions whose top-1
token differs, and the largest |difference|. For models too big for the test goldens (the 124M
shape: `gptmeg init --config gpt2 --out DIR`, or an HF GPT-2 directory).
  python3 tools/ref/check_fidelity.py --model DIR [--gptmeg build/gptmeg] [--tokens 32]
      [--profiles hf meg] [--dtypes f16 bf16] [--mkl] [--target NAME ... | --target all] [--threads 2]
--threads N runs torch with torch.set_num_threads(N) and gptmeg with --threads N (default 1): under
the Intel targets torch's f32 matmuls split K or columns on 2 threads, and gptmeg follows the
thread count it is given (docs/numerics.md).
--target runs the check once per torch CPU target (src/core/target.c): torch under that target's
dispatch caps (set before torch is imported, in a child process), gptmeg with --torch-target NAME.
`all` is every target this machine can produce: its own class and the classes below it that the
caps imitate (an Intel AMX machine: intel-amx, intel-avx512-fp16, intel-avx512-bf16, intel-avx512, avx2).
--decode N compares, instead of one forward, greedy generation of N tokens after the --tokens random
ones: transformers' generate(do_sample=False, output_logits=True) (KV cache; the prefill keeps only
the last position's logits) against `gptmeg generate --prompt-ids --temperature 0 --logits-out`:
per profile and dtype the share of the steps' logits bit-identical, the steps identical whole, and
the first step whose token differs (after it the two runs see other tokens: compared up to there).
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

# The torch CPU targets (src/core/target.c): the torch environment that imitates each, and the
# targets a machine of each class can produce by capping dispatch.
TARGET_ENV = {
    "zen4": {},
    "intel-amx": {},
    "intel-avx512-fp16": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_FP16"},
    "intel-avx512-bf16": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"},
    "intel-avx512": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
    "avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
}
PRODUCIBLE = {
    "zen4": ["zen4"],
    "intel-amx": ["intel-amx", "intel-avx512-fp16", "intel-avx512-bf16", "intel-avx512", "avx2"],
    "intel-avx512-fp16": ["intel-avx512-fp16", "intel-avx512-bf16", "intel-avx512", "avx2"],
    "intel-avx512-bf16": ["intel-avx512-bf16", "intel-avx512", "avx2"],
    "intel-avx512": ["intel-avx512", "avx2"],
    "avx2": ["avx2"],
}


def host_target(gptmeg):
    """The target gptmeg detects on this machine (gptmeg info --cpu, without GPTMEG_TORCH_TARGET)."""
    env = {k: v for k, v in os.environ.items() if k != "GPTMEG_TORCH_TARGET"}
    out = subprocess.run([gptmeg, "info", "--cpu"], capture_output=True, text=True, env=env).stdout
    for line in out.splitlines():
        if line.strip().startswith("this cpu:"):
            return line.split(":", 1)[1].split()[0]
    raise SystemExit("check_fidelity: could not read the host's target from `gptmeg info --cpu`")


def run_targets(args, argv):
    """One child process per target: torch's caps must be in the environment before it is imported."""
    host = host_target(args.gptmeg)
    names = PRODUCIBLE[host] if args.target == ["all"] else args.target
    for t in names:
        if t not in TARGET_ENV:
            raise SystemExit(f"check_fidelity: unknown target '{t}' (known: {', '.join(TARGET_ENV)})")
        if t not in PRODUCIBLE[host]:
            print(f"== target {t}: not producible on this machine (a {host} machine makes {', '.join(PRODUCIBLE[host])})")
            continue
        child = [a for a in argv if a != "--target" and a not in args.target]
        env = dict(os.environ, **TARGET_ENV[t])
        print(f"== target {t}: torch with {' '.join(f'{k}={v}' for k, v in TARGET_ENV[t].items()) or 'no caps'}", flush=True)
        r = subprocess.run([sys.executable, os.path.abspath(__file__), *child, "--one-target", t], env=env)
        if r.returncode != 0:
            return r.returncode
    return 0

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
    ap.add_argument("--target", nargs="+", help="torch CPU targets, or 'all' this machine can produce")
    ap.add_argument("--threads", type=int, default=1, help="torch's and gptmeg's thread count")
    ap.add_argument("--decode", type=int, default=0, metavar="N", help="compare N greedy decode steps instead")
    ap.add_argument("--one-target", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.target:
        return run_targets(args, sys.argv[1:])
    import torch  # after any dispatch caps are in the environment
    env = dict(os.environ)
    target_args = ["--torch-target", args.one_target] if args.one_target else []
    if args.mkl:
        env["GPTMEG_TORCH_MKL"] = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    torch.set_num_threads(args.threads)
    vocab = gm_profiles.load(args.model, "hf", torch.float32).config.vocab_size
    tok = np.random.default_rng(args.seed).integers(0, vocab, size=(1, args.tokens)).astype(np.int64)
    print(f"torch {torch.__version__}, model {args.model}, {args.tokens} random tokens (seed {args.seed}), "
          f"gptmeg f32 tanh/erf: {'MKL VML' if 'GPTMEG_TORCH_MKL' in env else 'as gptmeg finds torch (info --cpu)'}"
          + (f", torch CPU target {args.one_target}" if args.one_target else "") + f", {args.threads} thread(s)")
    if args.decode:
        return check_decode(args, tok, env, target_args)
    print(f"{'profile':10s} {'dtype':5s} {'bit-identical':>14s} {'top-1 differs':>14s} {'max |diff|':>11s}")
    with tempfile.TemporaryDirectory() as tmp:
        tpath, lpath = os.path.join(tmp, "tok.npy"), os.path.join(tmp, "logits.npy")
        np.save(tpath, tok)
        for dts in args.dtypes:
            for prof in args.profiles:
                ref = gm_profiles.run(gm_profiles.load(args.model, prof, gm_profiles.DTYPES[dts]), tok).float().numpy()
                r = subprocess.run([args.gptmeg, "logits", "--model", args.model, "--tokens-npy", tpath, "--out", lpath,
                                    "--dtype", dts, "--profile", prof, "--threads", str(args.threads), *target_args], capture_output=True, text=True, env=env)
                if r.returncode != 0:
                    print(r.stderr, file=sys.stderr)
                    return 1
                got = np.load(lpath)
                same = (got.view(np.uint32) == ref.view(np.uint32)).mean()
                flips = int((got.argmax(-1) != ref.argmax(-1)).sum())
                print(f"{prof:10s} {dts:5s} {100 * same:13.3f}% {flips:14d} {np.abs(got - ref).max():11.3g}", flush=True)
    return 0


def check_decode(args, tok, env, target_args):
    """--decode: greedy generation, step by step, transformers against gptmeg."""
    print(f"{args.decode} greedy decode steps after the prompt")
    print(f"{'profile':10s} {'dtype':5s} {'steps':>6s} {'bit-identical':>14s} {'steps whole':>12s} {'tokens differ at':>17s} "
          f"{'max |diff|':>11s}")
    with tempfile.TemporaryDirectory() as tmp:
        tpath, lpath = os.path.join(tmp, "tok.npy"), os.path.join(tmp, "logits.npy")
        np.save(tpath, tok)
        for dts in args.dtypes:
            for prof in args.profiles:
                ref = gm_profiles.generate(gm_profiles.load(args.model, prof, gm_profiles.DTYPES[dts]), tok,
                                           args.decode).numpy()
                r = subprocess.run([args.gptmeg, "generate", "--model", args.model, "--prompt-ids", tpath, "--temperature",
                                    "0", "--max-new-tokens", str(args.decode), "--logits-out", lpath, "--dtype", dts,
                                    "--profile", prof, "--threads", str(args.threads), *target_args],
                                   capture_output=True, text=True, env=env)
                if r.returncode != 0:
                    print(r.stderr, file=sys.stderr)
                    return 1
                got = np.load(lpath)
                n = min(len(got), len(ref))
                flips = [i for i in range(n) if got[i].argmax() != ref[i].argmax()]
                n = flips[0] + 1 if flips else n  # rows after a differing token are not comparable
                same = got[:n].view(np.uint32) == ref[:n].view(np.uint32)
                print(f"{prof:10s} {dts:5s} {n:6d} {100 * same.mean():13.3f}% {int(same.all(axis=1).sum()):12d} "
                      f"{(str(flips[0]) if flips else '-'):>17s} {np.abs(got[:n] - ref[:n]).max():11.3g}"
                      + ("" if len(got) == len(ref) else f"  (lengths: gptmeg {len(got)}, torch {len(ref)})"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
