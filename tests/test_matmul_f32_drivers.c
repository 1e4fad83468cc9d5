// The f32 matmul's two AVX-512 drivers (matmul_torch_f32.c): the strip driver (shaped on Zen 4)
// and the blocked one (Intel cores: B packed per K block in groups of strips, the panel kernel),
// chosen by GPTMEG_F32_GEMM=strip|blocked. For the zen4 and intel-amx targets (K blocks of 192, of
// 384, halves, the 2-thread K split's schedule through gm_matmul_f32_torch_mt), B as stored and
// transposed, with and without bias, alpha 1 and not, and shapes across the blocking's edges (six-row
// tiles with every remainder, the 192-row panels, 64-column strips with partial vectors, groups of
// four strips, K across block ends): each driver on 1 and 2 threads gives the scalar definition's
// bits, output for output; so does op(A) = A^T through gm_matmul_f32_torch_mt (the AVX-512
// transpose of A against the scalar copy). (torch's own bits for these orders: test_ops, test_target_matmul_f32,
// test_matmul_f32_mt.) Without AVX-512 there is nothing to compare: skipped with the reason.
#include "harness.h"

#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"

#include <stdlib.h>
#include <string.h>

static float draw(gm_rng *r) { return (float)(0.5 * gm_rng_normal(r)); }

typedef struct {
  int M, N, K;
} shape;

static const shape SHAPES[] = {{7, 64, 1},     {8, 65, 3},     {13, 100, 64},   {16, 130, 191},  {17, 192, 192},
                               {23, 64, 383},  {31, 577, 384}, {40, 129, 385},  {64, 200, 767}, {97, 520, 768},
                               {200, 70, 800}, {193, 1030, 96}, {12, 64, 1537}, {385, 64, 130}};
static const shape QUICK[] = {{13, 100, 64}, {40, 129, 385}, {193, 130, 96}};

static const char *DRIVERS[] = {"strip", "blocked"};

int main(void) {
  if (gm_cpu_simd() < GM_SIMD_AVX512) {
    test_skip("f32 drivers", "no AVX-512 here: both drivers need it");
    return test_done("test_matmul_f32_drivers");
  }
  const shape *shapes = test_quick() ? QUICK : SHAPES;
  int n_shapes = test_quick() ? (int)(sizeof QUICK / sizeof *QUICK) : (int)(sizeof SHAPES / sizeof *SHAPES);
  const gm_torch_target targets[] = {GM_TT_ZEN4, GM_TT_INTEL_AMX};
  gm_rng r;
  gm_rng_seed(&r, 23);
  int compared = 0;
  for (int s = 0; s < n_shapes; s++) {
    int M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * N * K), *bias = malloc(sizeof(float) * N);
    float *ref = malloc(sizeof(float) * M * N), *C = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++) A[i] = draw(&r);
    for (int i = 0; i < N * K; i++) B[i] = draw(&r);
    for (int j = 0; j < N; j++) bias[j] = draw(&r);
    for (int t = 0; t < 2; t++) {
      gm_torch_target_set(targets[t]);
      for (int v = 0; v < 4; v++) {
        bool trans = v & 1, hb = v < 2;
        float alpha = v == 3 ? 0.375f : 1.0f;
        int ldb = trans ? K : N;
        gm_matmul_f32_torch_scalar(A, K, B, ldb, trans, hb ? bias : NULL, alpha, ref, N, M, N, K);
        for (int d = 0; d < 2; d++)
          for (int th = 1; th <= 2; th++) {
            setenv("GPTMEG_F32_GEMM", DRIVERS[d], 1);
            memset(C, 0xff, sizeof(float) * M * N);
            gm_matmul_f32_torch(A, K, B, ldb, trans, hb ? bias : NULL, alpha, C, N, M, N, K, th);
            int bad = test_count_diff(C, ref, (size_t)M * N);
            CHECK(bad == 0, "%s (M %d N %d K %d, trans %d, bias %d, alpha %g), %s driver, %d threads: %d of %d differ",
                  gm_torch_target_name(targets[t]), M, N, K, trans, hb, (double)alpha, DRIVERS[d], th, bad, M * N);
            // the 2-thread K split (intel-amx, K > 768): both halves' schedules through each driver
            if (targets[t] == GM_TT_INTEL_AMX && alpha == 1.0f && th == 2) {
              float *C1 = malloc(sizeof(float) * M * N);
              unsetenv("GPTMEG_F32_GEMM");
              test_set_simd("scalar");
              int rc0 = gm_matmul_f32_torch_mt(A, K, false, B, ldb, trans, hb ? bias : NULL, 1.0f, C1, N, M, N, K, 1, 2);
              test_set_simd(NULL);
              setenv("GPTMEG_F32_GEMM", DRIVERS[d], 1);
              int rc1 = gm_matmul_f32_torch_mt(A, K, false, B, ldb, trans, hb ? bias : NULL, 1.0f, C, N, M, N, K, 2, 2);
              bad = test_count_diff(C, C1, (size_t)M * N);
              CHECK(rc0 == 0 && rc1 == 0 && bad == 0, "intel-amx torch_threads 2 (M %d N %d K %d, trans %d, bias %d), %s driver: %d of %d differ from the scalar level",
                    M, N, K, trans, hb, DRIVERS[d], bad, M * N);
              free(C1);
            }
            unsetenv("GPTMEG_F32_GEMM");
            compared++;
          }
      }
      // op(A) = A^T (the backward's dW), A stored [K, M]: its AVX-512 transpose then either driver
      // gives the bits of the scalar level (scalar copy, scalar definition); under zen4 (whose
      // order trans_a does not change) also those of the definition on an explicit A^T copy
      float *At = malloc(sizeof(float) * M * K), *C1 = malloc(sizeof(float) * M * N);
      for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) At[(size_t)k * M + i] = A[(size_t)i * K + k];
      test_set_simd("scalar");
      int rc0 = gm_matmul_f32_torch_mt(At, M, true, B, N, false, bias, 1.0f, ref, N, M, N, K, 1, 1);
      test_set_simd(NULL);
      if (targets[t] == GM_TT_ZEN4) {
        gm_matmul_f32_torch_scalar(A, K, B, N, false, bias, 1.0f, C1, N, M, N, K);
        CHECK(test_count_diff(ref, C1, (size_t)M * N) == 0, "zen4 trans_a scalar (M %d N %d K %d): not the definition", M, N, K);
      }
      for (int d = 0; d < 2; d++) {
        setenv("GPTMEG_F32_GEMM", DRIVERS[d], 1);
        int rc1 = gm_matmul_f32_torch_mt(At, M, true, B, N, false, bias, 1.0f, C, N, M, N, K, 2, 1);
        unsetenv("GPTMEG_F32_GEMM");
        int bad = test_count_diff(C, ref, (size_t)M * N);
        CHECK(rc0 == 0 && rc1 == 0 && bad == 0, "%s trans_a (M %d N %d K %d), %s driver: %d of %d differ from the scalar level",
              gm_torch_target_name(targets[t]), M, N, K, DRIVERS[d], bad, M * N);
      }
      free(At);
      free(C1);
    }
    free(A); free(B); free(bias); free(ref); free(C);
  }
  printf("f32 drivers: %d products (2 targets x %d shapes x 4 variants x 2 drivers x 2 thread counts) against the scalar definition\n",
         compared, n_shapes);
  return test_done("test_matmul_f32_drivers");
}
