// Accurate mode, f32 backward of the erf family (gelu, gelu_python, gelu_10) and the tanh forms
// (gelu_new, gelu_pytorch_tanh, gelu_fast, gelu_megatron, gelu_accurate, openai_gelu) in f32 lanes
// (scalar reference): dx = dy * f'(x), rounded once. With a = |x|:
//   x < 0:  f' = 2^T * H(a). erf: T = -a^2/2 * log2(e), H(a) = erfcx(a/sqrt2)/2 - a/sqrt(2 pi);
//           tanh: T = M*a*(1 + k*a^2) (M = -2a'*log2(e), the forward's), H(a) = (1 - t*om)*om with
//           om = 1/(1 + 2^T), t = 2a*(A + B*a^2). H has one root a0 (f'(-a0) = 0), so on [0, 2)
//           H = t*K(a) with t = a - a0 carried as an exact pair: the root keeps its relative accuracy.
//   x >= 0: f' = D(a) (erf: Phi(a) + a*phi(a); tanh: s*(1 + t*(1 - s))), in [1/2, 1.13]; x >= 8:
//           f' = 1 to 2^-43, dx = dy.
// Nothing cancels. Operations, in this order (-ffp-contract=off, FMAs written out; x, dy f32):
//   a = min(|x|, amax) (NaN: amax; amax = 20 (erf), 14 (tanh): f'(-amax) * 2^128 rounds to 0);
//   aT = a for x < 0, else 0; T = nT + r (nT integral, |r| <= 1/2 + 2^-15):
//     erf: as the forward (gelu_accurate_f32_erf.c): aT^2 and KH*a2h as exact pairs
//     tanh: the forward's reduction (gelu_accurate_f32.c) of aT (|T| < 320 here)
//   column i = floor(a) (x < 0) or min(24 + floor(a), 31) (x >= 0); tanh: x < 0 with a < 1/2 takes
//   column 15 instead (there H's quotient by a - a0 varies too much for the root form); rows of the
//   variant's pieces (gelu_accurate_f32_bwd_tables.c):
//     u = a - (floor(a) + 1/2) (exact for a >= 1/4, else within 2^-26); column 15: u = a - 1/4
//       (exact for a >= 1/8, else within 2^-27)
//     regular columns: m1 = 1, tl = 0; root columns (x < 0, a < 2): th = a - A0H with its error
//       te (Knuth's TwoSum, exact), tl = te - A0L (t = th + tl to 2^-48), m1 = th
//     S = Horner of rows 8..1 in u; inner = fma(u, S, fma(u, row 10, row 9))
//     c0 = m1*row0, e = fma(m1, row0, -c0) (exact), w = fma(m1, inner, fma(tl, row0 + inner, e)):
//       regular: c0 = row 0, w = inner; root: c0 + w = (th + tl)*K, c0 + e = th*row0 exactly
//   2^r = 1 + s + sl (P as the forward's, s = r*P, sl = fma(r, P, -s) exact);
//     L = fma(c0, s, fma(c0, sl, fma(w, s, w)))
//   hi + lo = c0 + L exactly (Knuth's TwoSum), so the product with dy below rounds once, as for dy = 1
//   dy = gm * 2^ge with gm in [1, 2) (exact; frexp, as VGETMANTPS/VGETEXPPS), so no product below
//     underflows or overflows: dx = (gm*hi + gm*lo) * 2^(nT + ge), fma(gm, hi, gm*lo) rounded (gm*lo
//     is 2^-24 of the rest), then the scaling exact or rounded once (subnormal or overflowing results)
//   dy = +-0, +-inf or NaN: dx = dy * hi (signed zero, signed infinity, NaN)
//   x >= 8: dx = dy; gelu_10 and x > 10: dx = +0; NaN x: dx = x.
// Certified error against exact (dy = 1): docs/numerics.md section 6 (gptmeg act certify --grad).
// The AVX-512 and AVX2 kernels perform the same IEEE operations, so all three give the same bits.
#include "kernels/gelu/gelu_math.h"

