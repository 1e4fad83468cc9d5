// GELU exact mode against an independent MPFR computation: the formulas exactly as written
// (0.5*x*(1+tanh z), x*0.5*(1+erf(x/sqrt2)), x*sigmoid(1.702x) and their written derivatives) at
// 400+ bits, rounded to the dtype with mpfr_subnormalize. Exhaustive f16 and bf16 forward and
// backward for every variant, f32 and f64 samples, known values and special values.
#include "gptmeg/gelu.h"
#include "harness.h"
#include "kernels/gelu/gelu_math.h"

#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

// 400 bits, plus what the written forms' cancellation in the negative tail eats (1+tanh z ~ e^{2z},
// 1+erf(u) ~ e^{-u^2}), so the reference keeps > 300 good bits wherever the result is representable.
static mpfr_prec_t prec_for(gm_gelu_variant v, double x) {
  if (!(x < 0)) return 400;
  double a = -x;
  if (v == GM_QUICK_GELU) return a < 460 ? 400 + (mpfr_prec_t)(2.5 * a) : 400;
  if (v == GM_GELU_ERF || v == GM_GELU_PYTHON || v == GM_GELU_10) return a < 40 ? 400 + (mpfr_prec_t)(0.75 * a * a) : 400;
  return a < 23 ? 400 + (mpfr_prec_t)(0.1 * a * a * a + 3 * a) : 400; // beyond, every result underflows
}

static int is_tanh(gm_gelu_variant v) { return v != GM_GELU_ERF && v != GM_GELU_PYTHON && v != GM_GELU_10 && v != GM_QUICK_GELU; }

