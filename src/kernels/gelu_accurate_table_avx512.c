// AVX-512 body of the f16/bf16 table lookup (gelu_accurate_table.c): 16 indices widened to 32 bits,
// one gather of 32-bit words at 2-byte steps (the table carries a spare entry so the last word is
// readable), the low halves kept. The same results as the scalar loop.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

void gelu_acc_fwd16_lookup_avx512(const uint16_t *table, const uint16_t *x, uint16_t *y, size_t n);
void gelu_acc_fwd16_lookup_avx512(const uint16_t *table, const uint16_t *x, uint16_t *y, size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) { // two independent gathers in flight
    __m512i i0 = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(x + i)));
    __m512i i1 = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(x + i + 16)));
    __m512i g0 = _mm512_i32gather_epi32(i0, (const void *)table, 2);
    __m512i g1 = _mm512_i32gather_epi32(i1, (const void *)table, 2);
    _mm256_storeu_si256((__m256i *)(y + i), _mm512_cvtepi32_epi16(g0));
    _mm256_storeu_si256((__m256i *)(y + i + 16), _mm512_cvtepi32_epi16(g1));
  }
  for (; i < n; i++) y[i] = table[x[i]];
}
