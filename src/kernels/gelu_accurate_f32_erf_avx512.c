// Accurate mode, f32 forward of the erf family, 16 f32 lanes (AVX-512): the operations of
// gelu_acc32_erf_fwd_scalar (gelu_accurate_f32_erf.c) in the same order, so the same bits. T, n and
// r are formed in two halves of 8 f64 lanes; the erfcx pieces are looked up with two-source
// permutes of their 32-entry rows; scaling by 2^n uses VSCALEFPS (one rounding, as the scalar's
// exact-then-rounding pair).
#include "kernels/gelu_math.h"

#include <immintrin.h>

typedef struct {
  __m512d T;
  __m512 lo, hi, clip;
  bool clip10;
} erf_consts;

static inline __attribute__((always_inline)) void reduce8(__m512d Tk, __m256 x, __m256 *r, __m256 *n) {
  __m512d xd = _mm512_cvtps_pd(x);
  __m512d T = _mm512_mul_pd(_mm512_mul_pd(xd, xd), Tk);
  __m512d nd = _mm512_roundscale_pd(T, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *r = _mm512_cvtpd_ps(_mm512_sub_pd(T, nd));
  *n = _mm512_cvtpd_ps(nd);
}

static inline __attribute__((always_inline)) __m512 join(__m256 lo, __m256 hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

// row[i] for each lane's i in [0, 32).
static inline __attribute__((always_inline)) __m512 lookup32(const float *row, __m512i i) {
  return _mm512_permutex2var_ps(_mm512_loadu_ps(row), i, _mm512_loadu_ps(row + 16));
}

static inline __attribute__((always_inline)) __m512 one16(const erf_consts *K, const gelu_erfcx32 *E, __m512 x,
                                                         __m256 x0, __m256 x1) {
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __mmask16 below = _mm512_cmp_ps_mask(x, K->lo, _CMP_LT_OQ);
  __mmask16 keep = _mm512_cmp_ps_mask(x, K->hi, _CMP_GT_OQ) | nan |
                   _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ);
  __mmask16 clip = K->clip10 ? _mm512_cmp_ps_mask(x, K->clip, _CMP_GT_OQ) : 0;
  __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  __m256 r0, r1, n0, n1;
  reduce8(K->T, x0, &r0, &n0);
  reduce8(K->T, x1, &r1, &n1);
  __m512 r = join(r0, r1), n = join(n0, n1);
  // t = th + tl, the piece i and the offset u inside it.
  __m512 ax = _mm512_abs_ps(x);
  __m512 th = _mm512_mul_ps(ax, _mm512_set1_ps(GELU_ACC32_RSQRT2_HI));
  __m512 tl = _mm512_fmadd_ps(ax, _mm512_set1_ps(GELU_ACC32_RSQRT2_LO),
                              _mm512_fmsub_ps(ax, _mm512_set1_ps(GELU_ACC32_RSQRT2_HI), th));
  __m512 fi = _mm512_roundscale_ps(_mm512_mul_ps(th, _mm512_set1_ps(2.0f)), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  fi = _mm512_min_ps(fi, _mm512_set1_ps((float)(GELU_ERFCX_NI - 1)));
  __m512i i = _mm512_cvttps_epi32(fi);
  __m512 u = _mm512_add_ps(_mm512_sub_ps(th, _mm512_fmadd_ps(fi, _mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f))), tl);
  __m512 S = lookup32(E->c[GELU_ERFCX_DEG], i);
  for (int j = GELU_ERFCX_DEG - 1; j >= 1; j--) S = _mm512_fmadd_ps(S, u, lookup32(E->c[j], i));
  __m512 w = _mm512_fmadd_ps(u, S, lookup32(E->c0lo, i));
  __m512 c0 = lookup32(E->c[0], i);
  const float *C = gelu_acc32_exp2_poly;
  __m512 P = _mm512_fmadd_ps(_mm512_set1_ps(C[6]), r, _mm512_set1_ps(C[5]));
  P = _mm512_fmadd_ps(P, r, _mm512_set1_ps(C[4]));
  P = _mm512_fmadd_ps(P, r, _mm512_set1_ps(C[3]));
  P = _mm512_fmadd_ps(P, r, _mm512_set1_ps(C[2]));
  P = _mm512_fmadd_ps(P, r, _mm512_set1_ps(C[1]));
  P = _mm512_fmadd_ps(P, r, _mm512_set1_ps(C[0]));
  __m512 s = _mm512_mul_ps(r, P), sl = _mm512_fmsub_ps(r, P, s);
  __m512 L = _mm512_fmadd_ps(c0, s, _mm512_fmadd_ps(c0, sl, _mm512_fmadd_ps(w, s, w)));
  __m512 half = _mm512_set1_ps(0.5f);
  __m512 hc0 = _mm512_mul_ps(half, c0), hL = _mm512_mul_ps(half, L);
  __m512 n200 = _mm512_max_ps(n, _mm512_set1_ps(-200.0f));
  // x < 0: fma(x, c0/2, x*(L/2)) * 2^n.
  __m512 yneg = _mm512_scalef_ps(_mm512_fmadd_ps(x, hc0, _mm512_mul_ps(x, hL)), n200);
  // x > 0: x*(1 - Q) with 1 - Q as Fh + Fl.
  __m512 Qh = _mm512_scalef_ps(hc0, n200), Ql = _mm512_scalef_ps(hL, n200);
  __m512 one = _mm512_set1_ps(1.0f);
  __m512 Fh = _mm512_sub_ps(one, Qh);
  __m512 Fl = _mm512_sub_ps(_mm512_sub_ps(_mm512_sub_ps(one, Fh), Qh), Ql);
  __m512 ypos = _mm512_fmadd_ps(x, Fh, _mm512_mul_ps(x, Fl));
  __m512 y = _mm512_mask_blend_ps(neg, ypos, yneg);
  y = _mm512_mask_blend_ps(below, y, _mm512_set1_ps(-0.0f));
  y = _mm512_mask_blend_ps(keep, y, x);
  return _mm512_mask_blend_ps(clip, y, _mm512_set1_ps(10.0f));
}

void gelu_acc32_erf_fwd_avx512(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  const gelu_erfcx32 *E = gelu_acc32_erfcx_tables();
  erf_consts K = {_mm512_set1_pd(GELU_ACC32_ERF_T), _mm512_set1_ps((float)p->lo), _mm512_set1_ps((float)p->hi),
                  _mm512_set1_ps(10.0f), p->clip10 != 0};
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, one16(&K, E, _mm512_loadu_ps(x + i), _mm256_loadu_ps(x + i), _mm256_loadu_ps(x + i + 8)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, one16(&K, E, v, _mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
  }
}
