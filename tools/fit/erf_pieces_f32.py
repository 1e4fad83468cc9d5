#!/usr/bin/env python3
"""Coefficients of the erf-family f32 forward kernel (src/kernels/gelu_accurate_f32_erf.c).

G(x) = exp(x^2/2) * Phi(-x) = erfcx(x/sqrt2)/2 on 16 pieces [i, i+1), i = 0..15, each a degree-8
polynomial in u = x - (i + 1/2): Chebyshev fit (mpmath, 40 digits), coefficients rounded to f32,
the constant term kept as an f32 pair (hi, lo). Prints the C table and, on stderr, the worst
relative error of the rounded polynomial over each piece (401 points). Needs mpmath and numpy.
Run: python3 tools/fit/erf_pieces_f32.py > table.c
"""
import mpmath as mp
import numpy as np
import sys

mp.mp.dps = 40
DEG, NPIECES = 8, 16


def G(x):
    return mp.erfc(x / mp.sqrt(2)) * mp.exp(x * x / 2) / 2


def f32(v):
    return mp.mpf(float(np.float32(float(v))))


def piece(i):
    c = mp.mpf(i) + mp.mpf(1) / 2
    poly = mp.chebyfit(lambda u: G(c + u), [-0.5, 0.5], DEG + 1)
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
        worst = max(worst, abs(p / G(c + u) - 1))
    return hi, lo, worst


def hexf(v):
    m, e = float(np.float32(float(v))).hex().split("p")
    m = m.rstrip("0").rstrip(".")
    return f"{m}p{e}f"


def main():
    pieces = [piece(i) for i in range(NPIECES)]
    for i, (_, _, w) in enumerate(pieces):
        print(f"piece {i:2d}: relative error 2^{float(mp.log(w, 2)):.2f}", file=sys.stderr)
    print(f"// tools/fit/erf_pieces_f32.py: G(x) = erfcx(x/sqrt2)/2 on [i, i+1), degree {DEG} in u = x - i - 1/2")
    print(f"const float gelu_acc32_erf_pieces[{DEG + 2}][{NPIECES}] = {{")
    for j in range(DEG + 1):
        row = ", ".join(hexf(p[0][j]) for p in pieces)
        print(f"    {{{row}}}, // u^{j}")
    row = ", ".join(hexf(p[1]) for p in pieces)
    print(f"    {{{row}}}, // u^0, low part")
    print("};")


if __name__ == "__main__":
    main()
