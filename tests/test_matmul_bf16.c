// gm_matmul_bf16: the AVX512-BF16 kernel against the scalar definition of its order (pairs of K,
// odd element first, DAZ/FTZ), bit for bit, with bias and alpha, both B layouts, odd and even K,
// edge sizes, pre-packed B, the allocation-free fallback, and 1 vs 2 threads. Without the instructions both runs take the scalar path.
// And against PyTorch 2.15 (tools/ref/gen_matmul_goldens.py: addmm, linear and matmul in bf16 with K
// across oneDNN's K blocks), bit for bit.
#include "gptmeg/core.h"
#include "gptmeg/safetensors.h"
#include "harness.h"
#include "gptmeg/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill(gm_rng *r, float *x, size_t n, double scale) {
  for (size_t i = 0; i < n; i++) x[i] = gm_round_f32(GM_BF16, (float)(scale * gm_rng_normal(r)));
}

#define GOLDEN GPTMEG_SOURCE_DIR "/tests/golden/matmul/bf16.safetensors"

static void test_torch(void) {
  gm_safetensors st;
  if (gm_st_open(&st, GOLDEN)) { CHECK(0, "%s", gm_errmsg()); return; }
  int shapes = 0;
  for (int s = 0;; s++) {
    int64_t M, K, N, k2;
    float *A = test_matmul_golden_f32(&st, s, "A", &M, &K);
    if (!A) break;
    shapes++;
    float *B = test_matmul_golden_f32(&st, s, "B", &k2, &N), *Bt = test_matmul_golden_f32(&st, s, "Bt", NULL, NULL), *bias = test_matmul_golden_f32(&st, s, "bias", NULL, NULL);
    size_t n = (size_t)M * N;
    float *C = malloc(n * sizeof(float));
    const struct { const char *name; bool trans; bool with_bias; } cases[] = {
        {"addmm", false, true}, {"linear", true, true}, {"matmul", false, false}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
      float *ref = test_matmul_golden_f32(&st, s, cases[c].name, NULL, NULL);
      for (int threads = 1; threads <= 2; threads++) {
        gm_matmul_bf16(A, (int)K, cases[c].trans ? Bt : B, cases[c].trans ? (int)K : (int)N, cases[c].trans,
                       cases[c].with_bias ? bias : NULL, 1.0f, C, (int)N, (int)M, (int)N, (int)K, threads);
        gm_round_inplace(GM_BF16, C, n);
        int bad = test_count_diff(C, ref, n);
        CHECK(bad == 0, "torch: shape %d (M %lld, K %lld, N %lld) %s, %d threads: %d of %zu differ", s, (long long)M,
              (long long)K, (long long)N, cases[c].name, threads, bad, n);
      }
      free(ref);
    }
    printf("  torch: M %lld K %lld N %lld, addmm/linear/matmul bit-identical\n", (long long)M, (long long)K, (long long)N);
    free(A); free(B); free(Bt); free(bias); free(C);
  }
  CHECK(shapes >= 8, "only %d shapes in %s", shapes, GOLDEN);
  gm_st_close(&st);
}

int main(void) {
  test_torch();
  static const int shapes[][3] = {{1, 1, 1}, {5, 8, 7}, {9, 37, 20}, {4, 768, 50}, {7, 129, 33}, {13, 64, 100}, {1, 768, 40}, {21, 33, 65}, {9, 1000, 40}, {3, 1025, 33}, {10, 2600, 20}};
  gm_rng r;
  gm_rng_seed(&r, 9);
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
    float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4), *bias = malloc((size_t)N * 4);
    float *C1 = malloc((size_t)M * N * 4), *C2 = malloc((size_t)M * N * 4), *C3 = malloc((size_t)M * N * 4);
    fill(&r, A, (size_t)M * K, 2.0);
    fill(&r, B, (size_t)K * N, 0.5);
    fill(&r, bias, (size_t)N, 0.1);
    if (M * K > 3) A[3] = 1e-39f; // a subnormal input: read as zero
    for (int trans = 0; trans < 2; trans++) {
      int ldb = trans ? K : N; // trans: B is read as [N, K] with the same data
      setenv("GPTMEG_SIMD", "scalar", 1);
      gm_matmul_bf16(A, K, B, ldb, trans, bias, 0.25f, C1, N, M, N, K, 1);
      unsetenv("GPTMEG_SIMD");
      gm_matmul_bf16(A, K, B, ldb, trans, bias, 0.25f, C2, N, M, N, K, 1);
      gm_matmul_bf16(A, K, B, ldb, trans, bias, 0.25f, C3, N, M, N, K, 2);
      CHECK(memcmp(C1, C2, (size_t)M * N * 4) == 0, "shape %zu trans %d: SIMD differs from the scalar order", s, trans);
      CHECK(memcmp(C2, C3, (size_t)M * N * 4) == 0, "shape %zu trans %d: 2 threads differ", s, trans);
      uint32_t *Bp = malloc(gm_bf16_packed_size(K, N) * sizeof(uint32_t));
      gm_bf16_pack(B, ldb, trans, K, N, Bp);
      gm_matmul_bf16_packed(A, K, Bp, bias, 0.25f, C3, N, M, N, K, 2);
      CHECK(memcmp(C2, C3, (size_t)M * N * 4) == 0, "shape %zu trans %d: pre-packed B differs", s, trans);
      gm_matmul_bf16_unpacked(A, K, B, ldb, trans, NULL, bias, 0.25f, C3, N, M, N, K);
      CHECK(memcmp(C2, C3, (size_t)M * N * 4) == 0, "shape %zu trans %d: the unpacked fallback differs", s, trans);
      gm_matmul_bf16_unpacked(A, K, NULL, 0, false, Bp, bias, 0.25f, C3, N, M, N, K);
      CHECK(memcmp(C2, C3, (size_t)M * N * 4) == 0, "shape %zu trans %d: the unpacked fallback on Bp differs", s, trans);
      free(Bp);
      double worst = 0; // and it is a matmul: close to the f64 product
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
          double acc = 0;
          for (int k = 0; k < K; k++) {
            float a = (i == 0 && k == 3 && M * K > 3) ? 0.0f : A[(size_t)i * K + k];
            acc += (double)a * (trans ? B[(size_t)j * K + k] : B[(size_t)k * N + j]);
          }
          double d = C1[(size_t)i * N + j] - (bias[j] + 0.25 * acc);
          if (d < 0) d = -d;
          if (d > worst) worst = d;
        }
      CHECK(worst < 1e-3, "shape %zu trans %d: %.3g from the f64 product", s, trans, worst);
    }
    free(A); free(B); free(bias); free(C1); free(C2); free(C3);
  }
  printf("  AVX512-BF16 %s\n", __builtin_cpu_supports("avx512bf16") ? "present: kernel checked against the scalar order"
                                                                      : "absent: scalar path only");
  return test_done("test_matmul_bf16");
}
