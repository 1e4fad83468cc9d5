// Accurate mode, f32 backward of the erf family (gelu, gelu_python, gelu_10) in f32 lanes (scalar
// reference): dx = dy * f'(x), f'(x) = Phi(x) + x*phi(x), rounded once. With a = |x|:
//   x < 0:  f' = 2^T * H(a), T = -a^2/2 * log2(e), H(a) = erfcx(a/sqrt2)/2 - a/sqrt(2 pi); H has
//           one root a0 (f'(-a0) = 0), so on [0, 2) H = t*K(t) with t = a - a0 carried as an exact
//           pair: the root keeps its relative accuracy.
//   x >= 0: f' = D(a) = Phi(a) + a*phi(a) in [1/2, 1.13] (x >= 8: f' = 1 to 2^-43, dx = dy).
// Nothing cancels. Operations, in this order (-ffp-contract=off, FMAs written out; x, dy f32):
//   a = min(|x|, 20) (NaN: 20; f'(-20) * 2^128 still rounds to 0); aT = a for x < 0, else 0;
//   T = nT + r exactly as the forward (gelu_accurate_f32_erf.c): aT^2 and KH*a2h as exact pairs
//   column i = floor(a) (x < 0) or min(24 + floor(a), 31) (x >= 0); rows of gelu_acc32_erf_bwd_pieces:
//     u = a - (floor(a) + 1/2) (exact for a >= 1/4, else within 2^-26)
//     regular columns: m1 = 1, tl = 0; root columns (x < 0, a < 2): th = a - A0H with its error
//       te (Knuth's TwoSum, exact), tl = te - A0L (t = th + tl to 2^-48), m1 = th
//     S = Horner of rows 8..1 in u; inner = fma(u, S, fma(u, row 10, row 9))
//     c0 = m1*row0, e = fma(m1, row0, -c0) (exact), w = fma(m1, inner, fma(tl, row0 + inner, e)):
//       regular: c0 = row 0, w = inner; root: c0 + w = (th + tl)*K, c0 + e = th*row0 exactly
//   2^r = 1 + s + sl as the forward; L = fma(c0, s, fma(c0, sl, fma(w, s, w)))
//   dy = gm * 2^ge with gm in [1, 2) (exact; frexp, as VGETMANTPS/VGETEXPPS), so no product below
//     underflows or overflows: dx = (gm*c0 + gm*L) * 2^(nT + ge), fma(gm, c0, gm*L) rounded, then
//     the scaling exact or rounded once (subnormal or overflowing results)
//   dy = +-0, +-inf or NaN: dx = dy * (c0 + L) (signed zero, signed infinity, NaN)
//   x >= 8: dx = dy; gelu_10 and x > 10: dx = +0; NaN x: dx = x.
// Certified error against exact (dy = 1): docs/numerics.md section 6 (gptmeg act certify --grad).
// The AVX-512 and AVX2 kernels perform the same IEEE operations, so all three give the same bits.
#include "kernels/gelu_math.h"

