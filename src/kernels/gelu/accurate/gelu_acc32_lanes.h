// Steps shared by the accurate f32-lane kernels (forward and backward, gelu_accurate_f32*_avx2.c
// and *_avx512.c): the exponent's reduction T = nT + r, the polynomial of 2^r and TwoSum, as static inline
// functions for each ISA, the operations of the scalar references in the same order. Include only
// from files built for that ISA.
#ifndef GPTMEG_KERNELS_GELU_ACC32_LANES_H
#define GPTMEG_KERNELS_GELU_ACC32_LANES_H

#include "kernels/gelu/gelu_math.h"

#include <immintrin.h>

#ifdef __AVX2__
typedef struct {
  __m256 Mh, Ml, Mkh, Mkl;
} gelu_acc32_k8;

// Tanh forms: T = a*(M + Mk*a^2) (quick_gelu: a*M) in f32 pairs for signed a: n = nearbyint(a*wh),
// r = T - n rounded (gelu_accurate_f32.c).
static inline __attribute__((always_inline)) void gelu_acc32_reduce8(bool sigmoid, const gelu_acc32_k8 *K, __m256 a,
                                                                     __m256 *r, __m256 *n) {
  if (sigmoid) {
    *n = _mm256_round_ps(_mm256_mul_ps(a, K->Mh), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    *r = _mm256_fmadd_ps(a, K->Ml, _mm256_fmsub_ps(a, K->Mh, *n));
    return;
  }
  __m256 a2h = _mm256_mul_ps(a, a), a2l = _mm256_fmsub_ps(a, a, a2h);
  __m256 u = _mm256_mul_ps(K->Mkh, a2h), ul = _mm256_fmsub_ps(K->Mkh, a2h, u);
  __m256 wh = _mm256_add_ps(K->Mh, u);
  __m256 big = _mm256_min_ps(K->Mh, u), small = _mm256_max_ps(K->Mh, u);
  __m256 e = _mm256_sub_ps(small, _mm256_sub_ps(wh, big));
  __m256 wl = _mm256_add_ps(_mm256_add_ps(_mm256_fmadd_ps(K->Mkh, a2l, _mm256_fmadd_ps(K->Mkl, a2h, K->Ml)), ul), e);
  *n = _mm256_round_ps(_mm256_mul_ps(a, wh), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *r = _mm256_fmadd_ps(a, wl, _mm256_fmsub_ps(a, wh, *n));
}

// Erf family: T = -aT^2/2*log2(e) = aT^2*(KH + KL), aT^2 and KH*a2h as exact pairs
// (gelu_accurate_f32_erf.c): nT = nearbyint(p), r = T - nT rounded once.
static inline __attribute__((always_inline)) void gelu_acc32_reduce_erf8(__m256 aT, __m256 *r, __m256 *nT) {
  const __m256 KH = _mm256_set1_ps(GELU_ACC32_ERF_KH);
  __m256 a2h = _mm256_mul_ps(aT, aT), a2l = _mm256_fmsub_ps(aT, aT, a2h);
  __m256 p = _mm256_mul_ps(KH, a2h), pl = _mm256_fmsub_ps(KH, a2h, p);
  *nT = _mm256_round_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *r = _mm256_add_ps(_mm256_sub_ps(p, *nT),
                     _mm256_add_ps(pl, _mm256_fmadd_ps(KH, a2l, _mm256_mul_ps(_mm256_set1_ps(GELU_ACC32_ERF_KL), a2h))));
}

// s + e = a + b exactly, s = fl(a + b): gelu_acc32_two_sum, 8 lanes.
static inline __attribute__((always_inline)) void gelu_acc32_two_sum8(__m256 a, __m256 b, __m256 *s, __m256 *e) {
  *s = _mm256_add_ps(a, b);
  __m256 ap = _mm256_sub_ps(*s, b), bp = _mm256_sub_ps(*s, ap);
  *e = _mm256_add_ps(_mm256_sub_ps(a, ap), _mm256_sub_ps(b, bp));
}

// P = (2^r - 1)/r by gm_gelu_acc32_exp2_fit5, Horner with FMAs.
static inline __attribute__((always_inline)) __m256 gelu_acc32_exp2_poly8(__m256 r) {
  const float *C = gm_gelu_acc32_exp2_fit5;
  __m256 P = _mm256_fmadd_ps(_mm256_set1_ps(C[5]), r, _mm256_set1_ps(C[4]));
  P = _mm256_fmadd_ps(P, r, _mm256_set1_ps(C[3]));
  P = _mm256_fmadd_ps(P, r, _mm256_set1_ps(C[2]));
  P = _mm256_fmadd_ps(P, r, _mm256_set1_ps(C[1]));
  return _mm256_fmadd_ps(P, r, _mm256_set1_ps(C[0]));
}
#endif

#ifdef __AVX512F__
typedef struct {
  __m512 Mh, Ml, Mkh, Mkl;
} gelu_acc32_k16;

// As gelu_acc32_reduce8, 16 lanes.
static inline __attribute__((always_inline)) void gelu_acc32_reduce16(bool sigmoid, const gelu_acc32_k16 *K, __m512 a,
                                                                      __m512 *r, __m512 *n) {
  if (sigmoid) {
    *n = _mm512_roundscale_ps(_mm512_mul_ps(a, K->Mh), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    *r = _mm512_fmadd_ps(a, K->Ml, _mm512_fmsub_ps(a, K->Mh, *n));
    return;
  }
  __m512 a2h = _mm512_mul_ps(a, a), a2l = _mm512_fmsub_ps(a, a, a2h);
  __m512 u = _mm512_mul_ps(K->Mkh, a2h), ul = _mm512_fmsub_ps(K->Mkh, a2h, u);
  __m512 wh = _mm512_add_ps(K->Mh, u);
  __m512 big = _mm512_min_ps(K->Mh, u), small = _mm512_max_ps(K->Mh, u);
  __m512 e = _mm512_sub_ps(small, _mm512_sub_ps(wh, big));
  __m512 wl = _mm512_add_ps(_mm512_add_ps(_mm512_fmadd_ps(K->Mkh, a2l, _mm512_fmadd_ps(K->Mkl, a2h, K->Ml)), ul), e);
  *n = _mm512_roundscale_ps(_mm512_mul_ps(a, wh), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *r = _mm512_fmadd_ps(a, wl, _mm512_fmsub_ps(a, wh, *n));
}

// As gelu_acc32_reduce_erf8, 16 lanes.
static inline __attribute__((always_inline)) void gelu_acc32_reduce_erf16(__m512 aT, __m512 *r, __m512 *nT) {
  const __m512 KH = _mm512_set1_ps(GELU_ACC32_ERF_KH);
  __m512 a2h = _mm512_mul_ps(aT, aT), a2l = _mm512_fmsub_ps(aT, aT, a2h);
  __m512 p = _mm512_mul_ps(KH, a2h), pl = _mm512_fmsub_ps(KH, a2h, p);
  *nT = _mm512_roundscale_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  *r = _mm512_add_ps(_mm512_sub_ps(p, *nT),
                     _mm512_add_ps(pl, _mm512_fmadd_ps(KH, a2l, _mm512_mul_ps(_mm512_set1_ps(GELU_ACC32_ERF_KL), a2h))));
}

// s + e = a + b exactly, s = fl(a + b): gelu_acc32_two_sum, 16 lanes.
static inline __attribute__((always_inline)) void gelu_acc32_two_sum16(__m512 a, __m512 b, __m512 *s, __m512 *e) {
  *s = _mm512_add_ps(a, b);
  __m512 ap = _mm512_sub_ps(*s, b), bp = _mm512_sub_ps(*s, ap);
  *e = _mm512_add_ps(_mm512_sub_ps(a, ap), _mm512_sub_ps(b, bp));
}

// As gelu_acc32_exp2_poly8, 16 lanes.
static inline __attribute__((always_inline)) __m512 gelu_acc32_exp2_poly16(__m512 r) {
  const float *C = gm_gelu_acc32_exp2_fit5;
  __m512 P = _mm512_fmadd_ps(_mm512_set1_ps(C[5]), r, _mm512_set1_ps(C[4]));
  P = _mm512_fmadd_ps(P, r, _mm512_set1_ps(C[3]));
  P = _mm512_fmadd_ps(P, r, _mm512_set1_ps(C[2]));
  P = _mm512_fmadd_ps(P, r, _mm512_set1_ps(C[1]));
  return _mm512_fmadd_ps(P, r, _mm512_set1_ps(C[0]));
}
#endif

#endif
