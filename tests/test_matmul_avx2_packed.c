// torch's f32 products under the avx2 target on MKL's Intel AVX2 kernels for big products (issue
// 23): 72 rows and 72 columns (B as stored) or 56 and 56 (B^T); every row alike, columns in panels
// of 24 with even/odd pair panels of 8, 4 and 2 at the end, K >= 384 in blocks of 192
// (GM_F32_BLOCKS_AVX2_BIG); and the 4..6-row kernels' rows taken whole for B as stored with M a
// multiple of 16 from 80. Goldens: tests/golden/targets/avx2/matmul_avx2/packed.safetensors
// (tools/ref/gen_matmul_avx2_goldens.py, the real torch 2.15 under the avx2 caps on an Intel Xeon),
// each output's first 16 and last 8 columns. For every product, on both sides of each threshold:
//   - gm_matmul_f32_torch under the avx2 target gives torch's bits on every SIMD path (native,
//     avx2, scalar) and 1 or 2 threads of work;
//   - the big-product schedule is chosen exactly where the generator's comments say (the corner
//     products, not the ones a row, a column short of it);
//   - with op(A) = A^T (gm_matmul_f32_torch_mt, trans_a: the backward's dV, dK) the 4..6-row
//     kernels' K blocks of 96 (GM_F32_BLOCKS_AVX2_96);
//   - torch on 2 threads (gm_matmul_f32_torch_mt, torch_threads 2): the big-product kernels on
//     each half of the columns (K >= 767 and N >= 766, or N >= 384 with M >= 64);
//   - one row (a decode step): MKL's AVX2 one-row kernels (GM_F32_BLOCKS_AVX2_ROW, _GEMV8), on 2
//     threads with B as stored the K cut in two (K >= 256, N < 1002);
//   - a last row alone (M % 6 = 1 on the 4..6-row kernels: the 2-row kernel), and the big-product
//     kernels' row groups of four (M % 4 of 1, 2, 3: a group of two, a row alone) at the last panels.
//   - torch on 3 to 16 threads: 49..16t rows in row parts, each in its 1-thread order (below 256
//     columns fewer column parts, so more row parts); the big-product kernels above 16t rows (61
//     rows on 3 threads) on grids of row and column blocks: 1 x t at any width where M < N, t x 1
//     in blocks of ceil((M - 1) / t) from M = N, from N 770 tn among t and its powers of two
//     (avx2_many_threads, avx2_big_grid); K in t parts for few rows and columns against a long K
//     (avx2_kcut).
#include "harness.h"

#include "gptmeg/kernels.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  bool trans; // linear: B^T
  int M, K, N;
  bool packed;  // the generator's comment: on the big-product kernels (on 1 thread)
  bool trans_a; // mm_ta: op(A) = A^T, A stored [K, M] (no bias)
  int tt;       // torch's thread count
} product;

