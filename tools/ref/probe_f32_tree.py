#!/usr/bin/env python3
"""The whole summation tree torch's f32 CPU matmul builds for one output, row by row of A.

For every pair of positions i < j along K, one column of op(B) holds +2^40 at i, -2^40 at j and 1
elsewhere (A all ones): every 1 that meets a partial sum holding +-2^40 before i and j meet is
lost, so the output is K minus the size of the smallest subtree holding both i and j. From those
sizes the binary tree is rebuilt (the subtree of k = lowest index: the k whose pair with it stays
below the subtree's size) and printed nested, '(x y)' for one addition (or FMA) x + y. A chain
prints as (((0 1) 2) 3) ...; MKL's Intel dot kernel (B transposed, 2..15 rows, K >= 24 * M) as
16 lane chains (0 16 32 ...) whose groups of four lanes meet in order, then (g0 g1) (g2 g3).
The tree shows where products meet, not FMA against mul+add or where alpha and the bias go:
emulate candidates on random inputs for that (tools/ref/probe_f32_intel.py).
  python3 tools/ref/probe_f32_tree.py --m 4 --k 192 [--n 16] [--op linear|addmm] [--threads 1]
"""
import argparse
import torch

BIG = 2.0 ** 40


def lca_sizes(M, K, N, op):
    """S[r][i][j]: size of the smallest subtree holding k = i and k = j in row r's output."""
    pairs = [(i, j) for i in range(K) for j in range(i + 1, K)]
    S = [[[0] * K for _ in range(K)] for _ in range(M)]
    x = torch.ones(M, K)
    for c0 in range(0, len(pairs), N):
        chunk = pairs[c0:c0 + N]
        W = torch.ones(N, K)  # op(B)^T: row n is output column n
        for n, (i, j) in enumerate(chunk):
            W[n, i], W[n, j] = BIG, -BIG
        y = torch.nn.functional.linear(x, W) if op == "linear" else x @ W.T.contiguous()
        for n, (i, j) in enumerate(chunk):
            for r in range(M):
                S[r][i][j] = S[r][j][i] = K - int(y[r, n].item())
    return S


def build(U, S):
    if len(U) == 1:
        return str(U[0])
    left = [U[0]] + [j for j in U[1:] if S[U[0]][j] < len(U)]
    right = [j for j in U if j not in left]
    if not right:  # not a binary tree of these leaves (a wrong size somewhere)
        return "?" + str(U)
    return "(" + build(left, S) + " " + build(right, S) + ")"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, default=4)
    ap.add_argument("--k", type=int, default=192)
    ap.add_argument("--n", type=int, default=16, help="columns per call (the kernel may depend on N)")
    ap.add_argument("--op", default="linear", choices=["linear", "addmm"])
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    S = lca_sizes(args.m, args.k, args.n, args.op)
    print(f"torch {torch.__version__}, f32 {args.op}, M={args.m} K={args.k} N={args.n}, {args.threads} thread(s)")
    seen = {}
    for r in range(args.m):
        t = build(list(range(args.k)), S[r])
        if t in seen:
            print(f"row {r}: as row {seen[t]}")
        else:
            seen[t] = r
            print(f"row {r}: {t}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
