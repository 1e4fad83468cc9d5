"""Runs `gptmeg bench gemm --json` (gptmeg's f32 matmul in torch's order on the products of a GPT-2
124M training step, and the FMA peak measured in the same run) and times PyTorch's f32 matmul
(MKL's sgemm: a @ b, or a @ b.t() for B transposed, as torch.nn.functional.linear and the backward
call it) on the same shapes in the same run, for each thread count; prints both, gptmeg / torch, and
each one's share of the peak.

  python3 bench/gemm_vs_torch.py --gptmeg build/gptmeg [--threads 1 2] [--tokens 256] [--rounds 3] [--drivers]

--rounds R: each side keeps the best of R rounds, each product at least 0.2 s a round, the shapes
interleaved within a round (on a shared machine a slow spell then hits one round of every shape).
--drivers: gptmeg also times its other AVX-512 driver (GPTMEG_F32_GEMM=strip) in the same rounds.
"""
import argparse
import json
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--gptmeg", default="build/gptmeg")
ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
ap.add_argument("--tokens", type=int, default=256)
ap.add_argument("--square", type=int, default=2048)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--drivers", action="store_true")
args = ap.parse_args()
try:
    import torch
except ImportError:
    print("bench/gemm_vs_torch.py: PyTorch is not installed (pip install -r tools/ref/requirements.txt); skipped")
    sys.exit(0)


def torch_rates(records, threads, rounds):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    mats = []
    for r in records:
        m, n, k = r["m"], r["n"], r["k"]
        a = torch.randn(m, k) * 0.5
        b = torch.randn(n, k) * 0.5 if r["trans_b"] else torch.randn(k, n) * 0.5
        mats.append((a, b, r["trans_b"]))
    best = [1e30] * len(records)
    for _ in range(rounds):
        for i, (a, b, tb) in enumerate(mats):
            start, reps = time.perf_counter(), 0
            while reps < 3 or time.perf_counter() - start < 0.2:
                t0 = time.perf_counter()
                a @ (b.t() if tb else b)
                best[i] = min(best[i], time.perf_counter() - t0)
                reps += 1
    return [2.0 * r["m"] * r["n"] * r["k"] / t * 1e-9 for r, t in zip(records, best)]


print(f"torch {torch.__version__} (MKL sgemm), gptmeg {args.gptmeg}, {args.tokens} tokens, best of {args.rounds} rounds")
for th in args.threads:
    cmd = [args.gptmeg, "bench", "gemm", "--json", "--threads", str(th), "--tokens", str(args.tokens),
           "--square", str(args.square), "--rounds", str(args.rounds)] + (["--drivers"] if args.drivers else [])
    recs = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    tr = torch_rates(recs, th, args.rounds)
    peak = recs[0]["peak_gflops"]
    print(f"\n{th} thread(s); f32 FMA peak of {th} core(s) measured by gptmeg in this run: {peak:.1f} GF/s")
    print(f"{'product':16} {'M':>6} {'N':>6} {'K':>6} {'B':4} {'gptmeg GF/s':>12} {'torch GF/s':>11} {'ratio':>6} "
          f"{'gptmeg % peak':>14} {'torch % peak':>13}" + ("  strip GF/s" if args.drivers else ""))
    gf_sum = gt_sum = fl_sum = 0.0
    for r, t in zip(recs, tr):
        g = r["gflops"]
        fl = 2.0 * r["m"] * r["n"] * r["k"]
        if r["name"] != "square":
            fl_sum += fl
            gf_sum += fl / g
            gt_sum += fl / t
        print(f"{r['name']:16} {r['m']:6d} {r['n']:6d} {r['k']:6d} {'B^T' if r['trans_b'] else 'B':4} {g:12.1f} {t:11.1f} "
              f"{g / t:6.2f} {100 * g / peak:13.1f}% {100 * t / peak:12.1f}%" +
              (f"  {r['strip_gflops']:10.1f}" if args.drivers else ""))
    print(f"{'training step (each product once)':40} {fl_sum / gf_sum:12.1f} {fl_sum / gt_sum:11.1f} {gt_sum / gf_sum:6.2f}")
print("\nratio = gptmeg / torch (above 1: gptmeg faster)")