// The generator's PRODUCTS, in its order (p<index>.first, .last).
static const product PRODUCTS[] = {
    {false, 72, 768, 72, true, false, 1}, {false, 71, 768, 72, false, false, 1}, {false, 72, 768, 71, false, false, 1},
    {false, 128, 768, 766, true, false, 1}, {false, 128, 1000, 765, true, false, 1}, {false, 96, 3072, 768, true, false, 1},
    {false, 128, 385, 128, true, false, 1}, {false, 128, 300, 120, true, false, 1}, {true, 56, 768, 767, true, false, 1},
    {true, 54, 768, 64, false, false, 1}, {true, 64, 768, 56, true, false, 1}, {true, 64, 768, 55, false, false, 1},
    {false, 128, 128, 64, false, false, 1}, {false, 80, 128, 64, false, false, 1}, {false, 64, 65, 64, false, true, 1},
    {false, 64, 100, 64, false, true, 1}, {false, 64, 200, 64, false, true, 1}, {false, 30, 777, 16, false, true, 1},
    {false, 120, 128, 71, false, true, 1}, {false, 64, 3072, 768, false, false, 2}, {true, 32, 768, 766, false, false, 2},
    {false, 64, 768, 767, false, false, 2}, {false, 100, 1000, 401, true, false, 2}, {false, 2, 767, 768, false, false, 2},
    {false, 1, 768, 768, false, false, 1}, {false, 1, 3072, 768, false, false, 1}, {true, 1, 768, 767, false, false, 1},
    {false, 1, 13, 20, false, false, 1}, {true, 1, 13, 20, false, false, 1}, {false, 1, 768, 768, false, false, 2},
    {false, 1, 3072, 768, false, false, 2}, {true, 1, 768, 766, false, false, 2}, {false, 1, 255, 100, false, false, 2},
    {false, 1, 256, 100, false, false, 2},
    {false, 7, 768, 768, false, false, 1}, {true, 13, 300, 120, false, false, 1}, {false, 19, 100, 37, false, false, 1},
    {false, 73, 768, 77, true, false, 1}, {false, 74, 768, 77, true, false, 1}, {false, 75, 768, 77, true, false, 1},
    {true, 57, 768, 761, true, false, 1}, {true, 59, 500, 745, true, false, 1}, {true, 58, 768, 766, true, false, 1},
    {false, 41, 768, 766, false, false, 2},
    {true, 13, 64, 29, false, false, 1}, {true, 12, 200, 41, false, false, 1}, {false, 30, 100, 25, false, false, 1},
    {false, 24, 64, 40, false, false, 1},
    {false, 77, 77, 64, false, false, 1}, {false, 122, 300, 50, false, false, 1}, {false, 100, 64, 40, false, false, 1},
    {true, 122, 64, 40, false, false, 1},
    {false, 40, 768, 256, false, false, 2}, {false, 100, 1024, 256, true, false, 2}, {false, 5, 1024, 256, false, false, 2},
    {false, 100, 768, 320, true, false, 2}, {false, 48, 256, 768, false, false, 2}, {false, 128, 256, 256, true, false, 2},
    {false, 64, 512, 128, false, false, 2}, {true, 100, 384, 65, true, false, 2}, {true, 128, 256, 100, true, false, 2},
    {true, 40, 768, 256, false, false, 2}, {true, 100, 1024, 192, true, false, 2},
    {false, 50, 768, 768, false, false, 4}, {true, 61, 768, 768, true, false, 6}, {false, 101, 768, 768, true, false, 8},
    {false, 97, 300, 300, true, false, 12}, {false, 61, 3072, 768, false, false, 3}, {true, 68, 768, 512, true, false, 4},
    {true, 100, 768, 3080, true, false, 4}, {false, 100, 768, 3080, true, false, 6}, {true, 100, 768, 3080, true, false, 5},
    {false, 72, 768, 3080, true, false, 3}, {true, 100, 768, 3078, true, false, 4}, {true, 100, 768, 3079, true, false, 5},
    {true, 100, 768, 3077, true, false, 4}, {true, 60, 768, 3077, true, false, 3},
    {false, 100, 256, 1001, true, false, 4}, {false, 100, 256, 1001, true, false, 6}, {true, 100, 256, 900, true, false, 3},
    {false, 100, 256, 2001, true, false, 6}, {false, 100, 256, 768, true, false, 6},
    {false, 100, 2001, 97, true, false, 4}, {false, 100, 1537, 336, true, false, 3}, {false, 72, 3072, 336, true, false, 6},
    {false, 100, 3072, 144, true, false, 8},
    {false, 150, 1024, 256, true, false, 6}, {false, 175, 1024, 257, true, false, 4}, {false, 175, 1024, 258, true, false, 4},
    {false, 100, 1140, 128, true, false, 3}, {false, 132, 2048, 128, true, false, 8}, {false, 300, 2048, 256, true, false, 12},
    {false, 378, 1520, 72, true, false, 4}, {false, 379, 1520, 72, true, false, 4}, {false, 90, 2000, 378, true, false, 5},
    {false, 150, 768, 200, true, false, 6}, {true, 150, 512, 300, true, false, 8}, {false, 235, 768, 223, true, false, 3},
    {true, 202, 768, 200, true, false, 4}, {false, 85, 512, 248, true, false, 6}, {false, 64, 256, 256, false, false, 3},
    {false, 60, 1024, 200, false, false, 3},
    {false, 120, 256, 700, true, false, 7}, {true, 120, 256, 3080, true, false, 7}, {false, 170, 256, 1000, true, false, 10},
    {false, 300, 256, 200, true, false, 10}, {true, 200, 256, 1000, true, false, 12},
    {true, 64, 384, 65, true, false, 8}, {false, 60, 256, 128, false, false, 6}, {false, 60, 256, 129, false, false, 6},
    {true, 56, 384, 64, true, false, 4}, {false, 80, 512, 190, true, false, 8}, {false, 80, 512, 224, true, false, 8},
    {false, 80, 830, 300, true, false, 1}, {false, 128, 300, 128, true, false, 1}, {true, 80, 875, 300, true, false, 1},
};
enum { MA = 384, KA = 3072, NB = 3080, FIRST = 16, LAST = 8 };

