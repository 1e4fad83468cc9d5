// AVX-512 bodies of gm_matmul_f16_torch (order and contract in matmul_torch_f16.c). B as stored:
// 32 columns (two vectors) by three rows at a time, four partial-sum vectors per row and half. FMA is exact-equivalent here because the
// products of f16/bf16 values are exact in f32.
#include <immintrin.h>
#include <stddef.h>

void gm_dot4_strip_avx512(const float *A, int lda, const float *B, int ldb, int M, int K, int ncols, float alpha,
                          const float *bias, float *C, int ldc);

static inline __m512 finish(__m512 p0, __m512 p1, __m512 p2, __m512 p3, __m512 va, __m512 vb, int has_bias) {
  __m512 dot = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(p0, p1), p2), p3);
  __m512 v = _mm512_mul_ps(va, dot);
  return has_bias ? _mm512_add_ps(vb, v) : v;
}

// Rows r0..r0+R-1 (R <= 3) against up to 32 columns of B (row stride ldb; two 16-lane halves whose
// valid lanes are m0, m1).
static inline void dot4_rows32(const float *A, int lda, const float *B, int ldb, int R, int K, __m512 va, __m512 vb0,
                               __m512 vb1, __mmask16 m0, __mmask16 m1, int has_bias, float *C, int ldc) {
  __m512 p[3][2][4];
  #pragma GCC unroll 4
  for (int r = 0; r < 3; r++)
    #pragma GCC unroll 4
    for (int h = 0; h < 2; h++)
      #pragma GCC unroll 4
      for (int k = 0; k < 4; k++) p[r][h][k] = _mm512_setzero_ps();
  const float *a0 = A, *a1 = A + (R > 1 ? lda : 0), *a2 = A + (R > 2 ? 2 * (size_t)lda : 0);
  int K4 = K & ~3;
  for (int l = 0; l < K4; l += 4) {
    #pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
      const float *b = B + (size_t)(l + k) * ldb;
      __m512 b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);
      __m512 x0 = _mm512_set1_ps(a0[l + k]), x1 = _mm512_set1_ps(a1[l + k]), x2 = _mm512_set1_ps(a2[l + k]);
      p[0][0][k] = _mm512_fmadd_ps(x0, b0, p[0][0][k]);
      p[0][1][k] = _mm512_fmadd_ps(x0, b1, p[0][1][k]);
      p[1][0][k] = _mm512_fmadd_ps(x1, b0, p[1][0][k]);
      p[1][1][k] = _mm512_fmadd_ps(x1, b1, p[1][1][k]);
      p[2][0][k] = _mm512_fmadd_ps(x2, b0, p[2][0][k]);
      p[2][1][k] = _mm512_fmadd_ps(x2, b1, p[2][1][k]);
    }
  }
  for (int l = K4; l < K; l++) {
    const float *b = B + (size_t)l * ldb;
    __m512 b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);
    __m512 x0 = _mm512_set1_ps(a0[l]), x1 = _mm512_set1_ps(a1[l]), x2 = _mm512_set1_ps(a2[l]);
    p[0][0][0] = _mm512_fmadd_ps(x0, b0, p[0][0][0]);
    p[0][1][0] = _mm512_fmadd_ps(x0, b1, p[0][1][0]);
    p[1][0][0] = _mm512_fmadd_ps(x1, b0, p[1][0][0]);
    p[1][1][0] = _mm512_fmadd_ps(x1, b1, p[1][1][0]);
    p[2][0][0] = _mm512_fmadd_ps(x2, b0, p[2][0][0]);
    p[2][1][0] = _mm512_fmadd_ps(x2, b1, p[2][1][0]);
  }
  #pragma GCC unroll 4
  for (int r = 0; r < R; r++) {
    _mm512_mask_storeu_ps(C + (size_t)r * ldc, m0, finish(p[r][0][0], p[r][0][1], p[r][0][2], p[r][0][3], va, vb0, has_bias));
    if (m1) _mm512_mask_storeu_ps(C + (size_t)r * ldc + 16, m1, finish(p[r][1][0], p[r][1][1], p[r][1][2], p[r][1][3], va, vb1, has_bias));
  }
}

// C[:, strip] = alpha * A @ B[:, strip] (+ bias) for the ncols (<= 32) columns at B (row stride ldb).
void gm_dot4_strip_avx512(const float *A, int lda, const float *B, int ldb, int M, int K, int ncols, float alpha,
                          const float *bias, float *C, int ldc) {
  int n0 = ncols < 16 ? ncols : 16, n1 = ncols - n0;
  __mmask16 m0 = (__mmask16)((1u << n0) - 1u), m1 = (__mmask16)((1u << n1) - 1u);
  __m512 va = _mm512_set1_ps(alpha);
  __m512 vb0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  __m512 vb1 = bias && n1 ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (int i = 0; i < M; i += 3)
    dot4_rows32(A + (size_t)i * lda, lda, B, ldb, M - i < 3 ? M - i : 3, K, va, vb0, vb1, m0, m1, bias != NULL,
                C + (size_t)i * ldc, ldc);
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
  for (int j = j0; j < j1; j += 3) {
    int nj = j1 - j < 3 ? j1 - j : 3;
    const float *ys[3] = {B + (size_t)j * ldb, B + (size_t)(j + (nj > 1)) * ldb, B + (size_t)(j + (nj > 2) * 2) * ldb};
    for (int i = i0; i < i1; i += 2) {
      int ni = i + 1 < i1 ? 2 : 1;
      const float *xs[2] = {A + (size_t)i * lda, A + (size_t)(i + ni - 1) * lda};
      __m512 acc[2][3][4];
#pragma GCC unroll 2
      for (int a = 0; a < 2; a++)
#pragma GCC unroll 3
        for (int b = 0; b < 3; b++)
#pragma GCC unroll 4
          for (int q = 0; q < 4; q++) acc[a][b][q] = _mm512_setzero_ps();
      for (int l = 0; l < main_end; l += 64) {
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
          __m512 x0 = _mm512_loadu_ps(xs[0] + l + 16 * q), x1 = _mm512_loadu_ps(xs[1] + l + 16 * q);
#pragma GCC unroll 3
          for (int b = 0; b < 3; b++) {
            __m512 y = _mm512_loadu_ps(ys[b] + l + 16 * q);
            acc[0][b][q] = _mm512_fmadd_ps(x0, y, acc[0][b][q]);
            acc[1][b][q] = _mm512_fmadd_ps(x1, y, acc[1][b][q]);
          }
        }
      }
      for (int a = 0; a < ni; a++)
        for (int b = 0; b < nj; b++) {
          float sum = fold_main(acc[a][b][0], acc[a][b][1], acc[a][b][2], acc[a][b][3]);
          // no rest: ATen still adds the (zero) folded rest register, which turns -0 into +0
          sum = main_end != K ? gm_dot_f32arith_tail(xs[a], ys[b], K, sum) : sum + 0.0f;
          float v = alpha * sum;
          C[(size_t)(i + a) * ldc + j + b] = bias ? bias[j + b] + v : v;
        }
    }
  }
}