// The written formula (deriv 0) or its written backward (deriv 1) at x, times dy, into r.
static void ref_value(mpfr_t r, gm_gelu_variant v, int deriv, double xd, double dyd) {
  mpfr_t x, t, u, w, c;
  mpfr_inits2(prec_for(v, xd), x, t, u, w, c, (mpfr_ptr)0);
  mpfr_set_d(x, xd, MPFR_RNDN);
  if (is_tanh(v)) {
    // z = c*(x + 0.044715*x^3)
    if (v == GM_GELU_FAST) mpfr_set_str(c, "0.7978845608", 10, MPFR_RNDN);
    else if (v == GM_GELU_MEGATRON) mpfr_set_str(c, "0.79788456", 10, MPFR_RNDN);
    else if (v == GM_OPENAI_GELU) mpfr_set_str(c, "0.7978845608028654", 10, MPFR_RNDN);
    else { mpfr_const_pi(c, MPFR_RNDN); mpfr_ui_div(c, 2, c, MPFR_RNDN); mpfr_sqrt(c, c, MPFR_RNDN); }
    mpfr_pow_ui(u, x, 3, MPFR_RNDN);
    mpfr_set_str(w, "0.044715", 10, MPFR_RNDN);
    mpfr_mul(u, u, w, MPFR_RNDN);
    mpfr_add(u, u, x, MPFR_RNDN);
    mpfr_mul(u, u, c, MPFR_RNDN);
    mpfr_tanh(t, u, MPFR_RNDN); // t = tanh z
    if (!deriv) { // 0.5*x*(1+t)
      mpfr_add_ui(u, t, 1, MPFR_RNDN);
      mpfr_mul(u, u, x, MPFR_RNDN);
      mpfr_div_2ui(r, u, 1, MPFR_RNDN);
    } else { // 0.5*(1+t) + 0.5*x*(1-t^2)*zp
      if (v == GM_GELU_MEGATRON) { // zp = 0.79788456 + 0.1070322243*x^2
        mpfr_sqr(u, x, MPFR_RNDN);
        mpfr_set_str(w, "0.1070322243", 10, MPFR_RNDN);
        mpfr_mul(u, u, w, MPFR_RNDN);
        mpfr_add(u, u, c, MPFR_RNDN);
      } else { // zp = c*(1 + 3*0.044715*x^2)
        mpfr_sqr(u, x, MPFR_RNDN);
        mpfr_mul(u, u, w, MPFR_RNDN);
        mpfr_mul_ui(u, u, 3, MPFR_RNDN);
        mpfr_add_ui(u, u, 1, MPFR_RNDN);
        mpfr_mul(u, u, c, MPFR_RNDN);
      }
      mpfr_sqr(w, t, MPFR_RNDN);
      mpfr_ui_sub(w, 1, w, MPFR_RNDN);
      mpfr_mul(u, u, w, MPFR_RNDN);
      mpfr_mul(u, u, x, MPFR_RNDN);
      mpfr_add_ui(w, t, 1, MPFR_RNDN);
      mpfr_add(u, u, w, MPFR_RNDN);
      mpfr_div_2ui(r, u, 1, MPFR_RNDN);
    }
  } else if (v == GM_QUICK_GELU) {
    mpfr_set_str(c, "1.702", 10, MPFR_RNDN);
    mpfr_mul(u, x, c, MPFR_RNDN);
    mpfr_neg(t, u, MPFR_RNDN);
    mpfr_exp(t, t, MPFR_RNDN);
    mpfr_add_ui(t, t, 1, MPFR_RNDN);
    mpfr_ui_div(t, 1, t, MPFR_RNDN); // t = sigmoid(1.702x)
    if (!deriv) mpfr_mul(r, x, t, MPFR_RNDN);
    else { // t + 1.702*x*t*(1-t)
      mpfr_ui_sub(w, 1, t, MPFR_RNDN);
      mpfr_mul(w, w, t, MPFR_RNDN);
      mpfr_mul(w, w, u, MPFR_RNDN);
      mpfr_add(r, w, t, MPFR_RNDN);
    }
  } else {
    mpfr_sqrt_ui(c, 2, MPFR_RNDN);
    mpfr_div(u, x, c, MPFR_RNDN);
    mpfr_erf(t, u, MPFR_RNDN);
    mpfr_add_ui(t, t, 1, MPFR_RNDN);
    mpfr_div_2ui(t, t, 1, MPFR_RNDN); // cdf
    mpfr_mul(w, x, t, MPFR_RNDN);    // gelu(x)
    int clipped = v == GM_GELU_10 && mpfr_cmp_ui(w, 10) > 0;
    if (!deriv) {
      if (clipped) mpfr_set_ui(r, 10, MPFR_RNDN);
      else mpfr_set(r, w, MPFR_RNDN);
    } else if (clipped) {
      mpfr_set_zero(r, 1);
    } else { // cdf + x*exp(-x^2/2)/sqrt(2*pi)
      mpfr_sqr(u, x, MPFR_RNDN);
      mpfr_div_2ui(u, u, 1, MPFR_RNDN);
      mpfr_neg(u, u, MPFR_RNDN);
      mpfr_exp(u, u, MPFR_RNDN);
      mpfr_const_pi(c, MPFR_RNDN);
      mpfr_mul_2ui(c, c, 1, MPFR_RNDN);
      mpfr_sqrt(c, c, MPFR_RNDN);
      mpfr_div(u, u, c, MPFR_RNDN);
      mpfr_mul(u, u, x, MPFR_RNDN);
      mpfr_add(r, u, t, MPFR_RNDN);
    }
  }
  if (deriv && !(v == GM_GELU_10 && mpfr_zero_p(r))) mpfr_mul_d(r, r, dyd, MPFR_RNDN);
  mpfr_clears(x, t, u, w, c, (mpfr_ptr)0);
}

// Round to the dtype with MPFR's own exponent range + subnormalize (an independent rounding).
static double ref_round(mpfr_t v, gm_dtype dt) {
  int p = 24, emin = -148, emax = 128;
  if (dt == GM_F16) { p = 11; emin = -23; emax = 16; }
  if (dt == GM_BF16) { p = 8; emin = -132; emax = 128; }
  if (dt == GM_F64) { p = 53; emin = -1073; emax = 1024; }
  mpfr_exp_t oemin = mpfr_get_emin(), oemax = mpfr_get_emax();
  mpfr_t r;
  mpfr_init2(r, p);
  mpfr_set_emin(emin);
  mpfr_set_emax(emax);
  int t = mpfr_set(r, v, MPFR_RNDN);
  t = mpfr_check_range(r, t, MPFR_RNDN);
  mpfr_subnormalize(r, t, MPFR_RNDN);
  double d = mpfr_get_d(r, MPFR_RNDN);
  mpfr_set_emin(oemin);
  mpfr_set_emax(oemax);
  mpfr_clear(r);
  return d;
}

