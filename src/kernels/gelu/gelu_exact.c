// Exact mode: every variant's formula over the reals (decimal constants as written, sqrt(2/pi)
// exact, M_ constants as the reals they name), correctly rounded ONCE to the output dtype
// (round to nearest even, subnormals, overflow to inf). Backward: dx = RN(dy * f'(x)) with f' the
// exact derivative of the written forward (autograd variants) or gelu_megatron's custom rule over
// the reals; gelu_10's gradient is +0 where its clip is active (x > 10, as torch's clamp masks it).
//
// Method (Ziv): for f32, f16 and bf16 results, first a double point value with a running error
// bound (gelu_exact_f64.c; no interval, so one call to each of exp and erfc it needs); when both
// ends of value -+ bound round to the same dtype value that is the answer. Then (and for f64) a
// long-double interval enclosing the value (gelu_exact_ld.c), decided the same way. Otherwise MPFR
// interval arithmetic (directed rounding, monotone exp/erfc) at 96, 160, 320, 1024, 4096 bits
// until both ends agree. The values are transcendental for x != 0, so the loop ends.
//
// Special values (chosen, as limits of the real function): f(NaN) = NaN; f(+-0) = +-0;
// f(+inf) = +inf; f(-inf) = -0 (the limit is 0 from below); gelu_10: f(x > 10) = 10.
// f'(+inf) = 1, f'(-inf) = -0 (from below), f'(0) = 1/2; dx follows IEEE for dy = 0 or +-inf
// (the sign of f' decides), NaN in x or dy gives NaN.
#include "kernels/gelu/gelu_math.h"

#include <mpfr.h>

typedef struct { mpfr_t lo, hi; } mpi;

enum { POOL = 40 }; // more than the longest evaluation (tanh backward) takes
typedef struct { mpi v[POOL]; mpfr_t t[4]; int used; } mp_ctx;

static void ctx_init(mp_ctx *c, mpfr_prec_t w) {
  for (int i = 0; i < POOL; i++) { mpfr_init2(c->v[i].lo, w); mpfr_init2(c->v[i].hi, w); }
  for (int i = 0; i < 4; i++) mpfr_init2(c->t[i], w);
  c->used = 0;
}
static void ctx_clear(mp_ctx *c) {
  for (int i = 0; i < POOL; i++) { mpfr_clear(c->v[i].lo); mpfr_clear(c->v[i].hi); }
  for (int i = 0; i < 4; i++) mpfr_clear(c->t[i]);
}
static mpi *fresh(mp_ctx *c) { return &c->v[c->used++]; }

