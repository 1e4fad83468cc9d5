#!/usr/bin/env python3
"""f32 matmul goldens of torch's orders on 1 to 64 threads under MKL's Intel AVX-512 sgemm (issue 23),
for tests/test_matmul_f32_kparts.c.

On an even thread count MKL's Intel sgemm cuts K of a tall-K product into parts (the largest
divisor of the thread count at most ceil(K / 384), balanced: the first K % P parts one longer),
sums each alone and adds them (gm_f32_torch_kparts; tools/ref/probe_f32_mt.py --kparts). Each
product here is run by torch.set_num_threads(t) for several t: the GPT-2 MLP c_proj's shape
(K 3072, N 768) at 1..16 threads, the row thresholds (B as stored from 17 rows, B^T from 65; on 4
threads up to 384 rows), K at the edges of ceil(K / 384) (2303, 3071) and a K whose parts are not
divisors of the thread count's (1153 on 6 and 12 threads); and the rules measured beyond GPT-2
124M's shapes: GPT-2 medium's c_attn at 32 tokens (N 3072), the columns' share from N 2048 on 8
or more threads (at most t / 2 parts, still a divisor of t: 2 on 10 and 14 threads, 4 on 12),
sizes that are no multiple of 256 (M > 28 t, K and N >= 378 t; on 8 or more threads against
N <= 64 t the row-grouped cut up to 128 rows and the unpacked order from 192 or 129), 17..128 rows
against N <= 378 (cut as few rows are), the packed path's halves of K below 768, two row-grouped
parts at any width from M N K = 292584, 17..175 rows against 32..378 columns in t parts, and the
smaller of M and N
against K / 8 and 384 (4 threads) or 768 (8); and the packed kernel's order that 2 or more threads
run below 192 rows where K < 8 M, and the unpacked order of B^T
of up to 64 rows on 4 or more (gm_f32_torch_blocks_mt: GPT-2 medium's lm_head at 32 tokens), and
2..15 rows against B as stored (a prompt's prefill), cut where K >= 378 t and N >= 378 t or
N <= 378; and MKL's dot kernel's shapes (B^T, 4..15 rows, neither K nor N a multiple of 256: GPT-2
XL's lm_head and Megatron's c_attn at a few tokens), which on 2 or more threads cut K there, run
the packed order on odd thread counts or else the unpacked one (gm_f32_torch_blocks_mt), with the
edges in K, N and M; and the packed order that odd thread counts run for B as stored where MKL
shares the product out, and the unpacked order they run for B^T of 16..64 rows where it does not;
16 rows against 4096 columns, or from K 6400 where K or N is a multiple of 256, which run as 17 rows do;
and the unpacked order of the packed products (B^T from 65 rows, B as stored from 192) where
MKL does not share them out; and few rows against N <= 64 t columns on 8 to 64 threads, which cut K
into gm_f32_torch_kgroups's parts (the largest divisor kg of t with 4 kg <= t and 192 kg <= K,
rounded to 4) added in an order that depends on the row's group. The operands are formulas the test
rebuilds (A[i, k] = ((37 i + 71 k) % 1009 - 504) / 503 and B[k, n] = ((31 k + 17 n) % 97 - 48) / 64
in float32, both correctly rounded in any IEEE implementation; the bias random and stored); only
the outputs' first 32 columns are stored.
Runs where torch's f32 sgemm is MKL's Intel AVX-512 kernel, natively (an Intel CPU with AVX-512,
none of ONEDNN_MAX_CPU_ISA / ATEN_CPU_CAPABILITY / MKL_ENABLE_INSTRUCTIONS / MKL_CBWR set, which
would make this an imitation run of make_goldens.py), and writes
tests/golden/targets/<target>/matmul_mt/f32_kparts.safetensors for the host's target (--target,
one of the four that run that kernel); the machine is recorded in the metadata.
  /work/venv/bin/python tools/ref/gen_matmul_kparts_goldens.py --target intel-avx512-fp16
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gm_inputs import cpu_model, formula_a, formula_b  # noqa: E402

MKL_INTEL_AVX512 = ("intel-amx", "intel-avx512-fp16", "intel-avx512-bf16", "intel-avx512")
CAPS = ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR")
NB = 4800  # the bias: as long as the widest product
COLS = 32  # columns stored per output
# (op, M, K, N, thread counts): addmm(bias, A, B), mm(A, B), linear_b = F.linear(A, B^T contiguous, bias)
PRODUCTS = [
    ("addmm", 24, 3072, 768, [1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16]),
    ("addmm", 16, 3072, 768, [1, 4]),
    ("addmm", 17, 3072, 768, [1, 4]),
    ("linear_b", 72, 3072, 768, [1, 4, 8]),
    ("linear_b", 64, 3072, 768, [1, 4]),
    ("mm", 24, 3072, 1536, [1, 8, 12]),
    ("addmm", 24, 2303, 768, [1, 6, 8]),
    ("addmm", 24, 3071, 768, [1, 8]),
    ("mm", 24, 1153, 1536, [1, 4, 6, 12]),
    ("addmm", 384, 4096, 768, [1, 4]),
    ("addmm", 385, 4096, 768, [1, 4, 6]),
    ("addmm", 32, 1024, 3072, [1, 4, 6, 8, 12]),
    ("addmm", 32, 4096, 2048, [1, 8, 10, 16]),
    ("addmm", 32, 4096, 2047, [1, 8]),
    ("addmm", 113, 1600, 1000, [1, 4, 6]),
    ("addmm", 112, 1600, 1000, [1, 4]),
    ("addmm", 64, 3200, 2268, [1, 6]),
    ("addmm", 64, 3200, 2267, [1, 6]),
    ("addmm", 64, 1600, 1792, [1, 6, 8]),
    ("addmm", 256, 1024, 1024, [1, 4]),
    ("addmm", 1100, 8192, 256, [1, 4, 8]),
    ("addmm", 700, 8192, 384, [1, 4]),
    ("addmm", 700, 8192, 385, [1, 4, 8]),
    ("addmm", 900, 8192, 768, [1, 8]),
    ("addmm", 900, 8192, 769, [1, 8]),
    ("linear_b", 128, 1024, 4096, [1, 4, 8]),
    ("addmm", 160, 1024, 2048, [1, 2, 4, 8]),
    ("addmm", 150, 1100, 1000, [1, 2, 4, 6]),
    ("addmm", 129, 1024, 3072, [1, 2, 16]),
    ("addmm", 191, 1024, 384, [1, 2, 4]),
    ("linear_b", 32, 1024, 4096, [1, 4, 8]),
    ("linear_b", 32, 2048, 4096, [1, 4, 6]),
    ("linear_b", 16, 1600, 2048, [1, 4, 6]),
    ("addmm", 8, 1600, 4800, [1, 4, 6]),
    ("addmm", 4, 3072, 4096, [1, 6, 8]),
    ("addmm", 12, 1024, 4096, [1, 4]),
    ("linear_b", 5, 1600, 4800, [1, 2, 3, 4, 6, 8]),
    ("linear_b", 8, 1600, 300, [1, 3, 4]),
    ("linear_b", 6, 1600, 378, [1, 3, 4]),
    ("linear_b", 6, 1600, 379, [1, 4]),
    ("linear_b", 6, 1510, 300, [1, 4]),
    ("linear_b", 6, 1520, 300, [1, 4]),
    ("linear_b", 5, 1600, 4096, [1, 2, 4]),
    ("linear_b", 3, 5000, 4800, [1, 2]),
    ("linear_b", 8, 700, 4800, [1, 2, 4]),
    ("linear_b", 6, 1130, 2000, [1, 3]),
    ("linear_b", 6, 1140, 2000, [1, 3]),
    ("addmm", 5, 1600, 1600, [1, 3, 5]),
    ("addmm", 5, 1600, 378, [1, 3, 4]),
    ("addmm", 5, 1600, 379, [1, 3, 4]),
    ("addmm", 100, 1600, 1000, [1, 3]),
    ("addmm", 64, 1000, 1600, [1, 3]),
    ("linear_b", 32, 1130, 4000, [1, 3]),
    ("linear_b", 32, 1140, 4000, [1, 3, 5]),
    ("addmm", 16, 1024, 4096, [1, 3, 4, 6]),
    ("addmm", 16, 1024, 4352, [1, 3, 4]),
    ("addmm", 16, 1600, 300, [1, 3, 4]),
    ("addmm", 7, 1600, 300, [1, 3]),
    ("addmm", 16, 6400, 1600, [1, 5, 6]),
    ("addmm", 16, 6144, 1600, [1, 6]),
    ("linear_b", 100, 1600, 4000, [1, 5, 6, 8]),
    ("linear_b", 150, 1600, 4000, [1, 5, 6]),
    ("addmm", 224, 1600, 1600, [1, 7, 8]),
    ("addmm", 225, 1600, 1600, [1, 8]),
    # few rows (B^T: up to 128) against N <= 64 t on 8 or more threads: K in kg parts, row groups
    # (gm_f32_torch_kgroups)
    ("addmm", 16, 768, 768, [1, 12, 13, 16, 24, 32]),
    ("addmm", 5, 3072, 768, [1, 12, 14, 15, 16, 20, 24, 32, 48, 64]),
    ("linear_b", 16, 768, 768, [1, 12, 16]),
    ("linear_b", 8, 1000, 700, [1, 12, 16]),
    ("addmm", 2, 768, 768, [1, 32, 64]),
    ("addmm", 16, 1024, 768, [1, 12, 14]),
    ("addmm", 16, 704, 768, [1, 18, 24]),
    ("addmm", 16, 768, 1000, [1, 12, 16]),
    ("addmm", 16, 768, 800, [1, 12]),
    ("addmm", 16, 572, 768, [1, 12]),
    ("addmm", 16, 576, 768, [1, 12]),
    ("addmm", 17, 768, 768, [1, 12]),
    ("addmm", 16, 768, 2304, [1, 48, 64]),
    ("addmm", 16, 5000, 300, [1, 16]),
    ("addmm", 16, 6144, 300, [1, 16]),
    ("linear_b", 32, 768, 768, [1, 12, 16, 32]),
    ("linear_b", 128, 768, 768, [1, 12]),
    ("linear_b", 129, 768, 768, [1, 12]),
    ("linear_b", 64, 3072, 768, [1, 12, 16]),
    ("linear_b", 65, 3072, 768, [1, 12]),
    ("linear_b", 100, 768, 256, [1, 12]),
    # 16 rows from K 6400 where N is a multiple of 256 run as 17 rows (the lm_head's dx at 16 tokens)
    ("mm", 16, 8000, 768, [1, 4, 8]),
    ("mm", 16, 6399, 768, [1, 4]),
    ("mm", 16, 8000, 1000, [1, 4]),
    # from N 2048 on 8 or more threads: at most t / 2 parts, a divisor of t (not of t / 2)
    ("addmm", 64, 1153, 2048, [1, 10, 12]),
    ("linear_b", 65, 1024, 2048, [1, 14]),
    ("addmm", 64, 3072, 2048, [1, 24]),
    # the packed path on one thread halves K below 768 (from 192 rows against B as stored, 16 against B^T)
    ("addmm", 300, 477, 500, [1, 2]),
    ("linear_b", 100, 600, 500, [1]),
    # 17..128 rows against B as stored where neither K nor N is a multiple of 256, on 8 or more threads,
    # N <= 64 t: the row-grouped cut (GPT-2 XL's attention projection on 25 or more threads)
    ("addmm", 64, 1000, 1000, [1, 16, 32]),
    ("addmm", 32, 1600, 1600, [1, 24, 28, 32]),
    ("addmm", 64, 1000, 300, [1, 32]),
    # from 192 rows (B^T from 129) where MKL does not share the product out, N <= 64 t: the unpacked order
    ("addmm", 192, 1000, 1000, [1, 16]),
    ("linear_b", 129, 1600, 1600, [1, 32]),
    # up to 128 rows against N <= 378 cut K as few rows do, odd thread counts too
    ("addmm", 64, 4000, 300, [1, 8, 9, 12]),
    ("linear_b", 64, 4000, 300, [1, 9]),
    # two row-grouped parts at any width from M N K = 292584 (a 384-wide GPT-2's lm_head against 65
    # characters; 10 x 384 x 65 and 8 x 500 x 73 keep the 1-thread bits)
    ("linear_b", 100, 384, 65, [1, 8, 24]),
    ("linear_b", 71, 478, 113, [1, 24]),
    ("addmm", 12, 384, 65, [1, 8]),
    ("addmm", 10, 384, 65, [1, 8]),
    ("addmm", 8, 501, 73, [1, 16]),
    ("addmm", 8, 500, 73, [1, 16]),
    # 17..175 rows (B^T from 65) against 32..378 columns where MKL shares the product out: K in t parts
    # on odd t (no cap by K's blocks of 384) and on even t where the smaller of M and N exceeds K / 8
    ("addmm", 64, 1024, 100, [1, 3, 4, 6, 15]),
    ("addmm", 160, 1024, 256, [1, 2, 4]),
    ("linear_b", 175, 1024, 256, [1, 3]),
    ("linear_b", 100, 1024, 300, [1, 5]),
    ("addmm", 64, 1024, 32, [1, 3, 4]),
    # the dot kernel's shapes leave it above a work edge that depends on the thread count (192000 on 2,
    # 144000 on 3, 128000 on 4, 260000 on odd t from 5, 256000 on even t from 6), for the unpacked
    # order on 8 or more threads too where K is not cut in row groups (odd t without a divisor for them)
    ("linear_b", 8, 384, 65, [1, 5, 6, 7]),
    ("linear_b", 5, 640, 45, [1, 3]),
    ("linear_b", 5, 640, 46, [1, 3]),
    ("linear_b", 4, 500, 64, [1, 4]),
    ("linear_b", 4, 500, 65, [1, 4]),
    ("linear_b", 4, 500, 130, [1, 5, 9]),
    ("linear_b", 4, 500, 131, [1, 5, 9]),
    ("linear_b", 4, 500, 128, [1, 6, 10]),
    ("linear_b", 4, 500, 129, [1, 6, 10]),
    ("linear_b", 8, 384, 84, [1, 8, 16]),
    ("linear_b", 13, 368, 85, [1, 12]),
    ("linear_b", 7, 1296, 107, [1, 9, 11, 13]),
    # B^T of 16..64 rows in three row-grouped parts or more: from 33 columns where t / kg is odd, from
    # 16 (t / kg - 2) + 1 where it is even (a 768-wide GPT-2's lm_head against 65 characters)
    ("linear_b", 20, 768, 65, [1, 12, 15, 16, 18]),
    ("linear_b", 40, 768, 40, [1, 12, 15, 20]),
    ("linear_b", 40, 768, 65, [1, 18, 24]),
    ("linear_b", 40, 768, 97, [1, 32]),
    ("linear_b", 16, 768, 65, [1, 15, 18]),
    ("linear_b", 48, 1542, 39, [1, 15]),
    # B^T of 65..128 rows: the row-grouped cut in 2 row blocks where t / kg = 4, in 5 where it is 5 (of
    # ceil(M / 5) rows, the last the rest), up to 128 columns; from 129 in one (a 768-wide GPT-2's lm_head against 65 characters at 100 tokens)
    ("linear_b", 100, 768, 65, [1, 12, 16]),
    ("linear_b", 80, 768, 100, [1, 15, 20]),
    ("linear_b", 80, 768, 48, [1, 15]),
    ("linear_b", 80, 768, 128, [1, 12]),
    ("linear_b", 80, 768, 129, [1, 12]),
    ("linear_b", 80, 768, 200, [1, 16]),
    ("linear_b", 126, 768, 65, [1, 15, 20]),
]


def native_mkl_intel():
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return False
    flags = next((set(l.split(":", 1)[1].split()) for l in info.splitlines() if l.startswith("flags")), set())
    return "GenuineIntel" in info and "avx512f" in flags and not any(os.environ.get(c) for c in CAPS)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="zen4", help="the host's target (make_goldens.py passes each one it makes)")
    args = ap.parse_args()
    if args.target not in MKL_INTEL_AVX512 or not native_mkl_intel():
        print(f"gen_matmul_kparts_goldens: skipped for {args.target} (needs that target's CPU natively: an Intel "
              "CPU with AVX-512, no dispatch caps; targets " + ", ".join(MKL_INTEL_AVX512) + ")")
        return
    bias_all = 0.1 * torch.randn(NB, generator=torch.Generator().manual_seed(23))
    t = {"bias": bias_all}
    for pi, (op, m, k, n, threads) in enumerate(PRODUCTS):
        a, b, bias = torch.from_numpy(formula_a(m, k)), torch.from_numpy(formula_b(k, n)), bias_all[:n]
        outs = {}
        for th in threads:
            torch.set_num_threads(th)
            if op == "addmm": c = torch.addmm(bias, a, b)
            elif op == "mm": c = torch.mm(a, b)
            else: c = torch.nn.functional.linear(a, b.T.contiguous(), bias)
            outs[th] = c[:, :COLS].contiguous()
            t[f"p{pi}.t{th}"] = outs[th]
        same = [th for th in threads if torch.equal(outs[th], outs[1])]
        print(f"  p{pi} {op} {m}x{k}x{n}: threads {threads}, the 1-thread bits on {same}")
    out = os.path.join("tests", "golden", "targets", args.target, "matmul_mt")
    os.makedirs(out, exist_ok=True)
    meta = {"torch": torch.__version__, "products": json.dumps(PRODUCTS), "cpu": cpu_model(), "target": args.target,
            "settings": "native (no dispatch caps); torch.set_num_threads(t) for p<i>.t<t>; bias seed 23; "
                        "A and B by formula (see the generator); outputs' first 32 columns"}
    path = os.path.join(out, "f32_kparts.safetensors")
    save_file(t, path, metadata=meta)
    print(f"gen_matmul_kparts_goldens: {len(PRODUCTS)} products -> {path} ({meta['cpu']})")


if __name__ == "__main__":
    main()
