// AVX512-BF16 body of gm_matmul_bf16 (order and contract in matmul_bf16.c): VDPBF16PS does one
// pair step per lane, four rows by 32 columns at a time.
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

void gm_bf16_strip_avx512bf16(const uint32_t *Ap, int P, const uint32_t *Bs, int M, int ncols, float alpha,
                              const float *bias, float *C, int ldc);

void gm_bf16_strip_avx512bf16(const uint32_t *Ap, int P, const uint32_t *Bs, int M, int ncols, float alpha,
                              const float *bias, float *C, int ldc) {
  int n0 = ncols < 16 ? ncols : 16, n1 = ncols - n0;
  __mmask16 m0 = (__mmask16)((1u << n0) - 1u), m1 = (__mmask16)((1u << n1) - 1u);
  __m512 va = _mm512_set1_ps(alpha);
  __m512 vb0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  __m512 vb1 = bias && n1 ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (int i = 0; i < M; i += 4) {
    int R = M - i < 4 ? M - i : 4;
    const uint32_t *a[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) a[r] = Ap + (size_t)(i + (r < R ? r : 0)) * P;
    __m512 acc[4][2];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int p = 0; p < P; p++) {
      __m512bh b0 = (__m512bh)_mm512_load_si512((const void *)(Bs + (size_t)p * 32));
      __m512bh b1 = (__m512bh)_mm512_load_si512((const void *)(Bs + (size_t)p * 32 + 16));
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
