// GELU accurate (and fused) mode vs exact: every variant, dtype and direction held to its certified
// bound, read from tests/budgets/gelu_certified.json (tools/certify_budgets.py writes it from
// `gptmeg act certify`; docs/numerics.md section 6 shows it): f16/bf16 on every pattern, f32 on a
// large sample, each with the certificates' worst inputs among the inputs, so a kernel that got
// worse at them fails whatever the sample; SIMD vs scalar fallback bit-identical, 1 vs 2 threads
// bit-identical. GPTMEG_GELU_SAMPLE=N sets the f32 sample size (default 200000, quick 20000);
// GPTMEG_GELU_BUDGETS=FILE reads another budgets file (to show that halved budgets fail);
// GPTMEG_GELU_BENCH=1 also times accurate f32 fwd at 2^25 vs memcpy.
#include "gptmeg/gelu.h"
#include "harness.h"
#include "kernels/gelu/gelu_math.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BUDGETS GPTMEG_SOURCE_DIR "/tests/budgets/gelu_certified.json"

// The certificate of each variant x dtype (f16, bf16, f32) x direction of the accurate mode: its
// max ULP against the correctly rounded result (the backward with dy = 1) and the input where the
// certifying run met it. random_dy_slack: the ULPs allowed over a backward certificate when dy is
// not 1 (the product dy*f' rounds once more), per dtype, from the same file.
typedef struct { bool have; uint64_t max_ulp; double worst_input; } cert;
static cert certs[GM_GELU_N_VARIANTS][3][2];
static uint64_t random_dy_slack[3];
static const gm_dtype CERT_DTYPES[3] = {GM_F16, GM_BF16, GM_F32};

static int dt_index(gm_dtype dt) { return dt == GM_F16 ? 0 : dt == GM_BF16 ? 1 : dt == GM_F32 ? 2 : -1; }

// The certified bound (0, the strictest, where the file lacks it: load_budgets has failed then).
static uint64_t budget(gm_gelu_variant v, gm_dtype dt, int bwd) { return certs[v][dt_index(dt)][bwd].max_ulp; }
static uint64_t budget_random_dy(gm_gelu_variant v, gm_dtype dt) { return budget(v, dt, 1) + random_dy_slack[dt_index(dt)]; }

// A number, or one of the strings "inf", "-inf", "nan" (gm_cert_json_add_value's form); NAN if neither.
static double json_double(const cJSON *j) {
  if (cJSON_IsNumber(j)) return j->valuedouble;
  if (cJSON_IsString(j)) return strtod(j->valuestring, NULL);
  return NAN;
}

static void load_budgets(void) {
  const char *path = getenv("GPTMEG_GELU_BUDGETS");
  if (!path) path = BUDGETS;
  char *txt = test_slurp(path);
  CHECK(txt != NULL, "cannot read %s", path);
  cJSON *doc = txt ? cJSON_Parse(txt) : NULL;
  free(txt);
  CHECK(doc != NULL, "%s: not JSON", path);
  if (!doc) return;
  const cJSON *slack = cJSON_GetObjectItem(doc, "random_dy_slack_ulp");
  for (int k = 0; k < 3; k++) {
    const cJSON *s = cJSON_GetObjectItem(slack, gm_dtype_name(CERT_DTYPES[k]));
    CHECK(cJSON_IsNumber(s) && s->valuedouble >= 0, "%s: random_dy_slack_ulp.%s missing", path, gm_dtype_name(CERT_DTYPES[k]));
    random_dy_slack[k] = cJSON_IsNumber(s) && s->valuedouble >= 0 ? (uint64_t)s->valuedouble : 0;
  }
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "certificates")) {
    const cJSON *jv = cJSON_GetObjectItem(c, "variant"), *jm = cJSON_GetObjectItem(c, "mode"),
                *jd = cJSON_GetObjectItem(c, "dtype"), *jdir = cJSON_GetObjectItem(c, "direction"),
                *jmax = cJSON_GetObjectItem(c, "max_ulp");
    bool ok = cJSON_IsString(jv) && cJSON_IsString(jm) && cJSON_IsString(jd) && cJSON_IsString(jdir) &&
              cJSON_IsNumber(jmax) && jmax->valuedouble >= 0;
    CHECK(ok, "%s: a certificate without variant, mode, dtype, direction or max_ulp", path);
    if (!ok || strcmp(jm->valuestring, "accurate") != 0) continue; // other modes: not held here
    int v = -1, k = -1, bwd = !strcmp(jdir->valuestring, "bwd") ? 1 : !strcmp(jdir->valuestring, "fwd") ? 0 : -1;
    for (int i = 0; i < GM_GELU_N_VARIANTS; i++) if (!strcmp(gm_gelu_variant_info(i)->name, jv->valuestring)) v = i;
    for (int i = 0; i < 3; i++) if (!strcmp(gm_dtype_name(CERT_DTYPES[i]), jd->valuestring)) k = i;
    CHECK(v >= 0 && k >= 0 && bwd >= 0, "%s: certificate for unknown %s %s %s", path, jv->valuestring, jd->valuestring,
          jdir->valuestring);
    if (v < 0 || k < 0 || bwd < 0) continue;
    cert *ce = &certs[v][k][bwd];
    CHECK(!ce->have, "%s: two certificates for %s %s %s", path, jv->valuestring, jd->valuestring, jdir->valuestring);
    ce->have = true;
    ce->max_ulp = (uint64_t)jmax->valuedouble;
    ce->worst_input = json_double(cJSON_GetObjectItem(c, "worst_input"));
  }
  cJSON_Delete(doc);
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++)
    for (int k = 0; k < 3; k++)
      for (int bwd = 0; bwd < 2; bwd++)
        CHECK(certs[v][k][bwd].have, "%s: no certificate for %s accurate %s %s", path, gm_gelu_variant_info(v)->name,
              gm_dtype_name(CERT_DTYPES[k]), bwd ? "bwd" : "fwd");
}

