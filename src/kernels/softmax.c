// f32 softmax of one score row with a masked tail, in ATen's CPU order (contract in nn.h).
#include "kernels/nn.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

void gm_softmax_row_avx2(float *s, int n, int n_masked, float mask_value);
void gm_div_row_avx2(float *x, int n, float d);

void gm_exp_shift_row_avx512(float *s, int n, float m);

// The AVX2 bodies (softmax_avx2.c) give the same bits; __builtin_cpu_supports is a load of the
// CPU facts libgcc gathered at start-up, cheap enough per row.
static bool have_avx2(void) { return __builtin_cpu_supports("avx2"); }

// The AVX-512 exp (softmax_exp_avx512.c) reproduces glibc's expf; it is used only if the CPU has
// AVX-512 and it agrees with this process's expf on a sample: every 2^-10 step over [-100, 0] and
// the special inputs around it (tests/test_softmax.c checks every f32 input).
static bool exp_avx512_ok;
static pthread_once_t exp_once = PTHREAD_ONCE_INIT;

static void exp_check(void) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq")) return;
  enum { N = 102400 + 8 };
  static float x[N], y[N];
  for (int i = 0; i < 102400; i++) x[i] = -(float)i / 1024.0f;
  const float extra[8] = {-INFINITY, -88.0f, -87.99999f, -103.5f, -104.0f, 88.5f, NAN, -0.0f};
  memcpy(x + 102400, extra, sizeof extra);
  memcpy(y, x, sizeof y);
  gm_exp_shift_row_avx512(y, N, 0.0f);
  for (int i = 0; i < N; i++) {
    float e = expf(x[i] - 0.0f);
    if (memcmp(&e, &y[i], sizeof e) != 0 && !(isnan(e) && isnan(y[i]))) return;
  }
  exp_avx512_ok = true;
}

bool gm_exp_shift_row_fast(void) {
  pthread_once(&exp_once, exp_check);
  return exp_avx512_ok;
}

void gm_exp_shift_row(float *s, int n, float m) {
  if (gm_exp_shift_row_fast()) { gm_exp_shift_row_avx512(s, n, m); return; }
  for (int j = 0; j < n; j++) s[j] = expf(s[j] - m);
}

// Sum of e[0..n) as ATen's vec::reduce_all adds on AVX2: below 8 elements one by one; else
// element j into lane j % 8, then the lanes folded lane += lane+4, lane += lane+2, lane0 + lane1.
// Elements past `stored` all equal `rest` (the masked tail's exp).
static float lane_sum(const float *e, int stored, int total, float rest) {
  if (total < 8) {
    float s = 0.0f;
    for (int j = 0; j < total; j++) s = s + (j < stored ? e[j] : rest);
    return s;
  }
  float lane[8];
  for (int k = 0; k < 8; k++) lane[k] = k < stored ? e[k] : rest;
  for (int j = 8; j < total; j++) lane[j % 8] = lane[j % 8] + (j < stored ? e[j] : rest);
  for (int h = 4; h >= 1; h /= 2)
    for (int k = 0; k < h; k++) lane[k] = lane[k] + lane[k + h];
  return lane[0];
}

void gm_softmax_row_f32(float *s, int n, int n_masked, float mask_value) {
  if (have_avx2()) { gm_softmax_row_avx2(s, n, n_masked, mask_value); return; }
  float m = -INFINITY;
  for (int j = 0; j < n; j++)
    if (s[j] > m) m = s[j];
  if (n_masked > 0 && mask_value > m) m = mask_value;
  gm_exp_shift_row(s, n, m);
  float rest = n_masked > 0 ? expf(mask_value - m) : 0.0f;
  float inv = 1.0f / lane_sum(s, n, n + n_masked, rest);
  for (int j = 0; j < n; j++) s[j] = s[j] * inv;
}

void gm_div_row_f32(float *x, int n, float d) {
  if (have_avx2()) { gm_div_row_avx2(x, n, d); return; }
  for (int j = 0; j < n; j++) x[j] = x[j] / d;
}