static double ref(gm_gelu_variant v, int deriv, double x, double dy, gm_dtype dt) {
  mpfr_t r;
  mpfr_init2(r, prec_for(v, x));
  ref_value(r, v, deriv, x, dy);
  double d = ref_round(r, dt);
  mpfr_clear(r);
  return d;
}

static double exact1(gm_gelu_variant v, int deriv, double x, double dy, gm_dtype dt) {
  char xb[8], gb[8], ob[8];
  gm_store_f64(dt, xb, 0, x);
  gm_store_f64(dt, gb, 0, dy);
  gm_gelu_spec s = {v, GM_MODE_EXACT};
  int rc = deriv ? gm_gelu_bwd(s, dt, xb, gb, ob, 1, 1) : gm_gelu_fwd(s, dt, xb, ob, 1, 1);
  CHECK(rc == 0, "%s", gm_errmsg());
  return gm_load_f64(dt, ob, 0);
}

// Every finite u16 pattern (strided in quick mode): exact == nearest to the 400-bit written form.
static void check_u16(gm_dtype dt) {
  size_t stride = test_quick() ? 97 : 1, n = 0;
  uint16_t *x = malloc(65536 * 2), *dy = malloc(65536 * 2), *o = malloc(65536 * 2);
  gm_rng r; gm_rng_seed(&r, 3);
  for (size_t u = 0; u < 65536; u += stride) {
    double xv = gm_load_f64(dt, &(uint16_t){(uint16_t)u}, 0);
    if (!isfinite(xv)) continue;
    x[n] = (uint16_t)u;
    gm_store_f64(dt, dy, n, n % 2 ? 1.0 : gm_rng_normal(&r) * 4);
    n++;
  }
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++)
    for (int deriv = 0; deriv < 2; deriv++) {
      gm_gelu_spec s = {v, GM_MODE_EXACT};
      if (deriv) gm_gelu_bwd(s, dt, x, dy, o, n, 2);
      else gm_gelu_fwd(s, dt, x, o, n, 2);
      long bad = 0, first = -1;
#pragma omp parallel for reduction(+ : bad) num_threads(2) schedule(dynamic, 256)
      for (size_t i = 0; i < n; i++) {
        double e = ref(v, deriv, gm_load_f64(dt, x, i), gm_load_f64(dt, dy, i), dt);
        uint16_t eb;
        gm_store_f64(dt, &eb, 0, e);
        if (gm_ulp_dist_u16(dt, eb, o[i]) != 0) { bad++; first = (long)i; }
      }
      CHECK(bad == 0, "%s %s %s: %ld results differ from MPFR (e.g. x=0x%04x)", gm_gelu_variant_info(v)->name,
            gm_dtype_name(dt), deriv ? "bwd" : "fwd", bad, first >= 0 ? x[first] : 0);
    }
  free(x); free(dy); free(o);
}

static void check_sample(gm_dtype dt, size_t n) {
  gm_rng r; gm_rng_seed(&r, 9);
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++)
    for (size_t i = 0; i < n; i++) {
      double x = (i % 4 == 3) ? gm_rng_uniform(&r) * 80 - 40 : gm_rng_normal(&r) * 4;
      double dy = gm_rng_normal(&r);
      if (dt == GM_F32) { x = (float)x; dy = (float)dy; }
      for (int deriv = 0; deriv < 2; deriv++) {
        double e = ref(v, deriv, x, dy, dt), a = exact1(v, deriv, x, dy, dt);
        CHECK(gm_ulp_dist_f64(e, a) == 0, "%s %s %s x=%a: exact %a, MPFR %a", gm_gelu_variant_info(v)->name,
              gm_dtype_name(dt), deriv ? "bwd" : "fwd", x, a, e);
      }
    }
}

