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

// OpenBLAS 0.3.21 (DYNAMIC_ARCH, the SkylakeX/Cooperlake kernels of this machine) sends small
// products to kernels that sum in another order than its packed kernels: M*N*K <= 1e6 to the
// small-matrix kernels, and B not transposed with alpha 1, beta 0 and M*N*K < 28*512*512 to
// sgemm_direct. In the packed kernels an element's sum depends only on K (K blocks in order), not
// on M, N or where the product was cut. So a piece must exceed this many multiply-adds unless the
// whole product is below it (then it runs as one piece).
static double packed_min(bool trans_b, float alpha, bool beta0) {
  return !trans_b && alpha == 1.0f && beta0 ? 28.0 * 512 * 512 - 1 : 1e6;
}

bool gm_matmul_f32_packed(int M, int N, int K, bool trans_b, float alpha, bool bias) {
  return (double)M * N * K > packed_min(trans_b, alpha, !bias);
}

// The pieces of an M x N x K product: row blocks of h rows, column blocks of w columns, the last
// block of each taking the remainder (so every block has at least min(h, M) rows and min(w, N)
// columns). h and w start at the tile sizes and double until a piece clears `need`.
typedef struct {
  int h, w, n_rt, n_ct;
} pieces;

static pieces cut(int M, int N, int K, double need) {
  pieces p = {M, N, 1, 1};
  if ((double)M * N * K <= need) return p; // the whole product is below: one piece
  p.h = TILE_ROWS;
  while (p.h < M && (double)p.h * N * K <= need) p.h *= 2;
  int r_min = p.h < M ? p.h : M;
  p.w = TILE_COLS;
  while (p.w < N && (double)r_min * p.w * K <= need) p.w *= 2;
  p.n_rt = M / p.h > 1 ? M / p.h : 1;
  p.n_ct = N / p.w > 1 ? N / p.w : 1;
  return p;
}

void gm_matmul_f32_gemm(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                        float *C, int ldc, int M, int N, int K, int threads) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) { // an empty sum: the bias, or 0
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = bias ? bias[j] : 0.0f;
    return;
  }
  gm_blas_single_thread();
  pieces p = cut(M, N, K, packed_min(trans_b, alpha, bias == NULL));
  int n_tiles = p.n_rt * p.n_ct;
  if (threads <= 0) threads = omp_get_max_threads();
  if (threads > n_tiles) threads = n_tiles;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : 1)
  for (int t = 0; t < n_tiles; t++) {
    int rt = t / p.n_ct, ct = t % p.n_ct;
    int r0 = rt * p.h, c0 = ct * p.w;
    int mr = rt == p.n_rt - 1 ? M - r0 : p.h;
    int nc = ct == p.n_ct - 1 ? N - c0 : p.w;
    float *c = C + (size_t)r0 * ldc + c0;
    float beta = 0.0f;
    if (bias) {
      for (int i = 0; i < mr; i++) memcpy(c + (size_t)i * ldc, bias + c0, (size_t)nc * sizeof(float));
      beta = 1.0f;
    }
    const float *a = A + (size_t)r0 * lda;
    const float *b = trans_b ? B + (size_t)c0 * ldb : B + c0;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, mr, nc, K, alpha, a, lda, b, ldb,
                beta, c, ldc);
  }
}

// One row: sgemv over fixed slices of DECODE_COLS columns.
static void matvec_f32(const float *A, const float *B, int ldb, bool trans_b, const float *bias, float alpha, float *C,
                       int N, int K, int threads) {
  gm_blas_single_thread();
  int n_ct = (N + DECODE_COLS - 1) / DECODE_COLS;
  if (threads <= 0) threads = omp_get_max_threads();
  if (threads > n_ct) threads = n_ct;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : 1)
  for (int t = 0; t < n_ct; t++) {
    int c0 = t * DECODE_COLS, nc = N - c0 < DECODE_COLS ? N - c0 : DECODE_COLS;
    float beta = 0.0f;
    if (bias) {
      memcpy(C + c0, bias + c0, (size_t)nc * sizeof(float));
      beta = 1.0f;
    }
    gm_sgemm1(A, K, trans_b ? B + (size_t)c0 * ldb : B + c0, ldb, trans_b, alpha, beta, C + c0, nc, 1, nc, K);
  }
}

void gm_matmul_f32(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                   float *C, int ldc, int M, int N, int K, int threads) {
  if (M == 1 && N > 0) matvec_f32(A, B, ldb, trans_b, bias, alpha, C, N, K, threads);
  else gm_matmul_f32_gemm(A, lda, B, ldb, trans_b, bias, alpha, C, ldc, M, N, K, threads);
}
