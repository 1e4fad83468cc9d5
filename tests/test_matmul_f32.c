// gm_matmul_f32_torch: against PyTorch 2.15 (tools/ref/gen_matmul_goldens.py: addmm, linear,
// matmul, bmm, and addmm/baddbmm with alpha, for K across MKL's blocks), bit for bit; the AVX-512
// and AVX2 kernels against the scalar definition of the order (both B layouts, bias and alpha, one
// row, edge sizes, 1 vs 2 threads); and each row equal to the same row computed alone (what the
// forward's kept rows and KV-cache decoding rely on).
#include "gptmeg/core.h"
#include "gptmeg/safetensors.h"
#include "harness.h"
#include "gptmeg/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN GPTMEG_SOURCE_DIR "/tests/golden/matmul/f32.safetensors"
#define ALPHA 0.35355339059327373f // the goldens' alpha (1/sqrt(8))

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
    const struct { const char *name; bool trans; bool with_bias; float alpha; } cases[] = {
        {"addmm", false, true, 1.0f},       {"addmm_alpha", false, true, ALPHA}, {"linear", true, true, 1.0f},
        {"matmul", false, false, 1.0f},     {"matmul_t", true, false, 1.0f},     {"bmm_t", true, false, 1.0f},
        {"baddbmm_t", true, false, ALPHA}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
      float *ref = test_matmul_golden_f32(&st, s, cases[c].name, NULL, NULL);
      for (int threads = 1; threads <= 2; threads++) {
        gm_matmul_f32_torch(A, (int)K, cases[c].trans ? Bt : B, cases[c].trans ? (int)K : (int)N, cases[c].trans,
                            cases[c].with_bias ? bias : NULL, cases[c].alpha, C, (int)N, (int)M, (int)N, (int)K, threads);
        int bad = test_count_diff(C, ref, n);
        CHECK(bad == 0, "torch: shape %d (M %lld, K %lld, N %lld) %s, %d threads: %d of %zu differ", s, (long long)M,
              (long long)K, (long long)N, cases[c].name, threads, bad, n);
      }
      free(ref);
    }
    printf("  torch: M %lld K %lld N %lld, 7 ops bit-identical\n", (long long)M, (long long)K, (long long)N);
    free(A); free(B); free(Bt); free(bias); free(C);
  }
  CHECK(shapes >= 10, "only %d shapes in %s", shapes, GOLDEN);
  gm_st_close(&st);
}

static void fill(gm_rng *r, float *x, size_t n, double scale) {
  for (size_t i = 0; i < n; i++) x[i] = (float)(scale * gm_rng_normal(r));
}

// The kernels against the definition, and rows computed alone against rows of the whole product.
static void test_kernels(void) {
  static const int shapes[][3] = {{1, 1, 1},    {5, 8, 7},      {9, 37, 20},   {4, 768, 50},  {7, 193, 33},
                                  {13, 64, 100}, {1, 768, 1500}, {21, 383, 65}, {9, 1000, 40}, {3, 1025, 33},
                                  {10, 2600, 20}, {1, 300, 70},  {2, 17, 129},  {1, 0, 5},     {3, 0, 70}};
  gm_rng r;
  gm_rng_seed(&r, 21);
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
    size_t nc = (size_t)M * N;
    float *A = malloc(((size_t)M * K + 1) * 4), *B = malloc(((size_t)K * N + 1) * 4), *bias = malloc((size_t)N * 4);
    float *C1 = malloc(nc * 4), *C2 = malloc(nc * 4), *C3 = malloc(nc * 4), *row = malloc((size_t)N * 4);
    fill(&r, A, (size_t)M * K, 1.0);
    fill(&r, B, (size_t)K * N, 0.5);
    fill(&r, bias, (size_t)N, 0.1);
    for (int trans = 0; trans < 2; trans++)
      for (int variant = 0; variant < 3; variant++) { // bias and alpha 1; no bias; bias and alpha
        int ldb = trans ? K : N;                       // trans: B is read as [N, K] with the same data
        const float *bs = variant == 1 ? NULL : bias;
        float alpha = variant == 2 ? 0.125f * 3 : 1.0f;
        gm_matmul_f32_torch_scalar(A, K, B, ldb, trans, bs, alpha, C1, N, M, N, K);
        gm_matmul_f32_torch(A, K, B, ldb, trans, bs, alpha, C2, N, M, N, K, 1);
        gm_matmul_f32_torch(A, K, B, ldb, trans, bs, alpha, C3, N, M, N, K, 2);
        CHECK(test_count_diff(C1, C2, nc) == 0, "shape %zu (M %d K %d N %d) trans %d variant %d: %d differ from the definition",
              s, M, K, N, trans, variant, test_count_diff(C1, C2, nc));
        CHECK(test_count_diff(C2, C3, nc) == 0, "shape %zu trans %d variant %d: 2 threads differ from 1", s, trans, variant);
        setenv("GPTMEG_SIMD", "avx2", 1); // the AVX2 kernel (or the scalar code without AVX2)
        gm_matmul_f32_torch(A, K, B, ldb, trans, bs, alpha, C3, N, M, N, K, 2);
        unsetenv("GPTMEG_SIMD");
        CHECK(test_count_diff(C1, C3, nc) == 0, "shape %zu trans %d variant %d: AVX2 path differs from the definition", s,
              trans, variant);
        int bad_rows = 0;
        for (int i = 0; i < M; i++) {
          gm_matmul_f32_torch(A + (size_t)i * K, K, B, ldb, trans, bs, alpha, row, N, 1, N, K, 2);
          bad_rows += test_count_diff(row, C2 + (size_t)i * N, (size_t)N) != 0;
        }
        CHECK(bad_rows == 0, "shape %zu trans %d variant %d: %d rows alone differ from the whole product", s, trans,
              variant, bad_rows);
      }
    free(A); free(B); free(bias); free(C1); free(C2); free(C3); free(row);
  }
}

int main(void) {
  test_torch();
  test_kernels();
  return test_done("test_matmul_f32");
}