// Appends the worst input of every certificate of dtype dt (both directions, every variant) to x
// at n; returns the new count (at most 2 * GM_GELU_N_VARIANTS more).
static size_t add_witnesses(gm_dtype dt, void *x, size_t n) {
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++)
    for (int bwd = 0; bwd < 2; bwd++)
      if (certs[v][dt_index(dt)][bwd].have) gm_store_f64(dt, x, n++, certs[v][dt_index(dt)][bwd].worst_input);
  return n;
}

// The witness of (v, dt, bwd) is input `at`: print a note where the kernel now does better there
// than its certificate (the certificate predates a kernel change; tools/certify_budgets.py).
static void note_witness(gm_gelu_variant v, gm_dtype dt, int bwd, const void *a, const void *e, size_t at) {
  size_t es = gm_dtype_size(dt);
  uint64_t d = gm_ulp_dist(dt, (const char *)a + at * es, (const char *)e + at * es);
  if (d < budget(v, dt, bwd))
    printf("NOTE: %s %s %s gives %llu ULP at its certificate's worst input, certified %llu: re-run tools/certify_budgets.py\n",
           gm_gelu_variant_info(v)->name, gm_dtype_name(dt), bwd ? "bwd" : "fwd", (unsigned long long)d,
           (unsigned long long)budget(v, dt, bwd));
}

// Worst ULP distance; with nonfinite != NULL, NaN-vs-number pairs are counted there instead.
static uint64_t worst_n(gm_dtype dt, const void *a, const void *b, size_t n, size_t *at, size_t *nonfinite) {
  uint64_t w = 0;
  size_t es = gm_dtype_size(dt);
  for (size_t i = 0; i < n; i++) {
    uint64_t d = gm_ulp_dist(dt, (const char *)a + i * es, (const char *)b + i * es);
    if (d == UINT64_MAX && nonfinite) { (*nonfinite)++; continue; }
    if (d > w) { w = d; *at = i; }
  }
  return w;
}
static uint64_t worst(gm_dtype dt, const void *a, const void *b, size_t n, size_t *at) { return worst_n(dt, a, b, n, at, NULL); }

static void run(gm_gelu_variant v, gm_gelu_mode m, int bwd, gm_dtype dt, const void *x, const void *dy, void *out, size_t n, int th) {
  gm_gelu_spec s = {v, m};
  int rc = bwd ? gm_gelu_bwd(s, dt, x, dy, out, n, th) : gm_gelu_fwd(s, dt, x, out, n, th);
  CHECK(rc == 0, "%s %s: %s", gm_gelu_variant_info(v)->name, gm_gelu_mode_name(m), gm_errmsg());
}

// run under GPTMEG_SIMD=cap (NULL: the CPU's own ISA), the variable unset again afterwards.
static void run_capped(const char *cap, gm_gelu_variant v, gm_gelu_mode m, int bwd, gm_dtype dt, const void *x,
                       const void *dy, void *out, size_t n, int th) {
  if (cap) test_set_simd(cap);
  run(v, m, bwd, dt, x, dy, out, n, th);
  test_set_simd(NULL);
}

// Exhaustive u16 patterns (stride in quick mode); dy: a fixed pseudo-random dtype value per index.
// Held to the certificates: the forward, the backward with dy = 1 (what was certified) and with a
// random dy (certificate + random_dy_slack); the certificates' worst inputs follow the patterns.
static void check_u16(gm_dtype dt) {
  enum { CAP = 65536 + 2 * GM_GELU_N_VARIANTS };
  size_t stride = test_quick() ? 61 : 1, n = 0;
  uint16_t *x = malloc(CAP * 2), *dy = malloc(CAP * 2), *one = malloc(CAP * 2), *e = malloc(CAP * 2), *a = malloc(CAP * 2);
  for (size_t u = 0; u < 65536; u += stride) x[n++] = (uint16_t)u;
  size_t w0 = n;
  n = add_witnesses(dt, x, n);
  gm_rng r; gm_rng_seed(&r, 7);
  for (size_t i = 0; i < n; i++) { gm_store_f64(dt, dy, i, gm_rng_normal(&r) * 2); gm_store_f64(dt, one, i, 1.0); }
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++) {
    for (int bwd = 0; bwd < 2; bwd++) { // dy = 1: the certificates' own setting
      run(v, GM_MODE_EXACT, bwd, dt, x, one, e, n, 2);
      run(v, GM_MODE_ACCURATE, bwd, dt, x, one, a, n, 2);
      size_t at = 0;
      uint64_t w = worst(dt, a, e, n, &at);
      CHECK(w <= budget(v, dt, bwd), "%s accurate %s %s%s: %llu ULP at x=0x%04x, certified %llu", gm_gelu_variant_info(v)->name,
            gm_dtype_name(dt), bwd ? "bwd" : "fwd", bwd ? " (dy = 1)" : "", (unsigned long long)w, x[at],
            (unsigned long long)budget(v, dt, bwd));
      if (n - w0 == 2 * GM_GELU_N_VARIANTS) note_witness(v, dt, bwd, a, e, w0 + 2 * (size_t)v + (size_t)bwd);
    }
    for (int bwd = 0; bwd < 2; bwd++) { // random dy (the forward does not read it: printed for the fused figure)
      run(v, GM_MODE_EXACT, bwd, dt, x, dy, e, n, 2);
      size_t at = 0;
      run(v, GM_MODE_ACCURATE, bwd, dt, x, dy, a, n, 2);
      uint64_t wa = worst(dt, a, e, n, &at);
      if (bwd)
        CHECK(wa <= budget_random_dy(v, dt), "%s accurate %s bwd, random dy: %llu ULP at x=0x%04x, allowed %llu",
              gm_gelu_variant_info(v)->name, gm_dtype_name(dt), (unsigned long long)wa, x[at],
              (unsigned long long)budget_random_dy(v, dt));
      run(v, GM_MODE_FUSED, bwd, dt, x, dy, a, n, 2);
      size_t atf = 0, nf = 0;
      uint64_t wf = worst_n(dt, a, e, n, &atf, &nf);
      printf("RAW %s %s %s accurate %llu fused %llu (+%zu NaN vs number) (exhaustive%s)\n", gm_gelu_variant_info(v)->name,
             gm_dtype_name(dt), bwd ? "bwd" : "fwd", (unsigned long long)wa, (unsigned long long)wf, nf, stride > 1 ? ", strided" : "");
    }
  }
  free(x); free(dy); free(one); free(e); free(a);
}

