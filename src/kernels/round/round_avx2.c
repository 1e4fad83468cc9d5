// F16C and AVX2 bodies of round.c's buffer conversions (vcvtps2ph imm 0 = round to nearest even).
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/round/round_isa.h"

void gm_f32_to_f16_buf_f16c(const float *x, uint16_t *y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

void gm_f16_to_f32_buf_f16c(const uint16_t *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
  for (; i < n; i++) y[i] = _cvtsh_ss(x[i]);
}

void gm_round_f16_buf_f16c(float *x, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
  for (; i < n; i++) x[i] = _cvtsh_ss(_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT));
}

// bf16 rounding of f32 values in place (RNE on the bit pattern; NaN stays a quiet NaN with its
// sign, as gm_f32_to_bf16), 8 lanes of integer arithmetic.
void gm_round_bf16_buf_avx2(float *x, size_t n) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), hi = _mm256_set1_epi32((int)0xffff0000u);
  const __m256i quiet = _mm256_set1_epi32(0x00400000);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i u = _mm256_loadu_si256((const __m256i *)(x + i));
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    __m256i r = _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(u, half), odd), hi);
    __m256i q = _mm256_and_si256(_mm256_or_si256(u, quiet), hi);
    _mm256_storeu_si256((__m256i *)(x + i), _mm256_blendv_epi8(r, q, nan));
  }
  for (; i < n; i++) {
    uint32_t u;
    __builtin_memcpy(&u, x + i, 4);
    u = (u & 0x7fffffffu) > 0x7f800000u ? (u | 0x00400000u) & 0xffff0000u : (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    __builtin_memcpy(x + i, &u, 4);
  }
}

// bf16 -> f32 widening (exact: the bits shifted into the top half), 8 lanes at a time.
void gm_bf16_to_f32_buf_avx2(const uint16_t *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + i)));
    _mm256_storeu_si256((__m256i *)(y + i), _mm256_slli_epi32(h, 16));
  }
  for (; i < n; i++) {
    uint32_t u = (uint32_t)x[i] << 16;
    __builtin_memcpy(y + i, &u, 4);
  }
}
