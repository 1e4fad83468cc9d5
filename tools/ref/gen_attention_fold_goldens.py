#!/usr/bin/env python3
"""Goldens of Megatron's qk-layer-scaled f32 scores on more torch threads than heads (issue 23), for
tests/test_attention_fold.c.

torch's f32 baddbmm (the megatron profile's scores: alpha = (1/8) / (layer + 1), no power of two
from layer 2 on) calls MKL's batched sgemm. On t threads with t <= b (b = batch x heads slices)
each slice runs on one thread and multiplies each block's sum by alpha; with t > b MKL folds alpha
into k^T (R(alpha k)) in every slice: from T = 64, below 2 b threads only where ceil(b T / t) >= 64,
at 2 b threads for even T too, above 2 b always (measured with head size 64, b 4, 12, 16, 24; the
packed path from T = 192 folds on one thread already; head sizes above 64 from T = head size).
Each case here is one layer's scores of a 12-head, 768-wide prefill of T tokens (or as the case says), run by torch.set_num_threads(t) for several t, stored as
megatron's softmax input x = f32(S) * (layer + 1) with the masked entries 0 (gm_op_attention_fwd's
scores), the first 32 columns of every row of every head. The queries and keys are a formula the
test rebuilds: qkv [T, 3 x 768] = ((37 i + 71 k) % 1009 - 504) / 503 in float32 (gm_inputs.formula_a).
Runs where torch's f32 sgemm is MKL's Intel AVX-512 kernel, natively (as gen_matmul_kparts_goldens.py),
and writes tests/golden/targets/<target>/attention/fold.safetensors for the host's target. With
--target avx2 (an Intel CPU under the avx2 caps) it writes avx2's cases instead (AVX2_CASES below:
one thread, every column).
  /work/venv/bin/python tools/ref/gen_attention_fold_goldens.py --target intel-avx512-fp16
  MKL_ENABLE_INSTRUCTIONS=AVX2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 \
      /work/venv/bin/python tools/ref/gen_attention_fold_goldens.py --target avx2
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_matmul_kparts_goldens import MKL_INTEL_AVX512, native_mkl_intel  # noqa: E402
from gm_inputs import cpu_model, formula_a  # noqa: E402

LAYER, COLS = 2, 32
# (T, thread counts[, C, heads]; 768 wide and 12 heads unless given): on 12 heads the fold starts at
# 13 threads (T 100: ceil(1200 / t) >= 64 up to 19), at 24 for even T (64 folds, 67 not), above 24
# from T 64 (63 not); T 191 below the packed path; T 65: a 65th row on its own would run MKL's
# one-row kernel. Head sizes above 64 fold from T = head size on the same terms: 128 (8 heads of a
# 1024-wide model: T 128 on 9 and 16 threads, not on 8; T 127 not on 24) and 80 (8 of 640: T 81 on
# 17 threads, not on 16 = 2 b for an odd T; T 79 not on 17).
CASES = [(100, [1, 12, 13, 19, 20]), (64, [1, 16, 24, 25]), (67, [1, 24, 36]), (63, [1, 36]), (191, [1, 13]),
         (65, [1]), (128, [1, 8, 9, 16], 1024, 8), (127, [1, 24], 1024, 8), (81, [1, 16, 17], 640, 8),
         (79, [1, 17], 640, 8)]


def scores(T, C=768, NH=12):
    """megatron_attention's softmax input for layer LAYER (tools/ref/gm_profiles.py), masked entries 0."""
    hd = C // NH
    qkv = torch.from_numpy(formula_a(T, 3 * C))
    q = qkv[:, :C].reshape(T, NH, hd).transpose(0, 1).contiguous()
    k = qkv[:, C:2 * C].reshape(T, NH, hd).transpose(0, 1).contiguous()
    coeff = float(LAYER + 1)
    alpha = (1.0 / float(hd) ** 0.5) / coeff
    w = torch.baddbmm(torch.empty(NH, T, T), q, k.transpose(-1, -2), beta=0, alpha=alpha)
    x = w.float() * coeff
    return x.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), 0.0)


# avx2 (MKL's Intel AVX2 sgemm, under the avx2 caps on an Intel CPU), one thread: torch's k^T view
# reaches MKL as B transposed, whose big-product kernels start at 56 rows and columns (72 for B as
# stored), alpha folded into k from 56; 57 and 61 leave 9 and 13 columns past the panels of 16 (the
# 4..6-row kernels would run those as one FMA chain, the big-product kernels in even/odd pairs),
# and 71 a last row alone (71 = 17 x 4 + 3); 48 below the fold. Every column is stored. Written to
# tests/golden/targets/avx2/attention/fold.safetensors.
AVX2_CASES = [(57, [1]), (61, [1]), (71, [1]), (48, [1])]
AVX2_CAPS = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="zen4", help="the host's target (make_goldens.py passes each one it makes)")
    args = ap.parse_args()
    cases = CASES
    if args.target == "avx2":
        if "GenuineIntel" not in open("/proc/cpuinfo").read() or any(os.environ.get(k) != v for k, v in AVX2_CAPS.items()):
            print("gen_attention_fold_goldens: skipped for avx2 (needs an Intel CPU under the avx2 caps: "
                  + " ".join(f"{k}={v}" for k, v in AVX2_CAPS.items()) + ")")
            return
        cases = AVX2_CASES
    elif args.target not in MKL_INTEL_AVX512 or not native_mkl_intel():
        print(f"gen_attention_fold_goldens: skipped for {args.target} (needs that target's CPU natively: an Intel "
              "CPU with AVX-512, no dispatch caps; targets " + ", ".join(MKL_INTEL_AVX512) + ")")
        return
    t = {}
    for ci, (T, threads, *shape) in enumerate(cases):
        outs = {}
        nh = shape[1] if shape else 12
        for th in threads:
            torch.set_num_threads(th)
            cols = T if args.target == "avx2" else COLS  # avx2: every column (its leftover panels are the last)
            outs[th] = scores(T, *shape)[:, :, :cols].reshape(nh * T, cols).contiguous()
            t[f"c{ci}.t{th}"] = outs[th]
        same = [th for th in threads if torch.equal(outs[th], outs[1])]
        print(f"  c{ci} T {T} {shape or [768, 12]}: threads {threads}, the 1-thread bits on {same}")
    out = os.path.join("tests", "golden", "targets", args.target, "attention")
    os.makedirs(out, exist_ok=True)
    caps = " ".join(f"{k}={v}" for k, v in AVX2_CAPS.items()) if args.target == "avx2" else "native (no dispatch caps)"
    meta = {"torch": torch.__version__, "cases": json.dumps(cases), "cpu": cpu_model(), "target": args.target,
            "settings": f"{caps}; torch.set_num_threads(t) for c<i>.t<t>; C 768, 12 heads "
                        f"unless the case names C and heads; layer {LAYER} (0-based); qkv by formula; scores' first "
                        f"{COLS} columns, (heads x T, COLS) (avx2: all T columns)"}
    path = os.path.join(out, "fold.safetensors")
    save_file(t, path, metadata=meta)
    print(f"gen_attention_fold_goldens: {len(cases)} cases -> {path} ({meta['cpu']})")


if __name__ == "__main__":
    main()
