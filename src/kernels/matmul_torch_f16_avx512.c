// AVX-512 body of gm_matmul_f16_torch, B not transposed (order and contract in matmul_torch_f16.c): 16 columns per vector,
// four rows at a time, four partial-sum vectors per row. FMA is exact-equivalent here because the
// products of f16/bf16 values are exact in f32.
#include <immintrin.h>
#include <stddef.h>

void gm_dot4_strip_avx512(const float *A, int lda, const float *Bs, int M, int K, int ncols, float alpha,
                          const float *bias, float *C, int ldc);

static inline __m512 finish(__m512 p0, __m512 p1, __m512 p2, __m512 p3, __m512 va, __m512 vb, int has_bias) {
  __m512 dot = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(p0, p1), p2), p3);
  __m512 v = _mm512_mul_ps(va, dot);
  return has_bias ? _mm512_add_ps(vb, v) : v;
}

void gm_dot4_strip_avx512(const float *A, int lda, const float *Bs, int M, int K, int ncols, float alpha,
                          const float *bias, float *C, int ldc) {
  __mmask16 mask = (__mmask16)((1u << ncols) - 1u);
  __m512 va = _mm512_set1_ps(alpha);
  __m512 vb = bias ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
  int K4 = K & ~3;
  int i = 0;
  for (; i + 4 <= M; i += 4) {
    const float *a0 = A + (size_t)i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
    __m512 p[4][4];
    for (int r = 0; r < 4; r++)
      for (int k = 0; k < 4; k++) p[r][k] = _mm512_setzero_ps();
    for (int l = 0; l < K4; l += 4) {
      for (int k = 0; k < 4; k++) {
        __m512 b = _mm512_load_ps(Bs + (size_t)(l + k) * 16);
        p[0][k] = _mm512_fmadd_ps(_mm512_set1_ps(a0[l + k]), b, p[0][k]);
        p[1][k] = _mm512_fmadd_ps(_mm512_set1_ps(a1[l + k]), b, p[1][k]);
        p[2][k] = _mm512_fmadd_ps(_mm512_set1_ps(a2[l + k]), b, p[2][k]);
        p[3][k] = _mm512_fmadd_ps(_mm512_set1_ps(a3[l + k]), b, p[3][k]);
      }
    }
    for (int l = K4; l < K; l++) {
      __m512 b = _mm512_load_ps(Bs + (size_t)l * 16);
      p[0][0] = _mm512_fmadd_ps(_mm512_set1_ps(a0[l]), b, p[0][0]);
      p[1][0] = _mm512_fmadd_ps(_mm512_set1_ps(a1[l]), b, p[1][0]);
      p[2][0] = _mm512_fmadd_ps(_mm512_set1_ps(a2[l]), b, p[2][0]);
      p[3][0] = _mm512_fmadd_ps(_mm512_set1_ps(a3[l]), b, p[3][0]);
    }
    for (int r = 0; r < 4; r++)
      _mm512_mask_storeu_ps(C + (size_t)(i + r) * ldc, mask, finish(p[r][0], p[r][1], p[r][2], p[r][3], va, vb, bias != NULL));
  }
  for (; i < M; i++) {
    const float *a0 = A + (size_t)i * lda;
    __m512 p0 = _mm512_setzero_ps(), p1 = p0, p2 = p0, p3 = p0;
    for (int l = 0; l < K4; l += 4) {
      p0 = _mm512_fmadd_ps(_mm512_set1_ps(a0[l]), _mm512_load_ps(Bs + (size_t)l * 16), p0);
      p1 = _mm512_fmadd_ps(_mm512_set1_ps(a0[l + 1]), _mm512_load_ps(Bs + (size_t)(l + 1) * 16), p1);
      p2 = _mm512_fmadd_ps(_mm512_set1_ps(a0[l + 2]), _mm512_load_ps(Bs + (size_t)(l + 2) * 16), p2);
      p3 = _mm512_fmadd_ps(_mm512_set1_ps(a0[l + 3]), _mm512_load_ps(Bs + (size_t)(l + 3) * 16), p3);
    }
    for (int l = K4; l < K; l++) p0 = _mm512_fmadd_ps(_mm512_set1_ps(a0[l]), _mm512_load_ps(Bs + (size_t)l * 16), p0);
    _mm512_mask_storeu_ps(C + (size_t)i * ldc, mask, finish(p0, p1, p2, p3, va, vb, bias != NULL));
  }
}
