// lab/compare: the statistics on hand-built buffers, the input generators, and the compare driver
// against a direct evaluation of the same inputs. Modes that are not built are skipped by name.
#include "gptmeg/lab.h"
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool have_mode(gm_gelu_variant v, gm_gelu_mode m, gm_dtype dt) {
  unsigned char x[8] = {0}, y[8];
  gm_store_f64(dt, x, 0, 0.5);
  gm_gelu_spec s = {v, m};
  if (gm_gelu_fwd(s, dt, x, y, 1, 1) == 0) return true;
  char what[80];
  snprintf(what, sizeof what, "parts needing mode '%s' (%s)", gm_gelu_mode_name(m), gm_dtype_name(dt));
  test_skip(what, gm_errmsg());
  return false;
}

static void buckets(void) {
  static const uint64_t u[] = {0, 1, 2, 3, 4, 5, 16, 17, 256, 257, UINT64_MAX};
  static const int b[] = {0, 1, 2, 3, 3, 4, 4, 5, 5, 6, 6};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) CHECK(gm_lab_bucket(u[i]) == b[i], "bucket(%llu)", (unsigned long long)u[i]);
  CHECK(strcmp(gm_lab_bucket_labels[3], "3-4") == 0 && strcmp(gm_lab_bucket_labels[6], ">256") == 0, "labels");
}

static void stats_f32(void) {
  enum { N = 8 };
  float x[N], a[N], b[N];
  for (int i = 0; i < N; i++) { x[i] = (float)i; b[i] = 1.0f + (float)i; a[i] = b[i]; }
  a[1] = nextafterf(b[1], 10.0f);                          // 1 ulp up
  a[2] = b[2]; for (int k = 0; k < 3; k++) a[2] = nextafterf(a[2], -10.0f); // 3 ulp down
  a[3] = b[3] * (1 + 1e-3f);                               // far
  a[4] = NAN;                                              // NaN against a number
  a[5] = -0.0f; b[5] = 0.0f;                               // 0 ulp, not bitwise equal
  gm_cmp_stats s;
  gm_cmp_init(&s);
  gm_tolerance user = {1e-2, 0};
  gm_cmp_add(&s, GM_F32, x, a, b, N, user);
  CHECK(s.n == N, "n %llu", (unsigned long long)s.n);
  CHECK(s.equal == 3, "equal %llu (indices 0, 6, 7; -0 vs +0 is not bitwise equal)", (unsigned long long)s.equal);
  CHECK(s.nan_mismatch == 1, "nan mismatch");
  CHECK(s.hist[0] == 4 && s.hist[1] == 1 && s.hist[3] == 1 && s.hist[6] == 2, "histogram %llu %llu %llu %llu", (unsigned long long)s.hist[0],
        (unsigned long long)s.hist[1], (unsigned long long)s.hist[3], (unsigned long long)s.hist[6]);
  uint64_t far = gm_ulp_dist_f32(a[3], b[3]);
  CHECK(s.max_ulp == far && s.worst_ulp == far && s.worst_x == 3.0, "worst: max %llu x %g", (unsigned long long)s.max_ulp, s.worst_x);
  CHECK(s.worst_a == (double)a[3] && s.worst_b == (double)b[3], "worst values");
  CHECK(s.max_abs == fabs((double)a[3] - (double)b[3]), "max_abs");
  CHECK(fabs(s.max_rel - fabs((double)a[3] - b[3]) / b[3]) < 1e-15, "max_rel");
  // close: default f32 tolerance passes the 1- and 3-ulp ones and the zeros, not the 1e-3 or NaN
  CHECK(s.close_default == 6, "close_default %llu", (unsigned long long)s.close_default);
  CHECK(s.close_user == 7, "close_user %llu", (unsigned long long)s.close_user);
  double sum = 0;
  for (int i = 0; i < N; i++) if (isfinite(a[i])) sum += (double)a[i] - b[i];
  CHECK(s.n_signed == N - 1 && gm_cmp_mean_signed(&s) == sum / (N - 1), "mean signed");
  gm_tolerance t = gm_default_tolerance(GM_F32);
  double need = (fabs((double)a[3] - b[3]) - t.atol) / b[3];
  CHECK(fabs(s.rtol_needed - need) < 1e-15, "rtol_needed %g vs %g", s.rtol_needed, need);
  // merging two halves gives the whole
  gm_cmp_stats h1, h2;
  gm_cmp_init(&h1);
  gm_cmp_init(&h2);
  gm_cmp_add(&h1, GM_F32, x, a, b, 4, user);
  gm_cmp_add(&h2, GM_F32, x + 4, a + 4, b + 4, N - 4, user);
  gm_cmp_merge(&h1, &h2);
  CHECK(h1.n == s.n && h1.equal == s.equal && h1.max_ulp == s.max_ulp && h1.worst_x == s.worst_x && h1.sum_signed == s.sum_signed &&
            memcmp(h1.hist, s.hist, sizeof s.hist) == 0,
        "merge");
}

