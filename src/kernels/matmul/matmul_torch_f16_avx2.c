// AVX2 body of the transposed-B dot product of gm_matmul_f16_torch (order in matmul_torch_f16.c).
#include <immintrin.h>

#include "kernels/matmul/matmul_isa.h"

static float fold8(__m256 v) { // lane += lane+4, lane += lane+2, lane0 + lane1
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

float gm_dot_f32arith_avx2(const float *x, const float *y, int K) {
  __m256 r[8];
  for (int i = 0; i < 8; i++) r[i] = _mm256_setzero_ps();
  int main_end = K & ~63, vec_end = K & ~15;
  for (int j = 0; j < main_end; j += 64)
    for (int i = 0; i < 8; i++) r[i] = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8 * i), _mm256_loadu_ps(y + j + 8 * i), r[i]);
  for (int h = 4; h >= 1; h /= 2)
    for (int i = 0; i < h; i++) r[i] = _mm256_add_ps(r[i], r[i + h]);
  float sum = fold8(r[0]);
  __m256 t = _mm256_setzero_ps();
  for (int j = main_end; j < vec_end; j += 16) {
    t = _mm256_fmadd_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j), t);
    t = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8), _mm256_loadu_ps(y + j + 8), t);
  }
  sum = sum + fold8(t);
  for (int j = vec_end; j < K; j++) sum = sum + x[j] * y[j];
  return sum;
}