static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

// f32 inputs: normal*3, uniform [-25, 25], and raw bit patterns (all magnitudes, specials).
static void fill_f32(float *x, float *dy, size_t n, uint64_t seed) {
  gm_rng r; gm_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i++) {
    switch (i % 3) {
    case 0: x[i] = (float)(gm_rng_normal(&r) * 3); break;
    case 1: x[i] = (float)(gm_rng_uniform(&r) * 50 - 25); break;
    default: x[i] = from_bits((uint32_t)gm_rng_u64(&r)); break;
    }
    dy[i] = (float)gm_rng_normal(&r);
  }
}

// The f32 sample (the certificates' worst inputs first), held to the certificates as check_u16.
static void check_f32(void) {
  const char *env = getenv("GPTMEG_GELU_SAMPLE");
  size_t n = (env ? (size_t)atol(env) : (test_quick() ? 20000 : 200000)) + 2 * GM_GELU_N_VARIANTS;
  float *x = malloc(n * 4), *dy = malloc(n * 4), *one = malloc(n * 4), *e = malloc(n * 4), *a = malloc(n * 4);
  fill_f32(x, dy, n, 11);
  size_t nw = add_witnesses(GM_F32, x, 0);
  for (size_t i = 0; i < n; i++) one[i] = 1.0f;
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++)
    for (int bwd = 0; bwd < 2; bwd++) {
      run(v, GM_MODE_EXACT, bwd, GM_F32, x, one, e, n, 2);
      run(v, GM_MODE_ACCURATE, bwd, GM_F32, x, one, a, n, 2);
      size_t at = 0;
      uint64_t w = worst(GM_F32, a, e, n, &at);
      CHECK(w <= budget(v, GM_F32, bwd), "%s accurate f32 %s%s: %llu ULP at x=%a, certified %llu", gm_gelu_variant_info(v)->name,
            bwd ? "bwd" : "fwd", bwd ? " (dy = 1)" : "", (unsigned long long)w, x[at], (unsigned long long)budget(v, GM_F32, bwd));
      if (nw == 2 * GM_GELU_N_VARIANTS) note_witness(v, GM_F32, bwd, a, e, 2 * (size_t)v + (size_t)bwd);
    }
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++)
    for (int bwd = 0; bwd < 2; bwd++) {
      run(v, GM_MODE_EXACT, bwd, GM_F32, x, dy, e, n, 2);
      size_t at = 0, atf = 0;
      run(v, GM_MODE_ACCURATE, bwd, GM_F32, x, dy, a, n, 2);
      uint64_t wa = worst(GM_F32, a, e, n, &at);
      if (bwd)
        CHECK(wa <= budget_random_dy(v, GM_F32), "%s accurate f32 bwd, random dy: %llu ULP at x=%a, allowed %llu",
              gm_gelu_variant_info(v)->name, (unsigned long long)wa, x[at], (unsigned long long)budget_random_dy(v, GM_F32));
      run(v, GM_MODE_FUSED, bwd, GM_F32, x, dy, a, n, 2);
      size_t nf = 0;
      uint64_t wf = worst_n(GM_F32, a, e, n, &atf, &nf);
      printf("RAW %s f32 %s accurate %llu fused %llu (+%zu NaN vs number) (sample %zu; fused worst at x=%a)\n",
             gm_gelu_variant_info(v)->name, bwd ? "bwd" : "fwd", (unsigned long long)wa, (unsigned long long)wf, nf, n, x[atf]);
    }
  free(x); free(dy); free(one); free(e); free(a);
}

