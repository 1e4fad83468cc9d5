// A 16 x 16 transpose of 32-bit lanes in AVX-512 registers, shared by the f32 matmul's packing
// (matmul_torch_f32_avx512.c) and the bf16 pair packing (matmul_bf16_pack_avx512.c, through bitwise
// casts): moves bits, computes nothing. Include only from files compiled with -mavx512f.
#ifndef GPTMEG_KERNELS_MATMUL_TRANSPOSE16_AVX512_H
#define GPTMEG_KERNELS_MATMUL_TRANSPOSE16_AVX512_H

#include <immintrin.h>

// out[t] = lane q of in[q] at position t: a 16 x 16 transpose in registers. Pairs of rows
// interleave by 32 bits, then by 64 bits (u[4g + c] holds, in 128-bit lane L, rows 4g..4g+3 of
// column 4L + c), then the 128-bit lanes gather across the four groups of rows.
static inline __attribute__((always_inline)) void gm_transpose16_avx512(const __m512 in[16], __m512 out[16]) {
  __m512 t[16], u[16];
#pragma GCC unroll 8
  for (int p = 0; p < 8; p++) {
    t[2 * p] = _mm512_unpacklo_ps(in[2 * p], in[2 * p + 1]);
    t[2 * p + 1] = _mm512_unpackhi_ps(in[2 * p], in[2 * p + 1]);
  }
#pragma GCC unroll 4
  for (int g = 0; g < 4; g++) {
    __m512d t0 = _mm512_castps_pd(t[4 * g]), t1 = _mm512_castps_pd(t[4 * g + 1]);
    __m512d t2 = _mm512_castps_pd(t[4 * g + 2]), t3 = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; c++) {
    __m512 lo01 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44), lo23 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
    __m512 hi01 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xee), hi23 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xee);
    out[c] = _mm512_shuffle_f32x4(lo01, lo23, 0x88);
    out[4 + c] = _mm512_shuffle_f32x4(lo01, lo23, 0xdd);
    out[8 + c] = _mm512_shuffle_f32x4(hi01, hi23, 0x88);
    out[12 + c] = _mm512_shuffle_f32x4(hi01, hi23, 0xdd);
  }
}

#endif
