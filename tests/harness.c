#include "harness.h"

#include "gptmeg/cpu.h"
#include "gptmeg/model.h"
#include "gptmeg/target.h"

#include <unistd.h>

#include "gptmeg/npy.h"
#include "gptmeg/safetensors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int test_failures = 0;
int test_checks = 0;
static int skips = 0;

void test_set_simd(const char *cap) {
  if (cap) setenv("GPTMEG_SIMD", cap, 1);
  else unsetenv("GPTMEG_SIMD");
  gm_simd_cap_reload();
}

bool test_quick(void) {
  const char *q = getenv("GPTMEG_QUICK");
  return q && *q && strcmp(q, "0") != 0;
}

void test_skip(const char *what, const char *why) {
  skips++;
  printf("SKIP: %s: %s\n", what, why);
}

char *test_shared_data(const char *rel) {
  const char *roots[] = {GPTMEG_SOURCE_DIR "/../shared/data", "../shared/data"};
  for (size_t i = 0; i < 2; i++) {
    size_t n = strlen(roots[i]) + strlen(rel) + 2;
    char *p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s/%s", roots[i], rel);
    if (access(p, R_OK) == 0) return p;
    free(p);
  }
  return NULL;
}

int test_argmax(const float *x, int n) {
  int k = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[k]) k = i;
  return k;
}

double test_max_abs_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]);
    if (!(d <= m)) m = d; // NaN propagates
  }
  return m;
}

char *test_slurp_len(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) {
    s[n] = 0;
    if (len) *len = (size_t)n;
  }
  fclose(f);
  return s;
}

char *test_slurp(const char *path) { return test_slurp_len(path, NULL); }

int test_done(const char *name) {
  printf("%s: %d checks, %d failed, %d skipped\n", name, test_checks, test_failures, skips);
  return test_failures ? 1 : 0;
}

float *test_st_f32(const void *st, const char *name, int64_t *d0, int64_t *d1) {
  const gm_st_tensor *t = gm_st_find((const gm_safetensors *)st, name);
  if (!t) return NULL;
  float *x = malloc(t->numel * sizeof(float));
  if (!x) return NULL;
  gm_st_read_f32(t, x);
  if (d0) *d0 = t->shape[0];
  if (d1) *d1 = t->ndim > 1 ? t->shape[1] : 1;
  return x;
}

float *test_matmul_golden_f32(const void *st, int s, const char *what, int64_t *d0, int64_t *d1) {
  char name[64];
  snprintf(name, sizeof name, "s%d.%s", s, what);
  return test_st_f32(st, name, d0, d1);
}

int test_count_diff(const float *a, const float *b, size_t n) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return bad;
}

int test_count_diff_cols(const float *C, int ldc, int c0, const float *ref, int w, int M) {
  int bad = 0;
  for (int i = 0; i < M; i++) bad += test_count_diff(C + (size_t)i * ldc + c0, ref + (size_t)i * w, (size_t)w);
  return bad;
}

void test_formula_a(float *x, int m, int n) {
  for (int i = 0; i < m; i++)
    for (int k = 0; k < n; k++) x[(size_t)i * n + k] = (float)((37 * i + 71 * k) % 1009 - 504) / 503.0f;
}

void test_formula_b(float *x, int m, int n) {
  for (int k = 0; k < m; k++)
    for (int j = 0; j < n; j++) x[(size_t)k * n + j] = (float)((31 * k + 17 * j) % 97 - 48) / 64.0f;
}

__attribute__((constructor)) static void test_pin_target(void) { gm_torch_target_set(GM_TT_ZEN4); }

const char *test_golden_for(int target, const char *rel, char *buf, size_t n) {
  if (target != GM_TT_ZEN4) {
    snprintf(buf, n, "%s/tests/golden/targets/%s/%s", GPTMEG_SOURCE_DIR, gm_torch_target_name((gm_torch_target)target), rel);
    if (access(buf, R_OK) == 0) return buf;
  }
  snprintf(buf, n, "%s/tests/golden/%s", GPTMEG_SOURCE_DIR, rel);
  return buf;
}

void test_cpu_model(char *buf, size_t n) {
  buf[0] = 0;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    const char *v = strchr(line, ':');
    if (strncmp(line, "model name", 10) != 0 || !v) continue;
    for (v++; *v == ' ' || *v == '\t'; v++) {}
    snprintf(buf, n, "%s", v);
    buf[strcspn(buf, "\n")] = 0;
    for (size_t l = strlen(buf); l && buf[l - 1] == ' '; l--) buf[l - 1] = 0;
    break;
  }
  fclose(f);
}

