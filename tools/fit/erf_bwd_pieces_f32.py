#!/usr/bin/env python3
"""Coefficients of the erf-family f32 backward kernel (src/kernels/gelu_accurate_f32_erf_bwd.c).

f'(x) = Phi(x) + x*phi(x). With a = |x|:
  x < 0:  f' = exp(-a^2/2) * H(a), H(a) = G(a) - a/sqrt(2 pi), G(a) = erfcx(a/sqrt2)/2.
          H has one root, a0 = 0.7517915... (f' = 0 at x = -a0).
  x >= 0: f' = D(a) = Phi(a) + a*phi(a) (x >= 8 gives f' = 1 to far below an ulp).
Columns 0..1:   K(a) = H(a)/(a - a0) on [i, i+1), in u = a - (i + 1/2); the kernel forms H = t*K
                with t = a - a0 as an exact pair, so the root keeps its relative accuracy.
Columns 2..20:  H(a) on [i, i+1), in u = a - (i + 1/2) (column 20 only serves a = 20, the clamp).
Columns 21..23: zeros.
Columns 24..31: D(a) on [i - 24, i - 23), in u = a - (i - 24 + 1/2).
Degree 8, Chebyshev fits (mpmath, 40 digits), coefficients rounded to f32, the constant and linear
terms kept as f32 pairs (rows 0 and 9, rows 1 and 10: D's slope on [0, 1) would otherwise lose
2^-26 to the rounding of its linear coefficient). Prints the C table and the root as an f32 pair; on stderr the
worst relative error of the rounded polynomial over each piece (401 points). Needs mpmath and numpy.
Run: python3 tools/fit/erf_bwd_pieces_f32.py > table.c
"""
import os
import sys

import mpmath as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from erf_pieces_f32 import f32, hexf  # noqa: E402

mp.mp.dps = 40
DEG, COLUMNS = 8, 32
C = 1 / mp.sqrt(2 * mp.pi)


def G(a):
    return mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / 2


def H(a):
    return G(a) - a * C


def D(a):
    return mp.erfc(-a / mp.sqrt(2)) / 2 + a * C * mp.exp(-a * a / 2)


A0 = mp.findroot(H, 0.75)


def K(t):
    if abs(t) < mp.mpf(10) ** -30:
        return mp.diff(H, A0)
    return H(A0 + t) / t


def fit(fn, lo, hi):
    poly = mp.chebyfit(fn, [lo, hi], DEG + 1)
    coef = [mp.mpf(p) for p in poly[::-1]]  # constant term first
    hi_ = [f32(a) for a in coef]
    return hi_, [f32(coef[0] - hi_[0]), f32(coef[1] - hi_[1])]


def horner(hi, lo, u):
    p = mp.mpf(0)
    for a in hi[:0:-1]:
        p = p * u + a
    return p * u + lo[1] * u + (hi[0] + lo[0])


def piece_center(fn, lo, center):
    hi, low = fit(lambda u: fn(center + u), lo - center, lo + 1 - center)
    worst = 0
    for k in range(401):
        u = lo - center + mp.mpf(k) / 400
        worst = max(worst, abs(horner(hi, low, u) / fn(center + u) - 1))
    return hi, low, worst


def piece_root(lo):
    center = lo + mp.mpf(1) / 2
    hi, low = fit(lambda u: K(center + u - A0), -0.5, 0.5)
    worst = 0
    for k in range(401):
        u = mp.mpf(k - 200) / 400
        a = center + u
        worst = max(worst, abs((a - A0) * horner(hi, low, u) / H(a) - 1))
    return hi, low, worst


def print_rows(pieces, indent):
    """The C rows of a table: coefficients 0..DEG, then the low parts of coefficients 0 and 1."""
    for j in range(DEG + 1):
        row = ", ".join(hexf(p[0][j]) for p in pieces)
        print(f"{indent}{{{row}}}, // u^{j}")
    for j in range(2):
        row = ", ".join(hexf(p[1][j]) for p in pieces)
        print(f"{indent}{{{row}}}, // u^{j}, low part")


def main():
    zero = ([mp.mpf(0)] * (DEG + 1), [mp.mpf(0)] * 2, 0)
    pieces = [piece_root(0), piece_root(1)] + [piece_center(H, i, i + mp.mpf(1) / 2) for i in range(2, 21)] + [zero] * 3
    pieces += [piece_center(D, i, i + mp.mpf(1) / 2) for i in range(8)]
    assert len(pieces) == COLUMNS
    for i, (_, _, w) in enumerate(pieces):
        name = f"(a-a0)*K [{i}, {i + 1})" if i < 2 else f"H [{i}, {i + 1})" if i < 21 else f"D [{i - 24}, {i - 23})"
        if i in range(21, 24):
            continue
        print(f"column {i:2d} {name}: relative error 2^{float(mp.log(w, 2)):.2f}", file=sys.stderr)
    a0h = f32(A0)
    a0l = f32(A0 - a0h)
    print(f"// tools/fit/erf_bwd_pieces_f32.py: the root of H, a0 = {mp.nstr(A0, 20)}, as an f32 pair")
    print(f"#define GELU_ACC32_ERF_BWD_A0H {hexf(a0h)}")
    print(f"#define GELU_ACC32_ERF_BWD_A0L {hexf(a0l)}")
    print(f"// tools/fit/erf_bwd_pieces_f32.py: columns 0-1 K(a) = H(a)/(a - a0) on [i, i+1),")
    print(f"// 2-20 H(a) on [i, i+1), 24-31 D(a) on [i - 24, i - 23); degree {DEG} in u = a - floor(a) - 1/2;")
    print(f"// rows 9 and 10 are the rounding errors of rows 0 and 1.")
    print("const float gelu_acc32_erf_bwd_pieces[GELU_ACC32_ERF_DEG + 3][GELU_ACC32_ERF_COLUMNS] = {")
    print_rows(pieces, "    ")
    print("};")


if __name__ == "__main__":
    main()
