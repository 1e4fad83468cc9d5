// Accurate mode, f32 forward of the tanh and sigmoid families, 8 f32 lanes (AVX2+FMA): the
// operations of gelu_acc32_fwd_scalar (gelu_accurate_f32.c) in the same order, so the same bits.
// A, n and r are formed in two halves of 4 f64 lanes; everything after runs in f32 lanes; powers
// of two are built from the exponent bits, and 2^n scales in two exact-then-rounding steps.
#include "kernels/gelu_math.h"

#include <immintrin.h>

static inline __attribute__((always_inline)) void reduce4(bool sigmoid, __m256d M, __m256d Mk, __m128 a, __m128 *r,
                                                          __m128i *n) {
  __m256d ad = _mm256_cvtps_pd(a);
  __m256d A = sigmoid ? _mm256_mul_pd(ad, M) : _mm256_mul_pd(ad, _mm256_fmadd_pd(Mk, _mm256_mul_pd(ad, ad), M));
  __m256d nd = _mm256_round_pd(A, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *r = _mm256_cvtpd_ps(_mm256_sub_pd(A, nd));
  // NaN lanes and n below -2^31 give INT_MIN: below -100 like the scalar's float n.
  *n = _mm256_cvtpd_epi32(nd);
}

// 2^n for n in [-126, 127], exactly.
static __m256 pow2i8(__m256i n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

static inline __attribute__((always_inline)) __m256 one8(bool sigmoid, __m256d M, __m256d Mk, __m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 xl = _mm256_max_ps(_mm256_set1_ps(-0x1p16f), x); // NaN: the second operand, x
  __m256 xc = _mm256_min_ps(_mm256_set1_ps(0x1p16f), xl);
  __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), xc);
  __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  __m128 r0, r1;
  __m128i n0, n1;
  reduce4(sigmoid, M, Mk, _mm256_castps256_ps128(a), &r0, &n0);
  reduce4(sigmoid, M, Mk, _mm256_extractf128_ps(a, 1), &r1, &n1);
  __m256 r = _mm256_insertf128_ps(_mm256_castps128_ps256(r0), r1, 1);
  __m256i n = _mm256_inserti128_si256(_mm256_castsi128_si256(n0), n1, 1);
  __m256 rho = _mm256_xor_ps(r, _mm256_and_ps(neg, _mm256_set1_ps(-0.0f)));
  const float *C = gelu_acc32_exp2_fit5;
  __m256 P = _mm256_fmadd_ps(_mm256_set1_ps(C[5]), rho, _mm256_set1_ps(C[4]));
  P = _mm256_fmadd_ps(P, rho, _mm256_set1_ps(C[3]));
  P = _mm256_fmadd_ps(P, rho, _mm256_set1_ps(C[2]));
  P = _mm256_fmadd_ps(P, rho, _mm256_set1_ps(C[1]));
  P = _mm256_fmadd_ps(P, rho, _mm256_set1_ps(C[0]));
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
  double Md, Mkd;
  gelu_acc32_reduction(p, &Md, &Mkd);
  __m256d M = _mm256_set1_pd(Md), Mk = _mm256_set1_pd(Mkd);
  bool sigmoid = p->fam == GELU_FAM_SIGMOID;
  size_t i = 0;
  if (sigmoid)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, one8(true, M, Mk, _mm256_loadu_ps(x + i)));
  else
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, one8(false, M, Mk, _mm256_loadu_ps(x + i)));
  if (i < n) gelu_acc32_fwd_scalar(p, x + i, y + i, n - i);
}
