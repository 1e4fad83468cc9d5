// The softmax row against PyTorch 2.15 CPU (tools/ref/gen_softmax_goldens.py): f32, f16 and bf16
// rows of 1 to 257 entries with masked tails, bit for bit after rounding to the dtype (ATen's f32 and
// reduced-type kernels). gm_exp_shift_row against SLEEF's scalar FMA expf_u10 on a stride of every
// f32 input (the vector builds must give its bits), and gm_softmax_row_f32 / gm_div_row_f32 against
// the definitions of nn.h written out element by element, on rows of every length up to 300.
#include "gptmeg/core.h"
#include "gptmeg/safetensors.h"
#include "harness.h"
#include "gptmeg/kernels.h"

#include <float.h>
#include <math.h>
#include <sleef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN GPTMEG_SOURCE_DIR "/tests/golden/softmax/softmax.safetensors"

float Sleef_expf1_u10purecfma(float); // exported by libsleef; sleef.h declares it only under -mfma

// Bit patterns [0, 2^32) every `step`, through gm_exp_shift_row, against the scalar FMA build.
static void test_exp(void) {
  if (!__builtin_cpu_supports("fma")) {
    printf("  exp: no FMA on this CPU, skipped (the scalar non-FMA build runs instead)\n");
    return;
  }
  enum { BLOCK = 1 << 16 };
  static float x[BLOCK], y[BLOCK];
  const uint64_t step = test_quick() ? 4099 : 61;
  uint64_t checked = 0, bad = 0;
  uint32_t first_bad = 0;
  for (uint64_t base = 0; base < (1ull << 32); base += (uint64_t)BLOCK * step) {
    int n = 0;
    for (uint64_t u = base; n < BLOCK && u < (1ull << 32); u += step, n++) {
      uint32_t b = (uint32_t)u;
      memcpy(&x[n], &b, sizeof b);
    }
    memcpy(y, x, (size_t)n * sizeof(float));
    gm_exp_shift_row(y, n, 0.0f); // x - 0 == x for every x, -0 included
    for (int i = 0; i < n; i++) {
      float e = Sleef_expf1_u10purecfma(x[i]);
      if (memcmp(&e, &y[i], sizeof e) != 0 && !(isnan(e) && isnan(y[i]))) {
        if (!bad) memcpy(&first_bad, &x[i], sizeof first_bad);
        bad++;
      }
    }
    checked += (uint64_t)n;
  }
  printf("  exp: %llu inputs (every %llu-th f32 pattern), %llu differ from SLEEF's scalar FMA build\n",
         (unsigned long long)checked, (unsigned long long)step, (unsigned long long)bad);
  CHECK(bad == 0, "%llu inputs differ from Sleef_expf1_u10purecfma (first: bits 0x%08x)", (unsigned long long)bad, first_bad);
}

// nn.h's definition, written out element by element (exp through the scalar FMA build).
static void softmax_ref(float *s, int n, int n_masked, float mask_value, bool reduced) {
  float m = -INFINITY;
  for (int j = 0; j < n; j++)
    if (s[j] > m) m = s[j];
  if (n_masked > 0 && mask_value > m) m = mask_value;
  int total = n + n_masked, vec_end = reduced ? total - total % 16 : total;
  float e[400];
  for (int j = 0; j < total; j++) {
    float x = (j < n ? s[j] : mask_value) - m;
    e[j] = j < vec_end ? Sleef_expf1_u10purecfma(x) : expf(x);
  }
  float sum = 0.0f;
  int fold_end = reduced ? vec_end : (total < 16 ? 0 : total);
  if (fold_end > 0) {
    float lane[16];
    for (int k = 0; k < 16; k++) lane[k] = e[k];
    for (int j = 16; j < fold_end; j++) lane[j % 16] = lane[j % 16] + e[j];
    for (int h = 8; h >= 1; h /= 2)
      for (int k = 0; k < h; k++) lane[k] = lane[k] + lane[k + h];
    sum = lane[0];
  } else if (!reduced) {
    sum = e[0];
    for (int j = 1; j < total; j++) sum = sum + e[j];
    fold_end = total;
  }
  for (int j = fold_end; j < total; j++) sum = sum + e[j];
  float inv = 1.0f / sum;
  for (int j = 0; j < n; j++) s[j] = e[j] * inv;
}

static void test_rows(void) {
  if (!__builtin_cpu_supports("fma")) return;
  gm_rng r;
  gm_rng_seed(&r, 21);
  float a[300], b[300];
  // the last mask lies among the values, so the masked entries' exps are not 0 and every lane of
  // the sum sees them (the vector lane sums' partial groups at n and at the row's end)
  const float masks[4] = {-FLT_MAX, -1e4f, -INFINITY, 0.25f};
  int bad = 0, bad_div = 0, rows = 0;
  for (int n = 1; n <= 300; n++)
    for (int mi = 0; mi < 4; mi++)
      for (int reduced = 0; reduced <= 1; reduced++) {
        int n_masked = (n * 7 + mi * 13) % 40;
        double scale = mi == 0 || mi == 3 ? 3.0 : (mi == 1 ? 30.0 : 120.0); // 120 reaches exp's special range
        for (int j = 0; j < n; j++) a[j] = b[j] = (float)((gm_rng_uniform(&r) - 0.5) * scale);
        softmax_ref(a, n, n_masked, masks[mi], reduced);
        gm_softmax_row_f32(b, n, n_masked, masks[mi], reduced);
        bad += memcmp(a, b, (size_t)n * sizeof(float)) != 0;
        for (int j = 0; j < n; j++) a[j] = b[j] = (float)((gm_rng_uniform(&r) - 0.5) * scale);
        for (int j = 0; j < n; j++) a[j] = a[j] / 8.0f;
        gm_div_row_f32(b, n, 8.0f);
        bad_div += memcmp(a, b, (size_t)n * sizeof(float)) != 0;
        rows++;
      }
  CHECK(bad == 0, "softmax: %d of %d rows differ from the element-by-element definition", bad, rows);
  CHECK(bad_div == 0, "division: %d of %d rows differ", bad_div, rows);
}

