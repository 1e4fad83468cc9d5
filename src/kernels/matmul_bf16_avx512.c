// AVX512-BF16 body of gm_matmul_bf16 (order and contract in matmul_bf16.c): VDPBF16PS does one
// pair step per lane, eight rows by 32 columns at a time (16 accumulators, enough independent
// chains to cover the instruction's latency), then four, then one. Each output is one chain over
// p whatever the blocking, so the bits do not depend on it.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

void gm_bf16_strip_avx512bf16(const uint32_t *Ap, int P, const uint32_t *Bs, int ldbs, int M, int ncols, float alpha,
                              const float *bias, float *C, int ldc);

// Rows of pairs at Bs + p * ldbs, ncols (<= 32) of them valid.
void gm_bf16_strip_avx512bf16(const uint32_t *Ap, int P, const uint32_t *Bs, int ldbs, int M, int ncols, float alpha,
                              const float *bias, float *C, int ldc) {
  int n0 = ncols < 16 ? ncols : 16, n1 = ncols - n0;
  __mmask16 m0 = (__mmask16)((1u << n0) - 1u), m1 = (__mmask16)((1u << n1) - 1u);
  __m512 va = _mm512_set1_ps(alpha);
  __m512 vb0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  __m512 vb1 = bias && n1 ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  int i = 0;
  for (; i + 8 <= M; i += 8) {
    const uint32_t *a = Ap + (size_t)i * P;
    __m512 acc[8][2];
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int p = 0; p < P; p++) {
      const uint32_t *row = Bs + (size_t)p * ldbs;
      __m512bh b0 = (__m512bh)_mm512_maskz_loadu_epi32(m0, row);
      __m512bh b1 = (__m512bh)_mm512_maskz_loadu_epi32(m1, row + 16);
#pragma GCC unroll 8
      for (int r = 0; r < 8; r++) {
        __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[(size_t)r * P + p]);
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, b0);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, b1);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) {
      __m512 v0 = _mm512_mul_ps(va, acc[r][0]), v1 = _mm512_mul_ps(va, acc[r][1]);
      if (bias) { v0 = _mm512_add_ps(vb0, v0); v1 = _mm512_add_ps(vb1, v1); }
      _mm512_mask_storeu_ps(C + (size_t)(i + r) * ldc, m0, v0);
      if (m1) _mm512_mask_storeu_ps(C + (size_t)(i + r) * ldc + 16, m1, v1);
    }
  }
  for (; i < M; i += 4) {
    int R = M - i < 4 ? M - i : 4;
    if (R == 1) { // a single row (decode): one row of accumulators
      const uint32_t *a0 = Ap + (size_t)i * P;
      __m512 c0 = _mm512_setzero_ps(), c1 = _mm512_setzero_ps();
      for (int p = 0; p < P; p++) {
        const uint32_t *row = Bs + (size_t)p * ldbs;
        __m512bh x = (__m512bh)_mm512_set1_epi32((int)a0[p]);
        c0 = _mm512_dpbf16_ps(c0, x, (__m512bh)_mm512_maskz_loadu_epi32(m0, row));
        c1 = _mm512_dpbf16_ps(c1, x, (__m512bh)_mm512_maskz_loadu_epi32(m1, row + 16));
      }
      __m512 v0 = _mm512_mul_ps(va, c0), v1 = _mm512_mul_ps(va, c1);
      if (bias) { v0 = _mm512_add_ps(vb0, v0); v1 = _mm512_add_ps(vb1, v1); }
      _mm512_mask_storeu_ps(C + (size_t)i * ldc, m0, v0);
      if (m1) _mm512_mask_storeu_ps(C + (size_t)i * ldc + 16, m1, v1);
      continue;
    }
    const uint32_t *a[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) a[r] = Ap + (size_t)(i + (r < R ? r : 0)) * P;
    __m512 acc[4][2];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int p = 0; p < P; p++) {
      const uint32_t *row = Bs + (size_t)p * ldbs;
      __m512bh b0 = (__m512bh)_mm512_maskz_loadu_epi32(m0, row);
      __m512bh b1 = (__m512bh)_mm512_maskz_loadu_epi32(m1, row + 16);
#pragma GCC unroll 4
      for (int r = 0; r < 4; r++) {
        __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[r][p]);
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], x, b0);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], x, b1);
      }
    }
    for (int r = 0; r < R; r++) {
      __m512 v0 = _mm512_mul_ps(va, acc[r][0]), v1 = _mm512_mul_ps(va, acc[r][1]);
      if (bias) { v0 = _mm512_add_ps(vb0, v0); v1 = _mm512_add_ps(vb1, v1); }
      _mm512_mask_storeu_ps(C + (size_t)(i + r) * ldc, m0, v0);
      if (m1) _mm512_mask_storeu_ps(C + (size_t)(i + r) * ldc + 16, m1, v1);
    }
  }
}
