#!/usr/bin/env python3
"""Coefficients of the erf-family f32 forward kernel (src/kernels/gelu_accurate_f32_erf.c).

Columns 0..15: G(a) = exp(a^2/2) * Phi(-a) = erfcx(a/sqrt2)/2 on [i, i+1), i = 0..15 (x < 0, a = |x|).
Columns 16..21: Phi(a) on [i, i+1), i = 0..5 (x >= 0; x > 6 gives f = x). Columns 22..31: zeros.
Each piece is a degree-8 polynomial in u = a - (i + 1/2): Chebyshev fit (mpmath, 40 digits),
coefficients rounded to f32, the constant term kept as an f32 pair (row 0 and row 9). Prints the
C table and, on stderr, the worst relative error of the rounded polynomial over each piece (401
points). Needs mpmath and numpy. Run: python3 tools/fit/erf_pieces_f32.py > table.c
"""
import mpmath as mp
import numpy as np
import sys

mp.mp.dps = 40
DEG, COLUMNS = 8, 32


def G(a):
    return mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / 2


def Phi(a):
    return mp.erfc(-a / mp.sqrt(2)) / 2


def f32(v):
    return mp.mpf(float(np.float32(float(v))))


def piece(fn, i):
    c = mp.mpf(i) + mp.mpf(1) / 2
    poly = mp.chebyfit(lambda u: fn(c + u), [-0.5, 0.5], DEG + 1)
    coef = [mp.mpf(p) for p in poly[::-1]]  # constant term first
    hi = [f32(a) for a in coef]
    lo = f32(coef[0] - hi[0])
    worst = 0
    for k in range(401):
        u = mp.mpf(k - 200) / 400
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
    pieces = [piece(G, i) for i in range(16)] + [piece(Phi, i) for i in range(6)]
    for i, (_, _, w) in enumerate(pieces):
        name = f"G   [{i}, {i + 1})" if i < 16 else f"Phi [{i - 16}, {i - 15})"
        print(f"column {i:2d} {name}: relative error 2^{float(mp.log(w, 2)):.2f}", file=sys.stderr)
    zero = ([mp.mpf(0)] * (DEG + 1), mp.mpf(0), 0)
    pieces += [zero] * (COLUMNS - len(pieces))
    print(f"// tools/fit/erf_pieces_f32.py: columns 0-15 G(a) = erfcx(a/sqrt2)/2 on [i, i+1), 16-21 Phi(a) on")
    print(f"// [i - 16, i - 15), degree {DEG} in u = a - floor(a) - 1/2; row 9 is row 0's rounding error.")
    print("const float gelu_acc32_erf_pieces[GELU_ACC32_ERF_DEG + 2][GELU_ACC32_ERF_COLUMNS] = {")
    for j in range(DEG + 1):
        row = ", ".join(hexf(p[0][j]) for p in pieces)
        print(f"    {{{row}}}, // u^{j}")
    row = ", ".join(hexf(p[1]) for p in pieces)
    print(f"    {{{row}}}, // u^0, low part")
    print("};")


if __name__ == "__main__":
    main()
