// Accurate mode, f32 backward of the erf family and the tanh forms, 16 f32 lanes (AVX-512): the
// operations of gm_gelu_acc32_bwd_scalar (gelu_accurate_f32_bwd.c) in the same order, so the same
// bits. A row of the pieces is 32 floats, looked up with a two-source permute; dy is split into
// mantissa and exponent by VGETMANTPS/VGETEXPPS; 2^(nT + ge) scaling is VSCALEFPS (one rounding).
#include "kernels/gelu/accurate/gelu_acc32_lanes.h"

#include <immintrin.h>

typedef struct {
  const float (*E)[GELU_ACC32_ERF_COLUMNS];
  __m512 a0h, a0l, amax, low;
  gelu_acc32_k16 K; // tanh: the forward's reduction constants
} setup16;

static inline __attribute__((always_inline)) __m512 piece_row(const setup16 *B, int j, __m512i i) {
  const float *row = B->E[j];
  return _mm512_permutex2var_ps(_mm512_loadu_ps(row), i, _mm512_loadu_ps(row + 16));
}

static inline __attribute__((always_inline)) __m512 one16(bool tanh, bool clip10, const setup16 *B, __m512 x, __m512 g) {
  __mmask16 neg = _mm512_movepi32_mask(_mm512_castps_si512(x));
  __m512 a = _mm512_min_ps(_mm512_abs_ps(x), B->amax);
  __m512 aT = _mm512_maskz_mov_ps(neg, a), nT, r;
  if (tanh) gelu_acc32_reduce16(false, &B->K, aT, &r, &nT); // T = nT + r for aT >= 0
  else gelu_acc32_reduce_erf16(aT, &r, &nT);
  __m512 fl = _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512i fli = _mm512_cvttps_epi32(fl);
  __m512i i = _mm512_min_epi32(_mm512_mask_add_epi32(fli, (__mmask16)~neg, fli, _mm512_set1_epi32(24)), _mm512_set1_epi32(31));
  __m512 off = _mm512_add_ps(fl, _mm512_set1_ps(0.5f));
  if (tanh) { // a < 1/2 (B->low) takes column 15, in u = a - 1/4 (erf: no lane does)
    __mmask16 low = _mm512_mask_cmp_ps_mask(neg, a, B->low, _CMP_LT_OQ);
    i = _mm512_mask_mov_epi32(i, low, _mm512_set1_epi32(GELU_ACC32_TANH_BWD_LOW_COLUMN));
    off = _mm512_mask_mov_ps(off, low, _mm512_set1_ps(0.25f));
  }
  __mmask16 root = _mm512_cmplt_epi32_mask(i, _mm512_set1_epi32(2));
  __m512 u = _mm512_sub_ps(a, off);
  __m512 th, te; // a - a0h with its error
  gelu_acc32_two_sum16(a, _mm512_sub_ps(_mm512_setzero_ps(), B->a0h), &th, &te);
  __m512 tl = _mm512_maskz_sub_ps(root, te, B->a0l);
  __m512 m1 = _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), root, th);
  __m512 S = piece_row(B, GELU_ACC32_ERF_DEG, i);
#pragma GCC unroll 8
  for (int j = GELU_ACC32_ERF_DEG - 1; j >= 1; j--) S = _mm512_fmadd_ps(S, u, piece_row(B, j, i));
  __m512 inner = _mm512_fmadd_ps(u, S, _mm512_fmadd_ps(u, piece_row(B, GELU_ACC32_ERF_DEG + 2, i),
                                                      piece_row(B, GELU_ACC32_ERF_DEG + 1, i)));
  __m512 row0 = piece_row(B, 0, i);
  __m512 c0 = _mm512_mul_ps(m1, row0), e = _mm512_fmsub_ps(m1, row0, c0);
  __m512 w = _mm512_fmadd_ps(m1, inner, _mm512_fmadd_ps(tl, _mm512_add_ps(row0, inner), e));
  __m512 P = gelu_acc32_exp2_poly16(r);
  __m512 s = _mm512_mul_ps(r, P), sl = _mm512_fmsub_ps(r, P, s);
  __m512 L = _mm512_fmadd_ps(c0, s, _mm512_fmadd_ps(c0, sl, _mm512_fmadd_ps(w, s, w)));
  __m512 hi, lo;
  gelu_acc32_two_sum16(c0, L, &hi, &lo); // hi + lo = c0 + L exactly
  __m512 gm = _mm512_getmant_ps(g, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_src);
  __m512 ge = _mm512_getexp_ps(g);
  __m512 y = _mm512_scalef_ps(_mm512_fmadd_ps(gm, hi, _mm512_mul_ps(gm, lo)), _mm512_add_ps(nT, ge));
  // dy = +-0, +-inf, NaN (QNaN 0x01, +-0 0x06, +-inf 0x18, SNaN 0x80)
  __mmask16 special = _mm512_fpclass_ps_mask(g, 0x9F);
  y = _mm512_mask_mul_ps(y, special, g, hi);
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(GELU_ACC32_BWD_HI), _CMP_GE_OQ), g);
  if (clip10) y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(10.0f), _CMP_GT_OQ), _mm512_setzero_ps());
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

static inline __attribute__((always_inline)) void run16(bool tanh, bool clip10, const setup16 *B, const float *x,
                                                        const float *dy, float *dx, size_t n) {
  size_t i = 0;
  // The tanh forms two vectors at a time: with a loop body this long, one vector an iteration left
  // the loads of x exposed once the arrays come from memory (gelu_new at 2^25 on one thread, A/B
  // interleaved: 575-582 -> 785 Melem/s; the erf family measured no gain). Elementwise: same bits.
  if (tanh)
    for (; i + 32 <= n; i += 32) {
      __m512 y0 = one16(tanh, clip10, B, _mm512_loadu_ps(x + i), _mm512_loadu_ps(dy + i));
      __m512 y1 = one16(tanh, clip10, B, _mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(dy + i + 16));
      _mm512_storeu_ps(dx + i, y0);
      _mm512_storeu_ps(dx + i + 16, y1);
    }
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dx + i, one16(tanh, clip10, B, _mm512_loadu_ps(x + i), _mm512_loadu_ps(dy + i)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(dx + i, m, one16(tanh, clip10, B, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, dy + i)));
  }
}

void gm_gelu_acc32_bwd_avx512(const gelu_acc_params *p, const float *x, const float *dy, float *dx, size_t n) {
  gelu_acc32_bwd_setup S = gm_gelu_acc32_bwd_setup_of(p);
  setup16 B = {S.E, _mm512_set1_ps(S.a0h), _mm512_set1_ps(S.a0l), _mm512_set1_ps(S.amax), _mm512_set1_ps(S.low),
               {_mm512_set1_ps(S.K.Mh), _mm512_set1_ps(S.K.Ml), _mm512_set1_ps(S.K.Mkh), _mm512_set1_ps(S.K.Mkl)}};
  if (S.tanh) run16(true, false, &B, x, dy, dx, n); // one loop per family (gelu_10 is erf)
  else if (S.clip10) run16(false, true, &B, x, dy, dx, n);
  else run16(false, false, &B, x, dy, dx, n);
}
