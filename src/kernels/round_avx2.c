// F16C bodies of the f16 buffer conversions in round.c (vcvtps2ph imm 0 = round to nearest even).
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

void gm_f32_to_f16_buf_f16c(const float *x, uint16_t *y, size_t n);
void gm_f16_to_f32_buf_f16c(const uint16_t *x, float *y, size_t n);
void gm_round_f16_buf_f16c(float *x, size_t n);

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