static mpi *mp_pt(mp_ctx *c, long double x) {
  mpi *r = fresh(c);
  mpfr_set_ld(r->lo, x, MPFR_RNDN); // exact: w >= 64
  mpfr_set_ld(r->hi, x, MPFR_RNDN);
  return r;
}
static mpi *mp_dec(mp_ctx *c, const char *s) {
  mpi *r = fresh(c);
  mpfr_set_str(r->lo, s, 10, MPFR_RNDD);
  mpfr_set_str(r->hi, s, 10, MPFR_RNDU);
  return r;
}
static mpi *mp_add(mp_ctx *c, const mpi *a, const mpi *b) {
  mpi *r = fresh(c);
  mpfr_add(r->lo, a->lo, b->lo, MPFR_RNDD);
  mpfr_add(r->hi, a->hi, b->hi, MPFR_RNDU);
  return r;
}
static mpi *mp_neg(mp_ctx *c, const mpi *a) {
  mpi *r = fresh(c);
  mpfr_neg(r->lo, a->hi, MPFR_RNDN);
  mpfr_neg(r->hi, a->lo, MPFR_RNDN);
  return r;
}
typedef int (*mp_binop)(mpfr_ptr, mpfr_srcptr, mpfr_srcptr, mpfr_rnd_t);
static mpi *mp_corners(mp_ctx *c, const mpi *a, const mpi *b, mp_binop op) {
  mpi *r = fresh(c);
  for (int dir = 0; dir < 2; dir++) {
    mpfr_rnd_t rnd = dir ? MPFR_RNDU : MPFR_RNDD;
    op(c->t[0], a->lo, b->lo, rnd);
    op(c->t[1], a->lo, b->hi, rnd);
    op(c->t[2], a->hi, b->lo, rnd);
    op(c->t[3], a->hi, b->hi, rnd);
    mpfr_ptr out = dir ? r->hi : r->lo;
    mpfr_set(out, c->t[0], MPFR_RNDN);
    for (int i = 1; i < 4; i++) {
      if (dir ? mpfr_greater_p(c->t[i], out) : mpfr_less_p(c->t[i], out)) mpfr_set(out, c->t[i], MPFR_RNDN);
    }
  }
  return r;
}
static mpi *mp_mul(mp_ctx *c, const mpi *a, const mpi *b) { return mp_corners(c, a, b, mpfr_mul); }
static mpi *mp_div(mp_ctx *c, const mpi *a, const mpi *b) { return mp_corners(c, a, b, mpfr_div); } // b > 0
static mpi *mp_exp(mp_ctx *c, const mpi *a) {
  mpi *r = fresh(c);
  mpfr_exp(r->lo, a->lo, MPFR_RNDD);
  mpfr_exp(r->hi, a->hi, MPFR_RNDU);
  return r;
}
static mpi *mp_erfc(mp_ctx *c, const mpi *a) {
  mpi *r = fresh(c);
  mpfr_erfc(r->lo, a->hi, MPFR_RNDD);
  mpfr_erfc(r->hi, a->lo, MPFR_RNDU);
  return r;
}
// sqrt(2/pi), 1/sqrt(2), 1/sqrt(2*pi), enclosed.
static mpi *mp_sqrt_2_over_pi(mp_ctx *c) {
  mpi *r = fresh(c);
  mpfr_const_pi(c->t[0], MPFR_RNDU);
  mpfr_ui_div(c->t[0], 2, c->t[0], MPFR_RNDD);
  mpfr_sqrt(r->lo, c->t[0], MPFR_RNDD);
  mpfr_const_pi(c->t[0], MPFR_RNDD);
  mpfr_ui_div(c->t[0], 2, c->t[0], MPFR_RNDU);
  mpfr_sqrt(r->hi, c->t[0], MPFR_RNDU);
  return r;
}
static mpi *mp_rsqrt2(mp_ctx *c) {
  mpi *r = fresh(c);
  mpfr_set_d(c->t[0], 0.5, MPFR_RNDN);
  mpfr_sqrt(r->lo, c->t[0], MPFR_RNDD);
  mpfr_sqrt(r->hi, c->t[0], MPFR_RNDU);
  return r;
}
static mpi *mp_rsqrt2pi(mp_ctx *c) {
  mpi *r = fresh(c);
  mpfr_const_pi(c->t[0], MPFR_RNDU);
  mpfr_mul_2ui(c->t[0], c->t[0], 1, MPFR_RNDU);
  mpfr_sqrt(c->t[0], c->t[0], MPFR_RNDU);
  mpfr_ui_div(r->lo, 1, c->t[0], MPFR_RNDD);
  mpfr_const_pi(c->t[0], MPFR_RNDD);
  mpfr_mul_2ui(c->t[0], c->t[0], 1, MPFR_RNDD);
  mpfr_sqrt(c->t[0], c->t[0], MPFR_RNDD);
  mpfr_ui_div(r->hi, 1, c->t[0], MPFR_RNDU);
  return r;
}

// The same forms as gelu_exact_ld.c, in MPFR intervals; the result times dy (a point).
static mpi *mp_eval(mp_ctx *c, gm_gelu_variant v, int deriv, long double x, long double dy) {
  mpi *X = mp_pt(c, x), *one = mp_pt(c, 1), *res;
  gelu_family fam = gelu_family_of(v);
  if (fam == GELU_FAM_ERF) {
    mpi *Phi = mp_mul(c, mp_pt(c, 0.5L), mp_erfc(c, mp_neg(c, mp_mul(c, X, mp_rsqrt2(c)))));
    if (!deriv) return mp_mul(c, X, Phi);
    mpi *ph = mp_mul(c, mp_rsqrt2pi(c), mp_exp(c, mp_mul(c, mp_pt(c, -0.5L), mp_mul(c, X, X))));
    res = mp_add(c, Phi, mp_mul(c, X, ph));
  } else {
    mpi *s, *om, *t;
    if (fam == GELU_FAM_SIGMOID) {
      mpi *bx = mp_mul(c, mp_dec(c, GELU_QUICK_B_DEC), X);
      mpi *E = mp_exp(c, mp_neg(c, bx));
      mpi *den = mp_add(c, one, E);
      s = mp_div(c, one, den);
      if (!deriv) return mp_mul(c, X, s);
      om = mp_div(c, E, den);
      t = bx;
    } else {
      const char *adec = gelu_tanh_a_dec(v);
      mpi *a = adec ? mp_dec(c, adec) : mp_sqrt_2_over_pi(c);
      mpi *k = mp_dec(c, GELU_K_DEC);
      mpi *x2 = mp_mul(c, X, X);
      mpi *z = mp_mul(c, a, mp_mul(c, X, mp_add(c, one, mp_mul(c, k, x2))));
      mpi *E = mp_exp(c, mp_mul(c, mp_pt(c, -2), z));
      mpi *den = mp_add(c, one, E);
      s = mp_div(c, one, den);
      if (!deriv) return mp_mul(c, X, s);
      om = mp_div(c, E, den);
      mpi *zp;
      if (v == GM_GELU_MEGATRON) zp = mp_add(c, mp_dec(c, GELU_MEG_A_DEC), mp_mul(c, mp_dec(c, GELU_MEG_B_DEC), x2));
      else zp = mp_mul(c, a, mp_add(c, one, mp_mul(c, mp_mul(c, mp_pt(c, 3), k), x2)));
      t = mp_mul(c, mp_mul(c, mp_pt(c, 2), X), zp);
    }
    res = mp_mul(c, s, mp_add(c, one, mp_mul(c, t, om)));
  }
  return mp_mul(c, res, mp_pt(c, dy));
}

