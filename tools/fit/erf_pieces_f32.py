#!/usr/bin/env python3
"""Coefficients of the erf-family f32 forward kernel (src/kernels/gelu_accurate_f32_erf.c).

The pieces have width 1 below a = 4 (a = |x|) and width 2 above.
Columns 0..9: G(a) = exp(a^2/2) * Phi(-a) = erfcx(a/sqrt2)/2 (x < 0) on [0,1) .. [3,4), then
[4,6) .. [14,16). Columns 10..14: Phi(a) (x >= 0) on [0,1) .. [3,4), then [4,6) (x >= 6 gives
f = x). Column 15: zeros. Sixteen columns make one AVX-512 register a row (one-source permutes).
Each piece is a degree-8 polynomial in u = a - (the piece's middle): Chebyshev fit (mpmath, 40
digits), coefficients rounded to f32, the constant term kept as an f32 pair (row 0 and row 9);
row 10 holds each piece's middle.
Prints the C table and, on stderr, the worst relative error of the rounded polynomial over each
piece (401 points). Needs mpmath and numpy. Run: python3 tools/fit/erf_pieces_f32.py > table.c
"""
import mpmath as mp
import numpy as np
import sys

mp.mp.dps = 40
DEG, COLUMNS = 8, 16
# (function, start, width) of each column, in column order
LAYOUT = [("G", i, 1) for i in range(4)] + [("G", 4 + 2 * k, 2) for k in range(6)] + \
    [("Phi", i, 1) for i in range(4)] + [("Phi", 4, 2)]


def G(a):
    return mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / 2


def Phi(a):
    return mp.erfc(-a / mp.sqrt(2)) / 2


def f32(v):
    return mp.mpf(float(np.float32(float(v))))


def piece(fn, start, width):
    half = mp.mpf(width) / 2
    c = mp.mpf(start) + half
    poly = mp.chebyfit(lambda u: fn(c + u), [-half, half], DEG + 1)
    coef = [mp.mpf(p) for p in poly[::-1]]  # constant term first
    hi = [f32(a) for a in coef]
    lo = f32(coef[0] - hi[0])
    worst = 0
    for k in range(401):
        u = mp.mpf(k - 200) / 200 * half
        p = mp.mpf(0)
        for a in hi[:0:-1]:
            p = p * u + a
        p = p * u + (hi[0] + lo)
        worst = max(worst, abs(p / fn(c + u) - 1))
    return hi, lo, worst


def hexf(v):
    if v == 0:
        return "0.0f"
    m, e = float(np.float32(float(v))).hex().split("p")
    m = m.rstrip("0").rstrip(".")
    return f"{m}p{e}f"


def main():
    fns = {"G": G, "Phi": Phi}
    pieces = [piece(fns[name], start, width) for name, start, width in LAYOUT]
    for i, ((name, start, width), (_, _, w)) in enumerate(zip(LAYOUT, pieces)):
        print(f"column {i:2d} {name:3s} [{start}, {start + width}): relative error 2^{float(mp.log(w, 2)):.2f}", file=sys.stderr)
    zero = ([mp.mpf(0)] * (DEG + 1), mp.mpf(0), 0)
    pieces += [zero] * (COLUMNS - len(pieces))
    print("// tools/fit/erf_pieces_f32.py: columns 0-9 G(a) = erfcx(a/sqrt2)/2 on [0,1) .. [3,4), [4,6) .. [14,16),")
    print(f"// 10-14 Phi(a) on [0,1) .. [3,4), [4,6); degree {DEG} in u = a - (the piece's middle, row 10); row 9")
    print("// is row 0's rounding error.")
    print("const float gelu_acc32_erf_pieces[GELU_ACC32_ERF_ROWS][GELU_ACC32_ERF_FWD_COLUMNS] = {")
    for j in range(DEG + 1):
        row = ", ".join(hexf(p[0][j]) for p in pieces)
        print(f"    {{{row}}}, // u^{j}")
    row = ", ".join(hexf(p[1]) for p in pieces)
    print(f"    {{{row}}}, // u^0, low part")
    mids = [mp.mpf(start) + mp.mpf(width) / 2 for _, start, width in LAYOUT] + [0] * (COLUMNS - len(LAYOUT))
    row = ", ".join(hexf(m) for m in mids)
    print(f"    {{{row}}}, // the piece's middle: u = a - this")
    print("};")


if __name__ == "__main__":
    main()
