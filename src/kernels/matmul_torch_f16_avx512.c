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

// The transposed-B order of matmul_torch_f16.c with AVX-512: ATen's eight 8-lane registers of a
// 64-element block sit pairwise in four 16-lane registers (register q holds r = 2q and 2q + 1),
// so the same sums come out. Computes C[i, j] = alpha * dot(A row i, B row j) (+ bias[j]) for
// rows i0..i1 and columns j0..j1, two rows of A against two rows of B at a time.
float gm_dot_f32arith_tail(const float *x, const float *y, int K, float main_sum);

static float fold_main(__m512 q0, __m512 q1, __m512 q2, __m512 q3) {
  __m512 a = _mm512_add_ps(_mm512_add_ps(q0, q2), _mm512_add_ps(q1, q3)); // (r0+r4)+(r2+r6) | (r1+r5)+(r3+r7)
  __m256 r = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));  // r0 + r1
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(r), _mm256_extractf128_ps(r, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

void gm_matmul_trans_block_avx512(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha,
                                  float *C, int ldc, int i0, int i1, int j0, int j1, int K);
void gm_matmul_trans_block_avx512(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha,
                                  float *C, int ldc, int i0, int i1, int j0, int j1, int K) {
  int main_end = K & ~63;
  for (int i = i0; i < i1; i += 2) {
    int ni = i + 1 < i1 ? 2 : 1;
    for (int j = j0; j < j1; j += 2) {
      int nj = j + 1 < j1 ? 2 : 1;
      __m512 acc[2][2][4];
      for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
          for (int q = 0; q < 4; q++) acc[a][b][q] = _mm512_setzero_ps();
      const float *x0 = A + (size_t)i * lda, *x1 = A + (size_t)(i + ni - 1) * lda;
      const float *y0 = B + (size_t)j * ldb, *y1 = B + (size_t)(j + nj - 1) * ldb;
      for (int l = 0; l < main_end; l += 64)
        for (int q = 0; q < 4; q++) {
          __m512 xa = _mm512_loadu_ps(x0 + l + 16 * q), xb = _mm512_loadu_ps(x1 + l + 16 * q);
          __m512 ya = _mm512_loadu_ps(y0 + l + 16 * q), yb = _mm512_loadu_ps(y1 + l + 16 * q);
          acc[0][0][q] = _mm512_fmadd_ps(xa, ya, acc[0][0][q]);
          acc[0][1][q] = _mm512_fmadd_ps(xa, yb, acc[0][1][q]);
          acc[1][0][q] = _mm512_fmadd_ps(xb, ya, acc[1][0][q]);
          acc[1][1][q] = _mm512_fmadd_ps(xb, yb, acc[1][1][q]);
        }
      for (int a = 0; a < ni; a++)
        for (int b = 0; b < nj; b++) {
          const float *x = a ? x1 : x0, *y = b ? y1 : y0;
          float s = fold_main(acc[a][b][0], acc[a][b][1], acc[a][b][2], acc[a][b][3]);
          float v = alpha * gm_dot_f32arith_tail(x, y, K, s);
          C[(size_t)(i + a) * ldc + j + b] = bias ? bias[j + b] + v : v;
        }
    }
  }
}
