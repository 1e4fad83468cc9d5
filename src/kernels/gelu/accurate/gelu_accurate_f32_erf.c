// Accurate mode, f32 forward of the erf family (gelu, gelu_python, gelu_10) in f32 lanes (scalar
// reference). f(x) = x*Phi(x), evaluated as y = x*(c0 + L) * 2^nT for both signs:
//   x < 0: Phi(x) = Q = 2^T * G(|x|), T = -x^2/2 * log2(e), G(a) = erfcx(a/sqrt2)/2 (the tail's
//          relative accuracy needs the exponential apart)
//   x >= 0: Phi(x) itself from its own pieces (T = 0); x >= 6 gives f = x (1 - Phi(6) < 2^-29)
// so nothing cancels. Operations, in this order (-ffp-contract=off, FMAs written out; x and y f32):
//   a = min(|x|, 15) (NaN: 15); aT = a for x < 0 (sign bit), else 0
//   T as f32 pairs: aT^2 = a2h + a2l (a2l = fma(aT, aT, -a2h)); p = KH*a2h, pl = fma(KH, a2h, -p)
//        (exact); nT = nearbyint(p); r = (p - nT) + (pl + fma(KH, a2l, KL*a2h)): p - nT is exact,
//        so r is T - nT rounded once (|r| <= 1/2 + 2^-16, error <= 2^-26 + 2^-40)
//   the piece: unit pieces below a = 4, pieces of width 2 above; column i = gelu_acc32_erf_column(
//        (int)a) (x < 0) or 10 + that (x >= 0), modulo 16, u = a - its middle (row 10; exact for
//        a >= 1/4, else within 2^-26); the piece is c0 + w: c0 = its constant term in f32,
//        w = fma(u, S, c0lo), S = Horner of coefficients 1..8, c0lo = the constant's rounding error
//        (gm_gelu_acc32_erf_pieces, 16 columns: one AVX-512 register a row)
//   2^r = 1 + s: P = Horner of gm_gelu_acc32_exp2_fit5 in r (1 + r*P within 2^-26.7 of 2^r), s = r*P
//        rounded (within 2^-26 of r*P); L = fma(c0, s, fma(w, s, w)) (x >= 0: r = s = 0, L = w),
//        L's rounding weighted by |L|/(c0 + L). (Before commit c4f0590 s's rounding error was
//        carried too, as sl = fma(r, P, -s) and c0*sl in L: 2,179 inputs at 2 ULP instead of
//        3,092, the same 2-ULP bound, 5% slower.)
//   xn = max(x, -15) (keeps -inf finite; f(-15) rounds to -0); y = fma(xn, c0, xn*L) * 2^nT, the
//        scaling exact or rounded once (subnormal results)
//   y has x's sign: c0 + L > 0, the scaling keeps the sign of what underflows, and x = -0 gives
//        -0*c0 + -0*L = -0 because L there is the first piece's w at u = -1/2, about
//        G(0) - G(1/2) > 0;
//        x >= 6 or NaN: y = x; gelu_10: y = min(10, y) (NaN stays NaN). (Before commit 91ed2b1
//        every ISA or-ed x's sign bit into y; over all 2^32 inputs that changed no result.)
// Certified error against exact: docs/numerics.md section 6 (gptmeg act certify, every f32).
// The AVX-512 and AVX2 kernels perform the same IEEE operations, so all three give the same bits.
#include "kernels/gelu/gelu_math.h"