int main(void) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s/tests/golden/targets/avx2/matmul_avx2/packed.safetensors", GPTMEG_SOURCE_DIR);
  gm_safetensors st;
  if (gm_st_open(&st, buf)) {
    CHECK(0, "%s", gm_errmsg());
    return test_done("test_matmul_avx2_packed");
  }
  gm_torch_target_set(GM_TT_AVX2);
  float *A = malloc(sizeof(float) * MA * KA), *B = malloc(sizeof(float) * KA * NB);
  float *Bt = malloc(sizeof(float) * KA * NB), *C = malloc(sizeof(float) * MA * NB);
  int64_t nb = 0, one = 0;
  float *bias = test_st_f32(&st, "bias", &nb, &one);
  CHECK(A && B && Bt && C && bias && nb == NB, "%s: bias missing or not %d floats (or out of memory)", buf, NB);
  if (!A || !B || !Bt || !C || !bias) return test_done("test_matmul_avx2_packed");
  test_formula_a(A, MA, KA);
  test_formula_b(B, KA, NB);
  const int n_paths = test_quick() ? 2 : TEST_N_PATHS;
  int runs = 0;
  for (size_t q = 0; q < sizeof PRODUCTS / sizeof PRODUCTS[0]; q++) {
    const product *p = &PRODUCTS[q];
    const int M = p->M, K = p->K, N = p->N;
    // A[:M, :K] (stride KA); op(B) = B[:K, :N] as stored (stride NB) or its transpose contiguous
    if (p->trans)
      for (int j = 0; j < N; j++)
        for (int k = 0; k < K; k++) Bt[(size_t)j * K + k] = B[(size_t)k * NB + j];
    const float *Bp = p->trans ? Bt : B;
    if (p->trans_a) test_formula_a(Bt, K, M); // At [K, M] = the generator's formula_a(K, M), in Bt's space
    const int ldb = p->trans ? K : NB;
    char nf[32], nl[32];
    snprintf(nf, sizeof nf, "p%zu.first", q);
    snprintf(nl, sizeof nl, "p%zu.last", q);
    int64_t f0 = 0, f1 = 0, l0 = 0, l1 = 0;
    float *rf = test_st_f32(&st, nf, &f0, &f1), *rl = test_st_f32(&st, nl, &l0, &l1);
    CHECK(rf && rl && f0 == M && f1 == FIRST && l0 == M && l1 == LAST, "%s: p%zu missing or misshapen", buf, q);
    if (!rf || !rl) {
      free(rf); free(rl);
      continue;
    }
    const bool packed = gm_f32_torch_blocks(GM_MKL_SGEMM_INTEL_AVX2, M, N, K, p->trans) == GM_F32_BLOCKS_AVX2_BIG;
    const char *op = p->trans_a ? "mm_ta" : p->trans ? "linear" : "addmm";
    CHECK(packed == p->packed, "%s %d x %d x %d: gptmeg %s the big-product kernels on 1 thread", op, M, K, N,
          packed ? "takes" : "does not take");
    for (int pa = 0; pa < n_paths; pa++) {
      if (TEST_PATHS[pa].simd) test_set_simd(TEST_PATHS[pa].simd);
      memset(C, 0xff, sizeof(float) * (size_t)M * N);
      const int tt = p->tt;
      if (p->trans_a)
        CHECK(gm_matmul_f32_torch_mt(Bt, M, true, B, NB, false, NULL, 1.0f, C, N, M, N, K, TEST_PATHS[pa].threads, tt) == 0,
              "mm_ta %d x %d x %d: out of memory", M, K, N);
      else gm_matmul_f32_torch_mt(A, KA, false, Bp, ldb, p->trans, bias, 1.0f, C, N, M, N, K, TEST_PATHS[pa].threads, tt);
      int bad = test_count_diff_cols(C, N, 0, rf, FIRST, M) + test_count_diff_cols(C, N, N - LAST, rl, LAST, M);
      CHECK(bad == 0, "%s %d x %d x %d, %s: %d of %d outputs differ from torch", op, M, K,
            N, TEST_PATHS[pa].name, bad, M * (FIRST + LAST));
      test_set_simd(NULL);
    }
    printf("  %-6s %3d x %4d x %4d, torch on %d thread(s) (on 1: the %s)\n", op, M, K, N, p->tt,
           packed ? "big-product kernels" : M == 1 ? "one-row kernel" : "4..6-row kernels");
    runs++;
    free(rf); free(rl);
  }
  CHECK(runs == (int)(sizeof PRODUCTS / sizeof PRODUCTS[0]), "ran %d of %zu products", runs,
        sizeof PRODUCTS / sizeof PRODUCTS[0]);
  free(A); free(B); free(Bt); free(C); free(bias);
  gm_st_close(&st);
  gm_torch_target_unset();
  return test_done("test_matmul_avx2_packed");
}
