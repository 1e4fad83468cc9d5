// The intel-amx bf16 order on 1 to 4 threads against torch 2.15
// (tests/golden/targets/intel-amx/bf16_amx_chunk/threads.safetensors, tools/ref/gen_bf16_amx_threads_goldens.py):
// products where oneDNN's K blocking (onednn_amx.h) splits K into 3 parts, gives a transposed A's
// K tail its own call, or changes its chunk on 3 and 4 threads. Operands as the generator's
// value() and cancel(); torch's rows 0, 1, M/2, M-1. gptmeg runs each with threads = torch's: the
// AMX kernel (or what this host runs), the scalar twin (GPTMEG_SIMD=scalar; small products) and,
// for A as stored, the pre-packed B path.
#include "harness.h"

#include "gptmeg/core.h"
#include "gptmeg/kernels.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_ADDMM, OP_MM, OP_LINEAR, OP_MMTB, OP_MMTA };
typedef struct {
  int M, K, N, op;
} product;
// The generator's PRODUCTS, in its order.
static const product PRODUCTS[] = {{64, 3000, 256, OP_MMTA},  {256, 1000, 256, OP_MMTA},  {128, 1700, 256, OP_MMTA},
                                   {64, 3072, 768, OP_ADDMM}, {130, 3072, 768, OP_ADDMM}, {4, 3072, 16, OP_LINEAR},
                                   {200, 2304, 768, OP_LINEAR}, {48, 768, 2304, OP_MMTB},  {24, 8000, 64, OP_MM},
                                   {300, 768, 3072, OP_ADDMM},
                                   // at most 16^3 multiply-adds (ATen's gemm in torch), and just above
                                   {4, 48, 16, OP_ADDMM}, {8, 16, 32, OP_LINEAR}, {3, 100, 13, OP_MM}, {2, 32, 64, OP_MMTB},
                                   {1, 64, 64, OP_ADDMM}, {5, 40, 20, OP_MMTA}, {4, 48, 17, OP_ADDMM}, {8, 32, 17, OP_LINEAR}};
#define SCALAR_MAX ((size_t)64 * 1024 * 1024) // multiply-adds: the scalar twin only below (slow)


// Rows r of C [M, N] rounded to bf16 against the golden g [nr, N]: outputs that differ.
static int diff_rows(float *C, const int *r, int nr, int N, const float *g) {
  int bad = 0;
  for (int a = 0; a < nr; a++) {
    float *row = C + (size_t)r[a] * N;
    gm_round_inplace(GM_BF16, row, (size_t)N);
    bad += test_count_diff(row, g + (size_t)a * N, (size_t)N);
  }
  return bad;
}

