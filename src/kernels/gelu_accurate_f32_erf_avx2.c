// Accurate mode, f32 forward of the erf family, 8 f32 lanes (AVX2+FMA): the operations of
// gelu_acc32_erf_fwd_scalar (gelu_accurate_f32_erf.c) in the same order, so the same bits. T, n and
// r are formed in two halves of 4 f64 lanes; the erfcx pieces are gathered from their rows.
#include "kernels/gelu_math.h"

#include <immintrin.h>

static inline __attribute__((always_inline)) void reduce4(__m256d Tk, __m128 x, __m128 *r, __m128i *n) {
  __m256d xd = _mm256_cvtps_pd(x);
  __m256d T = _mm256_mul_pd(_mm256_mul_pd(xd, xd), Tk);
  __m256d nd = _mm256_round_pd(T, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *r = _mm256_cvtpd_ps(_mm256_sub_pd(T, nd));
  *n = _mm256_cvtpd_epi32(nd); // lanes outside the core give INT_MIN; they are replaced at the end
}

// 2^n for n in [-126, 127], exactly.
static inline __attribute__((always_inline)) __m256 pow2i8(__m256i n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

// v * 2^n for n >= -200 (clamped below), rounded once: as the scalar scale2.
static inline __attribute__((always_inline)) __m256 scale2(__m256 v, __m256i n) {
  n = _mm256_max_epi32(n, _mm256_set1_epi32(-200));
  __m256i n1 = _mm256_max_epi32(n, _mm256_set1_epi32(-100));
  return _mm256_mul_ps(_mm256_mul_ps(v, pow2i8(n1)), pow2i8(_mm256_sub_epi32(n, n1)));
}

static inline __attribute__((always_inline)) __m256 one8(const gelu_acc_params *p, const gelu_erfcx32 *E, __m256 x) {
  __m256 zero = _mm256_setzero_ps();
  __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  __m256 below = _mm256_cmp_ps(x, _mm256_set1_ps((float)p->lo), _CMP_LT_OQ);
  __m256 keep = _mm256_or_ps(_mm256_or_ps(_mm256_cmp_ps(x, _mm256_set1_ps((float)p->hi), _CMP_GT_OQ), nan),
                             _mm256_cmp_ps(x, zero, _CMP_EQ_OQ));
  __m256 clip = p->clip10 ? _mm256_cmp_ps(x, _mm256_set1_ps(10.0f), _CMP_GT_OQ) : zero;
  __m256 neg = _mm256_cmp_ps(x, zero, _CMP_LT_OQ);
  __m256d Tk = _mm256_set1_pd(GELU_ACC32_ERF_T);
  __m128 r0, r1;
  __m128i n0, n1;
  reduce4(Tk, _mm256_castps256_ps128(x), &r0, &n0);
  reduce4(Tk, _mm256_extractf128_ps(x, 1), &r1, &n1);
  __m256 r = _mm256_insertf128_ps(_mm256_castps128_ps256(r0), r1, 1);
  __m256i n = _mm256_inserti128_si256(_mm256_castsi128_si256(n0), n1, 1);
  __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  __m256 th = _mm256_mul_ps(ax, _mm256_set1_ps(GELU_ACC32_RSQRT2_HI));
  __m256 tl = _mm256_fmadd_ps(ax, _mm256_set1_ps(GELU_ACC32_RSQRT2_LO),
                              _mm256_fmsub_ps(ax, _mm256_set1_ps(GELU_ACC32_RSQRT2_HI), th));
  __m256 fi = _mm256_round_ps(_mm256_mul_ps(th, _mm256_set1_ps(2.0f)), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  fi = _mm256_min_ps(fi, _mm256_set1_ps((float)(GELU_ERFCX_NI - 1)));
  // Lanes outside the core (NaN, inf) gather row 0; their results are replaced at the end.
  __m256i i = _mm256_and_si256(_mm256_cvttps_epi32(_mm256_andnot_ps(nan, fi)), _mm256_set1_epi32(31));
  __m256 u = _mm256_add_ps(_mm256_sub_ps(th, _mm256_fmadd_ps(fi, _mm256_set1_ps(0.5f), _mm256_set1_ps(0.25f))), tl);
  __m256 S = _mm256_i32gather_ps(E->c[GELU_ERFCX_DEG], i, 4);
  for (int j = GELU_ERFCX_DEG - 1; j >= 1; j--) S = _mm256_fmadd_ps(S, u, _mm256_i32gather_ps(E->c[j], i, 4));
  __m256 w = _mm256_fmadd_ps(u, S, _mm256_i32gather_ps(E->c0lo, i, 4));
  __m256 c0 = _mm256_i32gather_ps(E->c[0], i, 4);
  const float *C = gelu_acc32_exp2_poly;
  __m256 P = _mm256_fmadd_ps(_mm256_set1_ps(C[6]), r, _mm256_set1_ps(C[5]));
  P = _mm256_fmadd_ps(P, r, _mm256_set1_ps(C[4]));
  P = _mm256_fmadd_ps(P, r, _mm256_set1_ps(C[3]));
  P = _mm256_fmadd_ps(P, r, _mm256_set1_ps(C[2]));
  P = _mm256_fmadd_ps(P, r, _mm256_set1_ps(C[1]));
  P = _mm256_fmadd_ps(P, r, _mm256_set1_ps(C[0]));
  __m256 s = _mm256_mul_ps(r, P), sl = _mm256_fmsub_ps(r, P, s);
  __m256 L = _mm256_fmadd_ps(c0, s, _mm256_fmadd_ps(c0, sl, _mm256_fmadd_ps(w, s, w)));
  __m256 half = _mm256_set1_ps(0.5f);
  __m256 hc0 = _mm256_mul_ps(half, c0), hL = _mm256_mul_ps(half, L);
  __m256 yneg = scale2(_mm256_fmadd_ps(x, hc0, _mm256_mul_ps(x, hL)), n);
  __m256 Qh = scale2(hc0, n), Ql = scale2(hL, n);
  __m256 one = _mm256_set1_ps(1.0f);
  __m256 Fh = _mm256_sub_ps(one, Qh);
  __m256 Fl = _mm256_sub_ps(_mm256_sub_ps(_mm256_sub_ps(one, Fh), Qh), Ql);
  __m256 ypos = _mm256_fmadd_ps(x, Fh, _mm256_mul_ps(x, Fl));
  __m256 y = _mm256_blendv_ps(ypos, yneg, neg);
  y = _mm256_blendv_ps(y, _mm256_set1_ps(-0.0f), below);
  y = _mm256_blendv_ps(y, x, keep);
  return _mm256_blendv_ps(y, _mm256_set1_ps(10.0f), clip);
}

void gelu_acc32_erf_fwd_avx2(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  const gelu_erfcx32 *E = gelu_acc32_erfcx_tables();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, one8(p, E, _mm256_loadu_ps(x + i)));
  if (i < n) gelu_acc32_erf_fwd_scalar(p, x + i, y + i, n - i);
}