// Round an MPFR value once onto the format (same rule as gelu_round_ld, at any precision).
static long double mp_round(mpfr_srcptr v, mpfr_ptr tmp, gelu_fmt f) {
  if (mpfr_zero_p(v) || mpfr_inf_p(v) || mpfr_nan_p(v)) return mpfr_get_ld(v, MPFR_RNDN);
  long e = (long)mpfr_get_exp(v);
  long q = e - f.p > f.qmin ? e - f.p : f.qmin;
  mpfr_mul_2si(tmp, v, -q, MPFR_RNDN); // exact
  mpfr_rint(tmp, tmp, MPFR_RNDN);       // ties to even
  long double r = ldexpl(mpfr_get_ld(tmp, MPFR_RNDN), (int)q);
  if (fabsl(r) > f.maxv) return copysignl(INFINITY, r);
  if (r == 0) return mpfr_signbit(v) ? -0.0L : 0.0L;
  return r;
}

static bool same(long double a, long double b) { return a == b && signbit(a) == signbit(b); }

// RN_fmt(dy * f'(x)) (deriv) or RN_fmt(f(x)) (dy = 1); x finite, nonzero, in the core range.
static long double ziv(gm_gelu_variant v, int deriv, long double x, long double dy, gelu_fmt f) {
  long double lo, hi;
  if (f.p <= 24 && gm_gelu_f64_decide(v, deriv, (double)x, (double)dy, f, &lo)) return lo;
  gm_gelu_ld_interval(v, deriv, x, &lo, &hi);
  if (deriv) {
    long double a = lo * dy, b = hi * dy;
    lo = fminl(a, b);
    hi = fmaxl(a, b);
    lo -= fabsl(lo) * 0x1p-62L + 0x1p-16300L;
    hi += fabsl(hi) * 0x1p-62L + 0x1p-16300L;
  }
  if (!isnan(lo) && !isnan(hi)) {
    long double rl = gelu_round_ld(lo, f), rh = gelu_round_ld(hi, f);
    if (same(rl, rh)) return rl;
  }
  static const mpfr_prec_t precs[] = {96, 160, 320, 1024, 4096};
  long double r = NAN;
  for (size_t i = 0; i < sizeof precs / sizeof precs[0]; i++) {
    mp_ctx c;
    ctx_init(&c, precs[i]);
    mpi *res = mp_eval(&c, v, deriv, x, dy);
    long double rl = mp_round(res->lo, c.t[0], f), rh = mp_round(res->hi, c.t[1], f);
    ctx_clear(&c);
    r = rh;
    if (same(rl, rh)) return rl;
  }
  return r; // not reached for transcendental values
}

static long double fwd1(gm_gelu_variant v, long double x, gelu_fmt f) {
  if (isnan(x) || x == 0) return x;
  if (v == GM_GELU_10 && x > 10) return 10;
  double lo, hi;
  gelu_core_range(v, &lo, &hi);
  if (x < lo) return -0.0L;
  if (x > hi) return x;
  return ziv(v, 0, x, 1, f);
}

static long double bwd1(gm_gelu_variant v, long double x, long double dy, gelu_fmt f) {
  if (isnan(x) || isnan(dy)) return x + dy;
  if (v == GM_GELU_10 && x > 10) return 0; // clip active: gradient masked
  if (x == 0) return gelu_round_ld(dy * 0.5L, f); // f'(0) = 1/2 for every variant; exact product
  double lo, hi;
  gelu_core_range(v, &lo, &hi);
  if (x < lo) return isinf(dy) ? -dy : copysignl(0, -dy); // f' is a tiny negative number
  if (x > hi) return dy;                                   // f' = 1 + (tiny > 0)
  if (dy == 0 || isinf(dy)) {
    long double d = ziv(v, 1, x, 1, gelu_fmt_of(GM_F64)); // only its sign matters
    return signbit(d) ? -dy : dy;
  }
  return ziv(v, 1, x, dy, f);
}

int gm_gelu_exact_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads) {
  gelu_fmt f = gelu_fmt_of(dt);
#pragma omp parallel num_threads(threads > 0 ? threads : 1)
  {
#pragma omp for schedule(dynamic, 1024)
    for (size_t i = 0; i < n; i++) gelu_store(dt, y, i, fwd1(v, gelu_load(dt, x, i), f));
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
  }
  return 0;
}

int gm_gelu_exact_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads) {
  gelu_fmt f = gelu_fmt_of(dt);
#pragma omp parallel num_threads(threads > 0 ? threads : 1)
  {
#pragma omp for schedule(dynamic, 1024)
    for (size_t i = 0; i < n; i++) gelu_store(dt, dx, i, bwd1(v, gelu_load(dt, x, i), gelu_load(dt, dy, i), f));
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
  }
  return 0;
}
