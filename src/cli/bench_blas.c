// f32 matmul through OpenBLAS cblas_sgemm: the machine's reachable GEMM rate that `bench model`
// measures the forward against (the forward's own f32 products are matmul_torch_f32.c's).
#include "cli/cli.h"

#include <cblas.h>
#include <omp.h>
#include <stdatomic.h>
#include <string.h>

static void blas_single_thread(void) {
  static atomic_int done = 0;
  if (!atomic_exchange(&done, 1)) openblas_set_num_threads(1);
}

enum { TILE = 256 }; // rows and columns per tile: one single-threaded sgemm each, OpenMP over tiles

void cli_matmul_f32_openblas(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias,
                            float alpha, float *C, int ldc, int M, int N, int K, int threads) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) { // an empty sum: the bias, or 0
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = bias ? bias[j] : 0.0f;
    return;
  }
  blas_single_thread();
  int n_rt = (M + TILE - 1) / TILE, n_ct = (N + TILE - 1) / TILE, n_tiles = n_rt * n_ct;
  if (threads <= 0) threads = omp_get_max_threads();
  if (threads > n_tiles) threads = n_tiles;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int t = 0; t < n_tiles; t++) {
    int r0 = t / n_ct * TILE, c0 = t % n_ct * TILE;
    int mr = M - r0 < TILE ? M - r0 : TILE, nc = N - c0 < TILE ? N - c0 : TILE;
    float *c = C + (size_t)r0 * ldc + c0;
    float beta = 0.0f;
    if (bias) { // torch.addmm's way: C preloaded with the bias, beta = 1
      for (int i = 0; i < mr; i++) memcpy(c + (size_t)i * ldc, bias + c0, (size_t)nc * sizeof(float));
      beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, mr, nc, K, alpha,
                A + (size_t)r0 * lda, lda, trans_b ? B + (size_t)c0 * ldb : B + c0, ldb, beta, c, ldc);
  }
}