// tools/fit/erf_pieces_f32.py: columns 0-9 G(a) = erfcx(a/sqrt2)/2 on [0,1) .. [3,4), [4,6) .. [14,16),
// 10-14 Phi(a) on [0,1) .. [3,4), [4,6); degree 8 in u = a - (the piece's middle, row 10); row 9
// is row 0's rounding error.
const float gm_gelu_acc32_erf_pieces[GELU_ACC32_ERF_ROWS][GELU_ACC32_ERF_FWD_COLUMNS] = {
    {0x1.66027ap-2f, 0x1.a57056p-3f, 0x1.217252p-3f, 0x1.b396fap-4f, 0x1.3b0fbcp-4f, 0x1.c9e12p-5f, 0x1.66ccb8p-5f, 0x1.26b4dp-5f, 0x1.f3ddc2p-6f, 0x1.b1d706p-6f, 0x1.62075ep-1f, 0x1.ddcb72p-1f, 0x1.fcd216p-1f, 0x1.ffe182p-1f, 0x1.fffff6p-1f, 0.0f}, // u^0
    {-0x1.cb062ap-3f, -0x1.71c04cp-4f, -0x1.75ab64p-5f, -0x1.b6038ap-6f, -0x1.d614eap-7f, -0x1.f7d59ep-8f, -0x1.378124p-8f, -0x1.a5dac2p-9f, -0x1.3012a8p-9f, -0x1.cabcdap-10f, 0x1.6883dp-2f, 0x1.094086p-3f, 0x1.1f2f02p-6f, 0x1.c98998p-11f, 0x1.8c21bcp-20f, 0.0f}, // u^1
    {0x1.e681dep-4f, 0x1.204038p-5f, 0x1.bf399ep-7f, 0x1.a29f04p-8f, 0x1.542a98p-9f, 0x1.106374p-10f, 0x1.0b6e08p-11f, 0x1.2b9aa2p-12f, 0x1.6fdc4p-13f, 0x1.e2fd9p-14f, -0x1.6883dp-4f, -0x1.8de0c8p-4f, -0x1.66fac6p-6f, -0x1.90585p-10f, -0x1.f29092p-19f, 0.0f}, // u^2
    {-0x1.c1de78p-5f, -0x1.9980c8p-7f, -0x1.f6278ap-9f, -0x1.7e822ep-10f, -0x1.dea84p-12f, -0x1.21a642p-13f, -0x1.c639a2p-15f, -0x1.a65b1p-16f, -0x1.ba915p-17f, -0x1.fa60e2p-18f, -0x1.68839ep-5f, 0x1.ba156cp-6f, 0x1.f69366p-7f, 0x1.acedfep-10f, 0x1.98ef5ap-18f, 0.0f}, // u^3
    {0x1.760b84p-6f, 0x1.0d6064p-8f, 0x1.0ac21ap-10f, 0x1.4fb4aap-12f, 0x1.4811ap-14f, 0x1.2f21c2p-16f, 0x1.7db4eep-18f, 0x1.27815ap-19f, 0x1.08c64p-20f, 0x1.0857acp-21f, 0x1.4a77e4p-6f, 0x1.8de31p-8f, -0x1.84e5d2p-8f, -0x1.3498d8p-10f, -0x1.cb443ap-18f, 0.0f}, // u^4
    {-0x1.1cbceap-7f, -0x1.4bc1c2p-10f, -0x1.0dd9acp-12f, -0x1.1c019ep-14f, -0x1.b65c9ep-17f, -0x1.384e1ep-19f, -0x1.3d722ap-21f, -0x1.9a7bdep-23f, -0x1.3b197cp-24f, -0x1.12d78cp-25f, 0x1.2c57b8p-8f, -0x1.8070c8p-8f, 0x1.5c68ap-11f, 0x1.2faee6p-11f, 0x1.6a0f32p-18f, 0.0f}, // u^5
    {0x1.934dacp-9f, 0x1.8231bep-12f, 0x1.05675p-14f, 0x1.d0cb0ap-17f, 0x1.1e906ap-19f, 0x1.3d3768p-22f, 0x1.05718ep-24f, 0x1.1b1c2cp-26f, 0x1.7507dp-28f, 0x1.1c9a8ep-29f, -0x1.922724p-9f, 0x1.57cbf8p-11f, 0x1.0d9a76p-11f, -0x1.7ae964p-13f, -0x1.0705e2p-18f, 0.0f}, // u^6
    {-0x1.1ab01p-10f, -0x1.bc0a44p-14f, -0x1.f47a22p-17f, -0x1.78657ap-19f, -0x1.838a9cp-22f, -0x1.48d168p-25f, -0x1.b46b0ep-28f, -0x1.8a2e7ep-30f, -0x1.bca778p-32f, -0x1.28435cp-33f, -0x1.4eda6p-12f, 0x1.1cf6acp-11f, -0x1.08dc04p-12f, 0x1.2f1f92p-16f, 0x1.81229p-19f, 0.0f}, // u^7
    {0x1.613714p-12f, 0x1.d42cfcp-16f, 0x1.c0aaap-19f, 0x1.21de6cp-21f, 0x1.e4bd2p-25f, 0x1.44983cp-28f, 0x1.607d8ep-31f, 0x1.0c16dp-33f, 0x1.04765ap-35f, 0x1.30508p-37f, 0x1.5c4856p-12f, -0x1.58e882p-13f, 0x1.86f39ap-16f, 0x1.64cb3cp-17f, -0x1.1fad8p-20f, 0.0f}, // u^8
    {0x1.a98496p-27f, -0x1.a5db52p-29f, 0x1.8b805cp-30f, -0x1.870edp-31f, 0x1.698ef8p-29f, 0x1.c91126p-30f, -0x1.18fceap-31f, -0x1.999acap-32f, 0x1.7a2c42p-32f, 0x1.a21c26p-31f, 0x1.19563cp-28f, 0x1.3b4dcp-27f, 0x1.a81b64p-28f, 0x1.0db522p-27f, 0x1.86ba1cp-27f, 0.0f}, // u^0, low part
    {0x1p-1f, 0x1.8p+0f, 0x1.4p+1f, 0x1.cp+1f, 0x1.4p+2f, 0x1.cp+2f, 0x1.2p+3f, 0x1.6p+3f, 0x1.ap+3f, 0x1.ep+3f, 0x1p-1f, 0x1.8p+0f, 0x1.4p+1f, 0x1.cp+1f, 0x1.4p+2f, 0.0f}, // the piece's middle: u = a - this
};

