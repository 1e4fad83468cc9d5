// Accurate mode, f32 forward of the tanh and sigmoid families, 16 f32 lanes (AVX-512): the
// operations of gelu_acc32_fwd_scalar (gelu_accurate_f32.c) in the same order, so the same bits.
// A, n and r are formed in two halves of 8 f64 lanes; everything after runs in f32 lanes.
// Scaling by 2^n uses VSCALEFPS, which rounds once, as the scalar's exact-then-rounding pair does.
#include "kernels/gelu_math.h"

#include <immintrin.h>

typedef struct {
  __m512d M, Mk;
} consts16;

// A = a*fma(Mk, a^2, M) (quick_gelu: a*M) for 8 lanes of a = |xc|; n = nearbyint(A), r = A - n.
static inline __attribute__((always_inline)) void reduce8(bool sigmoid, const consts16 *K, __m256 a, __m256 *r, __m256 *n) {
  __m512d ad = _mm512_cvtps_pd(a);
  __m512d A = sigmoid ? _mm512_mul_pd(ad, K->M) : _mm512_mul_pd(ad, _mm512_fmadd_pd(K->Mk, _mm512_mul_pd(ad, ad), K->M));
  __m512d nd = _mm512_roundscale_pd(A, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *r = _mm512_cvtpd_ps(_mm512_sub_pd(A, nd));
  *n = _mm512_cvtpd_ps(nd);
}

static __m512 join(__m256 lo, __m256 hi) { return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1); }

static inline __attribute__((always_inline)) __m512 one16(bool sigmoid, const consts16 *K, __m512 x) {
  const __m512 big = _mm512_set1_ps(0x1p16f), one = _mm512_set1_ps(1.0f);
  __m512 xl = _mm512_max_ps(_mm512_set1_ps(-0x1p16f), x); // NaN: the second operand, x
  __m512 xc = _mm512_min_ps(big, xl);
  __m512 a = _mm512_abs_ps(xc);
  __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  __m256 r0, r1, n0, n1;
  reduce8(sigmoid, K, _mm512_castps512_ps256(a), &r0, &n0);
  reduce8(sigmoid, K, _mm512_extractf32x8_ps(a, 1), &r1, &n1);
  __m512 r = join(r0, r1), n = join(n0, n1);
  __m512 rho = _mm512_mask_xor_ps(r, neg, r, _mm512_set1_ps(-0.0f));
  const float *C = gelu_acc32_exp2_fit5;
  __m512 P = _mm512_fmadd_ps(_mm512_set1_ps(C[5]), rho, _mm512_set1_ps(C[4]));
  P = _mm512_fmadd_ps(P, rho, _mm512_set1_ps(C[3]));
  P = _mm512_fmadd_ps(P, rho, _mm512_set1_ps(C[2]));
  P = _mm512_fmadd_ps(P, rho, _mm512_set1_ps(C[1]));
  P = _mm512_fmadd_ps(P, rho, _mm512_set1_ps(C[0]));
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
static inline __attribute__((always_inline)) void run16(bool sigmoid, const consts16 *K, const float *x, float *y,
                                                        size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, one16(sigmoid, K, _mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, one16(sigmoid, K, _mm512_maskz_loadu_ps(m, x + i)));
  }
}

void gelu_acc32_fwd_avx512(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  double M, Mk;
  gelu_acc32_reduction(p, &M, &Mk);
  consts16 K = {_mm512_set1_pd(M), _mm512_set1_pd(Mk)};
  if (p->fam == GELU_FAM_SIGMOID) run16(true, &K, x, y, n);
  else run16(false, &K, x, y, n);
}