// gm_log_softmax_row_f32's vector path against its scalar definition (GPTMEG_SIMD=scalar), bit for
// bit, at W 16 and 8, on rows of 1 to 100 entries and one of 50257: ordinary values, rows whose
// maximum is a zero among values whose exps are 0 (one zero: the sum is 1 and its log 0; -0 and +0
// in an order the lanes reverse, so the two paths' maxima differ in sign), rows with a NaN, an
// infinity or only -inf's.
static void test_log_softmax(void) {
  if (!__builtin_cpu_supports("fma")) return;
  enum { VMAX = 50257 };
  float *x = malloc(VMAX * sizeof *x), *a = malloc(VMAX * sizeof *a), *b = malloc(VMAX * sizeof *b), *e = malloc(VMAX * sizeof *e);
  if (!x || !a || !b || !e) { CHECK(0, "out of memory"); free(x); free(a); free(b); free(e); return; }
  gm_rng r;
  gm_rng_seed(&r, 5);
  int bad = 0, rows = 0;
  for (int V = 1; V <= 101; V++)
    for (int kind = 0; kind < 6; kind++)
      for (int W = 8; W <= 16; W += 8) {
        const int n = V == 101 ? VMAX : V;
        for (int j = 0; j < n; j++) x[j] = (float)((gm_rng_uniform(&r) - 0.5) * 20.0);
        if (kind == 1) for (int j = 0; j < n; j++) x[j] = j == n / 2 ? (j % 2 ? -0.0f : 0.0f) : -INFINITY;
        if (kind == 2) x[n / 3] = NAN;
        if (kind == 3) x[n - 1] = INFINITY;
        if (kind == 4) for (int j = 0; j < n; j++) x[j] = -INFINITY;
        if (kind == 5) { // -0 first in the row, +0 first in lane 0: the two maxima differ in sign
          for (int j = 0; j < n; j++) x[j] = -200.0f;
          if (n > 1) x[1] = -0.0f;
          if (n > 8) x[8] = 0.0f;
        }
        test_set_simd("scalar");
        gm_log_softmax_row_f32(x, a, n, W, e);
        test_set_simd(NULL);
        gm_log_softmax_row_f32(x, b, n, W, e);
        bad += memcmp(a, b, (size_t)n * sizeof(float)) != 0;
        rows++;
      }
  CHECK(bad == 0, "log_softmax: %d of %d rows differ from the scalar definition", bad, rows);
  free(x); free(a); free(b); free(e);
}

static float *get(const gm_safetensors *st, const char *dt, int n, const char *what, int64_t *rows) {
  char name[64];
  snprintf(name, sizeof name, "%s.%d.%s", dt, n, what);
  return test_st_f32(st, name, rows, NULL);
}

static void test_torch(void) {
  gm_safetensors st;
  if (gm_st_open(&st, GOLDEN)) { CHECK(0, "%s", gm_errmsg()); return; }
  const int lengths[] = {1, 5, 15, 16, 17, 24, 31, 32, 48, 64, 100, 257};
  const struct { const char *name; gm_dtype dt; float mask; } dts[] = {
      {"f32", GM_F32, -FLT_MAX}, {"f16", GM_F16, -65504.0f}, {"bf16", GM_BF16, -3.3895313892515355e38f}};
  int cases = 0;
  for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
    for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++) {
      int L = lengths[l];
      int64_t R = 0;
      float *x = get(&st, dts[d].name, L, "x", &R), *vis = get(&st, dts[d].name, L, "vis", NULL), *y = get(&st, dts[d].name, L, "y", NULL);
      if (!x || !vis || !y) { CHECK(0, "%s: %s rows of %d missing", GOLDEN, dts[d].name, L); free(x); free(vis); free(y); continue; }
      cases++;
      int bad_rows = 0;
      for (int64_t r = 0; r < R; r++) {
        float *row = x + r * L;
        int n = (int)vis[r];
        gm_softmax_row_f32(row, n, L - n, dts[d].mask, dts[d].dt != GM_F32);
        for (int j = n; j < L; j++) row[j] = 0.0f;
        gm_round_inplace(dts[d].dt, row, (size_t)L);
        bad_rows += memcmp(row, y + r * L, (size_t)L * sizeof(float)) != 0;
      }
      CHECK(bad_rows == 0, "%s rows of %d: %d of %lld differ from torch.softmax", dts[d].name, L, bad_rows, (long long)R);
      free(x); free(vis); free(y);
    }
  printf("  torch: %d cases (f32/f16/bf16 x %zu lengths) checked bit for bit\n", cases, sizeof lengths / sizeof *lengths);
  CHECK(cases == 36, "only %d of 36 cases in %s", cases, GOLDEN);
  gm_st_close(&st);
}

int main(void) {
  test_torch();
  test_rows();
  test_log_softmax();
  test_exp();
  return test_done("test_softmax");
}