// The backward next to the root of f' (erf family x0 = -0.7517915..., tanh forms -0.7524614...),
// where Phi + x*phi (s*(1 + t*(1 - s))) cancels: the 4001 f32 values around x0 and a sparser walk
// out to 2^-7 away, every ISA, within the backward's certificate (dy = 1, as certified).
static void check_bwd_root(void) {
  size_t cap = 4001 + 2 * 2048;
  float *x = malloc(cap * 4), *dy = malloc(cap * 4), *e = malloc(cap * 4), *a = malloc(cap * 4);
  const char *caps[] = {NULL, "avx2", "scalar"};
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++) {
    gelu_family fam = gelu_family_of(v);
    if (fam == GELU_FAM_SIGMOID) continue; // f64 lanes, its root is far from any cancellation in f32
    float x0 = fam == GELU_FAM_ERF ? (float)GELU_ERF_ROOT_HI : -gm_gelu_acc32_tanh_bwd_root[0][0];
    uint32_t b0;
    memcpy(&b0, &x0, 4);
    size_t n = 0;
    for (int k = -2000; k <= 2000; k++) { uint32_t b = b0 + (uint32_t)k; memcpy(&x[n++], &b, 4); }
    for (int k = 1; k <= 2048; k++) { x[n++] = x0 + (float)k * 0x1p-18f; x[n++] = x0 - (float)k * 0x1p-18f; }
    for (size_t i = 0; i < n; i++) dy[i] = 1.0f;
    run(v, GM_MODE_EXACT, 1, GM_F32, x, dy, e, n, 2);
    for (int c = 0; c < 3; c++) {
      run_capped(caps[c], v, GM_MODE_ACCURATE, 1, GM_F32, x, dy, a, n, 1);
      size_t at = 0;
      uint64_t w = worst(GM_F32, a, e, n, &at);
      CHECK(w <= budget(v, GM_F32, 1), "%s bwd next to the root of f' (%s): %llu ULP at x=%a, certified %llu",
            gm_gelu_variant_info(v)->name, caps[c] ? caps[c] : "default", (unsigned long long)w, x[at],
            (unsigned long long)budget(v, GM_F32, 1));
    }
  }
  free(x); free(dy); free(e); free(a);
}

// f32 backward with extreme dy (signed zeros, subnormals, values near overflow, infinities, NaN)
// against x across every range: every ISA gives the same bits, and each result is within the
// backward's certificate plus the random-dy slack of the exact one (inf where it overflows, the
// signed zero where it underflows); gelu_10 above 10 gives +0.
static void check_grad_extremes(void) {
  const float dys[] = {0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 1e-40f, -3e-39f, 0x1p-126f, 1e-30f, 1.0f, -1.9999999f,
                       3.0f, -1e30f, 0x1.8p127f, -3.4e38f, INFINITY, -INFINITY, NAN};
  const float xs[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 0.25f, -0.25f, -0.2518f, -0.7517915f, -0x1.80ead2p-1f, -0.76f,
                      -1.0f, -1.5f, -1.752f, -1.9999999f, -2.0f, -5.5f, -13.0f, -14.35f, -15.0f, -19.9f, -20.0f,
                      -20.5f, -60.0f, 0.5f, 1.0f, 3.0f, 5.9f, 6.0f, 7.5f, 8.0f, 9.99f, 10.0f, 10.5f, 25.0f,
                      INFINITY, -INFINITY, NAN};
  size_t nd = sizeof dys / sizeof dys[0], nx = sizeof xs / sizeof xs[0], n = nd * nx;
  float *x = malloc(n * 4), *dy = malloc(n * 4), *e = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
  for (size_t i = 0; i < nx; i++)
    for (size_t j = 0; j < nd; j++) { x[i * nd + j] = xs[i]; dy[i * nd + j] = dys[j]; }
  const char *caps[] = {"avx2", "scalar"};
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++) {
    run(v, GM_MODE_ACCURATE, 1, GM_F32, x, dy, a, n, 1);
    for (int c = 0; c < 2; c++) {
      run_capped(caps[c], v, GM_MODE_ACCURATE, 1, GM_F32, x, dy, b, n, 1);
      CHECK(memcmp(a, b, n * 4) == 0, "%s bwd, extreme dy: %s and default bits differ", gm_gelu_variant_info(v)->name, caps[c]);
    }
    run(v, GM_MODE_EXACT, 1, GM_F32, x, dy, e, n, 1);
    for (size_t i = 0; i < n; i++) {
      if (v == GM_GELU_10 && x[i] > 10) { // clamp's backward: +0 whatever dy is (NaN too), as torch's
        CHECK(a[i] == 0 && !signbit(a[i]), "gelu_10 bwd x=%a dy=%a: got %a, want +0", x[i], dy[i], a[i]);
        continue;
      }
      uint64_t d = gm_ulp_dist_f32(a[i], e[i]);
      CHECK(d <= budget_random_dy(v, GM_F32), "%s bwd x=%a dy=%a: got %a, exact %a (%llu ULP, allowed %llu)",
            gm_gelu_variant_info(v)->name, x[i], dy[i], a[i], e[i], (unsigned long long)d,
            (unsigned long long)budget_random_dy(v, GM_F32));
    }
  }
  free(x); free(dy); free(e); free(a); free(b);
}

