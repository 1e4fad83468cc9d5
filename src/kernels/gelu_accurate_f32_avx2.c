// Accurate mode, f32 forward of the tanh and sigmoid families, 8 f32 lanes (AVX2+FMA): the
// operations of gelu_acc32_fwd_scalar (gelu_accurate_f32.c) in the same order, so the same bits.
// Everything runs in f32 lanes; powers of two are built from the exponent bits, and 2^n scales in
// two exact-then-rounding steps.
#include "kernels/gelu_acc32_lanes.h"

#include <immintrin.h>

// 2^n for n in [-126, 127], exactly.
static __m256 pow2i8(__m256i n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

static inline __attribute__((always_inline)) __m256 one8(bool sigmoid, const gelu_acc32_k8 *K, __m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 xl = _mm256_max_ps(_mm256_set1_ps(-0x1p7f), x); // NaN: the second operand, x
  __m256 xc = _mm256_min_ps(_mm256_set1_ps(0x1p7f), xl);
  __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  __m256 rho, nT;
  gelu_acc32_reduce8(sigmoid, K, xc, &rho, &nT);
  // -|nT| as an integer; NaN lanes and n below -2^31 give INT_MIN: below -100 like the scalar's.
  __m256i n = _mm256_cvtps_epi32(_mm256_or_ps(nT, _mm256_set1_ps(-0.0f)));
  __m256 P = gelu_acc32_exp2_poly8(rho);
  __m256i n1c = _mm256_max_epi32(n, _mm256_set1_epi32(-100));
  __m256i n2c = _mm256_max_epi32(_mm256_sub_epi32(n, n1c), _mm256_set1_epi32(-100));
  __m256 c = pow2i8(n1c);
  __m256 m = _mm256_blendv_ps(c, one, neg);
  __m256 Ah = _mm256_add_ps(one, c);
  __m256 Al = _mm256_sub_ps(c, _mm256_sub_ps(Ah, one));
  __m256 B = _mm256_fmadd_ps(_mm256_mul_ps(m, rho), P, Al);
  __m256 Dh = _mm256_add_ps(Ah, B);
  __m256 q = _mm256_div_ps(xl, Dh);
  __m256 scaled = _mm256_mul_ps(_mm256_mul_ps(q, c), pow2i8(n2c));
  return _mm256_blendv_ps(q, scaled, neg);
}

void gelu_acc32_fwd_avx2(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  gelu_acc32_consts C = gelu_acc32_reduction(p);
  gelu_acc32_k8 K = {_mm256_set1_ps(C.Mh), _mm256_set1_ps(C.Ml), _mm256_set1_ps(C.Mkh), _mm256_set1_ps(C.Mkl)};
  size_t i = 0;
  if (C.sigmoid)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, one8(true, &K, _mm256_loadu_ps(x + i)));
  else
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, one8(false, &K, _mm256_loadu_ps(x + i)));
  if (i < n) gelu_acc32_fwd_scalar(p, x + i, y + i, n - i);
}