// tools/fit/erf_bwd_pieces_f32.py: columns 0-1 K(a) = H(a)/(a - a0) on [i, i+1),
// 2-20 H(a) on [i, i+1), 24-31 D(a) on [i - 24, i - 23); degree 8 in u = a - floor(a) - 1/2;
// rows 9 and 10 are the rounding errors of rows 0 and 1.
const float gelu_acc32_erf_bwd_pieces[GELU_ACC32_ERF_DEG + 3][GELU_ACC32_ERF_COLUMNS] = {
    {-0x1.315088p-1f, -0x1.0cadd8p-1f, -0x1.b648d4p-1f, -0x1.4a3a5ap+0f, -0x1.b5df3p+0f, -0x1.0fd9fcp+1f, -0x1.443cecp+1f, -0x1.784a84p+1f, -0x1.ac1f1cp+1f, -0x1.dfcbd8p+1f, -0x1.09add6p+2f, -0x1.236afp+2f, -0x1.3d1fc2p+2f, -0x1.56ce18p+2f, -0x1.707742p+2f, -0x1.8a1c3ap+2f, -0x1.a3bdc4p+2f, -0x1.bd5c7p+2f, -0x1.d6f8b6p+2f, -0x1.f092f4p+2f, -0x1.0515bap+3f, 0.0f, 0.0f, 0.0f, 0x1.bc2852p-1f, 0x1.20a1d2p+0f, 0x1.09a0e2p+0f, 0x1.00b8eep+0f, 0x1.00047ep+0f, 0x1.00000ap+0f, 0x1p+0f, 0x1p+0f}, // u^0
    {0x1.b3472p-4f, 0x1.853bdp-5f, -0x1.c739cp-2f, -0x1.b3e48cp-2f, -0x1.aa428p-2f, -0x1.a4dd1ep-2f, -0x1.a191c8p-2f, -0x1.9f6c3cp-2f, -0x1.9df38p-2f, -0x1.9ce692p-2f, -0x1.9c203p-2f, -0x1.9b89dp-2f, -0x1.9b152ep-2f, -0x1.9ab8f6p-2f, -0x1.9a6eccp-2f, -0x1.9a324cp-2f, -0x1.9a004ep-2f, -0x1.99d686p-2f, -0x1.99b34p-2f, -0x1.999536p-2f, -0x1.997b6cp-2f, 0.0f, 0.0f, 0.0f, 0x1.3b7356p-1f, -0x1.094088p-5f, -0x1.3121f6p-4f, -0x1.251c0ep-7f, -0x1.31dfbcp-12f, -0x1.98571cp-19f, -0x1.7112d6p-27f, -0x1.cfd9fep-37f}, // u^1
    {-0x1.96eb7p-5f, -0x1.0deea2p-6f, 0x1.bf399ep-7f, 0x1.a29f04p-8f, 0x1.bfbaeep-9f, 0x1.07e3eap-9f, 0x1.4ea508p-10f, 0x1.c0f9d2p-11f, 0x1.3ae804p-11f, 0x1.c9eb5ep-12f, 0x1.56ee3ep-12f, 0x1.073c62p-12f, 0x1.9ca85p-13f, 0x1.494a5p-13f, 0x1.0ade66p-13f, 0x1.b6748ep-14f, 0x1.6c80a4p-14f, 0x1.323eb8p-14f, 0x1.03bd74p-14f, 0x1.bc58f6p-15f, 0x1.7f00f4p-15f, 0.0f, 0.0f, 0.0f, -0x1.51fb9p-2f, -0x1.5c24b2p-3f, 0x1.93da24p-5f, 0x1.9cdb0ap-7f, 0x1.3265ap-11f, 0x1.04dda4p-17f, 0x1.1d0d5ep-25f, 0x1.a37062p-35f}, // u^2
    {0x1.551b02p-6f, 0x1.5c77cap-8f, -0x1.f6278ap-9f, -0x1.7e822ep-10f, -0x1.55bc06p-11f, -0x1.57ff88p-12f, -0x1.7b5fbap-13f, -0x1.c159dp-14f, -0x1.19ba32p-14f, -0x1.72077ep-15f, -0x1.f8ff2ap-16f, -0x1.63dac4p-16f, -0x1.01b37ep-16f, -0x1.7e19d4p-17f, -0x1.2119a2p-17f, -0x1.bd550ap-18f, -0x1.5c6d9cp-18f, -0x1.147112p-18f, -0x1.bc299ap-19f, -0x1.68d872p-19f, -0x1.2824c8p-19f, 0.0f, 0.0f, 0.0f, -0x1.15e5b4p-3f, 0x1.27a556p-3f, 0x1.074454p-9f, -0x1.459536p-7f, -0x1.7c4f1cp-11f, -0x1.aa28a4p-17f, -0x1.1e2a5ap-24f, -0x1.f458cp-34f}, // u^3
    {-0x1.05a412p-7f, -0x1.a6d4a6p-10f, 0x1.0ac21ap-10f, 0x1.4fb4aap-12f, 0x1.fa3b6ep-14f, 0x1.b643d8p-15f, 0x1.a67416p-16f, 0x1.bb5a0cp-17f, 0x1.f245dap-18f, 0x1.28278cp-18f, 0x1.70d94ep-19f, 0x1.ddc94ep-20f, 0x1.3ffb54p-20f, 0x1.b92162p-21f, 0x1.37cabp-21f, 0x1.c28b24p-22f, 0x1.4be708p-22f, 0x1.f185f4p-23f, 0x1.7ab396p-23f, 0x1.244b26p-23f, 0x1.c8e984p-24f, 0.0f, 0.0f, 0.0f, 0x1.cc05aap-4f, -0x1.bf90e2p-7f, -0x1.5da3c8p-6f, 0x1.15da0ap-8f, 0x1.42975cp-11f, 0x1.f12c58p-17f, 0x1.9fec1p-24f, 0x1.ae4bfp-33f}, // u^4
    {0x1.740d5ep-9f, 0x1.e59d94p-12f, -0x1.0dd9acp-12f, -0x1.1c019ep-14f, -0x1.6ca1f2p-16f, -0x1.11353ep-17f, -0x1.ce7496p-19f, -0x1.af75ecp-20f, -0x1.b3b3fep-21f, -0x1.d5a602p-22f, -0x1.0b4bb8p-22f, -0x1.3e9b3p-23f, -0x1.8b0716p-24f, -0x1.fabafep-25f, -0x1.4ec9e6p-25f, -0x1.c60c6p-26f, -0x1.3b11f2p-26f, -0x1.be5306p-27f, -0x1.41fdbep-27f, -0x1.d85702p-28f, -0x1.5fac8ep-28f, 0.0f, 0.0f, 0.0f, 0x1.2bb92p-6f, -0x1.dffb7p-6f, 0x1.7f620cp-7f, -0x1.4d7e62p-12f, -0x1.81d7aap-12f, -0x1.b466b8p-17f, -0x1.c8ab3cp-24f, -0x1.0f968p-32f}, // u^5
    {-0x1.f0761ep-11f, -0x1.09c216p-13f, 0x1.05675p-14f, 0x1.d0cb0ap-17f, 0x1.ffep-19f, 0x1.4dc4bp-20f, 0x1.f2149cp-22f, 0x1.9e61eep-23f, 0x1.78deap-24f, 0x1.7105dp-25f, 0x1.80711cp-26f, 0x1.a6230cp-27f, 0x1.e4ead2p-28f, 0x1.219bdcp-28f, 0x1.65ecf2p-29f, 0x1.c7d3d8p-30f, 0x1.2a122p-30f, 0x1.8f2b88p-31f, 0x1.1104eep-31f, 0x1.7cb1a8p-32f, 0x1.0e0fb2p-32f, 0.0f, 0.0f, 0.0f, -0x1.7264f2p-6f, 0x1.5613fep-7f, -0x1.050474p-10f, -0x1.84be1ep-11f, 0x1.38edfep-13f, 0x1.2cbbc8p-17f, 0x1.a25d3ap-24f, 0x1.35376cp-32f}, // u^6
    {0x1.488cc2p-12f, 0x1.203392p-15f, -0x1.f47a22p-17f, -0x1.78657ap-19f, -0x1.642492p-21f, -0x1.94c5fep-23f, -0x1.0a978p-24f, -0x1.8bf3d8p-26f, -0x1.4494a6p-27f, -0x1.20e618p-28f, -0x1.139998p-29f, -0x1.16e64p-30f, -0x1.28ee38p-31f, -0x1.4a5a92p-32f, -0x1.7df6bep-33f, -0x1.c8df48p-34f, -0x1.19948ap-34f, -0x1.648868p-35f, -0x1.ce7254p-36f, -0x1.328098p-36f, -0x1.9e5fap-37f, 0.0f, 0.0f, 0.0f, -0x1.421feap-10f, 0x1.378b8cp-9f, -0x1.970b16p-10f, 0x1.cd678cp-12f, -0x1.e8c08p-16f, -0x1.5c5806p-18f, -0x1.76515cp-24f, -0x1.8719b2p-32f}, // u^7
    {-0x1.87d664p-14f, -0x1.214bfep-17f, 0x1.c0aaap-19f, 0x1.21de6cp-21f, 0x1.dc99a6p-24f, 0x1.dbfb76p-26f, 0x1.1668ecp-27f, 0x1.72cbf8p-29f, 0x1.12ee52p-30f, 0x1.be14acp-32f, 0x1.868148p-33f, 0x1.6cd17ap-34f, 0x1.68789cp-35f, 0x1.75f6d8p-36f, 0x1.94e36ap-37f, 0x1.c7343cp-38f, 0x1.089884p-38f, 0x1.3cf0bap-39f, 0x1.85fa5ep-40f, 0x1.eba0f6p-41f, 0x1.3cc808p-41f, 0.0f, 0.0f, 0.0f, 0x1.8ad1a6p-9f, -0x1.d87ca8p-10f, 0x1.3f18d4p-11f, -0x1.7293fep-14f, -0x1.5265ap-18f, 0x1.18693ap-19f, 0x1.b7d7d4p-25f, 0x1.1ce43ep-32f}, // u^8
    {0x1.75df02p-26f, -0x1.42b5c6p-26f, 0x1.ff1f12p-27f, 0x1.8eadd4p-25f, -0x1.a274e4p-25f, 0x1.e1d0ccp-28f, 0x1.5e9642p-25f, 0x1.061f04p-25f, 0x1.6ca61ap-25f, -0x1.f008b4p-25f, 0x1.372558p-26f, -0x1.d64eeep-23f, -0x1.fbaa46p-23f, -0x1.80a452p-24f, 0x1.518b5p-24f, -0x1.315f1ap-23f, 0x1.d807c4p-23f, 0x1.848b58p-27f, -0x1.8cd94ep-24f, 0x1.20e5a4p-25f, 0x1.4b8262p-25f, 0.0f, 0.0f, 0.0f, 0x1.5d671p-28f, 0x1.5f009cp-27f, -0x1.601d6cp-25f, -0x1.6f20c8p-25f, -0x1.15f6cap-26f, -0x1.85f82cp-26f, 0x1.d1eeaap-30f, 0x1.f8eb2ep-40f}, // u^0, low part
    {0x1.39bf5ap-29f, -0x1.c1d8d8p-30f, 0x1.13ec14p-28f, 0x1.af0b86p-30f, 0x1.9ff3a8p-28f, 0x1.931698p-30f, 0x1.7bd542p-29f, -0x1.d14cb8p-27f, -0x1.c9cdacp-29f, -0x1.e453a6p-27f, -0x1.2a70e4p-27f, 0x1.ce59e2p-27f, -0x1.494f52p-27f, 0x1.80158p-27f, -0x1.e0b98cp-27f, -0x1.30bb9cp-29f, 0x1.a0cd54p-27f, 0x1.ae3824p-27f, -0x1.13fb1ep-27f, -0x1.705fd6p-27f, -0x1.0c2544p-30f, 0.0f, 0.0f, 0.0f, 0x1.d90382p-28f, 0x1.e2f7bcp-30f, -0x1.16ad28p-30f, -0x1.42b75ap-33f, -0x1.c281dep-37f, 0x1.01978cp-44f, -0x1.cdca32p-55f, -0x1.06f018p-67f}, // u^1, low part
};