static void check_known(void) {
  // gelu_new(-5.06): exact ~ -1.5e-7 where the written form in low precision gives -0.0.
  double y = exact1(GM_GELU_NEW, 0, -5.06, 1, GM_F32);
  CHECK(y < -1.4e-7 && y > -1.6e-7, "gelu_new(-5.06) = %g, expected about -1.5e-7", y);
  // Deep negative tail: still a negative number (f32 normal range), not 0.
  y = exact1(GM_GELU_NEW, 0, -10.0, 1, GM_F32);
  CHECK(y < 0 && y > -1e-30, "gelu_new(-10) = %g", y);
  y = exact1(GM_GELU_ERF, 0, -13.0, 1, GM_F64);
  CHECK(y < 0 && y > -1e-30, "gelu(-13) f64 = %g", y);
  CHECK(exact1(GM_GELU_ERF, 0, 1.0, 1, GM_F64) == 0.8413447460685429, "gelu(1) f64 = %.17g", exact1(GM_GELU_ERF, 0, 1.0, 1, GM_F64));
  // Specials.
  gm_dtype dts[] = {GM_F32, GM_F16, GM_BF16, GM_F64};
  for (int k = 0; k < 4; k++) {
    gm_dtype dt = dts[k];
    for (int v = 0; v < GM_GELU_N_VARIANTS; v++) {
      CHECK(isnan(exact1(v, 0, NAN, 1, dt)), "NaN fwd");
      CHECK(isnan(exact1(v, 1, 1.0, NAN, dt)), "NaN dy");
      double mi = exact1(v, 0, -INFINITY, 1, dt);
      CHECK(mi == 0 && signbit(mi), "f(-inf) = %g, expected -0", mi);
      double pi = exact1(v, 0, INFINITY, 1, dt);
      CHECK(pi == (v == GM_GELU_10 ? 10 : INFINITY), "f(+inf) = %g", pi);
      double z = exact1(v, 0, -0.0, 1, dt);
      CHECK(z == 0 && signbit(z), "f(-0) = %g", z);
      CHECK(exact1(v, 1, 0.0, 3.0, dt) == 1.5, "f'(0)*3");
      CHECK(exact1(v, 1, INFINITY, 2.0, dt) == (v == GM_GELU_10 ? 0 : 2.0), "f'(inf)*2");
      double g = exact1(v, 1, -INFINITY, 2.0, dt);
      CHECK(g == 0 && signbit(g), "f'(-inf)*2 = %g", g);
      double d0 = exact1(v, 1, -1.5, 0.0, dt);
      CHECK(d0 == 0 && signbit(d0), "dy=0 at x=-1.5 (f' < 0) gives -0");
    }
    CHECK(exact1(GM_GELU_10, 0, 100, 1, dt) == 10, "gelu_10 clip");
    CHECK(exact1(GM_GELU_10, 0, 10, 1, dt) == 10, "gelu_10(10) rounds to 10");
    CHECK(exact1(GM_GELU_10, 1, 10, 1, dt) == 1, "gelu_10'(10) = 1 + 7.7e-22 rounds to 1");
  }
  // Thread independence.
  size_t n = 20001;
  float *x = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
  gm_rng r; gm_rng_seed(&r, 1);
  for (size_t i = 0; i < n; i++) x[i] = (float)(gm_rng_normal(&r) * 5);
  gm_gelu_spec s = {GM_GELU_NEW, GM_MODE_EXACT};
  gm_gelu_bwd(s, GM_F32, x, x, a, n, 1);
  gm_gelu_bwd(s, GM_F32, x, x, b, n, 2);
  CHECK(memcmp(a, b, n * 4) == 0, "exact: 1 vs 2 threads differ");
  free(x); free(a); free(b);
}

// The double step (gelu_exact_f64.c) on f32 inputs whose result lies within 2^-10 ULP of a
// rounding midpoint (found with the long-double point value), on the 300 f32 each side of the zero
// of f' (near -0.75, where 1 + t*om and Phi + x*phi cancel and the double value is off by up to
// ~1/16 ULP), on the deep negative tails (signed zeros, subnormal and underflowing exp/erfc) and on
// tiny x (the x/2 rule, odd subnormals): where it decides, its result, and always the exact mode's,
// must equal the 400-bit MPFR reference. Its bound taken 4096 times too small fails here.
static double mid_dist(long double y) { // distance of y to the nearest f32 rounding midpoint, in ULPs
  if (y == 0 || !isfinite(y)) return 1;
  int e;
  frexpl(y, &e);
  long double m = ldexpl(fabsl(y), -(e - 24 > -149 ? e - 24 : -149));
  return (double)fabsl(m - floorl(m) - 0.5L);
}