static float one_erf_f32lane(bool clip10, float x) {
  const float(*E)[GELU_ACC32_ERF_FWD_COLUMNS] = gm_gelu_acc32_erf_pieces;
  const float amax = GELU_ACC32_ERF_AMAX;
  bool neg = signbit(x);
  float ax = fabsf(x);
  float a = ax < amax ? ax : amax; // as VMINPS(ax, amax)
  float aT = neg ? a : 0.0f;
  float r, nT;
  gelu_acc32_reduce_erf(aT, &r, &nT);
  // x >= 6 (replaced below) reaches past column 15: the low 4 bits, as VPERMPS takes them
  int i = (gelu_acc32_erf_column((int)a) + (neg ? 0 : GELU_ACC32_ERF_PHI_COLUMN)) & 15;
  float u = a - E[GELU_ACC32_ERF_MID_ROW][i];
  float S = E[GELU_ACC32_ERF_DEG][i];
  for (int j = GELU_ACC32_ERF_DEG - 1; j >= 1; j--) S = fmaf(S, u, E[j][i]);
  float w = fmaf(u, S, E[GELU_ACC32_ERF_DEG + 1][i]);
  float c0 = E[0][i];
  float P = gelu_acc32_exp2_poly(r);
  float s = r * P;
  float L = fmaf(c0, s, fmaf(w, s, w));
  float xn = x > -amax ? x : -amax; // as VMAXPS(x, -amax)
  float y = gelu_acc32_scale_once(fmaf(xn, c0, xn * L), nT);
  if (!(x < GELU_ACC32_ERF_HI)) y = x;
  if (clip10) y = 10.0f < y ? 10.0f : y; // as VMINPS(10, y)
  return y;
}

void gm_gelu_acc32_erf_fwd_scalar(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = one_erf_f32lane(p->clip10 != 0, x[i]);
}
