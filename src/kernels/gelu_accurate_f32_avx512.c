// Accurate mode, f32 forward of the tanh and sigmoid families, 16 f32 lanes (AVX-512): the
// operations of gelu_acc32_fwd_scalar (gelu_accurate_f32.c) in the same order, so the same bits.
// Everything runs in f32 lanes.
// Scaling by 2^n uses VSCALEFPS, which rounds once, as the scalar's exact-then-rounding pair does.
#include "kernels/gelu_acc32_lanes.h"

#include <immintrin.h>

static inline __attribute__((always_inline)) __m512 one16(bool sigmoid, const gelu_acc32_k16 *K, __m512 x) {
  const __m512 lim = _mm512_set1_ps(0x1p7f), one = _mm512_set1_ps(1.0f);
  __m512 xl = _mm512_max_ps(_mm512_set1_ps(-0x1p7f), x); // NaN: the second operand, x
  __m512 xc = _mm512_min_ps(lim, xl);
  __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  __m512 rho, nT;
  gelu_acc32_reduce16(sigmoid, K, xc, &rho, &nT);
  __m512 n = _mm512_or_ps(nT, _mm512_set1_ps(-0.0f)); // -|nT|
  __m512 P = gelu_acc32_exp2_poly16(rho);
  __m512 c = _mm512_scalef_ps(one, _mm512_max_ps(n, _mm512_set1_ps(-100.0f)));
  __m512 Ah = _mm512_add_ps(one, c);
  __m512 Al = _mm512_sub_ps(c, _mm512_sub_ps(Ah, one));
  __m512 mrho = _mm512_mask_mul_ps(rho, (__mmask16)~neg, c, rho); // m*rho: m = c (x >= 0), 1 (x < 0)
  __m512 B = _mm512_fmadd_ps(mrho, P, Al);
  __m512 Dh = _mm512_add_ps(Ah, B);
  __m512 q = _mm512_div_ps(xl, Dh);
  return _mm512_mask_scalef_ps(q, neg, q, n);
}

// One loop per family, so the family test is not in the loop.
static inline __attribute__((always_inline)) void run16(bool sigmoid, const gelu_acc32_k16 *K, const float *x, float *y,
                                                        size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, one16(sigmoid, K, _mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, one16(sigmoid, K, _mm512_maskz_loadu_ps(m, x + i)));
  }
}

void gelu_acc32_fwd_avx512(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  gelu_acc32_consts C = gelu_acc32_reduction(p);
  gelu_acc32_k16 K = {_mm512_set1_ps(C.Mh), _mm512_set1_ps(C.Ml), _mm512_set1_ps(C.Mkh), _mm512_set1_ps(C.Mkl)};
  if (p->fam == GELU_FAM_SIGMOID) run16(true, &K, x, y, n);
  else run16(false, &K, x, y, n);
}
