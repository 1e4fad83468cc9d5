#!/usr/bin/env python3
"""Goldens of oneDNN's AMX K blocking as torch shows it, for tests/test_amx_blocking.c.

For each case (op, M, N, K, threads) of a grid, runs the probes of
tools/ref/probe_bf16_amx_blocks.py on this machine's torch and records exactly what they see, one
list per case in the order of "fields" (op, trans_a, trans_b, with_sum, M, N, K, nthr, then):
  starts  starts(): the element index of every K block start found (a fresh accumulation at
          element b, b = 32 .. 32 * (K // 32 - 2), one probed per column, at most N of them);
  split   for more than one thread and a chunk (starts[0]): splits(), the starts of the threads'
          partial sums that the probe sees;
  tail    for K % 32 != 0: tail_probe(), one character per column j ('1': the 1 at the last
          partial tile survived -2^24 at tile j and +2^24 just before the tail);
  mixed   starts seen in some columns only (empty on every case so far);
  impl    what ONEDNN_VERBOSE shows runs it: "amx" (brg_matmul:avx10_1_512_amx), "aten" (no oneDNN
          primitive: torch's M * N * K <= 4096 bound), "gemv" (M or N == 1) or "avx512_core_bf16"
          (the small shapes AMX declines); the test expects gm_onednn_amx_blocking's codes 0, -2, -3;
  full    0: starts / split are the probes above, which see at most N of the starts (one per
          column); 1 (the small shapes, SMALL_*): every start b = 32 .. K - 64 and every partial-sum
          start is probed, M per run, by rows of A (starts_full(), splits_full()); the tail probe
          is the same in both.
Ops (oneDNN's trans_a, trans_b, with_sum; probe_bf16_amx_blocks.OPS): addmm, matmul, linear, mmtb,
mmta. The test derives the same observations from gm_onednn_amx_blocking
(src/kernels/matmul/onednn_amx.c). Must run on an Intel CPU with AMX-BF16 and no dispatch caps
(ONEDNN_MAX_CPU_ISA, ATEN_CPU_CAPABILITY, MKL_ENABLE_INSTRUCTIONS unset); elsewhere prints SKIP.
Writes tests/golden/targets/intel-amx/amx_blocking.json (about 2 minutes on 2 cores).
  /work/venv/bin/python tools/ref/gen_amx_blocking_goldens.py
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import probe_bf16_amx_blocks as pb  # noqa: E402
from gm_inputs import cpu_model  # noqa: E402

OUT = os.path.join("tests", "golden", "targets", "intel-amx", "amx_blocking.json")
OPS = ["addmm", "matmul", "linear", "mmtb", "mmta"]
THREADS = [1, 2, 3, 4, 6, 8]
MS = [2, 7, 24, 33, 64, 130, 200, 512, 1024, 4096]
# GPT-2's (K, N) (the Conv1D / linear widths), then others: K % 32 != 0 (a K tail) and K splits
KNS = [(768, 768), (768, 2304), (768, 3072), (3072, 768), (1000, 1000), (2048, 640), (4096, 768), (880, 3072)]
# the linears' dW = x^T @ dY (mmta): M, N the layer's widths, K the batch's rows
DW_MN = [(768, 768), (768, 2304), (768, 3072), (3072, 768)]
DW_ROWS = [4096, 2048, 1000, 880]
# the lm_head: its forward (F.linear without bias = mmtb, K 768, N 50257) and its dX (mm, K 50257)
LMHEAD = [("mmtb", 768, 50257), ("linear", 768, 50257), ("matmul", 50257, 768), ("addmm", 50257, 768)]
LMHEAD_MS, LMHEAD_THREADS = [7, 64, 512], [1, 2, 4, 8]
LMHEAD_DW_ROWS = [4096, 880]  # its dW (wte's gradient from the lm_head): mmta, M 50257, N 768
# small and odd shapes (every op, 1..4 threads), probed in full (field "full"): ATen, GEMV, the
# small-shape fallback and the AMX small-dims paths; plus the shapes where N limits the old probe
SMALL_MS, SMALL_NS, SMALL_KS = [2, 3, 4, 33], [1, 2, 16, 33, 70, 100], [16, 31, 100, 768, 3072]
SMALL_THREADS = [1, 2, 3, 4]
SMALL_EXTRA = [("linear", 4, 16, 3072), ("linear", 4, 16, 5000), ("addmm", 33, 70, 768), ("mmta", 7, 17, 1000),
               ("matmul", 31, 48, 5000), ("mmtb", 64, 7, 3072)]


# one case: a list of these (starts, split: lists of element indices; tail: a string of 0/1)
FIELDS = ["op", "trans_a", "trans_b", "with_sum", "M", "N", "K", "nthr", "starts", "split", "tail", "mixed", "impl",
          "full"]
BIG = 2.0 ** 24


def starts_full(M, K, N, op):
    """Every K block start b = 32 .. 32 (K // 32 - 2): row i of A holds +2^24 at b - 32, 1 at b and
    -2^24 at b + 32 for its own b (B all ones), M starts per run; the 1 survives when b starts a
    fresh accumulation. Returns the starts seen."""
    T = K // 32
    cand = [32 * t for t in range(1, T - 1)]
    return _rows_probe(M, K, N, op, [(b - 32, b, b + 32) for b in cand], cand)


def splits_full(M, K, N, op, chunk):
    """As splits() for every chunk s = 1 .. n - 2 (n = ceil(K / chunk)), by rows of A."""
    n = -(-K // chunk)
    cand = [s * chunk for s in range(1, n - 1)]
    return _rows_probe(M, K, N, op, [(b - chunk, b, b + chunk) for b in cand], cand)


def _rows_probe(M, K, N, op, triples, labels):
    W = torch.ones(K, N, dtype=torch.bfloat16)
    found = []
    for i in range(0, len(triples), M):
        grp = triples[i:i + M]
        x = torch.zeros(M, K)
        for r, (a, b, c) in enumerate(grp):
            x[r, a], x[r, b], x[r, c] = BIG, 1.0, -BIG
        y = pb.run_op(op, x.bfloat16(), W)
        hit = (y.float() != 0).any(dim=1).tolist()
        found += [labels[i + r] for r in range(len(grp)) if hit[r]]
    return found


def impl_of(M, K, N, op):
    """The implementation ONEDNN_VERBOSE shows for one call: "aten" when no primitive runs."""
    import ctypes
    import tempfile
    libc = ctypes.CDLL(None)
    with tempfile.TemporaryFile(mode="w+") as tmp:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(tmp.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                pb.run_op(op, torch.ones(M, K, dtype=torch.bfloat16), torch.ones(K, N, dtype=torch.bfloat16))
            libc.fflush(None)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        names = [ln.split(",")[6] for ln in tmp.read().splitlines()
                 if ln.startswith("onednn_verbose") and ",exec," in ln and ",matmul," in ln]
    if not names:
        return "aten"
    if "amx" in names[-1]:
        return "amx"
    if M == 1 or N == 1:
        return "gemv"
    return names[-1].split(":")[-1]


def host_is_intel_amx():
    with open("/proc/cpuinfo") as f:
        text = f.read()
    return "GenuineIntel" in text and " amx_bf16" in text and not any(
        os.environ.get(k) for k in ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS"))


def cases():
    out = []
    for t in THREADS:
        for op in OPS:
            for M in MS:
                for K, N in KNS:
                    out.append((op, M, N, K, t))
        for M, N in DW_MN:
            for K in DW_ROWS:
                out.append(("mmta", M, N, K, t))
    for op, K, N in LMHEAD:
        for t in LMHEAD_THREADS:
            for M in LMHEAD_MS:
                out.append((op, M, N, K, t))
    for t in LMHEAD_THREADS:
        for K in LMHEAD_DW_ROWS:
            out.append(("mmta", 50257, 768, K, t))
    return out


def small_cases():
    out = []
    for t in SMALL_THREADS:
        for op in OPS:
            for M in SMALL_MS:
                for N in SMALL_NS:
                    for K in SMALL_KS:
                        out.append((op, M, N, K, t))
        for op, M, N, K in SMALL_EXTRA:
            out.append((op, M, N, K, t))
    return out


def main():
    if not host_is_intel_amx():
        print("gen_amx_blocking_goldens.py: SKIP: these goldens are the intel-amx target's; this host (or its "
              "dispatch caps) is another class")
        return 0
    t0 = time.time()
    rows = []
    for op, M, N, K, t in cases():
        torch.set_num_threads(t)
        s, _, mixed = pb.starts(M, K, N, op)
        chunk = s[0] if s else 0
        sp = pb.splits(M, K, N, op, chunk) if chunk and t > 1 else []
        ta, tb, ws = pb.OPS[op]
        rows.append([op, int(ta), int(tb), int(ws), M, N, K, t, s, sp, pb.tail_probe(M, K, N, op), mixed,
                     impl_of(M, K, N, op), 0])
    for op, M, N, K, t in small_cases():
        torch.set_num_threads(t)
        impl = impl_of(M, K, N, op)
        ta, tb, ws = pb.OPS[op]
        s = sp = []
        tail = ""
        if impl == "amx":  # (other codes sum in their own orders: only the implementation is checked)
            s = starts_full(M, K, N, op)
            sp = splits_full(M, K, N, op, s[0]) if s and t > 1 else []
            tail = pb.tail_probe(M, K, N, op)
        rows.append([op, int(ta), int(tb), int(ws), M, N, K, t, s, sp, tail, [], impl, 1])
    doc = dict(torch=torch.__version__, cpu=cpu_model(),
               what="tools/ref/probe_bf16_amx_blocks.py's observations (starts, splits, tail_probe) per case",
               fields=FIELDS, cases=rows)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("{\n")
        for k in ("torch", "cpu", "what", "fields"):
            f.write(f"{json.dumps(k)}: {json.dumps(doc[k])},\n")
        f.write('"cases": [\n')
        f.write(",\n".join(json.dumps(r, separators=(",", ":")) for r in rows))
        f.write("\n]}\n")
    print(f"wrote {OUT}: {len(rows)} cases, {os.path.getsize(OUT)} bytes, {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
