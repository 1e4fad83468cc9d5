// f32 layer norm over the last dimension (contract in nn.h).
#include "kernels/nn.h"

#include <math.h>
#include <omp.h>
#include <stddef.h>

static void layernorm_row(const float *x, const float *w, const float *b, float *y, int D, double eps) {
  double s = 0.0;
  for (int i = 0; i < D; i++) s += x[i];
  double mean = s / D;
  double v = 0.0;
  for (int i = 0; i < D; i++) {
    double d = x[i] - mean;
    v += d * d;
  }
  float rstd = (float)(1.0 / sqrt(v / D + eps));
  float m = (float)mean;
  for (int i = 0; i < D; i++) y[i] = (x[i] - m) * rstd * w[i] + b[i];
}

void gm_layernorm_f32(const float *x, const float *w, const float *b, float *y, int R, int D, double eps, int threads) {
  if (threads <= 0) threads = omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (R > 16)
  for (int r = 0; r < R; r++) layernorm_row(x + (size_t)r * D, w, b, y + (size_t)r * D, D, eps);
}
