// Exact mode, first Ziv step for f32, f16 and bf16 results: the variant's well-conditioned form
// (the one gelu_exact_ld.c evaluates) in plain double, one point value and a bound on its error.
// When value - bound and value + bound round to the same dtype value, that value is the correctly
// rounded result; otherwise the caller goes on to the long-double interval and MPFR.
//
// Error model (running, first order):
//   - each basic double operation and each constant (decimal, sqrt(2/pi), 1/sqrt2, 1/sqrt(2pi))
//     is off by at most 2^-52 relative (two ulps);
//   - glibc's exp by 2^-44 relative and erfc by 2^-40 relative (glibc documents a few ulps), both
//     plus 2^-1060 absolute for results near or in the subnormals;
//   - an argument u known to within du moves exp(u) by du relative and erfc(u) by (2|u| + 2)*du
//     relative (|d ln erfc(u)/du| < 2|u| + 2: erfc(u) > 2 e^-u^2 / (sqrt(pi) (u + sqrt(u^2 + 2)))
//     for u >= 0, and erfc(u) > 1 for u < 0);
//   - the sums that can cancel (1 + t*om and Phi + x*phi in f') carry an absolute bound: the sum
//     of |term| * its relative error, plus the rounding of the sum.
// Every relative error stays below 2^-30, so the second-order terms and the rounding of the bound
// itself are covered by multiplying it by 1 + 2^-10; 2^-1050 absolute on f' and 2^-1000 on the
// result cover the roundings of subnormal intermediates.
// Where the sign of the result is known (forward: that of x; backward: that of dy for x > 0 and of
// -dy for x < -1, where f' < 0 for every variant), the interval is cut at zero, so tiny results
// round to the right signed zero. Tanh and sigmoid inputs with exp(-2z) or exp(-bx) above e^700
// (x < -19, x < -411) have |f| < 2^-997 and |f'| < 2^-995: a signed zero in these formats
// (|dy| < 2^129).
// Forward for |x| < 2^-100: f = x/2 + x*(s - 1/2) with s - 1/2 = Phi(x) - 1/2, tanh(z)/2 or
// tanh(bx/2)/2, of the sign of x and below 0.43|x| in size, so f - x/2 is in (0, x^2], far below
// half the smallest subnormal: f rounds as x/2 does, or, when x/2 is a midpoint (odd subnormal x),
// to the neighbour above. The bound cannot decide those, since f is within x^2 of the midpoint.
// NaN or infinite intermediates, or a bound that is not finite, leave the input undecided.
#include "kernels/gelu/gelu_math.h"

#define EPS 0x1p-52        // one double operation or constant, relative
#define LIB_EXP 0x1p-44    // glibc exp, relative
#define LIB_ERFC 0x1p-40   // glibc erfc, relative
#define LIB_ABS 0x1p-1060  // glibc exp/erfc and subnormal roundings, absolute
#define REL_MAX 0x1p-30

static double tanh_a(gm_gelu_variant v) {
  switch (v) {
  case GM_GELU_FAST: return 0.7978845608;
  case GM_GELU_MEGATRON: return 0.79788456;
  case GM_OPENAI_GELU: return 0.7978845608028654;
  default: return 0.79788456080286535588; // sqrt(2/pi)
  }
}

// v with absolute error at most err; sgn > 0 (< 0): the exact value is known positive (negative).
static bool decide(double v, double err, int sgn, gelu_fmt f, long double *r) {
  double b = err * (1 + 0x1p-10) + fabs(v) * 0x1p-51 + 0x1p-1000;
  double lo = v - b, hi = v + b;
  if (!isfinite(lo) || !isfinite(hi)) return false;
  if (sgn > 0 && lo <= 0) lo = 0.0;
  if (sgn < 0 && hi >= 0) hi = -0.0;
  if (lo > hi) return false;
  long double rl, rh;
  if (f.p == 24) { // f32: the conversion rounds once to nearest even, subnormals and overflow included
    rl = (float)lo;
    rh = (float)hi;
  } else {
    rl = gelu_round_ld(lo, f);
    rh = gelu_round_ld(hi, f);
  }
  if (rl != rh || signbit(rl) != signbit(rh)) return false;
  *r = rl;
  return true;
}

