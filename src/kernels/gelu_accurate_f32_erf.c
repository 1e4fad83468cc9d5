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
//   column i = floor(a) (x < 0) or 16 + floor(a) (x >= 0), u = a - (floor(a) + 1/2) (exact for
//        a >= 1/4, else within 2^-26); the piece is c0 + w: c0 = its constant term in f32,
//        w = fma(u, S, c0lo), S = Horner of coefficients 1..8, c0lo = the constant's rounding error
//        (gelu_acc32_erf_pieces)
//   2^r = 1 + s + sl: P = Horner of gelu_acc32_exp2_fit5 in r (1 + r*P within 2^-26.7 of 2^r),
//        s = r*P, sl = fma(r, P, -s) (exact); L = fma(c0, s, fma(c0, sl, fma(w, s, w))) (x >= 0:
//        r = s = sl = 0, L = w), L's rounding weighted by |L|/(c0 + L)
//   xn = max(x, -15) (keeps -inf finite; f(-15) rounds to -0); y = fma(xn, c0, xn*L) * 2^nT, the
//        scaling exact or rounded once (subnormal results)
//   y gets x's sign bit (-0 -> -0); x >= 6 or NaN: y = x; gelu_10: y = min(10, y) (NaN stays NaN).
// Certified error against exact: docs/numerics.md section 6 (gptmeg act certify, every f32).
// The AVX-512 and AVX2 kernels perform the same IEEE operations, so all three give the same bits.
#include "kernels/gelu_math.h"

#include <string.h>

