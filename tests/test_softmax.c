// The softmax row and its exp: gm_exp_shift_row against libm's expf on every f32 input (the
// AVX-512 replica of glibc's expf must agree bit for bit wherever it is used), and
// gm_softmax_row_f32 / gm_div_row_f32 against the scalar definitions of nn.h on rows of every
// length up to 300 with masked tails (the vector bodies must give the scalar bits).
#include "harness.h"
#include "kernels/nn.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Checks gm_exp_shift_row against expf on bit patterns [lo, hi) taken every `step`; adds to the counts.
static void exp_range(uint64_t lo, uint64_t hi, uint64_t step, uint64_t *checked, uint64_t *bad, uint32_t *first_bad) {
  enum { BLOCK = 1 << 16 };
  static float x[BLOCK], y[BLOCK];
  for (uint64_t base = lo; base < hi; base += (uint64_t)BLOCK * step) {
    int n = 0;
    for (uint64_t u = base; n < BLOCK && u < hi; u += step, n++) {
      uint32_t b = (uint32_t)u;
      memcpy(&x[n], &b, sizeof b);
    }
    memcpy(y, x, (size_t)n * sizeof(float));
    gm_exp_shift_row(y, n, 0.0f); // x - 0 == x for every x, -0 included
    for (int i = 0; i < n; i++) {
      float e = expf(x[i]);
      if (memcmp(&e, &y[i], sizeof e) != 0 && !(isnan(e) && isnan(y[i]))) {
        if (!*bad) memcpy(first_bad, &x[i], sizeof *first_bad);
        (*bad)++;
      }
    }
    *checked += (uint64_t)n;
  }
}

// Every input the replica computes itself (|x| < 88, both signs); every 97th of the rest, which
// it hands to expf. Quick mode: every 97th everywhere.
static void test_exp_every_input(void) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq")) {
    test_skip("exp replica", "no AVX-512 here: expf runs");
    return;
  }
  // With AVX-512 the replica must be in use: off means its sample check found a difference from
  // this libm's expf (a broken replica, or a libm whose expf is not glibc's of 2.28-2.40).
  CHECK(gm_exp_shift_row_fast(), "the AVX-512 exp replica disagrees with expf on its start-up sample");
  if (!gm_exp_shift_row_fast()) return;
  const uint64_t step = test_quick() ? 97 : 1, big = 0x42b00000; // |x| >= 88: glibc's special cases
  uint64_t bad = 0, checked = 0;
  uint32_t first_bad = 0;
  for (uint64_t sign = 0; sign <= 0x80000000u; sign += 0x80000000u) {
    exp_range(sign, sign + big, step, &checked, &bad, &first_bad);
    exp_range(sign + big, sign + 0x80000000u, 97, &checked, &bad, &first_bad);
  }
  printf("  exp replica vs expf: %llu inputs, %llu differ\n", (unsigned long long)checked, (unsigned long long)bad);
  CHECK(bad == 0, "%llu inputs differ from expf (first: bits 0x%08x)", (unsigned long long)bad, first_bad);
}

// nn.h's definition, written out element by element.
static void softmax_ref(float *s, int n, int n_masked, float mask_value) {
  float m = -INFINITY;
  for (int j = 0; j < n; j++)
    if (s[j] > m) m = s[j];
  if (n_masked > 0 && mask_value > m) m = mask_value;
  for (int j = 0; j < n; j++) s[j] = expf(s[j] - m);
  float rest = n_masked > 0 ? expf(mask_value - m) : 0.0f;
  int total = n + n_masked;
  float sum;
  if (total < 8) {
    sum = 0.0f;
    for (int j = 0; j < total; j++) sum = sum + (j < n ? s[j] : rest);
  } else {
    float lane[8];
    for (int k = 0; k < 8; k++) lane[k] = k < n ? s[k] : rest;
    for (int j = 8; j < total; j++) lane[j % 8] = lane[j % 8] + (j < n ? s[j] : rest);
    for (int h = 4; h >= 1; h /= 2)
      for (int k = 0; k < h; k++) lane[k] = lane[k] + lane[k + h];
    sum = lane[0];
  }
  float inv = 1.0f / sum;
  for (int j = 0; j < n; j++) s[j] = s[j] * inv;
}

static void test_rows(void) {
  gm_rng r;
  gm_rng_seed(&r, 21);
  float a[300], b[300];
  const float masks[3] = {-FLT_MAX, -1e4f, -INFINITY};
  int bad = 0, bad_div = 0, rows = 0;
  for (int n = 1; n <= 300; n++)
    for (int mi = 0; mi < 3; mi++) {
      int n_masked = (n * 7 + mi * 13) % 40;
      double scale = mi == 0 ? 3.0 : (mi == 1 ? 30.0 : 120.0); // the last reaches expf's special range
      for (int j = 0; j < n; j++) a[j] = b[j] = (float)((gm_rng_uniform(&r) - 0.5) * scale);
      softmax_ref(a, n, n_masked, masks[mi]);
      gm_softmax_row_f32(b, n, n_masked, masks[mi]);
      bad += memcmp(a, b, (size_t)n * sizeof(float)) != 0;
      for (int j = 0; j < n; j++) a[j] = b[j] = (float)((gm_rng_uniform(&r) - 0.5) * scale);
      for (int j = 0; j < n; j++) a[j] = a[j] / 8.0f;
      gm_div_row_f32(b, n, 8.0f);
      bad_div += memcmp(a, b, (size_t)n * sizeof(float)) != 0;
      rows++;
    }
  CHECK(bad == 0, "softmax: %d of %d rows differ from the scalar definition", bad, rows);
  CHECK(bad_div == 0, "division: %d of %d rows differ", bad_div, rows);
}

int main(void) {
  test_rows();
  test_exp_every_input();
  return test_done("test_softmax");
}