static void stats_u16(void) {
  // bf16: 1.0 vs the next value is 1 ulp; inf vs inf equal; -inf vs max finite is far
  uint16_t x[3] = {0, 0, 0}, a[3] = {0x3f81, 0x7f80, 0xff80}, b[3] = {0x3f80, 0x7f80, 0xff7f};
  gm_cmp_stats s;
  gm_cmp_init(&s);
  gm_cmp_add(&s, GM_BF16, x, a, b, 3, (gm_tolerance){0, 0});
  CHECK(s.equal == 1 && s.hist[1] == 2 && s.max_ulp == 1, "bf16 ulps: equal %llu max %llu", (unsigned long long)s.equal, (unsigned long long)s.max_ulp);
  CHECK(s.n_signed == 1, "infinities are left out of the signed error");
}

static void inputs(void) {
  gm_dist d;
  CHECK(gm_dist_parse("normal", &d) == 0 && d.kind == GM_DIST_NORMAL, "normal");
  CHECK(gm_dist_parse("uniform:-3:5", &d) == 0 && d.kind == GM_DIST_UNIFORM && d.lo == -3 && d.hi == 5, "uniform");
  CHECK(gm_dist_parse("uniform:5:-3", &d) != 0 && strstr(gm_errmsg(), "LO < HI"), "uniform reversed");
  CHECK(gm_dist_parse("gauss", &d) != 0 && strstr(gm_errmsg(), "normal, uniform:LO:HI, wide"), "unknown lists the forms");
  enum { N = 20000 };
  static float x1[N], x2[N], x3[N];
  gm_rng r;
  gm_dist_parse("wide", &d);
  gm_rng_seed(&r, 7); gm_dist_fill(d, GM_F32, &r, x1, N);
  gm_rng_seed(&r, 7); gm_dist_fill(d, GM_F32, &r, x2, N);
  gm_rng_seed(&r, 8); gm_dist_fill(d, GM_F32, &r, x3, N);
  CHECK(memcmp(x1, x2, sizeof x1) == 0, "same seed, same inputs");
  CHECK(memcmp(x1, x3, sizeof x1) != 0, "other seed, other inputs");
  float lo = INFINITY, hi = 0;
  int neg = 0;
  for (int i = 0; i < N; i++) {
    CHECK(isfinite(x1[i]), "wide f32 gave a non-finite value");
    float m = fabsf(x1[i]);
    if (m < lo) lo = m;
    if (m > hi) hi = m;
    neg += x1[i] < 0;
  }
  CHECK(lo < 1e-40f && hi > 1e36f && neg > N / 3 && neg < 2 * N / 3, "wide covers the range and both signs: %g %g %d", lo, hi, neg);
  static uint16_t h[N];
  gm_rng_seed(&r, 1);
  gm_dist_fill(d, GM_F16, &r, h, N);
  double hmax = 0;
  for (int i = 0; i < N; i++) { double v = fabs(gm_load_f64(GM_F16, h, (size_t)i)); CHECK(isfinite(v), "wide f16 non-finite"); if (v > hmax) hmax = v; }
  CHECK(hmax > 1e4, "wide f16 reaches large values: %g", hmax);
  gm_dist_parse("uniform:-2:0.5", &d);
  gm_rng_seed(&r, 3);
  gm_dist_fill(d, GM_F32, &r, x1, N);
  for (int i = 0; i < N; i++) CHECK(x1[i] >= -2 && x1[i] <= 0.5f, "uniform out of range: %g", x1[i]);
  static uint16_t all[65536];
  CHECK(gm_finite_u16(GM_F16, all) == 63488, "finite f16 count");
  CHECK(gm_finite_u16(GM_BF16, all) == 65280, "finite bf16 count");
  for (int i = 0; i < 65280; i++) CHECK(isfinite(gm_load_f64(GM_BF16, all, (size_t)i)), "finite bf16");
  // dy stream: magnitudes in [1, 2], stateless by index
  gm_dy_fill(GM_F32, 5, 0, x1, 100);
  gm_dy_fill(GM_F32, 5, 40, x2, 60);
  CHECK(memcmp(x1 + 40, x2, 60 * sizeof(float)) == 0, "dy is a function of the index");
  int dneg = 0;
  for (int i = 0; i < 100; i++) { CHECK(fabsf(x1[i]) >= 1 && fabsf(x1[i]) <= 2, "dy magnitude %g", x1[i]); dneg += x1[i] < 0; }
  CHECK(dneg > 20 && dneg < 80, "dy has both signs");
}

