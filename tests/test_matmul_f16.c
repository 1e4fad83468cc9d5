// gm_matmul_f16_torch against PyTorch 2.15 CPU (tools/ref/gen_matmul_goldens.py), bit for bit, in
// both summation orders (B as stored, B transposed), with bias and alpha, for K below, at and above
// the 64-element blocks; and 1 vs 2 threads.
#include "gptmeg/core.h"
#include "gptmeg/safetensors.h"
#include "harness.h"
#include "gptmeg/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN GPTMEG_SOURCE_DIR "/tests/golden/matmul/f16.safetensors"

static void run_all(const char *isa);

// Every ISA gives the scalar order's bits on shapes that exercise the AVX-512 blocking's edges:
// row blocks of 6 with every remainder, 64-column strips with partial vectors, the one-row kernel's
// 1024-column blocks, K tails mod 4 and 64. The same products also run with B as f16 bits
// (gm_matmul_f16_torch_h: f16 runs' decode and lm_head), on every ISA and in the scalar code.
static void check_blocking_edges(void) {
  static const int Ms[] = {1, 2, 5, 6, 7, 13}, Ns[] = {1, 17, 64, 65, 130, 1100}, Ks[] = {1, 3, 4, 67, 130, 211};
  gm_rng r;
  gm_rng_seed(&r, 3);
  for (size_t a = 0; a < sizeof Ms / sizeof *Ms; a++)
    for (size_t b = 0; b < sizeof Ns / sizeof *Ns; b++)
      for (size_t c = 0; c < sizeof Ks / sizeof *Ks; c++) {
        int M = Ms[a], N = Ns[b], K = Ks[c];
        float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N), *bias = malloc(sizeof(float) * N);
        float *C0 = malloc(sizeof(float) * M * N), *C1 = malloc(sizeof(float) * M * N);
        for (int i = 0; i < M * K; i++) A[i] = (float)(int)(gm_rng_normal(&r) * 64) / 64;
        for (int i = 0; i < K * N; i++) B[i] = (float)(int)(gm_rng_normal(&r) * 64) / 64;
        for (int i = 0; i < N; i++) bias[i] = (float)(int)(gm_rng_normal(&r) * 64) / 64;
        for (int trans = 0; trans < 2; trans++) {
          setenv("GPTMEG_SIMD", "scalar", 1);
          gm_matmul_f16_torch(A, K, B, trans ? K : N, trans, bias, 0.125f, C0, N, M, N, K, 1);
          unsetenv("GPTMEG_SIMD");
          gm_matmul_f16_torch(A, K, B, trans ? K : N, trans, bias, 0.125f, C1, N, M, N, K, 2);
          CHECK(test_count_diff(C0, C1, (size_t)M * N) == 0, "M %d N %d K %d trans %d: default ISA differs from the scalar order", M,
                N, K, trans);
          uint16_t *Bh = malloc(sizeof(uint16_t) * K * N);
          gm_f32_to_dtype_buf(GM_F16, B, Bh, (size_t)K * N);
          for (int scalar = 0; scalar < 2; scalar++) {
            if (scalar) setenv("GPTMEG_SIMD", "scalar", 1);
            memset(C1, 0xff, sizeof(float) * M * N);
            gm_matmul_f16_torch_h(A, K, Bh, trans ? K : N, trans, bias, 0.125f, C1, N, M, N, K, 2);
            unsetenv("GPTMEG_SIMD");
            CHECK(test_count_diff(C0, C1, (size_t)M * N) == 0, "M %d N %d K %d trans %d: the product from f16 bits (%s) differs", M, N,
                  K, trans, scalar ? "scalar" : "default ISA");
          }
          free(Bh);
        }
        free(A); free(B); free(bias); free(C0); free(C1);
      }
}

int main(void) {
  check_blocking_edges();
  static const char *isas[] = {"avx512", "avx2", "scalar"};
  for (int i = 0; i < 3; i++) {
    setenv("GPTMEG_SIMD", isas[i], 1); // capped by what the CPU has
    printf("  GPTMEG_SIMD=%s\n", isas[i]);
    run_all(isas[i]);
  }
  unsetenv("GPTMEG_SIMD");
  return test_done("test_matmul_f16");
}

static void run_all(const char *isa) {
  gm_safetensors st;
  if (gm_st_open(&st, GOLDEN)) { CHECK(0, "%s", gm_errmsg()); return; }
  const float alpha = (float)0.35355339059327373;
  int shapes = 0;
  for (int s = 0;; s++) {
    int64_t M, K, N, k2;
    float *A = test_matmul_golden_f32(&st, s, "A", &M, &K);
    if (!A) break;
    shapes++;
    float *B = test_matmul_golden_f32(&st, s, "B", &k2, &N), *Bt = test_matmul_golden_f32(&st, s, "Bt", NULL, NULL), *bias = test_matmul_golden_f32(&st, s, "bias", NULL, NULL);
    size_t n = (size_t)M * N;
    float *C = malloc(n * sizeof(float)), *C2 = malloc(n * sizeof(float));
    struct { const char *name; bool trans; bool with_bias; float alpha; } cases[] = {
        {"addmm", false, true, 1.0f}, {"matmul", false, false, 1.0f}, {"matmul_t", true, false, 1.0f},
        {"linear", true, true, 1.0f}, {"baddbmm_t", true, false, alpha}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
      float *ref = test_matmul_golden_f32(&st, s, cases[c].name, NULL, NULL);
      for (int threads = 1; threads <= 2; threads++) {
        gm_matmul_f16_torch(A, (int)K, cases[c].trans ? Bt : B, cases[c].trans ? (int)K : (int)N, cases[c].trans,
                            cases[c].with_bias ? bias : NULL, cases[c].alpha, C, (int)N, (int)M, (int)N, (int)K, threads);
        gm_round_inplace(GM_F16, C, n);
        int bad = test_count_diff(C, ref, n);
        CHECK(bad == 0, "%s: shape %d (M %lld, K %lld, N %lld) %s, %d threads: %d of %zu differ from torch", isa, s, (long long)M,
              (long long)K, (long long)N, cases[c].name, threads, bad, n);
        if (threads == 1) memcpy(C2, C, n * sizeof(float));
        else CHECK(memcmp(C, C2, n * sizeof(float)) == 0, "shape %d %s: threads change the bits", s, cases[c].name);
      }
      free(ref);
    }
    printf("  shape %d: M %lld K %lld N %lld, 5 products bit-identical to torch\n", s, (long long)M, (long long)K, (long long)N);
    free(A); free(B); free(Bt); free(bias); free(C); free(C2);
  }
  CHECK(shapes >= 7, "only %d shapes in %s", shapes, GOLDEN);
  gm_st_close(&st);
}