// tools/fit/erf_pieces_f32.py: columns 0-15 G(a) = erfcx(a/sqrt2)/2 on [i, i+1), 16-21 Phi(a) on
// [i - 16, i - 15), degree 8 in u = a - floor(a) - 1/2; row 9 is row 0's rounding error.
const float gelu_acc32_erf_pieces[GELU_ACC32_ERF_DEG + 2][GELU_ACC32_ERF_COLUMNS] = {
    {0x1.66027ap-2f, 0x1.a57056p-3f, 0x1.217252p-3f, 0x1.b396fap-4f, 0x1.5b5acep-4f, 0x1.201faap-4f, 0x1.eba5fep-5f, 0x1.ac6292p-5f, 0x1.7b5f34p-5f, 0x1.545298p-5f, 0x1.34805ap-5f, 0x1.1a1574p-5f, 0x1.03cf06p-5f, 0x1.e18ddcp-6f, 0x1.c0a9c4p-6f, 0x1.a3f60ap-6f, 0x1.62075ep-1f, 0x1.ddcb72p-1f, 0x1.fcd216p-1f, 0x1.ffe182p-1f, 0x1.ffff8ep-1f, 0x1p+0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, // u^0
    {-0x1.cb062ap-3f, -0x1.71c04cp-4f, -0x1.75ab64p-5f, -0x1.b6038ap-6f, -0x1.1be2c6p-6f, -0x1.8b1956p-7f, -0x1.21ae92p-7f, -0x1.b9fa6ap-8f, -0x1.5bcb3ep-8f, -0x1.188feep-8f, -0x1.cdeeacp-9f, -0x1.82bdeep-9f, -0x1.486db4p-9f, -0x1.1a5102p-9f, -0x1.ea79b4p-10f, -0x1.adf8e8p-10f, 0x1.6883dp-2f, 0x1.094086p-3f, 0x1.1f2f02p-6f, 0x1.c98998p-11f, 0x1.0c295p-16f, 0x1.ce8364p-24f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, // u^1
    {0x1.e681dep-4f, 0x1.204038p-5f, 0x1.bf399ep-7f, 0x1.a29f04p-8f, 0x1.bfbaeep-9f, 0x1.07e3eap-9f, 0x1.4ea508p-10f, 0x1.c0f9d2p-11f, 0x1.3ae804p-11f, 0x1.c9eb5ep-12f, 0x1.56ee3ep-12f, 0x1.073c62p-12f, 0x1.9ca85p-13f, 0x1.494a5p-13f, 0x1.0ade66p-13f, 0x1.b6748ep-14f, -0x1.6883dp-4f, -0x1.8de0c8p-4f, -0x1.66fac6p-6f, -0x1.90585p-10f, -0x1.2daedcp-15f, -0x1.3e0134p-22f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, // u^2
    {-0x1.c1de78p-5f, -0x1.9980c8p-7f, -0x1.f6278ap-9f, -0x1.7e822ep-10f, -0x1.55bc06p-11f, -0x1.57ff88p-12f, -0x1.7b5fbap-13f, -0x1.c159dp-14f, -0x1.19ba32p-14f, -0x1.72077ep-15f, -0x1.f8ff2ap-16f, -0x1.63dac4p-16f, -0x1.01b37ep-16f, -0x1.7e19d4p-17f, -0x1.2119a2p-17f, -0x1.bd550ap-18f, -0x1.68839ep-5f, 0x1.ba156cp-6f, 0x1.f69366p-7f, 0x1.acedfep-10f, 0x1.ae3648p-15f, 0x1.1a2ab6p-21f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, // u^3
    {0x1.760b84p-6f, 0x1.0d6064p-8f, 0x1.0ac21ap-10f, 0x1.4fb4aap-12f, 0x1.fa3b6ep-14f, 0x1.b643d8p-15f, 0x1.a67416p-16f, 0x1.bb5a0cp-17f, 0x1.f245dap-18f, 0x1.28278cp-18f, 0x1.70d94ep-19f, 0x1.ddc94ep-20f, 0x1.3ffb54p-20f, 0x1.b92162p-21f, 0x1.37cabp-21f, 0x1.c28b24p-22f, 0x1.4a77e4p-6f, 0x1.8de31p-8f, -0x1.84e5d2p-8f, -0x1.3498d8p-10f, -0x1.b1ab14p-15f, -0x1.692b94p-21f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, // u^4
    {-0x1.1cbceap-7f, -0x1.4bc1c2p-10f, -0x1.0dd9acp-12f, -0x1.1c019ep-14f, -0x1.6ca1f2p-16f, -0x1.11353ep-17f, -0x1.ce7496p-19f, -0x1.af75ecp-20f, -0x1.b3b3fep-21f, -0x1.d5a602p-22f, -0x1.0b4bb8p-22f, -0x1.3e9b3p-23f, -0x1.8b0716p-24f, -0x1.fabafep-25f, -0x1.4ec9e6p-25f, -0x1.c60c6p-26f, 0x1.2c57b8p-8f, -0x1.8070c8p-8f, 0x1.5c68ap-11f, 0x1.2faee6p-11f, 0x1.45472p-15f, 0x1.5ea85cp-21f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, // u^5
    {0x1.934dacp-9f, 0x1.8231bep-12f, 0x1.05675p-14f, 0x1.d0cb0ap-17f, 0x1.ffep-19f, 0x1.4dc4bp-20f, 0x1.f2149cp-22f, 0x1.9e61eep-23f, 0x1.78deap-24f, 0x1.7105dp-25f, 0x1.80711cp-26f, 0x1.a6230cp-27f, 0x1.e4ead2p-28f, 0x1.219bdcp-28f, 0x1.65ecf2p-29f, 0x1.c7d3d8p-30f, -0x1.922724p-9f, 0x1.57cbf8p-11f, 0x1.0d9a76p-11f, -0x1.7ae964p-13f, -0x1.750c02p-16f, -0x1.13c50cp-21f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, // u^6
    {-0x1.1ab01p-10f, -0x1.bc0a44p-14f, -0x1.f47a22p-17f, -0x1.78657ap-19f, -0x1.642492p-21f, -0x1.94c5fep-23f, -0x1.0a978p-24f, -0x1.8bf3d8p-26f, -0x1.4494a6p-27f, -0x1.20e618p-28f, -0x1.139998p-29f, -0x1.16e64p-30f, -0x1.28ee38p-31f, -0x1.4a5a92p-32f, -0x1.7df6bep-33f, -0x1.c8df48p-34f, -0x1.4eda6p-12f, 0x1.1cf6acp-11f, -0x1.08dc04p-12f, 0x1.2f1f92p-16f, 0x1.4f33fp-17f, 0x1.8bdaf8p-22f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, // u^7
    {0x1.613714p-12f, 0x1.d42cfcp-16f, 0x1.c0aaap-19f, 0x1.21de6cp-21f, 0x1.dc99a6p-24f, 0x1.dbfb76p-26f, 0x1.1668ecp-27f, 0x1.72cbf8p-29f, 0x1.12ee52p-30f, 0x1.be14acp-32f, 0x1.868148p-33f, 0x1.6cd17ap-34f, 0x1.68789cp-35f, 0x1.75f6d8p-36f, 0x1.94e36ap-37f, 0x1.c7343cp-38f, 0x1.5c4856p-12f, -0x1.58e882p-13f, 0x1.86f39ap-16f, 0x1.64cb3cp-17f, -0x1.9943eep-19f, -0x1.89e2f8p-23f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, // u^8
    {0x1.a98496p-27f, -0x1.a5db52p-29f, 0x1.8b805cp-30f, -0x1.870edp-31f, -0x1.89d408p-29f, -0x1.b4c90ap-29f, 0x1.6c52cap-31f, 0x1.7b77fcp-30f, -0x1.df6f06p-30f, -0x1.a112ap-30f, -0x1.65c104p-32f, 0x1.c1f41cp-31f, -0x1.f87cp-30f, -0x1.e0dc42p-32f, -0x1.818422p-34f, 0x1.537a82p-31f, 0x1.19563cp-28f, 0x1.3b4dcp-27f, 0x1.a81b64p-28f, 0x1.0db522p-27f, -0x1.ca374ep-33f, -0x1.463cfap-26f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, // u^0, low part
};

static float with_sign_of(float y, float x) { // y | (x & sign bit), as VPTERNLOGD
  uint32_t yb, xb;
  memcpy(&yb, &y, 4);
  memcpy(&xb, &x, 4);
  yb |= xb & 0x80000000u;
  memcpy(&y, &yb, 4);
  return y;
}

static float one_erf_f32lane(bool clip10, float x) {
  const float(*E)[GELU_ACC32_ERF_COLUMNS] = gelu_acc32_erf_pieces;
  const float amax = GELU_ACC32_ERF_AMAX;
  bool neg = signbit(x);
  float ax = fabsf(x);
  float a = ax < amax ? ax : amax; // as VMINPS(ax, amax)
  float aT = neg ? a : 0.0f;
  float r, nT;
  gelu_acc32_reduce_erf(aT, &r, &nT);
  float fl = floorf(a);
  int i = (int)fl + (neg ? 0 : 16);
  float u = a - (fl + 0.5f);
  float S = E[GELU_ACC32_ERF_DEG][i];
  for (int j = GELU_ACC32_ERF_DEG - 1; j >= 1; j--) S = fmaf(S, u, E[j][i]);
  float w = fmaf(u, S, E[GELU_ACC32_ERF_DEG + 1][i]);
  float c0 = E[0][i];
  float P = gelu_acc32_exp2_poly(r);
  float s = r * P, sl = fmaf(r, P, -s);
  float L = fmaf(c0, s, fmaf(c0, sl, fmaf(w, s, w)));
  float xn = x > -amax ? x : -amax; // as VMAXPS(x, -amax)
  float y = gelu_acc32_scale_once(fmaf(xn, c0, xn * L), nT);
  y = with_sign_of(y, x);
  if (!(x < GELU_ACC32_ERF_HI)) y = x;
  if (clip10) y = 10.0f < y ? 10.0f : y; // as VMINPS(10, y)
  return y;
}

void gelu_acc32_erf_fwd_scalar(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = one_erf_f32lane(p->clip10 != 0, x[i]);
}
