// f32 softmax of one score row with a masked tail (contract in nn.h).
#include "kernels/nn.h"

#include <math.h>

void gm_softmax_row_f32(float *s, int n, int n_masked, float mask_value) {
  float m = -INFINITY;
  for (int j = 0; j < n; j++)
    if (s[j] > m) m = s[j];
  if (n_masked > 0 && mask_value > m) m = mask_value;
  double sum = 0.0;
  for (int j = 0; j < n; j++) {
    s[j] = expf(s[j] - m);
    sum += s[j];
  }
  if (n_masked > 0) sum += (double)n_masked * expf(mask_value - m);
  float inv = 1.0f / (float)sum;
  for (int j = 0; j < n; j++) s[j] = s[j] * inv;
}
