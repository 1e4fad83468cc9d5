// Accurate mode, f32 forward of the erf family (gelu, gelu_python, gelu_10) in f32 lanes (scalar
// reference). f(x) = x*Phi(x); with Q = Phi(-|x|) = 0.5*erfc(t) = 0.5*exp(-t^2)*erfcx(t), t = |x|/sqrt2:
// f = x*Q for x < 0 and x*(1 - Q) for x > 0, so nothing cancels. Operations, in this order
// (-ffp-contract=off, FMAs written out):
//   f64: T = (x*x) * (-log2(e)/2); n = nearbyint(T), r = T - n (exact), to f32 (n exact, r rounded)
//   f32: t = th + tl = |x| * (1/sqrt2) with 1/sqrt2 = KH + KL (th = |x|*KH, tl = fma(|x|, KL,
//        fma(|x|, KH, -th))); i = min(floor(2*th), 28); u = (th - fma(i, 1/2, 1/4)) + tl
//        erfcx(t) = c0 + w: c0 = the piece's constant term rounded to f32, w = fma(u, S, c0lo)
//        with S = Horner of coefficients 1..9 (gelu_erfcx_table rounded to f32) and c0lo = the
//        constant's rounding error; 2^r = 1 + s + sl, s = r*P(r) rounded, sl = fma(r, P, -s) its
//        error (P: Taylor, gelu_acc32_exp2_poly); L = fma(c0, s, fma(c0, sl, fma(w, s, w))), so
//        Q = 2^n * 0.5 * (c0 + L), L's rounding errors weighted by |L|/(c0 + L) <= 0.5
//        x < 0: y = fma(x, 0.5*c0, x*(0.5*L)) * 2^n          (the scaling rounds once)
//        x > 0: Qh = 0.5*c0*2^n, Ql = 0.5*L*2^n; Fh = 1 - Qh, Fl = ((1 - Fh) - Qh) - Ql (Fast2Sum);
//               y = fma(x, Fh, x*Fl)
//        x = 0: y = x; gelu_10: x > 10 gives 10.
// The AVX-512 and AVX2 kernels perform the same IEEE operations, so all three give the same bits.
#include "kernels/gelu_math.h"

#include <pthread.h>

static gelu_erfcx32 gelu_acc32_erfcx;
static pthread_once_t erfcx_once = PTHREAD_ONCE_INIT;

static void build_erfcx32(void) {
  for (int i = 0; i < 32; i++) {
    for (int j = 0; j <= GELU_ERFCX_DEG; j++) gelu_acc32_erfcx.c[j][i] = (float)gelu_erfcx_table[j][i];
    gelu_acc32_erfcx.c0lo[i] = (float)(gelu_erfcx_table[0][i] - (double)gelu_acc32_erfcx.c[0][i]);
  }
}

const gelu_erfcx32 *gelu_acc32_erfcx_tables(void) {
  pthread_once(&erfcx_once, build_erfcx32);
  return &gelu_acc32_erfcx;
}

static float pow2i(int n) { return ldexpf(1.0f, n); } // n in [-126, 127]: exact

// v * 2^n for n >= -200 (clamped below), rounded once.
static float scale2(float v, int n) {
  if (n < -200) n = -200;
  int n1 = n > -100 ? n : -100;
  return (v * pow2i(n1)) * pow2i(n - n1);
}

static float one_erf_f32lane(const gelu_acc_params *p, const gelu_erfcx32 *E, float x) {
  if (isnan(x)) return x;
  if (p->clip10 && x > 10) return 10.0f;
  if (x < p->lo) return -0.0f;
  if (x > p->hi) return x;
  if (x == 0) return x;
  double xd = x;
  double T = (xd * xd) * GELU_ACC32_ERF_T;
  double nd = nearbyint(T);
  float r = (float)(T - nd);
  int n = (int)nd;
  float ax = fabsf(x);
  float th = ax * GELU_ACC32_RSQRT2_HI;
  float tl = fmaf(ax, GELU_ACC32_RSQRT2_LO, fmaf(ax, GELU_ACC32_RSQRT2_HI, -th));
  float fi = floorf(th * 2.0f);
  if (fi > GELU_ERFCX_NI - 1) fi = GELU_ERFCX_NI - 1;
  int i = (int)fi;
  float u = (th - fmaf(fi, 0.5f, 0.25f)) + tl;
  float S = E->c[GELU_ERFCX_DEG][i];
  for (int j = GELU_ERFCX_DEG - 1; j >= 1; j--) S = fmaf(S, u, E->c[j][i]);
  float w = fmaf(u, S, E->c0lo[i]);
  float c0 = E->c[0][i];
  const float *C = gelu_acc32_exp2_poly;
  float P = C[6];
  for (int j = 5; j >= 0; j--) P = fmaf(P, r, C[j]);
  float s = r * P, sl = fmaf(r, P, -s); // r*P = s + sl exactly
  float L = fmaf(c0, s, fmaf(c0, sl, fmaf(w, s, w)));
  if (x < 0) return scale2(fmaf(x, 0.5f * c0, x * (0.5f * L)), n);
  float Qh = scale2(0.5f * c0, n), Ql = scale2(0.5f * L, n);
  float Fh = 1.0f - Qh;
  float Fl = ((1.0f - Fh) - Qh) - Ql;
  return fmaf(x, Fh, x * Fl);
}

void gelu_acc32_erf_fwd_scalar(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  const gelu_erfcx32 *E = gelu_acc32_erfcx_tables();
  for (size_t i = 0; i < n; i++) y[i] = one_erf_f32lane(p, E, x[i]);
}