// The SIMD kernel and the scalar fallback, and 1 vs 2 threads, give the same bits.
static void check_bits(void) {
  size_t n = test_quick() ? 50001 : 1000003;
  float *x = malloc(n * 4), *dy = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
  fill_f32(x, dy, n, 5);
  float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 10.0f, 10.000001f, -20.0f, 20.0f, -130.0f, 1e-45f, -1e-45f,
                      -10.49f, -10.2f, -11.0f, -19.99f, -129.9f, -60.0f, -59.0f, -1e-40f, 1e-40f, -3e-38f, 5.0f, 9.5f,
                      128.0f, -128.0f, 0x1.fffffep6f, -0x1.fffffep6f, 0x1.000002p7f, -0x1.000002p7f, 1e30f, -1e30f,
                      3.4e38f, -3.4e38f, -0x1p-149f, 0x1p-149f, -10.077721f, -52.839809f};
  memcpy(x, specials, sizeof specials);
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++)
    for (int bwd = 0; bwd < 2; bwd++) {
      run(v, GM_MODE_ACCURATE, bwd, GM_F32, x, dy, a, n, 1);
      run_capped("scalar", v, GM_MODE_ACCURATE, bwd, GM_F32, x, dy, b, n, 1);
      CHECK(memcmp(a, b, n * 4) == 0, "%s %s: SIMD and scalar bits differ", gm_gelu_variant_info(v)->name, bwd ? "bwd" : "fwd");
      run_capped("avx2", v, GM_MODE_ACCURATE, bwd, GM_F32, x, dy, b, n, 1);
      CHECK(memcmp(a, b, n * 4) == 0, "%s %s: AVX2 (or its fallback) and default bits differ", gm_gelu_variant_info(v)->name, bwd ? "bwd" : "fwd");
      run(v, GM_MODE_ACCURATE, bwd, GM_F32, x, dy, b, n, 2);
      CHECK(memcmp(a, b, n * 4) == 0, "%s %s: 1 and 2 threads differ", gm_gelu_variant_info(v)->name, bwd ? "bwd" : "fwd");
    }
  // f16/bf16/f64 thread independence.
  gm_dtype dts[] = {GM_F16, GM_BF16, GM_F64};
  for (int k = 0; k < 3; k++) {
    size_t es = gm_dtype_size(dts[k]), m = n < 100003 ? n : 100003;
    void *xx = malloc(m * es), *gg = malloc(m * es), *o1 = malloc(m * es), *o2 = malloc(m * es);
    for (size_t i = 0; i < m; i++) { gm_store_f64(dts[k], xx, i, x[i]); gm_store_f64(dts[k], gg, i, dy[i]); }
    for (int v = 0; v < GM_GELU_N_VARIANTS; v++) {
      run(v, GM_MODE_ACCURATE, 1, dts[k], xx, gg, o1, m, 1);
      run(v, GM_MODE_ACCURATE, 1, dts[k], xx, gg, o2, m, 2);
      CHECK(memcmp(o1, o2, m * es) == 0, "%s %s: 1 and 2 threads differ", gm_gelu_variant_info(v)->name, gm_dtype_name(dts[k]));
    }
    free(xx); free(gg); free(o1); free(o2);
  }
  free(x); free(dy); free(a); free(b);
}

// The erf family's f32 forward at the ends of its pieces (width 1 below |x| = 4, width 2 from 4 to
// 16; x >= 6 is x itself, |x| >= 15 clamps): the 64 floats on either side of each end, both signs,
// and signed zeros, tiny and huge values: within the forward's certificate, with the same bits on every
// ISA, and y with x's sign bit (the kernels take it from the product: -0 must stay -0).
static void check_erf_piece_ends(void) {
  const float ends[] = {0.25f, 0.5f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 16};
  const float specials[] = {0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 1e-40f, -1e-40f, 1e-20f, -1e-20f, -13.5f, -14.2f, -16.0f,
                            -30.0f, 30.0f, -3e38f, 3e38f, -INFINITY, INFINITY};
  size_t nspecial = sizeof specials / sizeof specials[0];
  size_t cap = 2 * 128 * (sizeof ends / sizeof ends[0]) + nspecial, n = 0;
  float *x = malloc(cap * 4), *dy = malloc(cap * 4), *e = malloc(cap * 4), *a = malloc(cap * 4), *b = malloc(cap * 4);
  for (size_t k = 0; k < sizeof ends / sizeof ends[0]; k++)
    for (int sign = -1; sign <= 1; sign += 2) {
      float v = ends[k] * (float)sign;
      for (int j = 0; j < 64; j++) v = nextafterf(v, 0.0f);
      for (int j = 0; j < 128; j++, v = nextafterf(v, (float)sign * INFINITY)) x[n++] = v;
    }
  for (size_t k = 0; k < nspecial; k++) x[n++] = specials[k];
  for (size_t i = 0; i < n; i++) dy[i] = 1.0f;
  gm_gelu_variant erf_family[] = {GM_GELU_ERF, GM_GELU_PYTHON, GM_GELU_10};
  for (int k = 0; k < 3; k++) {
    gm_gelu_variant v = erf_family[k];
    run(v, GM_MODE_EXACT, 0, GM_F32, x, dy, e, n, 1);
    run(v, GM_MODE_ACCURATE, 0, GM_F32, x, dy, a, n, 1);
    size_t at = 0;
    uint64_t w = worst(GM_F32, a, e, n, &at);
    CHECK(w <= budget(v, GM_F32, 0), "%s f32 fwd at a piece end: %llu ULP at x=%a, certified %llu", gm_gelu_variant_info(v)->name,
          (unsigned long long)w, x[at], (unsigned long long)budget(v, GM_F32, 0));
    size_t wrong_sign = 0;
    for (size_t i = 0; i < n; i++) wrong_sign += signbit(a[i]) != signbit(x[i]);
    CHECK(wrong_sign == 0, "%s f32 fwd: %zu results without x's sign", gm_gelu_variant_info(v)->name, wrong_sign);
    const char *isas[] = {"scalar", "avx2"};
    for (int m = 0; m < 2; m++) {
      run_capped(isas[m], v, GM_MODE_ACCURATE, 0, GM_F32, x, dy, b, n, 1);
      CHECK(memcmp(a, b, n * 4) == 0, "%s f32 fwd at the piece ends: %s and default bits differ", gm_gelu_variant_info(v)->name, isas[m]);
    }
  }
  free(x); free(dy); free(e); free(a); free(b);
}

