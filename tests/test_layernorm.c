// gm_layernorm_f32 against PyTorch 2.15 CPU (tools/ref/gen_layernorm_goldens.py), bit for bit: the
// f32 mean and rstd of ATen's f32 kernel and of its reduced-type kernel on f16 and bf16 rows, and the
// layer norm's output rounded to the dtype, for row lengths with and without a scalar tail and with
// one to seven 16-step chunks; 1 and 2 threads. And f32 rows whose moments hang on the rounding of
// the cascade's vector merges (lengths 896, 1664, 3840).
#include "gptmeg/core.h"
#include "gptmeg/safetensors.h"
#include "harness.h"
#include "gptmeg/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN GPTMEG_SOURCE_DIR "/tests/golden/layernorm/ln.safetensors"

static float *get(const gm_safetensors *st, const char *dt, int n, const char *what, int64_t *rows) {
  char name[64];
  snprintf(name, sizeof name, "%s.%d.%s", dt, n, what);
  return test_st_f32(st, name, rows, NULL);
}

int main(void) {
  gm_safetensors st;
  if (gm_st_open(&st, GOLDEN)) {
    CHECK(0, "%s", gm_errmsg());
    return test_done("test_layernorm");
  }
  const int lengths[] = {8, 17, 24, 32, 40, 64, 100, 257, 768, 1600};
  const struct { const char *name; gm_dtype dt; gm_ln_kernel kernel; } dts[] = {
      {"f32", GM_F32, GM_LN_KERNEL_F32}, {"f16", GM_F16, GM_LN_KERNEL_F16}, {"bf16", GM_BF16, GM_LN_KERNEL_BF16}};
  int cases = 0;
  for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
    for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++) {
      int N = lengths[l];
      int64_t R = 0;
      float *x = get(&st, dts[d].name, N, "x", &R), *w = get(&st, dts[d].name, N, "w", NULL);
      float *b = get(&st, dts[d].name, N, "b", NULL), *mean = get(&st, dts[d].name, N, "mean", NULL);
      float *rstd = get(&st, dts[d].name, N, "rstd", NULL), *y = get(&st, dts[d].name, N, "y", NULL);
      if (!x || !w || !b || !mean || !rstd || !y) {
        CHECK(0, "%s: %s rows of %d missing", GOLDEN, dts[d].name, N);
        free(x); free(w); free(b); free(mean); free(rstd); free(y);
        continue;
      }
      cases++;
      int bad_mean = 0, bad_rstd = 0;
      for (int64_t r = 0; r < R; r++) {
        float m, s;
        gm_layernorm_row_stats(x + r * N, N, 1e-5, dts[d].kernel, &m, &s);
        bad_mean += memcmp(&m, &mean[r], sizeof m) != 0;
        bad_rstd += memcmp(&s, &rstd[r], sizeof s) != 0;
      }
      CHECK(bad_mean == 0 && bad_rstd == 0, "%s rows of %d: mean differs from torch in %d of %lld rows, rstd in %d",
            dts[d].name, N, bad_mean, (long long)R, bad_rstd);
      size_t n = (size_t)R * N;
      float *out = malloc(n * sizeof(float)), *out1 = malloc(n * sizeof(float));
      for (int threads = 1; threads <= 2; threads++) {
        gm_layernorm_f32(x, w, b, out, (int)R, N, 1e-5, dts[d].kernel, threads);
        gm_round_inplace(dts[d].dt, out, n);
        int bad = test_count_diff(out, y, n);
        CHECK(bad == 0, "%s rows of %d, %d threads: %d of %zu outputs differ from torch", dts[d].name, N, threads, bad, n);
        if (threads == 1) memcpy(out1, out, n * sizeof(float));
        else CHECK(memcmp(out, out1, n * sizeof(float)) == 0, "%s rows of %d: threads change the bits", dts[d].name, N);
      }
      printf("  %-4s N = %4d: %lld rows, mean, rstd and output bit-identical to torch\n", dts[d].name, N, (long long)R);
      free(out); free(out1);
      free(x); free(w); free(b); free(mean); free(rstd); free(y);
    }
  CHECK(cases == 30, "only %d of 30 cases in %s", cases, GOLDEN);
  const int moment_lengths[] = {896, 1664, 3840};
  for (size_t l = 0; l < sizeof moment_lengths / sizeof *moment_lengths; l++) {
    const int N = moment_lengths[l];
    int64_t R = 0;
    float *x = get(&st, "moments", N, "x", &R), *mean = get(&st, "moments", N, "mean", NULL);
    float *rstd = get(&st, "moments", N, "rstd", NULL);
    CHECK(x && mean && rstd && R >= 6, "%s: moments rows of %d missing", GOLDEN, N);
    int bad = 0;
    for (int64_t r = 0; x && mean && rstd && r < R; r++) {
      float m, s;
      gm_layernorm_row_stats(x + r * N, N, 1e-5, GM_LN_KERNEL_F32, &m, &s);
      bad += memcmp(&m, &mean[r], sizeof m) != 0 || memcmp(&s, &rstd[r], sizeof s) != 0;
    }
    CHECK(bad == 0, "f32 rows of %d (the cascade's merges): %d of %lld rows' moments differ from torch", N, bad,
          (long long)R);
    printf("  f32  N = %4d: %lld rows whose moments hang on the cascade's merges, bit-identical to torch\n", N,
           (long long)R);
    free(x); free(mean); free(rstd);
  }
  gm_st_close(&st);
  return test_done("test_layernorm");
}