bool gm_gelu_f64_decide(gm_gelu_variant v, int deriv, double x, double dy, gelu_fmt f, long double *r) {
  if (f.p > 24) return false;
  if (!deriv && fabs(x) < 0x1p-100) { // see the top: f = x/2 + (0, x^2)
    double h = 0.5 * x;
    long double rh = f.p == 24 ? (long double)(float)h : gelu_round_ld(h, f);
    if (rh != h) rh = h + ldexp(1, f.qmin - 1); // h is a midpoint of the subnormals: the one above
    *r = rh == 0 ? copysignl(0, x) : rh;
    return true;
  }
  int sgn = deriv ? (x > 0 ? 1 : x < -1 ? -1 : 0) * (dy < 0 ? -1 : 1) : (x < 0 ? -1 : 1);
  double d, ad; // f' and its absolute error (deriv)
  if (gelu_family_of(v) == GELU_FAM_ERF) {
    double u = -x * 0.70710678118654752440;               // 2 EPS
    double ru = (2 * fabs(u) + 2) * fabs(u) * (2 * EPS) + LIB_ERFC;
    if (ru > REL_MAX) return false;
    double Phi = 0.5 * erfc(u);
    double aPhi = Phi * ru + LIB_ABS;
    if (!deriv) return decide(x * Phi, fabs(x) * aPhi + fabs(x * Phi) * EPS, sgn, f, r);
    double q = -0.5 * (x * x);                            // EPS
    double rq = fabs(q) * EPS + LIB_EXP;
    if (rq > REL_MAX) return false;
    double ph = 0.39894228040143267794 * exp(q);          // + 2 EPS
    double aph = ph * (rq + 2 * EPS) + LIB_ABS;
    double xph = x * ph;
    double axph = fabs(x) * aph + fabs(xph) * EPS;
    d = Phi + xph;
    ad = aPhi + axph + fabs(d) * EPS + 0x1p-1050; // + subnormal roundings, times |x| <= 60
  } else {
    double u, ru, t, rt; // u = -2z or -bx, t = 2x*zp or bx, their relative errors
    double x2 = x * x;   // EPS
    if (gelu_family_of(v) == GELU_FAM_SIGMOID) {
      t = 1.702 * x;
      rt = 2 * EPS;
      u = -t;
      ru = rt;
    } else {
      double a = tanh_a(v);
      u = -2 * (a * (x * (1 + 0.044715 * x2)));           // 4 EPS in the sum, 7 after the products
      ru = 7 * EPS;
      t = 0; rt = 0;
      if (deriv) {
        if (v == GM_GELU_MEGATRON) { t = 2 * x * (0.79788456 + 0.1070322243 * x2); rt = 5 * EPS; }
        else { t = 2 * x * (a * (1 + 0.134145 * x2)); rt = 7 * EPS; } // 0.134145 = 3*0.044715
      }
    }
    if (u > 700) { // the deep negative tail: see the top
      *r = deriv ? copysignl(0, -dy) : copysignl(0, x);
      return true;
    }
    double du = fabs(u) * ru;
    if (du > REL_MAX) return false;
    double E = exp(u);
    double aE = E * (du + LIB_EXP) + LIB_ABS;
    double den = 1 + E;                                    // >= 1
    double rden = aE / den + EPS;
    double s = 1 / den;
    double rs = rden + EPS;
    if (!deriv) return decide(x * s, fabs(x * s) * (rs + EPS), sgn, f, r);
    double om = E / den;
    double aom = aE / den + om * (rden + EPS);
    double to = t * om;
    double sum = 1 + to;
    double asum = fabs(t) * aom + fabs(to) * (rt + EPS) + fabs(sum) * EPS;
    d = s * sum;
    ad = s * asum + fabs(d) * (rs + EPS) + 0x1p-1050; // + subnormal roundings, times |t| < 2^13
  }
  double p = d * dy;
  return decide(p, fabs(dy) * ad + fabs(p) * EPS, sgn, f, r);
}