// Every length from 1 to 130 (the SIMD loops keep up to three vectors in flight, with their own
// prologue, epilogue and partial last vector) gives the scalar fallback's bits under the default
// ISA and under AVX2, at an offset that leaves the arrays unaligned.
static void check_lengths(void) {
  enum { MAXN = 130, OFF = 3 };
  float x[MAXN + OFF], dy[MAXN + OFF], a[MAXN + OFF], b[MAXN + OFF];
  fill_f32(x, dy, MAXN + OFF, 11);
  const char *caps[] = {NULL, "avx2"};
  for (int k = 0; k < 2; k++)
    for (int v = 0; v < GM_GELU_N_VARIANTS; v++)
      for (int bwd = 0; bwd < 2; bwd++)
        for (size_t n = 1; n <= MAXN; n++) {
          memset(a, 0x7f, sizeof a);
          memcpy(b, a, sizeof b);
          run_capped(caps[k], v, GM_MODE_ACCURATE, bwd, GM_F32, x + OFF, dy + OFF, a + OFF, n, 1);
          run_capped("scalar", v, GM_MODE_ACCURATE, bwd, GM_F32, x + OFF, dy + OFF, b + OFF, n, 1);
          CHECK(memcmp(a, b, sizeof a) == 0, "%s %s n=%zu (%s): SIMD and scalar bits differ (or a write outside [0, n))",
                gm_gelu_variant_info(v)->name, bwd ? "bwd" : "fwd", n, caps[k] ? caps[k] : "default ISA");
        }
}

// f16/bf16: the SIMD storage conversions (F16C / integer lanes, f64 -> f32 by round-to-odd) give
// the bits of the scalar ones: every pattern through every variant, forward and backward, under
// each ISA cap; the forward (a table lookup) against the direct evaluation under each cap; and the
// narrowing alone on values built to sit on and next to rounding ties.
static void check_u16_isa(void) {
  size_t n = 65536;
  uint16_t *x = malloc(n * 2), *dy = malloc(n * 2), *a = malloc(n * 2), *b = malloc(n * 2);
  gm_dtype dts[] = {GM_F16, GM_BF16};
  for (int k = 0; k < 2; k++) {
    for (size_t i = 0; i < n; i++) { x[i] = (uint16_t)i; dy[i] = (uint16_t)((i * 40503u + 7) & 0xffff); }
    for (int v = 0; v < GM_GELU_N_VARIANTS; v++)
      for (int bwd = 0; bwd < 2; bwd++) {
        test_set_simd(NULL);
        run(v, GM_MODE_ACCURATE, bwd, dts[k], x, dy, a, n, 1);
        const char *caps[] = {"scalar", "avx2"};
        for (int c = 0; c < 2; c++) {
          run_capped(caps[c], v, GM_MODE_ACCURATE, bwd, dts[k], x, dy, b, n, 1);
          CHECK(memcmp(a, b, n * 2) == 0, "%s %s %s: default and %s bits differ", gm_gelu_variant_info(v)->name,
                gm_dtype_name(dts[k]), bwd ? "bwd" : "fwd", caps[c]);
        }
        const char *direct_caps[] = {"avx512", "avx2", "scalar"};
        for (int c = 0; c < 3; c++) {
          test_set_simd(direct_caps[c]);
          if (bwd) gm_gelu_acc_bwd16_direct(v, dts[k], x, dy, b, n);
          else gm_gelu_acc_fwd16_direct(v, dts[k], x, b, n);
          CHECK(memcmp(a, b, n * 2) == 0, "%s %s %s: the table differs from the direct evaluation (%s)",
                gm_gelu_variant_info(v)->name, gm_dtype_name(dts[k]), bwd ? "bwd" : "fwd", direct_caps[c]);
        }
        test_set_simd(NULL);
      }
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
    // Every f32 value of a wide sample, and its neighbours in f64 a few ulps apart, including the
    // midpoints between f16/bf16 neighbours and values just off them.
    size_t m = 1 << 18;
    double *d = malloc(m * sizeof *d);
    uint16_t *o1 = malloc(m * 2), *o2 = malloc(m * 2);
    gm_rng r;
    gm_rng_seed(&r, 11);
    for (size_t i = 0; i < m; i++) {
      uint64_t u = gm_rng_u64(&r);
      double base;
      if (i % 4 == 0) { // a 16-bit pattern's value +- half its ulp, exactly the tie or a hair off
        uint16_t h = (uint16_t)u;
        gm_dtype dt = (u >> 16) & 1 ? GM_F16 : GM_BF16;
        base = gm_load_f64(dt, &h, 0);
        uint16_t h2 = (uint16_t)(h + 1);
        double nb = gm_load_f64(dt, &h2, 0);
        base = isfinite(base) && isfinite(nb) ? 0.5 * (base + nb) : base;
      } else {
        float f;
        uint32_t w = (uint32_t)(u >> 32);
        memcpy(&f, &w, 4);
        base = f;
      }
      int off = (int)((u >> 20) % 5) - 2; // -2 .. 2 f64 ulps
      for (; off > 0; off--) base = nextafter(base, INFINITY);
      for (; off < 0; off++) base = nextafter(base, -INFINITY);
      d[i] = base;
    }
    d[0] = NAN; d[1] = -NAN; d[2] = INFINITY; d[3] = -INFINITY; d[4] = 1e300; d[5] = -1e-300; d[6] = 0x1p-1074; d[7] = -0.0;
    for (int k = 0; k < 2; k++) {
      gm_gelu_acc_narrow_scalar(dts[k], d, o1, m);
      gm_gelu_acc_narrow_avx512(dts[k], d, o2, m);
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < m; i++) if (o1[i] != o2[i] && bad++ == 0) first = i;
      CHECK(bad == 0, "%s narrowing: %zu of %zu differ from the scalar rounding (first %a: %04x vs %04x)", gm_dtype_name(dts[k]),
            bad, m, d[first], o1[first], o2[first]);
      gm_gelu_acc_widen_scalar(dts[k], x, (float *)(void *)d, n);
      float *w2 = malloc(n * 4);
      gm_gelu_acc_widen_avx512(dts[k], x, w2, n);
      CHECK(memcmp(d, w2, n * 4) == 0, "%s widening differs from the scalar one", gm_dtype_name(dts[k]));
      free(w2);
    }
    free(d); free(o1); free(o2);
  } else {
    printf("SKIP: direct AVX-512 conversion check (no AVX-512BW/VL)\n");
  }
  free(x); free(dy); free(a); free(b);
}