static void driver(void) {
  gm_compare_job j = {.a = {GM_GELU_NEW, GM_MODE_EXACT}, .b = {GM_GELU_NEW, GM_MODE_EXACT}, .dtype = GM_F32, .src = GM_SRC_EXHAUSTIVE,
                      .user_tol = {1e-5, 1e-8}, .threads = 1};
  gm_compare_result r;
  CHECK(gm_compare_run(&j, &r) != 0 && strstr(gm_errmsg(), "--n"), "f32 exhaustive refused pointing to --n: %s", gm_errmsg());
  j.src = GM_SRC_DIST;
  j.n = (size_t)1e15;
  CHECK(gm_compare_run(&j, &r) != 0 && strstr(gm_errmsg(), "memory"), "huge n refused: %s", gm_errmsg());
  if (!have_mode(GM_GELU_NEW, GM_MODE_EXACT, GM_F16) || !have_mode(GM_GELU_PYTORCH_TANH, GM_MODE_FUSED, GM_F16)) return;
  // exhaustive f16: exact against itself is all equal; every finite pattern is used
  j.dtype = GM_F16;
  j.src = GM_SRC_EXHAUSTIVE;
  CHECK(gm_compare_run(&j, &r) == 0, "exhaustive f16: %s", gm_errmsg());
  CHECK(r.ab.n == 63488 && r.excluded == 2048 && r.ab.equal == r.ab.n && r.tensors == 1 && r.tensors_equal == 1, "exact vs exact");
  CHECK(r.have_exact && r.a_exact.equal == r.a_exact.n, "exact against exact");
  // a sample: the driver's figures equal a direct evaluation of the same inputs
  size_t n = test_quick() ? 2000 : 50000;
  j = (gm_compare_job){.a = {GM_GELU_NEW, GM_MODE_EXACT}, .b = {GM_GELU_PYTORCH_TANH, GM_MODE_FUSED}, .dtype = GM_F16, .src = GM_SRC_DIST,
                       .seed = 11, .n = n, .user_tol = {1e-3, 1e-3}, .threads = 1};
  gm_dist_parse("uniform:-6:6", &j.dist);
  CHECK(gm_compare_run(&j, &r) == 0, "sample: %s", gm_errmsg());
  uint16_t *x = malloc(n * 2), *ya = malloc(n * 2), *yb = malloc(n * 2);
  gm_rng rng;
  gm_rng_seed(&rng, 11);
  gm_dist_fill(j.dist, GM_F16, &rng, x, n);
  CHECK(gm_gelu_fwd(j.a, GM_F16, x, ya, n, 1) == 0 && gm_gelu_fwd(j.b, GM_F16, x, yb, n, 1) == 0, "direct");
  gm_cmp_stats s;
  gm_cmp_init(&s);
  gm_cmp_add(&s, GM_F16, x, ya, yb, n, j.user_tol);
  CHECK(s.n == r.ab.n && s.equal == r.ab.equal && s.max_ulp == r.ab.max_ulp && s.close_user == r.ab.close_user &&
            memcmp(s.hist, r.ab.hist, sizeof s.hist) == 0,
        "driver matches a direct evaluation");
  CHECK(r.a_exact.equal == r.a_exact.n, "a is exact");
  CHECK(r.b_exact.max_ulp == r.ab.max_ulp, "b against exact is the same comparison as a against b here");
  // the same figures for 2 threads (fused is thread independent)
  gm_compare_result r2;
  j.threads = 2;
  CHECK(gm_compare_run(&j, &r2) == 0 && memcmp(&r2.ab, &r.ab, sizeof r.ab) == 0, "thread count changes nothing");
  // trials: K tensors of L; whole-tensor equality is bounded by element equality
  j.trials = 300;
  j.len = 9;
  j.n = 2700;
  CHECK(gm_compare_run(&j, &r) == 0, "trials: %s", gm_errmsg());
  CHECK(r.tensors == 300 && r.ab.n == 2700 && r.tensors_equal <= r.tensors, "trial counts");
  CHECK((double)r.tensors_equal / 300 <= (double)r.ab.equal / 2700 + 1e-12, "tensor equality <= element equality");
  // backward
  if (have_mode(GM_GELU_NEW, GM_MODE_EXACT, GM_F16)) {
    j = (gm_compare_job){.a = {GM_GELU_NEW, GM_MODE_FUSED}, .b = {GM_GELU_NEW, GM_MODE_FUSED}, .dtype = GM_F16, .src = GM_SRC_DIST,
                         .seed = 2, .n = 1000, .grad = true, .user_tol = {1e-5, 1e-8}, .threads = 1};
    CHECK(gm_compare_run(&j, &r) == 0 && r.ab.equal == 1000, "grad self-compare: %s", gm_errmsg());
  }
  free(x); free(ya); free(yb);
}

int main(void) {
  buckets();
  stats_f32();
  stats_u16();
  inputs();
  driver();
  return test_done("test_compare");
}
