// f32 softmax of one score row with a masked tail, in ATen's CPU order (contract in nn.h).
#include "kernels/nn.h"

#include <math.h>

void gm_softmax_row_avx2(float *s, int n, int n_masked, float mask_value);
void gm_div_row_avx2(float *x, int n, float d);

// The AVX2 bodies (softmax_avx2.c) give the same bits; __builtin_cpu_supports is a load of the
// CPU facts libgcc gathered at start-up, cheap enough per row.
static bool have_avx2(void) { return __builtin_cpu_supports("avx2"); }

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
  for (int j = 0; j < n; j++) s[j] = expf(s[j] - m);
  float rest = n_masked > 0 ? expf(mask_value - m) : 0.0f;
  float inv = 1.0f / lane_sum(s, n, n + n_masked, rest);
  for (int j = 0; j < n; j++) s[j] = s[j] * inv;
}

void gm_div_row_f32(float *x, int n, float d) {
  if (have_avx2()) { gm_div_row_avx2(x, n, d); return; }
  for (int j = 0; j < n; j++) x[j] = x[j] / d;
}