// The f32 route of the f16/bf16 backward by table, on the AVX-512 (isa 0) or AVX2 (isa 1) kernel.
static bool bwd16_by_table_on(int isa, gm_dtype dt, const gelu_acc_bwd16 *t, const uint16_t *x, const uint16_t *dy,
                              uint16_t *out, size_t n) {
  return isa ? gm_gelu_acc_bwd16_by_table_avx2(dt, t, x, dy, out, n) : gm_gelu_acc_bwd16_by_table_avx512(dt, t, x, dy, out, n);
}

// The f16/bf16 backward by table: the AVX-512 and AVX2 kernels' f32 route (p = dy * dh[x], kept where p - 3
// ulp and p + 3 ulp round to the same 16-bit value, the vector redone in f64 elsewhere) gives the f64
// route's bits for every x against dy values of every kind: ordinary ones (about 1% of f16 vectors
// and 0.1% of bf16 ones hold a product near a tie and take the f64 route), ones of one or two
// mantissa bits (with a dh of few bits, as near x = 0, their products sit exactly on ties), signed
// zeros, the smallest subnormals, the largest finite values, infinities and NaNs.
// (Every one of the 2^32 (x, dy) pairs of each variant and dtype was checked outside the tree.)
static void check_bwd16_routes(void) {
  bool have[2] = {__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"),
                  __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")};
  if (!have[0]) printf("SKIP: f16/bf16 backward f32 route, AVX-512 kernel (no AVX-512)\n");
  if (!have[1]) printf("SKIP: f16/bf16 backward f32 route, AVX2 kernel (no AVX2/FMA/F16C)\n");
  if (!have[0] && !have[1]) return;
  enum { NX = 65536 };
  uint16_t *x = malloc(NX * 2), *dy = malloc(NX * 2), *a = malloc(NX * 2), *b = malloc(NX * 2);
  gm_gelu_variant vs[] = {GM_GELU_ERF, GM_GELU_NEW, GM_QUICK_GELU, GM_GELU_10};
  gm_dtype dts[] = {GM_F16, GM_BF16};
  int ndy = test_quick() ? 8 : 48;
  for (int k = 0; k < 2; k++)
    for (size_t vi = 0; vi < sizeof vs / sizeof vs[0]; vi++) {
      const gelu_acc_bwd16 *t = gm_gelu_acc_bwd16_table(vs[vi], dts[k]);
      CHECK(t != NULL, "backward table not built");
      if (!t) continue;
      size_t bad = 0, first = 0;
      gm_rng r;
      gm_rng_seed(&r, 1000u + (uint64_t)vi);
      for (int j = 0; j < ndy; j++) {
        uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe01}; // f16 bits
        uint16_t special_bf[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc1};
        for (size_t i = 0; i < NX; i++) {
          uint64_t u = gm_rng_u64(&r);
          x[i] = (uint16_t)u;
          uint16_t any = (uint16_t)(u >> 16);
          // few mantissa bits (products of few bits land exactly on ties, f16 subnormals above all)
          uint16_t sparse = (uint16_t)((any & 0x8000) | (k ? ((u >> 32) % 255) << 7 | (1u << ((u >> 40) % 8)) >> 1
                                                         : ((u >> 32) % 31) << 10 | (3u << ((u >> 40) % 11)) >> 1));
          dy[i] = j % 6 == 5 ? (k ? special_bf : special)[(u >> 48) % 10] : j % 2 ? sparse : any;
        }
        bool n2 = gm_gelu_acc_bwd16_by_table_scalar(dts[k], t, x, dy, b, NX);
        for (int isa = 0; isa < 2; isa++) {
          if (!have[isa]) continue;
          bool n1 = bwd16_by_table_on(isa, dts[k], t, x, dy, a, NX);
          CHECK(n1 == n2, "%s %s backward (%s): the routes disagree on whether some d is NaN",
                gm_gelu_variant_info(vs[vi])->name, gm_dtype_name(dts[k]), isa ? "avx2" : "avx512");
          for (size_t i = 0; i < NX; i++)
            if (a[i] != b[i] && !isnan(t->d[x[i]]) && bad++ == 0) first = (size_t)j * NX + i;
        }
      }
      CHECK(bad == 0, "%s %s backward by table (AVX-512 and AVX2): %zu of %zu differ from the f64 route (first: pair %zu)",
            gm_gelu_variant_info(vs[vi])->name, gm_dtype_name(dts[k]), bad, (size_t)ndy * NX, first);
      // The hard pairs: every dy against a few hundred x, kept where the f32 product is within 2 ulp
      // of a 16-bit rounding tie (or on it): there the f32 route must see its doubt.
      size_t m = 0, nx = test_quick() ? 40 : 300;
      for (size_t xi = 0; xi < nx; xi++) {
        uint16_t xv = (uint16_t)gm_rng_u64(&r);
        if (isnan(t->dh[xv])) continue;
        for (uint32_t dv = 0; dv < 65536 && m < NX; dv++) {
          float g = k ? gm_bf16_to_f32((uint16_t)dv) : gm_f16_to_f32((uint16_t)dv), p = g * t->dh[xv];
          uint32_t u;
          memcpy(&u, &p, 4);
          if (!isfinite(p) || (u & 0x7fffffff) < 2) continue;
          float lo, hi;
          uint32_t ul = u - 2, uh = u + 2;
          memcpy(&lo, &ul, 4);
          memcpy(&hi, &uh, 4);
          if (k ? gm_f32_to_bf16(lo) == gm_f32_to_bf16(hi) : gm_f32_to_f16(lo) == gm_f32_to_f16(hi)) continue;
          x[m] = xv;
          dy[m++] = (uint16_t)dv;
        }
      }
      gm_gelu_acc_bwd16_by_table_scalar(dts[k], t, x, dy, b, m);
      bad = 0;
      for (int isa = 0; isa < 2; isa++) {
        if (!have[isa]) continue;
        bwd16_by_table_on(isa, dts[k], t, x, dy, a, m);
        for (size_t i = 0; i < m; i++) bad += a[i] != b[i];
      }
      CHECK(m > (test_quick() ? 20u : 200u) && bad == 0,
            "%s %s backward by table, products near ties (AVX-512 and AVX2): %zu of 2 x %zu differ from the f64 route",
            gm_gelu_variant_info(vs[vi])->name, gm_dtype_name(dts[k]), bad, m);
    }
  free(x); free(dy); free(a); free(b);
}