static double f32_at(uint32_t bits) {
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static void check_f64_step(void) {
  gm_rng r; gm_rng_seed(&r, 17);
  gelu_fmt f = gelu_fmt_of(GM_F32);
  size_t scan = test_quick() ? 1 << 14 : 1 << 17;
  long hard = 0, decided = 0; // decided: of the hard inputs
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++)
    for (int deriv = 0; deriv < 2; deriv++) {
      gelu_family fam = gelu_family_of(v);
      double lo, hi;
      gelu_core_range(v, &lo, &hi);
      if (v == GM_GELU_10) hi = 10;
      double z0 = -0.9, z1 = -0.6; // the zero of f'
      for (int it = 0; it < 60; it++) {
        double m = (z0 + z1) / 2;
        if (gm_gelu_ld_point(v, 1, m) < 0) z0 = m; else z1 = m;
      }
      float zf = (float)z0;
      uint32_t zb;
      memcpy(&zb, &zf, 4);
      size_t n_tail = 40, n_tiny = 40, n_zero = deriv ? 600 : 0;
      for (size_t i = 0; i < scan + n_tail + n_tiny + n_zero; i++) {
        double x, dy = 1;
        if (i < scan) { // candidates: keep those near a midpoint
          int k = (int)(i % 4);
          if (k == 0) x = gm_rng_normal(&r) * 3;
          else if (k == 1) x = lo + (hi - lo) * gm_rng_uniform(&r);
          else if (k == 2) x = -0.75 + (gm_rng_uniform(&r) - 0.5) / 8;
          else x = ldexp(gm_rng_uniform(&r) + 0.5, (int)(gm_rng_uniform(&r) * 36) - 30);
          x = (float)x;
          if (deriv && i % 3 == 0) dy = (float)ldexp(gm_rng_uniform(&r) + 0.5, (int)(gm_rng_uniform(&r) * 40) - 20);
          if (x == 0 || x < lo || x > hi) continue;
          if (mid_dist(dy * gm_gelu_ld_point(v, deriv, x)) > 0x1p-10) continue;
          hard++;
        } else if (i < scan + n_tail) { // negative tails, as deep as ref() keeps enough bits
          double t0 = fam == GELU_FAM_ERF ? -30 : fam == GELU_FAM_SIGMOID ? -400 : -17;
          double t1 = fam == GELU_FAM_ERF ? -40 : fam == GELU_FAM_SIGMOID ? -460 : -23;
          x = (float)(t0 + (t1 - t0) * gm_rng_uniform(&r));
          if (deriv) dy = (float)(gm_rng_normal(&r) * 0x1p100);
        } else if (i < scan + n_tail + n_tiny) { // subnormals 1..16 quanta, then |x| < 2^-100
          size_t j = i - scan - n_tail;
          x = j < 32 ? f32_at((uint32_t)(j / 2 + 1)) : (float)ldexp(gm_rng_uniform(&r) + 0.5, -101 - (int)(j % 24));
          if (j % 2) x = -x;
        } else {
          x = f32_at(zb + (uint32_t)(i - scan - n_tail - n_tiny) - 300);
        }
        double e = ref(v, deriv, x, dy, GM_F32);
        long double d;
        if (gm_gelu_f64_decide(v, deriv, x, dy, f, &d)) {
          decided += i < scan;
          CHECK(gm_ulp_dist_f64(e, (double)d) == 0 && signbit(e) == signbit((double)d),
                "double step %s %s x=%a dy=%a: %a, MPFR %a", gm_gelu_variant_info(v)->name, deriv ? "bwd" : "fwd",
                x, dy, (double)d, e);
        }
        double a = exact1(v, deriv, x, dy, GM_F32);
        CHECK(gm_ulp_dist_f64(e, a) == 0 && signbit(e) == signbit(a), "%s %s x=%a dy=%a: exact %a, MPFR %a",
              gm_gelu_variant_info(v)->name, deriv ? "bwd" : "fwd", x, dy, a, e);
      }
    }
  // Its bound is ~2^-14 ULP of f32, so most of these are still decided in double: the step is tested.
  CHECK(hard > 200 && decided > hard / 2, "double step: %ld inputs near a midpoint, %ld decided", hard, decided);
}

int main(void) {
  check_known();
  check_f64_step();
  check_u16(GM_F16);
  check_u16(GM_BF16);
  check_sample(GM_F32, test_quick() ? 100 : 1000);
  check_sample(GM_F64, test_quick() ? 30 : 100);
  return test_done("test_gelu_exact");
}
