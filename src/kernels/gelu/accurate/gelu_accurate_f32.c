// Accurate mode, f32 forward of the tanh and sigmoid families in f32 lanes (scalar reference).
// f(x) = x*s with s = 1/(1+2^T), T = M*x*(1 + k*x^2) (tanh forms; M = -2a*log2(e)) or M*x
// (quick_gelu; M = -b*log2(e)). With A = -|T| = n + r (n integer; |r| <= 1/2 + 2^-16
// where the result depends on it):
//   x >= 0: f = x / (1 + 2^n*2^r)          x < 0: f = 2^n * x / (2^n + 2^-r)
// so nothing cancels and nothing overflows. Operations, in this order (-ffp-contract=off, FMAs
// written out; M = Mh + Ml and Mk = M*k = Mkh + Mkl, each pair an f64 constant split in two f32):
//   xl = max(x, -2^7) (the numerator; keeps -inf finite), a = min(xl, 2^7) (beyond 2^7 every
//        result is -0 or x; the bound keeps |a*wh| < 2^18, so |r| < 1 below)
//   T = a*(M + Mk*a^2) for signed a (T = A for x >= 0, -A for x < 0) as f32 pairs:
//        a^2 = a2h + a2l (a2l = fma(a, a, -a2h), exact);
//        u = Mkh*a2h, ul = fma(Mkh, a2h, -u) (exact); wh = Mh + u with its exact error e
//        (Fast2Sum on min/max: both are <= 0); wl = ((fma(Mkh, a2l, fma(Mkl, a2h, Ml)) + ul) + e);
//        nT = nearbyint(a*wh); rho = fma(a, wl, fma(a, wh, -nT)) (the inner one rounds a value
//        under 1/2 + 2^-16, so rho is within 2^-24 of T - nT while |T| < 256); n = -|nT|
//        quick_gelu: nT = nearbyint(a*Mh), rho = fma(a, Ml, fma(a, Mh, -nT))
//        Every step is odd in a (round to nearest even is symmetric), so rho = r (x >= 0) or -r
//        (x < 0) with r = A - n, bit for bit as if |a| were reduced and r negated.
//   P = a degree-5 fit of (2^rho - 1)/rho (Horner, FMAs;
//        2^rho = 1 + rho*P to 2^-26.7 relative); c = 2^max(n, -100); m = c (x >= 0) or 1;
//        D = 1 + c + m*rho*P, formed as Ah = 1 + c, Al = c - (Ah - 1) (exact), B = fma(m*rho, P, Al),
//        Dh = Ah + B (the one rounding of D that matters, at most half an ulp of D);
//        q = xl / Dh; x >= 0 (or NaN): y = q;  x < 0: y = q * 2^n, rounded once (subnormal results).
//   Error before the last rounding: Dh's rounding (<= 2^-24 relative) plus r's (<= 0.7 * 2^-24
//   relative after 2^r), the fit and B's rounding, so |q - f| < 2 ulp and y is within 2 ulp.
//   Special values fall out of the same operations: +-0 -> +-0 (D = 2), x > 2^7 or +inf -> x
//   (c = 2^-100, D = 1), x < -2^7 or -inf -> -0 (scale below 2^-150), NaN -> NaN (x's, quieted).
// Certified error against exact: docs/numerics.md section 6 (gptmeg act certify, every f32).
// The AVX-512 and AVX2 kernels perform the same IEEE operations, so all three give the same bits.
#include "kernels/gelu/gelu_math.h"

// (2^rho - 1)/rho on [-1/2, 1/2]: Chebyshev fit of degree 5 (mpmath chebyfit), coefficients rounded
// to f32; 1 + rho*P is within 2^-26.7 of 2^rho (relative) over the interval.
const float gm_gelu_acc32_exp2_fit5[6] = {0x1.62e430p-1f, 0x1.ebfbe0p-3f, 0x1.c6af6cp-5f,
                                       0x1.3b2a54p-7f, 0x1.5f0890p-10f, 0x1.44138ap-13f};

gelu_acc32_consts gm_gelu_acc32_reduction(const gelu_acc_params *p) {
  const double log2e = 1.4426950408889634;
  double M = p->fam == GELU_FAM_SIGMOID ? -(p->a * log2e) : -2.0 * p->a * log2e;
  double Mk = p->fam == GELU_FAM_SIGMOID ? 0 : M * p->k;
  gelu_acc32_consts K;
  K.Mh = (float)M;
  K.Ml = (float)(M - K.Mh);
  K.Mkh = (float)Mk;
  K.Mkl = (float)(Mk - K.Mkh);
  K.sigmoid = p->fam == GELU_FAM_SIGMOID;
  return K;
}

static float one_f32lane(const gelu_acc32_consts *K, float x) {
  const float lim = 0x1p7f;
  float xl = x < -lim ? -lim : x;
  float xc = xl > lim ? lim : xl;
  float a = xc, rho, nT; // signed: T = -A for x < 0, and every step below is odd in a
  gelu_acc32_reduce(K, a, &rho, &nT);
  float n = -fabsf(nT);
  bool neg = x < 0;
  float P = gelu_acc32_exp2_poly(rho);
  float c = ldexpf(1.0f, (int)(n > -100.0f ? n : -100.0f)); // NaN n: -100, as VMAXPS gives it
  float m = neg ? 1.0f : c;
  float Ah = 1.0f + c, Al = c - (Ah - 1.0f);
  float B = fmaf(m * rho, P, Al);
  float Dh = Ah + B;
  float q = xl / Dh;
  return neg ? gelu_acc32_scale_once(q, n) : q;
}

void gm_gelu_acc32_fwd_scalar(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  gelu_acc32_consts K = gm_gelu_acc32_reduction(p);
  for (size_t i = 0; i < n; i++) y[i] = one_f32lane(&K, x[i]);
}
