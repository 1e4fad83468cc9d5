// Accurate mode, f32 forward of the tanh and sigmoid families, 16 f32 lanes (AVX-512): the
// operations of gm_gelu_acc32_fwd_scalar (gelu_accurate_f32.c) in the same order, so the same bits.
// Everything runs in f32 lanes.
// Scaling by 2^n uses VSCALEFPS, which rounds once, as the scalar's exact-then-rounding pair does.
//
// One vector's chain from x to y is about 70 cycles long (reduction, polynomial, division), so the
// loop keeps three vectors in flight at different stages: while vector v is divided and stored,
// v+1 gets its denominator and v+2 its reduction. Each vector still goes through the same
// operations, so the bits are those of one vector at a time; on Zen 4 this is 8-13% faster than
// the plain loop, whose out-of-order window filled with operations waiting on one long chain.
#include "kernels/gelu/accurate/gelu_acc32_lanes.h"

#include <immintrin.h>

// A vector between stages: after reduce16, rho and n of the exponent; after denominator16, D in dh.
typedef struct {
  __m512 xl, rho, n, dh;
  __mmask16 neg;
} acc32_tanh_lanes;

// Stage 1: clamp x and reduce its exponent, T = n + rho.
static inline __attribute__((always_inline)) acc32_tanh_lanes reduce16(bool sigmoid, const gelu_acc32_k16 *K,
                                                                        __m512 x) {
  acc32_tanh_lanes s;
  s.xl = _mm512_max_ps(_mm512_set1_ps(-0x1p7f), x); // NaN: the second operand, x
  __m512 xc = _mm512_min_ps(_mm512_set1_ps(0x1p7f), s.xl);
  s.neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  __m512 nT;
  gelu_acc32_reduce16(sigmoid, K, xc, &s.rho, &nT);
  s.n = _mm512_or_ps(nT, _mm512_set1_ps(-0.0f)); // -|nT|
  s.dh = _mm512_setzero_ps();
  return s;
}

// Stage 2: D = 1 + c + m*rho*P rounded once (Dh), c = 2^max(n, -100), m = c (x >= 0) or 1 (x < 0).
static inline __attribute__((always_inline)) void denominator16(acc32_tanh_lanes *s) {
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 P = gelu_acc32_exp2_poly16(s->rho);
  __m512 c = _mm512_scalef_ps(one, _mm512_max_ps(s->n, _mm512_set1_ps(-100.0f)));
  __m512 Ah = _mm512_add_ps(one, c);
  __m512 Al = _mm512_sub_ps(c, _mm512_sub_ps(Ah, one));
  __m512 mrho = _mm512_mask_mul_ps(s->rho, (__mmask16)~s->neg, c, s->rho);
  __m512 B = _mm512_fmadd_ps(mrho, P, Al);
  s->dh = _mm512_add_ps(Ah, B);
}

// Stage 3: y = xl / Dh, times 2^n (rounded once) where x < 0.
static inline __attribute__((always_inline)) __m512 quotient16(const acc32_tanh_lanes *s) {
  __m512 q = _mm512_div_ps(s->xl, s->dh);
  return _mm512_mask_scalef_ps(q, s->neg, q, s->n);
}

static inline __attribute__((always_inline)) __m512 one16(bool sigmoid, const gelu_acc32_k16 *K, __m512 x) {
  acc32_tanh_lanes s = reduce16(sigmoid, K, x);
  denominator16(&s);
  return quotient16(&s);
}

// One loop per family, so the family test is not in the loop. Vector v is in a, v+1 in b, v+2 in
// c; the unrolled body rotates the names instead of copying the states.
static inline __attribute__((always_inline)) void run16(bool sigmoid, const gelu_acc32_k16 *K, const float *x, float *y,
                                                        size_t n) {
  size_t nv = n / 16, v = 0;
  if (nv >= 2) {
    acc32_tanh_lanes a = reduce16(sigmoid, K, _mm512_loadu_ps(x)), b = reduce16(sigmoid, K, _mm512_loadu_ps(x + 16)), c;
    denominator16(&a);
    for (; v + 5 <= nv; v += 3) {
      c = reduce16(sigmoid, K, _mm512_loadu_ps(x + 16 * (v + 2)));
      denominator16(&b);
      _mm512_storeu_ps(y + 16 * v, quotient16(&a));
      a = reduce16(sigmoid, K, _mm512_loadu_ps(x + 16 * (v + 3)));
      denominator16(&c);
      _mm512_storeu_ps(y + 16 * (v + 1), quotient16(&b));
      b = reduce16(sigmoid, K, _mm512_loadu_ps(x + 16 * (v + 4)));
      denominator16(&a);
      _mm512_storeu_ps(y + 16 * (v + 2), quotient16(&c));
    }
    for (; v + 3 <= nv; v++) { // now a holds v (denominator done), b holds v+1 (reduced)
      c = reduce16(sigmoid, K, _mm512_loadu_ps(x + 16 * (v + 2)));
      denominator16(&b);
      _mm512_storeu_ps(y + 16 * v, quotient16(&a));
      a = b;
      b = c;
    }
    denominator16(&b);
    _mm512_storeu_ps(y + 16 * v, quotient16(&a));
    _mm512_storeu_ps(y + 16 * (v + 1), quotient16(&b));
    v += 2;
  } else if (nv == 1) {
    _mm512_storeu_ps(y, one16(sigmoid, K, _mm512_loadu_ps(x)));
    v = 1;
  }
  size_t i = 16 * v;
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, one16(sigmoid, K, _mm512_maskz_loadu_ps(m, x + i)));
  }
}

void gm_gelu_acc32_fwd_avx512(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  gelu_acc32_consts C = gm_gelu_acc32_reduction(p);
  gelu_acc32_k16 K = {_mm512_set1_ps(C.Mh), _mm512_set1_ps(C.Ml), _mm512_set1_ps(C.Mkh), _mm512_set1_ps(C.Mkl)};
  if (p->fam == GELU_FAM_SIGMOID) run16(true, &K, x, y, n);
  else run16(false, &K, x, y, n);
}
