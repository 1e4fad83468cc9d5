// Accurate mode, f32 forward of the tanh and sigmoid families, 16 f32 lanes (AVX-512): the
// operations of gelu_acc32_fwd_scalar (gelu_accurate_f32.c) in the same order, so the same bits.
// t, n and r are formed in two halves of 8 f64 lanes; everything after runs in f32 lanes.
// Scaling by 2^n uses VSCALEFPS, which rounds once, as the scalar's exact-then-rounding pair does.
#include "kernels/gelu_math.h"

#include <immintrin.h>

// t = |x*fma(k, x^2, 1)| * M (tanh) or |x| * M (sigmoid) for 8 lanes; n = nearbyint(t).
static inline __attribute__((always_inline)) void reduce8(bool sigmoid, __m512d k, __m512d M, __m256 x, __m256 *r, __m256 *n) {
  __m512d xd = _mm512_cvtps_pd(x);
  __m512d u = sigmoid ? xd : _mm512_mul_pd(xd, _mm512_fmadd_pd(k, _mm512_mul_pd(xd, xd), _mm512_set1_pd(1.0)));
  __m512d t = _mm512_mul_pd(_mm512_abs_pd(u), M);
  __m512d nd = _mm512_roundscale_pd(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *r = _mm512_cvtpd_ps(_mm512_sub_pd(t, nd));
  *n = _mm512_cvtpd_ps(nd);
}

static __m512 join(__m256 lo, __m256 hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

typedef struct {
  __m512d k, M;
  __m512 lo, hi;
} consts16;

static inline __attribute__((always_inline)) __m512 one16(bool sigmoid, const consts16 *K, __m512 x, __m256 x0, __m256 x1) {
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __mmask16 below = _mm512_cmp_ps_mask(x, K->lo, _CMP_LT_OQ);
  __mmask16 above = _mm512_cmp_ps_mask(x, K->hi, _CMP_GT_OQ);
  __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  __m512d k = K->k, M = K->M;
  __m256 r0, r1, n0, n1;
  reduce8(sigmoid, k, M, x0, &r0, &n0);
  reduce8(sigmoid, k, M, x1, &r1, &n1);
  __m512 r = join(r0, r1), n = join(n0, n1);
  __m512 rho = _mm512_mask_xor_ps(r, neg, r, _mm512_set1_ps(-0.0f));
  const float *C = gelu_acc32_exp2_poly;
  __m512 P = _mm512_fmadd_ps(_mm512_set1_ps(C[6]), rho, _mm512_set1_ps(C[5]));
  P = _mm512_fmadd_ps(P, rho, _mm512_set1_ps(C[4]));
  P = _mm512_fmadd_ps(P, rho, _mm512_set1_ps(C[3]));
  P = _mm512_fmadd_ps(P, rho, _mm512_set1_ps(C[2]));
  P = _mm512_fmadd_ps(P, rho, _mm512_set1_ps(C[1]));
  P = _mm512_fmadd_ps(P, rho, _mm512_set1_ps(C[0]));
  __m512 one = _mm512_set1_ps(1.0f);
  __m512 c = _mm512_scalef_ps(one, _mm512_max_ps(n, _mm512_set1_ps(-100.0f)));
  __m512 Ah = _mm512_add_ps(one, c);
  __m512 Al = _mm512_sub_ps(c, _mm512_sub_ps(Ah, one));
  __m512 mrho = _mm512_mask_mul_ps(rho, (__mmask16)~neg, c, rho); // m*rho: m = c (x >= 0), 1 (x < 0)
  __m512 B = _mm512_fmadd_ps(mrho, P, Al);
  __m512 Dh = _mm512_add_ps(Ah, B);
  __m512 Dl = _mm512_sub_ps(B, _mm512_sub_ps(Dh, Ah));
  __m512 q0 = _mm512_div_ps(x, Dh);
  __m512 R = _mm512_fnmadd_ps(q0, Dh, x);
  __m512 g = _mm512_castsi512_ps(_mm512_sub_epi32(_mm512_set1_epi32(0x7ef311c3), _mm512_castps_si512(Dh)));
  g = _mm512_mul_ps(g, _mm512_fnmadd_ps(Dh, g, _mm512_set1_ps(2.0f)));
  __m512 q = _mm512_fmadd_ps(_mm512_fnmadd_ps(q0, Dl, R), g, q0);
  __m512 y = _mm512_mask_scalef_ps(q, neg, q, _mm512_max_ps(n, _mm512_set1_ps(-200.0f)));
  __mmask16 zero = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ);
  above |= zero;
  y = _mm512_mask_blend_ps(below, y, _mm512_set1_ps(-0.0f));
  y = _mm512_mask_blend_ps(above | nan, y, x);
  return y;
}

// One loop per family, so the family test is not in the loop.
static inline __attribute__((always_inline)) void run16(bool sigmoid, const consts16 *K, const float *x, float *y,
                                                        size_t n) {
  size_t i = 0;
  // The f64 half needs each 8-lane half as a ymm: loading it again is cheaper than extracting it.
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, one16(sigmoid, K, _mm512_loadu_ps(x + i), _mm256_loadu_ps(x + i), _mm256_loadu_ps(x + i + 8)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, one16(sigmoid, K, v, _mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
  }
}

void gelu_acc32_fwd_avx512(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  consts16 K = {_mm512_set1_pd(p->k), _mm512_set1_pd(gelu_acc32_t_scale(p)), _mm512_set1_ps((float)p->lo),
                _mm512_set1_ps((float)p->hi)};
  if (p->fam == GELU_FAM_SIGMOID) run16(true, &K, x, y, n);
  else run16(false, &K, x, y, n);
}
