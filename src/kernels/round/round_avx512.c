// AVX-512 bodies of round.c's buffer conversions: the bits of the scalar loops there (gm_f32_to_bf16,
// gm_f32_to_f16 and back), 16 lanes at a time. bf16: round to nearest even on the bit pattern in
// integer lanes, a NaN made quiet with its sign; f16: vcvtps2ph with imm 0 (round to nearest even,
// subnormals kept). Tails run masked, so no scalar loop follows.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/round/round_isa.h"

static inline __mmask16 tail_mask(size_t left) { return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u); }

// The 16 f32 bit patterns rounded to bf16, still in the high halves of 32-bit lanes.
static inline __m512i bf16_hi(__m512i u) {
  const __m512i half = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), hi = _mm512_set1_epi32((int)0xffff0000u);
  __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, half), _mm512_and_si512(_mm512_srli_epi32(u, 16), one));
  r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
  return _mm512_and_si512(r, hi);
}

void gm_round_bf16_copy_avx512(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_castsi512_ps(bf16_hi(u)));
  }
}

void gm_f32_to_bf16_buf_avx512(const float *x, uint16_t *y, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + i));
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_hi(u), 16)));
  }
}

void gm_round_f16_copy_avx512(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(n - i);
    __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(h));
  }
}
