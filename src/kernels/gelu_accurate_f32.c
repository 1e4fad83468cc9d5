// Accurate mode, f32 forward of the tanh and sigmoid families in f32 lanes (scalar reference).
// f(x) = x*s with s = 1/(1+exp(-2z)) (tanh forms, z = a*x*(1+k*x^2)) or 1/(1+exp(-b*x)) (quick_gelu).
// With e = exp(-2|z|) = 2^t (t <= 0) the function is x/(1+e) for x >= 0 and (x/(c+1/e'))*2^n for
// x < 0 (e = 2^n * e'), so nothing cancels and nothing overflows. Operations, in this order
// (-ffp-contract=off, FMAs written out):
//   f64: t = |x*fma(k, x*x, 1)| * M  (M = -2a*log2(e); quick_gelu: t = |x| * (-b*log2(e)))
//        n = nearbyint(t), r = t - n (exact), both converted to f32 (n exactly, r rounded once)
//   f32: rho = r (x >= 0) or -r (x < 0); P = the degree-6 Taylor polynomial of (2^rho - 1)/rho
//        (Horner, FMAs), so 2^rho = 1 + rho*P; c = 2^max(n, -100); m = c (x >= 0) or 1 (x < 0)
//        D = 1 + c + m*rho*P, carried as Dh + Dl (two Fast2Sums around B = fma(m*rho, P, Al)):
//          x >= 0: D = 1 + c*2^r = 1 + e;   x < 0: D = c + 2^-r
//        q0 = x / Dh; R = fma(-q0, Dh, x) (the exact remainder); q = fma(fma(-q0, Dl, R), 1/Dh, q0)
//          with 1/Dh from the bit-pattern guess 0x7ef311c3 - bits(Dh) and one Newton step (it
//          only scales a correction below an ulp of q)
//        x >= 0: y = q;   x < 0: y = q * 2^n (rounds once: subnormal results);   x = 0: y = x
//   So the error before the last rounding is the polynomial's, r's rounding, and B's rounding
//   (weight <= 0.42): about 1e-7 relative, under one ulp of f32 after the last rounding.
// Certified error against exact: docs/numerics.md section 6 (gptmeg act certify, every f32).
// The AVX-512 and AVX2 kernels perform the same IEEE operations, so all three give the same bits.
#include "kernels/gelu_math.h"

#include <string.h>

// (ln 2)^k / k!, k = 1..7, rounded to f32.
const float gelu_acc32_exp2_poly[7] = {0x1.62e430p-1f, 0x1.ebfbe0p-3f, 0x1.c6b08ep-5f, 0x1.3b2ab6p-7f,
                                       0x1.5d87fep-10f, 0x1.430912p-13f, 0x1.ffcbfcp-17f};

double gelu_acc32_t_scale(const gelu_acc_params *p) {
  const double log2e = 1.4426950408889634;
  return p->fam == GELU_FAM_SIGMOID ? -(p->a * log2e) : -2.0 * p->a * log2e;
}

// 1/d to about 1.5% for d in [0.5, 4]: a guess from the bit pattern, then one Newton step.
float gelu_acc32_recip_approx(float d) {
  uint32_t u;
  memcpy(&u, &d, 4);
  u = 0x7ef311c3u - u;
  float g;
  memcpy(&g, &u, 4);
  return g * fmaf(-d, g, 2.0f);
}

static float pow2i(int n) { return ldexpf(1.0f, n); } // n in [-126, 127]: exact

static float one_f32lane(const gelu_acc_params *p, double M, float x) {
  if (isnan(x)) return x;
  if (x < p->lo) return -0.0f;
  if (x > p->hi) return x;
  double xd = x;
  double t = p->fam == GELU_FAM_SIGMOID ? fabs(xd) * M : fabs(xd * fma(p->k, xd * xd, 1.0)) * M;
  double nd = nearbyint(t);
  float r = (float)(t - nd);
  int n = (int)nd;
  bool neg = x < 0;
  float rho = neg ? -r : r;
  const float *C = gelu_acc32_exp2_poly;
  float P = C[6];
  for (int j = 5; j >= 0; j--) P = fmaf(P, rho, C[j]);
  int n1 = n > -100 ? n : -100;
  float c = pow2i(n1);
  float m = neg ? 1.0f : c;
  float Ah = 1.0f + c, Al = c - (Ah - 1.0f);
  float B = fmaf(m * rho, P, Al);
  float Dh = Ah + B, Dl = B - (Dh - Ah);
  float q0 = x / Dh;
  float R = fmaf(-q0, Dh, x);
  float q = fmaf(fmaf(-q0, Dl, R), gelu_acc32_recip_approx(Dh), q0);
  if (x == 0) return x;
  if (!neg) return q;
  int n2 = n - n1 > -100 ? n - n1 : -100;
  return (q * pow2i(n1)) * pow2i(n2);
}

void gelu_acc32_fwd_scalar(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  double M = gelu_acc32_t_scale(p);
  for (size_t i = 0; i < n; i++) y[i] = one_f32lane(p, M, x[i]);
}