// v * 2^n rounded once: the f64 product is exact, the conversion rounds (as VSCALEFPS).
static float scale_exact_then_round(float v, float n) { return (float)((double)v * ldexp(1.0, (int)n)); }

static float one_erf_bwd_f32lane(bool clip10, float x, float g) {
  const float(*E)[GELU_ACC32_ERF_COLUMNS] = gelu_acc32_erf_bwd_pieces;
  const float amax = GELU_ACC32_ERF_BWD_AMAX;
  bool neg = signbit(x);
  float ax = fabsf(x);
  float a = ax < amax ? ax : amax; // as VMINPS(ax, amax)
  float aT = neg ? a : 0.0f;
  float a2h = aT * aT, a2l = fmaf(aT, aT, -a2h);
  float p = GELU_ACC32_ERF_KH * a2h, pl = fmaf(GELU_ACC32_ERF_KH, a2h, -p);
  float nT = nearbyintf(p);
  float r = (p - nT) + (pl + fmaf(GELU_ACC32_ERF_KH, a2l, GELU_ACC32_ERF_KL * a2h));
  float fl = floorf(a);
  int i = (int)fl + (neg ? 0 : 24);
  i = i < 31 ? i : 31; // x >= 7 (their result is replaced when x >= 8) and NaN
  bool root = i < 2;
  float u = a - (fl + 0.5f);
  float th = a - GELU_ACC32_ERF_BWD_A0H;
  float ap = th + GELU_ACC32_ERF_BWD_A0H, bp = th - ap;
  float te = (a - ap) + (-GELU_ACC32_ERF_BWD_A0H - bp);
  float tl = root ? te - GELU_ACC32_ERF_BWD_A0L : 0.0f;
  float m1 = root ? th : 1.0f;
  float S = E[GELU_ACC32_ERF_DEG][i];
  for (int j = GELU_ACC32_ERF_DEG - 1; j >= 1; j--) S = fmaf(S, u, E[j][i]);
  float inner = fmaf(u, S, fmaf(u, E[GELU_ACC32_ERF_DEG + 2][i], E[GELU_ACC32_ERF_DEG + 1][i]));
  float c0 = m1 * E[0][i], e = fmaf(m1, E[0][i], -c0);
  float w = fmaf(m1, inner, fmaf(tl, E[0][i] + inner, e));
  const float *C = gelu_acc32_exp2_fit5;
  float P = C[5];
  for (int j = 4; j >= 0; j--) P = fmaf(P, r, C[j]);
  float s = r * P, sl = fmaf(r, P, -s);
  float L = fmaf(c0, s, fmaf(c0, sl, fmaf(w, s, w)));
  float y;
  if (g == 0.0f || !isfinite(g)) {
    y = g * (c0 + L);
  } else {
    int ge;
    float gm = 2.0f * frexpf(g, &ge);
    y = scale_exact_then_round(fmaf(gm, c0, gm * L), nT + (float)(ge - 1));
  }
  if (x >= GELU_ACC32_ERF_BWD_HI) y = g;
  if (clip10 && x > 10.0f) y = 0.0f;
  if (isnan(x)) y = x;
  return y;
}

void gelu_acc32_erf_bwd_scalar(const gelu_acc_params *p, const float *x, const float *dy, float *dx, size_t n) {
  for (size_t i = 0; i < n; i++) dx[i] = one_erf_bwd_f32lane(p->clip10 != 0, x[i], dy[i]);
}