int32_t *test_model_tokens(const char *dir, int T, int *B) {
  char path[600];
  snprintf(path, sizeof path, "%s/tokens.npy", dir);
  gm_npy tok;
  if (gm_npy_read(path, GM_F16, &tok) != 0) {
    CHECK(0, "%s: %s", path, gm_errmsg());
    return NULL;
  }
  const int rows = (int)tok.shape[0], T0 = tok.ndim > 1 ? (int)tok.shape[1] : 0;
  bool ints = tok.dtype == GM_I64 || tok.dtype == GM_I32;
  int32_t *ids = ints && T <= T0 ? malloc((size_t)rows * T * sizeof *ids) : NULL;
  CHECK(ids != NULL, "%s: not int ids of at least %d positions", path, T);
  for (int b = 0; ids && b < rows; b++)
    for (int i = 0; i < T; i++) {
      size_t at = (size_t)b * T0 + i;
      ids[b * T + i] = tok.dtype == GM_I64 ? (int32_t)((const int64_t *)tok.data)[at] : ((const int32_t *)tok.data)[at];
    }
  gm_npy_free(&tok);
  *B = rows;
  return ids;
}

void test_amx_fill(float *x, size_t n, uint32_t salt) { test_amx_fill_from(x, n, salt, 0); }

void test_amx_fill_from(float *x, size_t n, uint32_t salt, size_t off) {
  for (size_t i = 0; i < n; i++) {
    uint32_t u = (uint32_t)(i + off) * 2654435761u + salt * 40503u;
    float v = ldexpf((float)(128 + (u >> 8) % 128), -(int)(7 + (u >> 15) % 10));
    x[i] = (u >> 31) ? -v : v;
  }
}

int test_amx_rows(int M, int *r) {
  int c[4] = {0, M > 1 ? 1 : 0, M / 2, M - 1}, n = 0;
  for (int i = 0; i < 4; i++) {
    bool dup = false;
    for (int j = 0; j < n; j++) dup |= r[j] == c[i];
    if (!dup) r[n++] = c[i];
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && r[j - 1] > r[j]; j--) {
      int t = r[j];
      r[j] = r[j - 1];
      r[j - 1] = t;
    }
  return n;
}

int test_intel_targets(bool with_avx2, int (*check)(int target)) {
  const gm_torch_target tt[] = {GM_TT_INTEL_AMX, GM_TT_INTEL_AVX512_FP16, GM_TT_INTEL_AVX512_BF16, GM_TT_INTEL_AVX512,
                                GM_TT_AVX2};
  int files = 0;
  for (size_t i = 0; i < sizeof tt / sizeof tt[0] - (with_avx2 ? 0 : 1); i++) files += check(tt[i]);
  return files;
}

int test_open_target_st(int target, const char *rel, void *st, char *file, size_t n) {
  snprintf(file, n, "%s/tests/golden/targets/%s/%s", GPTMEG_SOURCE_DIR, gm_torch_target_name((gm_torch_target)target), rel);
  if (gm_st_open((gm_safetensors *)st, file)) return 0;
  printf("%s (under %s)\n", file, gm_torch_target_name((gm_torch_target)target));
  gm_torch_target_set((gm_torch_target)target);
  return 1;
}

int test_open_f32_golden(int target, const char *rel, void *st, char *file, size_t n, void *prof, int nb, float **bias) {
  *bias = NULL;
  if (!test_open_target_st(target, rel, st, file, n)) return 0;
  CHECK(gm_profile_get("hf", GM_F32, (gm_profile *)prof) == 0, "profile hf f32: %s", gm_errmsg());
  int64_t len = 0, one = 0;
  *bias = test_st_f32(st, "bias", &len, &one);
  CHECK(*bias && len == nb, "%s: bias missing or not %d floats", file, nb);
  if (*bias && len != nb) {
    free(*bias);
    *bias = NULL;
  }
  return 1;
}

const test_path TEST_PATHS[TEST_N_PATHS] = {
    {"1 thread", NULL, 1}, {"2 threads", NULL, 2}, {"avx2", "avx2", 2}, {"scalar", "scalar", 1}};

void test_lcg_values(uint64_t seed, float *x, size_t n, gm_dtype dt) {
  uint64_t s = seed;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = gm_round_f32(dt, (float)(s >> 40) * (4.0f / 16777216.0f) - 2.0f);
  }
}

uint32_t test_fnv_row(const float *x, int n) {
  uint32_t h = 0x811C9DC5u;
  const unsigned char *p = (const unsigned char *)x;
  for (size_t i = 0; i < (size_t)n * sizeof(float); i++) h = (h ^ p[i]) * 0x01000193u;
  return h;
}
