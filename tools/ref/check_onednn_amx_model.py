#!/usr/bin/env python3
"""Compare tools/ref/onednn_amx_blocking.py (a model of oneDNN 3.13's AMX K blocking) with torch.

For every shape, op and thread count of a grid, runs tools/ref/probe_bf16_amx_blocks.py's probes
(the K block starts, and for more than one thread the starts of the threads' partial sums) and the
model's chunk_and_split(), and prints the share of cases where both the chunk and the split agree,
overall and per op and thread count, then every mismatch.
  python3 tools/ref/check_onednn_amx_model.py                 # the default grid
  python3 tools/ref/check_onednn_amx_model.py --m 24 64 --threads 1 2 --ops addmm
Probe results are kept in --cache (JSON) so that a rerun only runs the model; pass --cache '' to
probe afresh. The probes run torch on this machine: run it under `nice` / `taskset` when others
are timing things.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import onednn_amx_blocking as model  # noqa: E402

M_GRID = [2, 7, 24, 33, 64, 130, 200, 512, 768, 1024, 4096]
KN_GRID = [(768, 768), (768, 2304), (768, 3072), (3072, 768)]
GPT2_MN = [(768, 768), (768, 2304), (768, 3072), (3072, 768)]  # the linears' (in, out) widths
DW_ROWS = [4096, 2048]


# --small: small and odd shapes, probed in full (gen_amx_blocking_goldens.starts_full / splits_full)
SMALL_M = [2, 3, 4, 7, 16, 31, 33, 64]
SMALL_N = [1, 2, 3, 4, 7, 16, 17, 31, 32, 33, 48, 64, 70, 96, 100, 128]
SMALL_K = [16, 31, 32, 64, 100, 768, 1000, 3072, 5000]


def check_small(ms, ns, ks, ops, threads, cache, verbose=False):
    """Per case: the implementation torch runs (ONEDNN_VERBOSE) against model.implementation(), and
    for AMX every K block start, every partial-sum start and the tail probe against the model."""
    import gen_amx_blocking_goldens as gg
    per, bad = {}, []
    for t in threads:
        for op in ops:
            for M in ms:
                for N in ns:
                    for K in ks:
                        key = "small:%d,%d,%d,%s,%d" % (M, N, K, op, t)
                        if key not in cache:
                            import torch
                            torch.set_num_threads(t)
                            impl = gg.impl_of(M, K, N, op)
                            st = sp = []
                            tail = ""
                            if impl == "amx":
                                st = gg.starts_full(M, K, N, op)
                                sp = gg.splits_full(M, K, N, op, st[0]) if st and t > 1 else []
                                import probe_bf16_amx_blocks as pb
                                tail = pb.tail_probe(M, K, N, op)
                            cache[key] = dict(impl=impl, starts=st, split=sp, tail=tail)
                        pr = cache[key]
                        mimpl = model.implementation(M, N, K, op, t)
                        ok = mimpl == pr["impl"]
                        why = "" if ok else "impl torch %s model %s" % (pr["impl"], mimpl)
                        if ok and mimpl == "amx":
                            chunk, split = model.chunk_and_split(M, N, K, op, t)
                            T = K // 32
                            starts = [b for b in model.block_starts(M, N, K, op, t)
                                      if b % 32 == 0 and 32 <= b <= 32 * (T - 2)]
                            first = pr["starts"][0] if pr["starts"] else 0
                            n = -(-K // first) if first else 0
                            bounds = [v // first for v in split] + [n] if first else []
                            mobs = [v for i, v in enumerate(split) if first and v % first == 0
                                    and 1 <= v // first <= n - 2 and bounds[i + 1] - v // first >= 2]
                            ok_tail = K % 32 == 0 or pr["tail"] == predicted_tail(M, N, K, op, t)
                            ok = starts == pr["starts"] and (t == 1 or mobs == pr["split"]) and ok_tail
                            if not ok:
                                why = "torch starts %s split %s | model %s %s (chunk %d)%s" % (
                                    pr["starts"], pr["split"], starts, mobs, chunk, "" if ok_tail else " tail differs")
                        g = per.setdefault((op, t), [0, 0])
                        g[0] += ok
                        g[1] += 1
                        if verbose or not ok:
                            line = f"  t{t} {op:6s} M {M:3d} N {N:3d} K {K:5d}: {pr['impl']:16s} {'ok' if ok else why}"
                            (print(line, flush=True) if verbose else bad.append(line))
    tot = sum(v[0] for v in per.values()), sum(v[1] for v in per.values())
    print(f"small shapes: {tot[0]}/{tot[1]} = {100.0 * tot[0] / max(tot[1], 1):.2f}% match (implementation; "
          "for AMX every block start, partial-sum start and the tail probe)")
    for op in ops:
        print(f"  {op:6s} " + "  ".join(f"t{t}: {per[(op, t)][0]}/{per[(op, t)][1]}" for t in threads
                                        if (op, t) in per))
    if bad:
        print("mismatches:")
        print("\n".join(bad))
    return 0 if not bad else 1


LMHEAD_KN = {"linear": [(768, 50257)], "mmtb": [(768, 50257)],  # the lm_head forward (F.linear, no bias)
             "addmm": [(50257, 768)], "matmul": [(50257, 768)]}  # its dX = dlogits @ wte (K odd)


def grid(ms, kns, ops, threads, lmhead=False):
    cases = []
    for t in threads:
        for op in ops:
            for M in ms:
                for K, N in kns + (LMHEAD_KN.get(op, []) if lmhead else []):
                    cases.append((M, N, K, op, t))
            if op == "mmta":  # the linears' dW = x^T @ dY: M, N the layer's widths, K the rows
                for K in DW_ROWS:
                    for M, N in GPT2_MN:
                        if (M, N, K, op, t) not in cases:
                            cases.append((M, N, K, op, t))
    return cases


def probe(case, cache):
    key = "%d,%d,%d,%s,%d" % case
    if key in cache:
        return cache[key]
    import torch
    import probe_bf16_amx_blocks as pb
    M, N, K, op, t = case
    torch.set_num_threads(t)
    s, _, mixed = pb.starts(M, K, N, op)
    chunk = s[0] if s else 0
    sp = pb.splits(M, K, N, op, chunk) if chunk and t > 1 else []
    cache[key] = res = {"starts": s, "chunk": chunk, "split": sp, "mixed": mixed}
    return res


def probe_tail(case, cache):
    key = "tail:%d,%d,%d,%s,%d" % case
    if key not in cache:
        import torch
        import probe_bf16_amx_blocks as pb
        M, N, K, op, t = case
        torch.set_num_threads(t)
        cache[key] = pb.tail_probe(M, K, N, op)
    return cache[key]


def observable_split(split, chunk, K):
    """The thread starts the probe can see. oneDNN reduces the threads' f32 partial sums in thread
    order, ((P0 + P1) + P2) + ..., so a thread that holds a single chunk adds exactly as if K were
    not split; the probe tests chunk s with +2^24 at s - 1, 1 at s and -2^24 at s + 1, so it sees a
    thread start s only when that thread also holds chunk s + 1 (and 1 <= s <= n - 2, n chunks)."""
    if not chunk:
        return []
    n = -(-K // chunk)
    bounds = [v // chunk for v in split] + [n]
    return [v for i, v in enumerate(split)
            if v % chunk == 0 and 1 <= v // chunk <= n - 2 and bounds[i + 1] - v // chunk >= 2]


def predicted_tail(M, N, K, op, t):
    """What probe_bf16_amx_blocks.tail_probe() should see under the model: each column's three
    entries (-2^24 at tile j, +2^24 at b - 32, 1 at b = K - K % 32) summed in f32 in the model's
    order (one accumulator per brgemm call, the K tail's call included, then the threads' partial
    sums in order)."""
    import numpy as np
    b = K - K % 32
    if K % 32 == 0 or b < 64:
        return ""
    starts = model.block_starts(M, N, K, op, t)
    _, split = model.chunk_and_split(M, N, K, op, t)
    out = []
    for j in range(min(b // 32 - 1, N)):
        parts, acc, key = [], np.float32(0), None
        for pos, v in ((32 * j, -2.0 ** 24), (b - 32, 2.0 ** 24), (b, 1.0)):
            call = sum(1 for s in starts if s <= pos)
            part = sum(1 for s in split if s <= pos)
            if key is not None and (call, part) != key:
                while len(parts) <= key[1]:
                    parts.append(np.float32(0))
                parts[key[1]] = np.float32(parts[key[1]] + acc)
                acc = np.float32(0)
            key = (call, part)
            acc = np.float32(acc + np.float32(v))
        while len(parts) <= key[1]:
            parts.append(np.float32(0))
        parts[key[1]] = np.float32(parts[key[1]] + acc)
        tot = parts[0]
        for p in parts[1:]:
            tot = np.float32(tot + p)
        out.append("1" if tot != 0 else "0")
    return "".join(out)


# The measured tables gptmeg used before this model replaced them (src/kernels/matmul/matmul_bf16_chunks.c,
# removed after commit 55ef925): read from the repository's history.
TABLES_REV = "55ef925:src/kernels/matmul/matmul_bf16_chunks.c"


def load_tables(rev=TABLES_REV):
    """The measured step tables of matmul_bf16_chunks.c: name -> [(from, chunk, split), ...]."""
    import re
    import subprocess
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    src = subprocess.run(["git", "-C", root, "show", rev], check=True, capture_output=True, text=True).stdout
    macros = {}
    for m in re.finditer(r"#define (\w+)\((\w+)\)\s*\\\n(.*?)(?=\n\n|\nstatic)", src, re.S):
        macros[m.group(1)] = (m.group(2), m.group(3).replace("\\\n", " "))
    out = {}
    for m in re.finditer(r"static const amx_chunk_step (\w+)\[\] = \{(.*?)\};", src, re.S):
        body = m.group(2)
        for name, (arg, text) in macros.items():
            mm = re.search(name + r"\((\d+)\)", body)
            if mm:
                body = re.sub(r"\b" + arg + r"\b", mm.group(1), text)
        steps = [tuple(int(v) for v in t) for t in re.findall(r"\{(-?\d+),\s*(-?\d+),\s*(-?\d+)\}", body)]
        out[m.group(1)] = [s for s in steps if s[0] >= 0]
    return out


def table_at(steps, at):
    chunk = split = 0
    for f, c, s in steps:
        if f <= at:
            chunk, split = c, s
    return chunk, split


def check_tables(threads, step_from=520, stride=16):
    """Model vs the measured tables (1 and 2 threads): every M (every K tile for dW) to step_from,
    then every stride-th M up to the table's measured end."""
    tabs = load_tables()
    jobs = []  # (table name, op, M, N, K, t, index)
    as_stored = {(768, 768): "k768_n768", (768, 2304): "k768_n2304", (768, 3072): "k768_n3072",
                 (3072, 768): "k3072_n768", (50257, 768): "k50257_n768"}
    trans = {(768, 768): ("t_k768_n768_t1", "t_k768_n768_t2"), (768, 3072): ("t_k768_n3072", "t_k768_n3072"),
             (2304, 768): ("t_k2304_n768_t1", "t_k2304_n768_t2"), (3072, 768): ("t_k3072_n768_t1", "t_k3072_n768_t2")}
    ms = list(range(2, step_from + 1)) + list(range(step_from + stride, 4101, stride))
    for t in threads:
        for (K, N), name in as_stored.items():
            for M in ms:
                jobs.append((f"{name}_t{t}", "addmm", M, N, K, t, M))
        for (K, N), names in trans.items():
            for M in ms:
                jobs.append((names[t > 1], "linear", M, N, K, t, M))
        for (M, N) in [(768, 768), (768, 2304), (768, 3072), (3072, 768), (50257, 768)]:
            name = "dw_tiles_t1" if t == 1 else f"dw_tiles_t2_{M}_{N}"
            for T in range(3, 261):
                jobs.append((name, "mmta", M, N, 32 * T, t, T))
    per, bad = {}, []
    for name, op, M, N, K, t, at in jobs:
        chunk_t, split_t = table_at(tabs[name], at)
        chunk, split = model.chunk_and_split(M, N, K, op, t)
        mobs = observable_split(split, chunk, K)
        ok = chunk == chunk_t and (mobs[:1] == ([split_t] if split_t else []))
        g = per.setdefault((name, op), [0, 0])
        g[0] += ok
        g[1] += 1
        if not ok:
            bad.append(f"  {name:16s} {op:6s} t{t} M {M:5d} K {K:5d} N {N:5d}: table chunk {chunk_t} split "
                       f"{split_t} | model {chunk} {mobs} [{model.blocking(M, N, K, op, t)['path']}]")
    tot = sum(v[0] for v in per.values()), sum(v[1] for v in per.values())
    print(f"tables: {tot[0]}/{tot[1]} = {100.0 * tot[0] / max(tot[1], 1):.2f}% match")
    for (name, op), (a, b) in per.items():
        print(f"  {name:22s} {op:6s} {a}/{b}")
    if bad:
        print("mismatches:")
        print("\n".join(bad))
    return 0 if not bad else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, nargs="+", default=M_GRID)
    ap.add_argument("--kn", type=int, nargs="+", default=None, help="K N pairs (default: GPT-2's four)")
    ap.add_argument("--ops", nargs="+", default=["addmm", "matmul", "linear", "mmtb", "mmta"],
                    help="names of probe_bf16_amx_blocks.OPS (flags trans_a, trans_b, with_sum)")
    ap.add_argument("--lmhead", action="store_true", help="add the lm_head's (K, N) = (768, 50257) for "
                    "linear / mmtb and (50257, 768) for addmm / matmul")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 3, 4, 8])
    ap.add_argument("--cache", default="/tmp/onednn_amx_probe_cache.json")
    ap.add_argument("--verbose", action="store_true", help="print every case with the model's path")
    ap.add_argument("--tables", action="store_true",
                    help="instead: compare the model with the measured tables of src/kernels/matmul/"
                         "matmul_bf16_chunks.c as of commit 55ef925 (1 and 2 threads; no torch needed)")
    ap.add_argument("--small", action="store_true", help="instead: the small-shape grid (SMALL_M, SMALL_N, "
                    "SMALL_K unless --m / --n / --k are given; threads 1 2 3 4 unless --threads), probed in full, "
                    "with the implementation ONEDNN_VERBOSE shows")
    ap.add_argument("--n", type=int, nargs="+", default=None, help="with --small: the N values")
    ap.add_argument("--k", type=int, nargs="+", default=None, help="with --small: the K values")
    args = ap.parse_args()
    if args.small:
        cache = {}
        if args.cache and os.path.exists(args.cache):
            with open(args.cache) as f:
                cache = json.load(f)
        thr = args.threads if args.threads != [1, 2, 3, 4, 8] else [1, 2, 3, 4]
        try:
            return check_small(args.m if args.m != M_GRID else SMALL_M, args.n or SMALL_N, args.k or SMALL_K,
                               args.ops, thr, cache, args.verbose)
        finally:
            if args.cache:
                with open(args.cache, "w") as f:
                    json.dump(cache, f)
    if args.tables:
        return check_tables([t for t in args.threads if t in (1, 2)] or [1, 2])
    kns = KN_GRID if args.kn is None else list(zip(args.kn[::2], args.kn[1::2]))
    cache = {}
    if args.cache and os.path.exists(args.cache):
        with open(args.cache) as f:
            cache = json.load(f)
    cases = grid(args.m, kns, args.ops, args.threads, args.lmhead)
    per, bad = {}, []
    try:
        for c in cases:
            M, N, K, op, t = c
            pr = probe(c, cache)
            chunk, split = model.chunk_and_split(M, N, K, op, t)
            T = K // 32  # the probe sees starts at 32 .. 32 * (T - 2) (and only N columns' worth)
            starts = [b for b in model.block_starts(M, N, K, op, t)
                      if b % 32 == 0 and 32 <= b <= 32 * min(T - 2, N)]
            mobs = observable_split(split, chunk, K)
            ok_chunk = chunk == pr["chunk"] and starts == pr["starts"]
            ok_split = mobs == pr["split"]
            ok_tail = K % 32 == 0 or probe_tail(c, cache) == predicted_tail(M, N, K, op, t)
            ok = ok_chunk and ok_split and ok_tail
            g = per.setdefault((op, t), [0, 0])
            g[0] += ok
            g[1] += 1
            path = model.blocking(M, N, K, op, t)["path"]
            if args.verbose:
                print(f"{'ok ' if ok else 'BAD'} t{t} {op:6s} M {M:5d} K {K:5d} N {N:5d}: torch chunk "
                      f"{pr['chunk']} split {pr['split']} | model {chunk} {mobs} [{path}]", flush=True)
            if not ok:
                bad.append((c, pr, chunk, starts, split, mobs, path + ("" if ok_tail else "; tail probe differs")))
    finally:
        if args.cache:
            with open(args.cache, "w") as f:
                json.dump(cache, f)
    tot = sum(v[0] for v in per.values()), sum(v[1] for v in per.values())
    print(f"overall: {tot[0]}/{tot[1]} = {100.0 * tot[0] / max(tot[1], 1):.1f}% match (chunk, block starts, "
          "thread split and, for K % 32 != 0, the K tail probe)")
    for op in args.ops:
        row = "  ".join(f"t{t}: {per[(op, t)][0]}/{per[(op, t)][1]}" for t in args.threads if (op, t) in per)
        print(f"  {op:6s} {row}")
    if bad:
        print("mismatches:")
        for (M, N, K, op, t), pr, chunk, starts, split, mobs, path in bad:
            extra = f" (torch starts {pr['starts']}, model {starts})" if pr["chunk"] == chunk else ""
            print(f"  t{t} {op:6s} M {M:5d} K {K:5d} N {N:5d}: torch chunk {pr['chunk']} split {pr['split']}"
                  f" | model chunk {chunk} split {mobs}{extra} [{path}]")
    return 0 if not bad else 1


if __name__ == "__main__":
    raise SystemExit(main())
