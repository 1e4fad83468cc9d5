// The softmax's exp, 16 lanes: SLEEF's expf_u10 for AVX-512 (the FMA build), the function ATen's
// Vectorized<float>::exp() calls on AVX-512 machines. SLEEF's AVX2 and scalar FMA builds return
// the same bits for every input (checked over [-110, 90]: tests/test_softmax.c checks every f32).
#include <immintrin.h>
#include <sleef.h>

#include "kernels/softmax/softmax_isa.h"

// s[j] = exp(s[j] - m) for j < n, the subtraction in f32.
void gm_exp_shift_avx512(float *s, int n, float m) {
  __m512 vm = _mm512_set1_ps(m);
  int j = 0;
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(s + j, Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm)));
  if (j < n) {
    __mmask16 k = (__mmask16)((1u << (n - j)) - 1u);
    _mm512_mask_storeu_ps(s + j, k, Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + j), vm)));
  }
}
