// Accurate mode, f32 forward of the erf family, 8 f32 lanes (AVX2+FMA): the operations of
// gelu_acc32_erf_fwd_scalar (gelu_accurate_f32_erf.c) in the same order, so the same bits. A piece
// is looked up with 8-wide permutes: columns 0-15 (x < 0) as two permutes and a blend on bit 3 of
// floor(a), columns 16-23 (x >= 0; 22 and 23 are zeros, and x >= 6 is replaced at the end, so
// columns 24-31 are never needed) as one permute; 2^nT scales in two exact-then-rounding steps
// built from the exponent bits.
#include "kernels/gelu_acc32_lanes.h"

#include <immintrin.h>

// Row j of the pieces for lanes with floor(a) = fl (integer), x's sign bit choosing the half.
static inline __attribute__((always_inline)) __m256 piece_row(int j, __m256i fl, __m256 upper, __m256 x) {
  const float *row = gelu_acc32_erf_pieces[j];
  __m256 g0 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(row), fl);
  __m256 g1 = _mm256_permutevar8x32_ps(_mm256_loadu_ps(row + 8), fl);
  __m256 phi = _mm256_permutevar8x32_ps(_mm256_loadu_ps(row + 16), fl);
  return _mm256_blendv_ps(phi, _mm256_blendv_ps(g0, g1, upper), x);
}

// 2^n for n in [-126, 127], exactly.
static inline __attribute__((always_inline)) __m256 pow2i8(__m256i n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

// v * 2^n for n in [-200, 0], rounded once: as gelu_acc32_scale_once.
static inline __attribute__((always_inline)) __m256 scale_once8(__m256 v, __m256i n) {
  __m256i n1 = _mm256_max_epi32(n, _mm256_set1_epi32(-100));
  __m256i n2 = _mm256_max_epi32(_mm256_sub_epi32(n, n1), _mm256_set1_epi32(-100));
  return _mm256_mul_ps(_mm256_mul_ps(v, pow2i8(n1)), pow2i8(n2));
}

static inline __attribute__((always_inline)) __m256 one8(bool clip10, __m256 x) {
  const __m256 amax = _mm256_set1_ps(GELU_ACC32_ERF_AMAX);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 a = _mm256_min_ps(_mm256_andnot_ps(sign, x), amax);
  __m256 aT = _mm256_blendv_ps(_mm256_setzero_ps(), a, x); // a where x's sign bit is set
  __m256 r, nT;
  gelu_acc32_reduce_erf8(aT, &r, &nT);
  __m256 fl = _mm256_round_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m256i fli = _mm256_cvttps_epi32(fl);
  __m256 upper = _mm256_castsi256_ps(_mm256_slli_epi32(fli, 28)); // sign bit = bit 3 of floor(a)
  __m256 u = _mm256_sub_ps(a, _mm256_add_ps(fl, _mm256_set1_ps(0.5f)));
  __m256 S = piece_row(GELU_ACC32_ERF_DEG, fli, upper, x);
#pragma GCC unroll 8
  for (int j = GELU_ACC32_ERF_DEG - 1; j >= 1; j--) S = _mm256_fmadd_ps(S, u, piece_row(j, fli, upper, x));
  __m256 w = _mm256_fmadd_ps(u, S, piece_row(GELU_ACC32_ERF_DEG + 1, fli, upper, x));
  __m256 c0 = piece_row(0, fli, upper, x);
  __m256 P = gelu_acc32_exp2_poly8(r);
  __m256 s = _mm256_mul_ps(r, P), sl = _mm256_fmsub_ps(r, P, s);
  __m256 L = _mm256_fmadd_ps(c0, s, _mm256_fmadd_ps(c0, sl, _mm256_fmadd_ps(w, s, w)));
  __m256 xn = _mm256_max_ps(x, _mm256_set1_ps(-GELU_ACC32_ERF_AMAX));
  __m256 y = scale_once8(_mm256_fmadd_ps(xn, c0, _mm256_mul_ps(xn, L)), _mm256_cvtps_epi32(nT));
  y = _mm256_or_ps(y, _mm256_and_ps(x, sign));
  y = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, _mm256_set1_ps(GELU_ACC32_ERF_HI), _CMP_NLT_UQ));
  return clip10 ? _mm256_min_ps(_mm256_set1_ps(10.0f), y) : y;
}

void gelu_acc32_erf_fwd_avx2(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  size_t i = 0;
  if (p->clip10)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, one8(true, _mm256_loadu_ps(x + i)));
  else
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, one8(false, _mm256_loadu_ps(x + i)));
  if (i < n) gelu_acc32_erf_fwd_scalar(p, x + i, y + i, n - i);
}
