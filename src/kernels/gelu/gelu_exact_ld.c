// Long-double (64-bit significand) evaluation of the GELU family in its well-conditioned forms
// (gelu_math.h), as an enclosing interval: the fast path of the exact mode (its Ziv first step)
// and, as a point value, the f64 accurate mode.
//
// Error model: every basic long double operation is widened outward by 2^-62 relative (at least
// one ulp, twice its rounding error); expl and erfcl results by 2^-58 (32 ulps; glibc documents a
// few ulps for the ldbl-96 versions); decimal constants by 2^-62; a tiny absolute slack covers
// underflow. Intervals are propagated with the monotonicity of exp and erfc.
#include "kernels/gelu/gelu_math.h"


typedef struct { long double lo, hi; } ivl;

static const long double REL_OP = 0x1p-62L;
static const long double REL_LIB = 0x1p-58L;
static const long double ABS_TINY = 0x1p-16300L;

static ivl widen(long double lo, long double hi, long double rel) {
  ivl r;
  r.lo = lo - fabsl(lo) * rel - ABS_TINY;
  r.hi = hi + fabsl(hi) * rel + ABS_TINY;
  return r;
}
static ivl pt(long double x) { ivl r = {x, x}; return r; }
static ivl cst(long double c) { return widen(c, c, REL_OP); }
static ivl add(ivl a, ivl b) { return widen(a.lo + b.lo, a.hi + b.hi, REL_OP); }
static ivl neg(ivl a) { ivl r = {-a.hi, -a.lo}; return r; }
static ivl mul(ivl a, ivl b) {
  long double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  long double lo = p[0], hi = p[0];
  for (int i = 1; i < 4; i++) { lo = fminl(lo, p[i]); hi = fmaxl(hi, p[i]); }
  return widen(lo, hi, REL_OP);
}
static ivl divp(ivl a, ivl b) { // b > 0
  long double p[4] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
  long double lo = p[0], hi = p[0];
  for (int i = 1; i < 4; i++) { lo = fminl(lo, p[i]); hi = fmaxl(hi, p[i]); }
  return widen(lo, hi, REL_OP);
}
static ivl iexp(ivl a) { return widen(expl(a.lo), expl(a.hi), REL_LIB); }
static ivl ierfc(ivl a) { return widen(erfcl(a.hi), erfcl(a.lo), REL_LIB); }

// sqrt(2/pi), 1/sqrt(2), 1/sqrt(2*pi) as long double, each within a few ulps (widened by cst()).
static long double sqrt_2_over_pi(void) { return 0.797884560802865355879892119868763737L; }

// The variant's tanh constant a as the nearest long double (decimal literals as written).
static long double tanh_a(gm_gelu_variant v) {
  switch (v) {
  case GM_GELU_FAST: return 0.7978845608L;
  case GM_GELU_MEGATRON: return 0.79788456L;
  case GM_OPENAI_GELU: return 0.7978845608028654L;
  default: return sqrt_2_over_pi();
  }
}

static void interval(gm_gelu_variant v, int deriv, long double x, ivl *out) {
  ivl X = pt(x), one = pt(1);
  gelu_family fam = gelu_family_of(v);
  if (fam == GELU_FAM_ERF) {
    ivl r2 = cst(0.707106781186547524400844362104849039L);
    ivl Phi = mul(pt(0.5L), ierfc(neg(mul(X, r2))));
    if (!deriv) { *out = mul(X, Phi); return; }
    ivl g = cst(0.398942280401432677939946059934381868L);
    ivl ph = mul(g, iexp(mul(pt(-0.5L), mul(X, X))));
    *out = add(Phi, mul(X, ph));
    return;
  }
  ivl s, om, t; // s = 1/(1+E), om = 1-s = E/(1+E), t = the factor multiplying (1-s) in f'
  if (fam == GELU_FAM_SIGMOID) {
    ivl b = cst(1.702L);
    ivl bx = mul(b, X);
    ivl E = iexp(neg(bx));
    ivl den = add(one, E);
    s = divp(one, den);
    if (!deriv) { *out = mul(X, s); return; }
    om = divp(E, den);
    t = bx;
  } else {
    ivl a = cst(tanh_a(v));
    ivl k = cst(0.044715L);
    ivl x2 = mul(X, X);
    ivl z = mul(a, mul(X, add(one, mul(k, x2))));
    ivl E = iexp(mul(pt(-2), z));
    ivl den = add(one, E);
    s = divp(one, den);
    if (!deriv) { *out = mul(X, s); return; }
    om = divp(E, den);
    ivl zp;
    if (v == GM_GELU_MEGATRON) zp = add(cst(0.79788456L), mul(cst(0.1070322243L), x2));
    else zp = mul(a, add(one, mul(mul(pt(3), k), x2)));
    t = mul(mul(pt(2), X), zp);
  }
  *out = mul(s, add(one, mul(t, om)));
}

void gm_gelu_ld_interval(gm_gelu_variant v, int deriv, long double x, long double *lo, long double *hi) {
  ivl r;
  interval(v, deriv, x, &r);
  *lo = r.lo;
  *hi = r.hi;
}

long double gm_gelu_ld_point(gm_gelu_variant v, int deriv, long double x) {
  gelu_family fam = gelu_family_of(v);
  if (fam == GELU_FAM_ERF) {
    long double Phi = 0.5L * erfcl(-x * 0.707106781186547524400844362104849039L);
    if (!deriv) return x * Phi;
    return Phi + x * (0.398942280401432677939946059934381868L * expl(-0.5L * x * x));
  }
  long double s, om, t;
  if (fam == GELU_FAM_SIGMOID) {
    long double bx = 1.702L * x, E = expl(-bx), den = 1 + E;
    s = 1 / den;
    if (!deriv) return x * s;
    om = E / den;
    t = bx;
  } else {
    long double a = tanh_a(v);
    long double x2 = x * x, z = a * (x * (1 + 0.044715L * x2));
    long double E = expl(-2 * z), den = 1 + E;
    s = 1 / den;
    if (!deriv) return x * s;
    om = E / den;
    long double zp = v == GM_GELU_MEGATRON ? 0.79788456L + 0.1070322243L * x2 : a * (1 + 3 * 0.044715L * x2);
    t = 2 * x * zp;
  }
  return s * (1 + t * om);
}
