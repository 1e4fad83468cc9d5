// Accurate mode, f32 forward of the erf family, 16 f32 lanes (AVX-512): the operations of
// gelu_acc32_erf_fwd_scalar (gelu_accurate_f32_erf.c) in the same order, so the same bits. A row
// of the pieces is 32 floats, two registers, looked up with two-source permutes; 2^nT scaling is
// VSCALEFPS (one rounding, as the scalar's exact-then-rounding pair).
#include "kernels/gelu_acc32_lanes.h"

#include <immintrin.h>

static inline __attribute__((always_inline)) __m512 piece_row(int j, __m512i i) {
  const float *row = gelu_acc32_erf_pieces[j];
  return _mm512_permutex2var_ps(_mm512_loadu_ps(row), i, _mm512_loadu_ps(row + 16));
}

static inline __attribute__((always_inline)) __m512 one16(bool clip10, __m512 x) {
  const __m512 amax = _mm512_set1_ps(GELU_ACC32_ERF_AMAX);
  __mmask16 neg = _mm512_movepi32_mask(_mm512_castps_si512(x));
  __m512 a = _mm512_min_ps(_mm512_abs_ps(x), amax);
  __m512 aT = _mm512_maskz_mov_ps(neg, a);
  __m512 r, nT;
  gelu_acc32_reduce_erf16(aT, &r, &nT);
  __m512 fl = _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512i i = _mm512_mask_add_epi32(_mm512_cvttps_epi32(fl), (__mmask16)~neg, _mm512_cvttps_epi32(fl), _mm512_set1_epi32(16));
  __m512 u = _mm512_sub_ps(a, _mm512_add_ps(fl, _mm512_set1_ps(0.5f)));
  __m512 S = piece_row(GELU_ACC32_ERF_DEG, i);
#pragma GCC unroll 8
  for (int j = GELU_ACC32_ERF_DEG - 1; j >= 1; j--) S = _mm512_fmadd_ps(S, u, piece_row(j, i));
  __m512 w = _mm512_fmadd_ps(u, S, piece_row(GELU_ACC32_ERF_DEG + 1, i));
  __m512 c0 = piece_row(0, i);
  __m512 P = gelu_acc32_exp2_poly16(r);
  __m512 s = _mm512_mul_ps(r, P), sl = _mm512_fmsub_ps(r, P, s);
  __m512 L = _mm512_fmadd_ps(c0, s, _mm512_fmadd_ps(c0, sl, _mm512_fmadd_ps(w, s, w)));
  __m512 xn = _mm512_max_ps(x, _mm512_set1_ps(-GELU_ACC32_ERF_AMAX));
  __m512 y = _mm512_scalef_ps(_mm512_fmadd_ps(xn, c0, _mm512_mul_ps(xn, L)), nT);
  // y | (x & sign bit)
  y = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(y), _mm512_castps_si512(x),
                                                    _mm512_set1_epi32((int)0x80000000u), 0xF8));
  y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(GELU_ACC32_ERF_HI), _CMP_NLT_UQ), y, x);
  return clip10 ? _mm512_min_ps(_mm512_set1_ps(10.0f), y) : y;
}

void gelu_acc32_erf_fwd_avx512(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  size_t i = 0;
  if (p->clip10)
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, one16(true, _mm512_loadu_ps(x + i)));
  else
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, one16(false, _mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, one16(p->clip10 != 0, _mm512_maskz_loadu_ps(m, x + i)));
  }
}
