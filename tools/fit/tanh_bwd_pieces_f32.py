#!/usr/bin/env python3
"""Coefficients of the tanh-family f32 backward kernel (src/kernels/gelu_accurate_f32_bwd.c).

For the tanh forms f(x) = x*s(x), s = 1/(1 + E), E = exp(-2z), z = a*x*(1 + k*x^2), the accurate
mode's derivative is f' = s*(1 + t*(1 - s)) with t = 2x*(A + B*x^2) (A = a, B = 3ka; Megatron's
own rule: A = 0.79788456, B = 0.1070322243). With a = |x| (written c below, to keep a for the
constant):
  x < 0:  f' = E(c) * H(c), H(c) = (1 - 2c(A + Bc^2)*om)*om, om = 1/(1 + E(c)); H has one root c0.
  x >= 0: f' = D(c) = s*(1 + t*E*s) (x >= 8 gives f' = 1 to far below an ulp).
The kernel forms E(c) = 2^T with T = M*c*(1 + k*c^2) from the forward's reduction. Columns as in
tools/fit/erf_bwd_pieces_f32.py, except that c < 1/2 has a column of its own: 0 K(c) = H(c)/(c - c0)
on [1/2, 1), 1 the same on [1, 2); 2..14 H(c) on [i, i+1) (column 14 only serves c = 14, the
clamp); 15 H(c) on [0, 1/2) in u = c - 1/4 (there K varies too much: H = (c - c0)*K would
cancel; u is exact for c >= 1/8, else within 2^-27); 16..23 zeros; 24..31 D(c) on [i - 24, i - 23);
degree 8 in u = c - (floor(c) + 1/2) but for column 15, constant and linear terms as f32 pairs
(rows 9 and 10). One table per
constant set: sqrt(2/pi) (gelu_new, gelu_pytorch_tanh, gelu_accurate; openai_gelu's
0.7978845608028654 differs from it by 4e-17 relative), gelu_fast's 0.7978845608, Megatron's.
Prints the C tables and the roots as f32 pairs; on stderr the worst relative error of each
rounded piece (401 points). Needs mpmath and numpy. Run: python3 tools/fit/tanh_bwd_pieces_f32.py
"""
import os
import sys

import mpmath as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from erf_bwd_pieces_f32 import COLUMNS, DEG, f32, fit, hexf, horner, print_rows  # noqa: E402

mp.mp.dps = 40
K_CUBE = mp.mpf("0.044715")
SETS = [
    ("sqrt2pi", mp.sqrt(2 / mp.pi), None, None),
    ("fast", mp.mpf("0.7978845608"), None, None),
    ("megatron", mp.mpf("0.79788456"), mp.mpf("0.79788456"), mp.mpf("0.1070322243")),
]


def functions(a, A, B):
    A = a if A is None else A
    B = 3 * K_CUBE * a if B is None else B

    def E(c):
        return mp.exp(-2 * a * c * (1 + K_CUBE * c * c))

    def H(c):
        om = 1 / (1 + E(c))
        return (1 - 2 * c * (A + B * c * c) * om) * om

    def D(c):
        e = E(c)
        s = 1 / (1 + e)
        return s * (1 + 2 * c * (A + B * c * c) * e * s)

    return H, D


def table(name, a, A, B):
    H, D = functions(a, A, B)
    c0 = mp.findroot(H, 0.75)

    def K(c):
        if abs(c - c0) < mp.mpf(10) ** -30:
            return mp.diff(H, c0)
        return H(c) / (c - c0)

    def piece(fn, lo, factor, center=None, hi=None):
        center = lo + mp.mpf(1) / 2 if center is None else center
        hi = lo + 1 if hi is None else hi
        coef_hi, low = fit(lambda u: fn(center + u), lo - center, hi - center)
        worst = 0
        for k in range(401):
            c = lo + (hi - lo) * mp.mpf(k) / 400
            u = c - center
            want = H(c) if factor else fn(c)
            got = (c - c0) * horner(coef_hi, low, u) if factor else horner(coef_hi, low, u)
            worst = max(worst, abs(got / want - 1))
        return coef_hi, low, worst

    zero = ([mp.mpf(0)] * (DEG + 1), [mp.mpf(0)] * 2, 0)
    pieces = [piece(K, mp.mpf(1) / 2, True, center=mp.mpf(1) / 2, hi=1), piece(K, 1, True)]
    pieces += [piece(H, i, False) for i in range(2, 15)] + [piece(H, 0, False, center=mp.mpf(1) / 4, hi=mp.mpf(1) / 2)]
    pieces += [zero] * (24 - len(pieces)) + [piece(D, i, False) for i in range(8)]
    assert len(pieces) == COLUMNS
    for i, (_, _, w) in enumerate(pieces):
        if 15 < i < 24:
            continue
        kind = "(c-c0)*K" if i < 2 else "H" if i <= 15 else "D"
        lo = i if i < 15 else 0 if i == 15 else i - 24
        span = "[0.5, 1)" if i == 0 else "[0, 0.5)" if i == 15 else f"[{lo}, {lo + 1})"
        print(f"{name} column {i:2d} {kind} {span}: relative error 2^{float(mp.log(w, 2)):.2f}", file=sys.stderr)
    c0h = f32(c0)
    return pieces, (c0h, f32(c0 - c0h)), c0


def main():
    print("// tools/fit/tanh_bwd_pieces_f32.py: for each constant set (sqrt(2/pi), gelu_fast's, Megatron's),")
    print("// columns 0 K(c) = H(c)/(c - c0) on [1/2, 1), 1 on [1, 2), 2-14 H(c) on [i, i+1), 15 H(c) on [0, 1/2)")
    print(f"// in u = c - 1/4, 24-31 D(c) on [i - 24, i - 23); degree {DEG} in u = c - floor(c) - 1/2; rows 9 and 10 are the rounding errors of")
    print("// rows 0 and 1. The roots c0 as f32 pairs: gelu_acc32_tanh_bwd_root.")
    roots = []
    print("const float gelu_acc32_tanh_bwd_pieces[GELU_ACC32_TANH_BWD_SETS][GELU_ACC32_ERF_DEG + 3][GELU_ACC32_ERF_COLUMNS] = {")
    for name, a, A, B in SETS:
        pieces, root, c0 = table(name, a, A, B)
        roots.append((name, root, c0))
        print(f"    {{ // {name}")
        print_rows(pieces, "        ")
        print("    },")
    print("};")
    print("const float gelu_acc32_tanh_bwd_root[GELU_ACC32_TANH_BWD_SETS][2] = {")
    for name, (h, l), c0 in roots:
        print(f"    {{{hexf(h)}, {hexf(l)}}}, // {name}: c0 = {mp.nstr(c0, 20)}")
    print("};")


if __name__ == "__main__":
    main()