static void bench(void) {
  size_t n = (size_t)1 << 25;
  float *x = malloc(n * 4), *y = malloc(n * 4), *dy = malloc(n * 4);
  fill_f32(x, dy, n, 3);
  memset(y, 0, n * 4);
  for (int th = 1; th <= 2; th++) {
    double best_m = 1e9;
    for (int rep = 0; rep < 3; rep++) { double t = gm_now_s(); memcpy(y, x, n * 4); t = gm_now_s() - t; if (t < best_m) best_m = t; }
    for (int v = 0; v < GM_GELU_N_VARIANTS; v++) {
      double best = 1e9;
      for (int rep = 0; rep < 3; rep++) {
        double t = gm_now_s();
        run(v, GM_MODE_ACCURATE, 0, GM_F32, x, NULL, y, n, th);
        t = gm_now_s() - t;
        if (t < best) best = t;
      }
      printf("BENCH %s accurate f32 fwd 2^25, %d thread(s): %.1f ms (memcpy %.1f ms, ratio %.2f)\n",
             gm_gelu_variant_info(v)->name, th, best * 1e3, best_m * 1e3, best / best_m);
    }
  }
  free(x); free(y); free(dy);
}

// The 16-bit forward lookup (four values per 64-bit store, then one at a time): at every start
// offset within a cache line and lengths around multiples of four, the table's values land at
// y[0, n) and nothing is written outside.
static void check_lookup(void) {
  enum { MAXN = 200, PAD = 48 };
  uint16_t *table = malloc(65536 * 2), x[MAXN + 8], y[MAXN + 2 * PAD] __attribute__((aligned(64)));
  gm_rng r;
  gm_rng_seed(&r, 13);
  for (int i = 0; i < 65536; i++) table[i] = (uint16_t)gm_rng_u64(&r);
  for (int i = 0; i < MAXN + 8; i++) x[i] = (uint16_t)gm_rng_u64(&r);
  const size_t lens[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 150, MAXN};
  int bad = 0;
  for (size_t off = 0; off < 32; off++)
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
      size_t n = lens[k], xo = off % 7;
      memset(y, 0xA5, sizeof y);
      gm_gelu_acc_fwd16_lookup(table, x + xo, y + PAD + off, n);
      for (size_t i = 0; i < sizeof y / sizeof y[0]; i++) {
        bool inside = i >= PAD + off && i < PAD + off + n;
        if (y[i] != (inside ? table[x[xo + i - PAD - off]] : 0xA5A5)) bad++;
      }
    }
  CHECK(bad == 0, "16-bit lookup: %d values wrong or written outside [0, n)", bad);
  free(table);
}

int main(void) {
  load_budgets();
  check_u16(GM_F16);
  check_u16(GM_BF16);
  check_f32();
  check_bwd_root();
  check_bits();
  check_erf_piece_ends();
  check_lengths();
  check_grad_extremes();
  check_u16_isa();
  check_bwd16_routes();
  check_lookup();
  if (getenv("GPTMEG_GELU_BENCH")) bench();
  return test_done("test_gelu_accurate");
}
