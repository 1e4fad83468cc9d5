// MKL VML's f32 sqrt (vmsSqrt, VML_HA) as its Intel AVX-512 code computes it: the sqrt torch 2.15
// takes for an f32 Tensor.sqrt() on the intel-* targets.
//
// Numerics contract (found by trying candidates against torch's sqrt on this Sapphire Rapids CPU:
// 300,000 normal, 100,003 subnormal and the special inputs all bit-identical; tests/test_optim.c
// compares it with MKL's own vmsSqrt when torch's library is found):
//   normal x > 0: y = vrsqrt14ps(x) (Intel's 14-bit reciprocal square root estimate),
//                 s = x * y, e = fma(-s, s, x), result = fma(e, 0.5f * y, s)
//                 (one Newton correction: not correctly rounded; 1 ulp below IEEE in ~0.7%)
//   0 < x < 2^-64 (subnormals, and normals whose residual e would lose bits): the same on x * 2^64,
//   times 2^-32 (both exact)
//   +-0 and +inf: x; NaN: x quieted; x < 0 (with -inf and negative subnormals): +qNaN 0x7fc00000.
// vrsqrt14ps is defined by Intel's reference table, so the bits need AVX-512F, whatever the
// GPTMEG_SIMD cap (the cap is a speed choice; this is a numerics one).
#include "train/optim_isa.h"

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

static inline __m512 newton(__m512 x) {
  __m512 y = _mm512_rsqrt14_ps(x);
  __m512 s = _mm512_mul_ps(x, y);
  __m512 e = _mm512_fnmadd_ps(s, s, x);
  return _mm512_fmadd_ps(e, _mm512_mul_ps(_mm512_set1_ps(0.5f), y), s);
}

static inline float special(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  if ((b & 0x7fffffffu) == 0) return x;                        // +-0
  if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu)) {   // NaN: quieted
    b |= 0x400000u;
    memcpy(&x, &b, 4);
    return x;
  }
  if (b >> 31) {                                               // x < 0: VML's +qNaN
    b = 0x7fc00000u;
    memcpy(&x, &b, 4);
    return x;
  }
  return x;                                                    // +inf
}

void gm_train_vml_sqrt_avx512(const float *in, float *out, size_t n) {
  const __m512 two64 = _mm512_set1_ps(0x1p64f), two_m32 = _mm512_set1_ps(0x1p-32f);
  const __m512i expmask = _mm512_set1_epi32(0x7f800000), absmask = _mm512_set1_epi32(0x7fffffff);
  for (size_t i = 0; i < n; i += 16) {
    size_t len = n - i < 16 ? n - i : 16;
    __mmask16 m = (__mmask16)(len == 16 ? 0xffffu : (1u << len) - 1u);
    __m512 x = _mm512_maskz_loadu_ps(m, in + i);
    __m512i xb = _mm512_castps_si512(x);
    __m512i ex = _mm512_and_si512(xb, expmask);
    // lanes: normal positive finite, subnormal positive, and the rest (zero, inf, NaN, negative)
    __mmask16 neg = _mm512_cmplt_epi32_mask(xb, _mm512_setzero_si512());
    __mmask16 is_zero_exp = _mm512_cmpeq_epi32_mask(ex, _mm512_setzero_si512());
    __mmask16 is_max_exp = _mm512_cmpeq_epi32_mask(ex, expmask);
    __mmask16 nonzero = _mm512_cmpneq_epi32_mask(_mm512_and_si512(xb, absmask), _mm512_setzero_si512());
    __mmask16 normal = (__mmask16)(~neg & ~is_zero_exp & ~is_max_exp);
    // below 2^-64 (subnormals, and small normals whose residual e would lose bits): scaled
    __mmask16 small = _mm512_cmplt_epi32_mask(xb, _mm512_set1_epi32(0x1f800000)); // x < 2^-64, x >= +0
    __mmask16 sub = (__mmask16)(~neg & small & nonzero);
    normal = (__mmask16)(normal & ~sub);
    __m512 r = newton(x);
    if (sub) r = _mm512_mask_blend_ps(sub, r, _mm512_mul_ps(newton(_mm512_mul_ps(x, two64)), two_m32));
    uint32_t rest = (uint32_t)(uint16_t)~(normal | sub) & (uint32_t)m;
    if (!rest) { // every lane normal or scaled: the vector as it is
      _mm512_mask_storeu_ps(out + i, m, r);
      continue;
    }
    float tmp[16];
    _mm512_storeu_ps(tmp, r);
    for (size_t j = 0; j < len; j++)
      out[i + j] = (rest >> j) & 1u ? special(in[i + j]) : tmp[j];
  }
}
