// f32 matmul through OpenBLAS cblas_sgemm, split into a fixed set of tiles (see nn.h).
#include "kernels/nn.h"

#include <cblas.h>
#include <omp.h>
#include <stdatomic.h>
#include <string.h>

void gm_blas_single_thread(void) {
  static atomic_int done = 0;
  if (!atomic_exchange(&done, 1)) openblas_set_num_threads(1);
}

void gm_sgemm1(const float *A, int lda, const float *B, int ldb, bool trans_b, float alpha, float beta, float *C,
               int ldc, int M, int N, int K) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) { // sgemm leaves C * beta; keep the contract explicit
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : C[(size_t)i * ldc + j] * beta;
    return;
  }
  if (M == 1) { // one row: sgemv, which streams B once instead of packing it
    if (beta == 0.0f) memset(C, 0, (size_t)N * sizeof(float));
    if (trans_b) // C[j] = alpha * sum_k A[k] * B[j, k] + beta * C[j]
      cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, alpha, B, ldb, A, 1, beta, C, 1);
    else // C[j] = alpha * sum_k A[k] * B[k, j] + beta * C[j]
      cblas_sgemv(CblasRowMajor, CblasTrans, K, N, alpha, B, ldb, A, 1, beta, C, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta,
              C, ldc);
}

// Measured on the 124M shapes: 256x256 tiles for prefill; one-row products (decode) stream the
// weights once through sgemv, in slices wide enough to stay efficient and still split over threads.
enum { TILE_ROWS = 256, TILE_COLS = 256, DECODE_COLS = 1152 };

void gm_matmul_f32(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                   float *C, int ldc, int M, int N, int K, int threads) {
  gm_blas_single_thread();
  int tc = M == 1 ? DECODE_COLS : TILE_COLS;
  int n_rt = (M + TILE_ROWS - 1) / TILE_ROWS, n_ct = (N + tc - 1) / tc;
  int n_tiles = n_rt * n_ct;
  if (threads <= 0) threads = omp_get_max_threads();
  if (threads > n_tiles) threads = n_tiles;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : 1)
  for (int t = 0; t < n_tiles; t++) {
    int r0 = (t / n_ct) * TILE_ROWS, c0 = (t % n_ct) * tc;
    int mr = M - r0 < TILE_ROWS ? M - r0 : TILE_ROWS;
    int nc = N - c0 < tc ? N - c0 : tc;
    float *c = C + (size_t)r0 * ldc + c0;
    float beta = 0.0f;
    if (bias) {
      for (int i = 0; i < mr; i++) memcpy(c + (size_t)i * ldc, bias + c0, (size_t)nc * sizeof(float));
      beta = 1.0f;
    }
    const float *a = A + (size_t)r0 * lda;
    const float *b = trans_b ? B + (size_t)c0 * ldb : B + c0;
    gm_sgemm1(a, lda, b, ldb, trans_b, alpha, beta, c, ldc, mr, nc, K);
  }
}