gelu_acc32_bwd_setup gm_gelu_acc32_bwd_setup_of(const gelu_acc_params *p) {
  gelu_acc32_bwd_setup S;
  S.tanh = p->fam == GELU_FAM_TANH;
  S.clip10 = p->clip10 != 0;
  S.K = gm_gelu_acc32_reduction(p);
  if (S.tanh) {
    S.E = gm_gelu_acc32_tanh_bwd_pieces[p->bwd32_set];
    S.a0h = gm_gelu_acc32_tanh_bwd_root[p->bwd32_set][0];
    S.a0l = gm_gelu_acc32_tanh_bwd_root[p->bwd32_set][1];
    S.amax = GELU_ACC32_TANH_BWD_AMAX;
    S.low = 0.5f;
  } else {
    S.E = gm_gelu_acc32_erf_bwd_pieces;
    S.a0h = GELU_ACC32_ERF_BWD_A0H;
    S.a0l = GELU_ACC32_ERF_BWD_A0L;
    S.amax = GELU_ACC32_ERF_BWD_AMAX;
    S.low = 0.0f;
  }
  return S;
}

// v * 2^n rounded once: the f64 product is exact, the conversion rounds (as VSCALEFPS).
static float scale_exact_then_round(float v, float n) { return (float)((double)v * ldexp(1.0, (int)n)); }


static float one_bwd_f32lane(const gelu_acc32_bwd_setup *B, float x, float g) {
  const float(*E)[GELU_ACC32_ERF_COLUMNS] = B->E;
  bool neg = signbit(x);
  float ax = fabsf(x);
  float a = ax < B->amax ? ax : B->amax; // as VMINPS(ax, amax)
  float aT = neg ? a : 0.0f;
  float nT, r;
  if (B->tanh) gelu_acc32_reduce(&B->K, aT, &r, &nT);
  else gelu_acc32_reduce_erf(aT, &r, &nT);
  float fl = floorf(a);
  int i = (int)fl + (neg ? 0 : 24);
  i = i < 31 ? i : 31; // x >= 7 (their result is replaced when x >= 8) and NaN
  bool low = neg && a < B->low; // tanh: a < 1/2 takes its own column, in u = a - 1/4
  if (low) i = GELU_ACC32_TANH_BWD_LOW_COLUMN;
  bool root = i < 2;
  float u = a - (low ? 0.25f : fl + 0.5f);
  float th, te;
  gelu_acc32_two_sum(a, -B->a0h, &th, &te);
  float tl = root ? te - B->a0l : 0.0f;
  float m1 = root ? th : 1.0f;
  float S = E[GELU_ACC32_ERF_DEG][i];
  for (int j = GELU_ACC32_ERF_DEG - 1; j >= 1; j--) S = fmaf(S, u, E[j][i]);
  float inner = fmaf(u, S, fmaf(u, E[GELU_ACC32_ERF_DEG + 2][i], E[GELU_ACC32_ERF_DEG + 1][i]));
  float c0 = m1 * E[0][i], e = fmaf(m1, E[0][i], -c0);
  float w = fmaf(m1, inner, fmaf(tl, E[0][i] + inner, e));
  float P = gelu_acc32_exp2_poly(r);
  float s = r * P, sl = fmaf(r, P, -s);
  float L = fmaf(c0, s, fmaf(c0, sl, fmaf(w, s, w)));
  float hi, lo;
  gelu_acc32_two_sum(c0, L, &hi, &lo); // hi + lo = c0 + L exactly
  float y;
  if (g == 0.0f || !isfinite(g)) {
    y = g * hi;
  } else {
    int ge;
    float gm = 2.0f * frexpf(g, &ge);
    y = scale_exact_then_round(fmaf(gm, hi, gm * lo), nT + (float)(ge - 1));
  }
  if (x >= GELU_ACC32_BWD_HI) y = g;
  if (B->clip10 && x > 10.0f) y = 0.0f;
  if (isnan(x)) y = x;
  return y;
}

void gm_gelu_acc32_bwd_scalar(const gelu_acc_params *p, const float *x, const float *dy, float *dx, size_t n) {
  gelu_acc32_bwd_setup B = gm_gelu_acc32_bwd_setup_of(p);
  for (size_t i = 0; i < n; i++) dx[i] = one_bwd_f32lane(&B, x[i], dy[i]);
}
