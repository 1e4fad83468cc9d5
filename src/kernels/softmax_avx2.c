// AVX2 bodies of the softmax row and the score division (contracts in nn.h and softmax.c): the
// same operations in the same order as the scalar code, eight lanes at a time, so the same bits.
//   max      exact whatever the order (a NaN never replaces the running maximum; the sign of a zero
//            maximum cannot change s - m or exp(mask - m))
//   exp      expf of each s - m (gm_exp_shift_row: libm's expf, or its AVX-512 replica)
//   sum      element j into lane j % 8 in increasing j: one 8-lane add per 8 elements
//   scale    s * (1 / sum) per element
#include <immintrin.h>
#include <math.h>

void gm_exp_shift_row(float *s, int n, float m);
float gm_softmax_lane_sum_avx2(const float *e, int stored, int total, float rest);
void gm_softmax_row_avx2(float *s, int n, int n_masked, float mask_value);
void gm_div_row_avx2(float *x, int n, float d);

// The lane sum of softmax.c's lane_sum for total >= 8: elements past `stored` equal `rest`.
float gm_softmax_lane_sum_avx2(const float *e, int stored, int total, float rest) {
  float lane[8];
  for (int k = 0; k < 8; k++) lane[k] = k < stored ? e[k] : rest;
  __m256 acc = _mm256_loadu_ps(lane);
  int j = 8;
  for (; j + 8 <= stored; j += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(e + j));
  _mm256_storeu_ps(lane, acc);
  for (; j < total && (j < stored || j % 8 != 0); j++) lane[j % 8] = lane[j % 8] + (j < stored ? e[j] : rest);
  if (j + 8 <= total) { // the masked tail, 8 lanes at a time, each lane in order
    acc = _mm256_loadu_ps(lane);
    __m256 r = _mm256_set1_ps(rest);
    for (; j + 8 <= total; j += 8) acc = _mm256_add_ps(acc, r);
    _mm256_storeu_ps(lane, acc);
  }
  for (; j < total; j++) lane[j % 8] = lane[j % 8] + rest;
  for (int h = 4; h >= 1; h /= 2)
    for (int k = 0; k < h; k++) lane[k] = lane[k] + lane[k + h];
  return lane[0];
}

void gm_softmax_row_avx2(float *s, int n, int n_masked, float mask_value) {
  __m256 mv = _mm256_set1_ps(-INFINITY);
  int j = 0;
  for (; j + 8 <= n; j += 8) mv = _mm256_max_ps(_mm256_loadu_ps(s + j), mv); // (x > m) ? x : m
  float lanes[8];
  _mm256_storeu_ps(lanes, mv);
  float m = -INFINITY;
  for (int k = 0; k < 8; k++)
    if (lanes[k] > m) m = lanes[k];
  for (; j < n; j++)
    if (s[j] > m) m = s[j];
  if (n_masked > 0 && mask_value > m) m = mask_value;
  gm_exp_shift_row(s, n, m);
  float rest = n_masked > 0 ? expf(mask_value - m) : 0.0f;
  int total = n + n_masked;
  float sum;
  if (total < 8) {
    sum = 0.0f;
    for (j = 0; j < total; j++) sum = sum + (j < n ? s[j] : rest);
  } else {
    sum = gm_softmax_lane_sum_avx2(s, n, total, rest);
  }
  float inv = 1.0f / sum;
  __m256 iv = _mm256_set1_ps(inv);
  for (j = 0; j + 8 <= n; j += 8) _mm256_storeu_ps(s + j, _mm256_mul_ps(_mm256_loadu_ps(s + j), iv));
  for (; j < n; j++) s[j] = s[j] * inv;
}

void gm_div_row_avx2(float *x, int n, float d) {
  __m256 dv = _mm256_set1_ps(d);
  int j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, _mm256_div_ps(_mm256_loadu_ps(x + j), dv));
  for (; j < n; j++) x[j] = x[j] / d;
}
