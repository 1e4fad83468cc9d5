// Accurate mode, f32 forward of the tanh and sigmoid families, 8 f32 lanes (AVX2+FMA): the
// operations of gm_gelu_acc32_fwd_scalar (gelu_accurate_f32.c) in the same order, so the same bits.
// Everything runs in f32 lanes; powers of two are built from the exponent bits, and 2^n scales in
// two exact-then-rounding steps. The loop keeps three vectors in flight at different stages, as the
// AVX-512 kernel's does (there +8-10%; here, AVX2 code on Zen 4 at 2^20 on one thread,
// gelu_pytorch_tanh 1,166 -> 1,456 Melem/s, quick_gelu 1,831 -> 2,100).
#include "kernels/gelu/accurate/gelu_acc32_lanes.h"

#include <immintrin.h>

// 2^n for n in [-126, 127], exactly.
static __m256 pow2i8(__m256i n) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
}

// A vector between stages (as the AVX-512 kernel's): after reduce8, rho and n = -|nT| as an
// integer; after denominator8, D in dh, and 2^n split for the quotient as c = 2^n1 and n2, with
// n1 = max(n, -100) and n2 = max(n - n1, -100).
typedef struct {
  __m256 xl, neg, rho, dh, c;
  __m256i n, n2;
} acc32_tanh_lanes8;

// Stage 1: clamp x and reduce its exponent.
static inline __attribute__((always_inline)) acc32_tanh_lanes8 reduce8(bool sigmoid, const gelu_acc32_k8 *K, __m256 x) {
  acc32_tanh_lanes8 s;
  s.xl = _mm256_max_ps(_mm256_set1_ps(-0x1p7f), x); // NaN: the second operand, x
  __m256 xc = _mm256_min_ps(_mm256_set1_ps(0x1p7f), s.xl);
  s.neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  __m256 nT;
  gelu_acc32_reduce8(sigmoid, K, xc, &s.rho, &nT);
  // -|nT| as an integer; NaN lanes and n below -2^31 give INT_MIN: below -100 like the scalar's.
  s.n = _mm256_cvtps_epi32(_mm256_or_ps(nT, _mm256_set1_ps(-0.0f)));
  s.dh = s.c = _mm256_setzero_ps();
  s.n2 = _mm256_setzero_si256();
  return s;
}

// Stage 2: D = 1 + c + m*rho*P rounded once, m = c (x >= 0) or 1 (x < 0).
static inline __attribute__((always_inline)) void denominator8(acc32_tanh_lanes8 *s) {
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 P = gelu_acc32_exp2_poly8(s->rho);
  __m256i n1c = _mm256_max_epi32(s->n, _mm256_set1_epi32(-100));
  s->c = pow2i8(n1c);
  s->n2 = _mm256_max_epi32(_mm256_sub_epi32(s->n, n1c), _mm256_set1_epi32(-100));
  __m256 m = _mm256_blendv_ps(s->c, one, s->neg);
  __m256 Ah = _mm256_add_ps(one, s->c);
  __m256 Al = _mm256_sub_ps(s->c, _mm256_sub_ps(Ah, one));
  __m256 B = _mm256_fmadd_ps(_mm256_mul_ps(m, s->rho), P, Al);
  s->dh = _mm256_add_ps(Ah, B);
}

// Stage 3: y = xl / Dh, times 2^n where x < 0 (two exact-then-rounding steps).
static inline __attribute__((always_inline)) __m256 quotient8(const acc32_tanh_lanes8 *s) {
  __m256 q = _mm256_div_ps(s->xl, s->dh);
  __m256 scaled = _mm256_mul_ps(_mm256_mul_ps(q, s->c), pow2i8(s->n2));
  return _mm256_blendv_ps(q, scaled, s->neg);
}

static inline __attribute__((always_inline)) __m256 one8(bool sigmoid, const gelu_acc32_k8 *K, __m256 x) {
  acc32_tanh_lanes8 s = reduce8(sigmoid, K, x);
  denominator8(&s);
  return quotient8(&s);
}

// Three vectors in flight, as in gelu_accurate_f32_avx512.c: vector v in a, v+1 in b, v+2 in c.
static inline __attribute__((always_inline)) size_t run8(bool sigmoid, const gelu_acc32_k8 *K, const float *x, float *y,
                                                         size_t n) {
  size_t nv = n / 8, v = 0;
  if (nv < 2) return 0;
  acc32_tanh_lanes8 a = reduce8(sigmoid, K, _mm256_loadu_ps(x)), b = reduce8(sigmoid, K, _mm256_loadu_ps(x + 8)), c;
  denominator8(&a);
  for (; v + 5 <= nv; v += 3) {
    c = reduce8(sigmoid, K, _mm256_loadu_ps(x + 8 * (v + 2)));
    denominator8(&b);
    _mm256_storeu_ps(y + 8 * v, quotient8(&a));
    a = reduce8(sigmoid, K, _mm256_loadu_ps(x + 8 * (v + 3)));
    denominator8(&c);
    _mm256_storeu_ps(y + 8 * (v + 1), quotient8(&b));
    b = reduce8(sigmoid, K, _mm256_loadu_ps(x + 8 * (v + 4)));
    denominator8(&a);
    _mm256_storeu_ps(y + 8 * (v + 2), quotient8(&c));
  }
  for (; v + 3 <= nv; v++) { // a holds v (denominator done), b holds v+1 (reduced)
    c = reduce8(sigmoid, K, _mm256_loadu_ps(x + 8 * (v + 2)));
    denominator8(&b);
    _mm256_storeu_ps(y + 8 * v, quotient8(&a));
    a = b;
    b = c;
  }
  denominator8(&b);
  _mm256_storeu_ps(y + 8 * v, quotient8(&a));
  _mm256_storeu_ps(y + 8 * (v + 1), quotient8(&b));
  return 8 * (v + 2);
}

void gm_gelu_acc32_fwd_avx2(const gelu_acc_params *p, const float *x, float *y, size_t n) {
  gelu_acc32_consts C = gm_gelu_acc32_reduction(p);
  gelu_acc32_k8 K = {_mm256_set1_ps(C.Mh), _mm256_set1_ps(C.Ml), _mm256_set1_ps(C.Mkh), _mm256_set1_ps(C.Mkl)};
  size_t i = C.sigmoid ? run8(true, &K, x, y, n) : run8(false, &K, x, y, n);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, one8(C.sigmoid, &K, _mm256_loadu_ps(x + i)));
  if (i < n) gm_gelu_acc32_fwd_scalar(p, x + i, y + i, n - i);
}
