// AVX2 bodies of the softmax's exp and the score division (contracts in nn.h and softmax.c): the
// same operations as the scalar code, eight lanes at a time, so the same bits.
#include <immintrin.h>
#include <sleef.h>

#include "kernels/softmax/softmax_isa.h"

// s[j] = exp(s[j] - m) for j < n with SLEEF's expf_u10 (AVX2 + FMA build: the bits of its AVX-512 build).
void gm_exp_shift_avx2(float *s, int n, float m) {
  __m256 vm = _mm256_set1_ps(m);
  int j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(s + j, Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm)));
  for (; j < n; j++) s[j] = Sleef_expf1_u10purecfma(s[j] - m);
}

void gm_div_row_avx2(float *x, int n, float d) {
  __m256 dv = _mm256_set1_ps(d);
  int j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, _mm256_div_ps(_mm256_loadu_ps(x + j), dv));
  for (; j < n; j++) x[j] = x[j] / d;
}