int main(void) {
  char file[1024];
  snprintf(file, sizeof file, "%s/tests/golden/targets/intel-amx/bf16_amx_chunk/threads.safetensors", GPTMEG_SOURCE_DIR);
  gm_safetensors st;
  if (gm_st_open(&st, file)) {
    CHECK(0, "%s", gm_errmsg());
    return test_done("test_bf16_amx_threads");
  }
  gm_torch_target_set(GM_TT_INTEL_AMX);
  int runs = 0, dependent = 0;
  for (size_t q = 0; q < sizeof PRODUCTS / sizeof PRODUCTS[0]; q++) {
    const product *p = &PRODUCTS[q];
    const int M = p->M, K = p->K, N = p->N;
    const bool ta = p->op == OP_MMTA, tb = p->op == OP_LINEAR || p->op == OP_MMTB;
    const bool with_bias = p->op == OP_ADDMM || p->op == OP_LINEAR;
    float *A = malloc(sizeof(float) * (size_t)M * K), *W = malloc(sizeof(float) * (size_t)K * N);
    float *Wt = malloc(sizeof(float) * (size_t)K * N), *At = malloc(sizeof(float) * (size_t)M * K);
    float *bias = malloc(sizeof(float) * (size_t)N), *C = malloc(sizeof(float) * (size_t)M * N);
    uint32_t *Wp = malloc(sizeof(uint32_t) * gm_bf16_packed_size(K, N));
    if (!A || !W || !Wt || !At || !bias || !C || !Wp) { CHECK(0, "out of memory"); return test_done("test_bf16_amx_threads"); }
    test_amx_fill(A, (size_t)M * K, 1);
    test_amx_fill(W, (size_t)K * N, 2);
    test_amx_fill(bias, (size_t)N, 3);
    const int ks[4] = {3, K - 5, K / 3, 2 * K / 3 + 1};
    const float vs[4] = {262144.0f, -262144.0f, 16384.0f, -16384.0f};
    for (int c = 0; c < 4; c++) {
      for (int i = 0; i < M; i++) A[(size_t)i * K + ks[c]] = 1.0f;
      for (int j = 0; j < N; j++) W[(size_t)ks[c] * N + j] = vs[c];
    }
    if (K % 32 && K > 32) { // the generator's tail pair: +2^18 in the last full tile, -2^18 in the partial one
      const int full = K - K % 32, kt[2] = {full - 7, K - 2};
      for (int c = 0; c < 2; c++) {
        for (int i = 0; i < M; i++) A[(size_t)i * K + kt[c]] = 1.0f;
        for (int j = 0; j < N; j++) W[(size_t)kt[c] * N + j] = c ? -262144.0f : 262144.0f;
      }
    }
    for (int k = 0; k < K; k++)
      for (int j = 0; j < N; j++) Wt[(size_t)j * K + k] = W[(size_t)k * N + j];
    for (int i = 0; i < M; i++)
      for (int k = 0; k < K; k++) At[(size_t)k * M + i] = A[(size_t)i * K + k];
    const float *B = tb ? Wt : W;
    const int ldb = tb ? K : N;
    gm_bf16_pack(B, ldb, tb, K, N, Wp);
    const float *bv = with_bias ? bias : NULL;
    int r[4], nr = test_amx_rows(M, r);
    float *g1 = NULL;
    for (int th = 1; th <= 4; th++) {
      char name[32];
      snprintf(name, sizeof name, "p%zu.out%d", q, th);
      int64_t d0 = 0, d1 = 0;
      float *g = test_st_f32(&st, name, &d0, &d1);
      CHECK(g && d0 == nr && d1 == N, "%s: missing or shaped %lldx%lld", name, (long long)d0, (long long)d1);
      if (!g) continue;
      if (th == 1) g1 = g;
      else {
        dependent += test_count_diff(g, g1, (size_t)nr * N) > 0;
      }
      for (int path = 0; path < 3; path++) {
        const bool scalar = path == 1, packed = path == 2;
        if (scalar && (size_t)M * N * K > SCALAR_MAX) continue;
        if (packed && ta) continue;
        if (scalar) test_set_simd("scalar");
        memset(C, 0, sizeof(float) * (size_t)M * N);
        if (ta) gm_matmul_bf16_ta(At, M, W, N, false, NULL, 1.0f, C, N, M, N, K, th);
        else if (packed) gm_matmul_bf16_packed(A, K, Wp, bv, 1.0f, C, N, M, N, K, th);
        else gm_matmul_bf16(A, K, B, ldb, tb, bv, 1.0f, C, N, M, N, K, th);
        if (scalar) test_set_simd(NULL);
        int bad = diff_rows(C, r, nr, N, g);
        CHECK(bad == 0, "%dx%dx%d op %d, %d threads (%s): %d of %d sampled outputs differ from torch", M, K, N, p->op, th,
              scalar ? "scalar" : packed ? "packed" : "kernel", bad, nr * N);
        runs++;
      }
      if (g != g1) free(g);
    }
    free(g1);
    free(A), free(W), free(Wt), free(At), free(bias), free(C), free(Wp);
  }
  gm_st_close(&st);
  CHECK(dependent >= 8, "only %d (product, threads) whose torch bits differ from 1 thread's", dependent);
  printf("  %d runs against torch on 1-4 threads; %d (product, threads) differ from 1 thread in torch\n", runs, dependent);
  gm_torch_target_unset();
  return test_done("test_bf16_amx_threads");
}
