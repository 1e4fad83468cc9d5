// The intel-amx f16 product orders of src/kernels/matmul/matmul_torch_f16.c against their definitions
// (written out here in plain C), for the fast kernels and whatever GPTMEG_SIMD selects:
// - one row against B as stored with M * N * K > 16^3: oneDNN's one chain over all of K, acc = acc +
//   a[k] * b[k] from zero, then bias + acc (gm_matmul_f16_torch, gm_matmul_f16_torch_h on f16 bits,
//   gm_matmul_f16_onednn); 16^3 or fewer multiply-adds keep ATen's four partial sums;
// - more rows against B transposed: the K-blocked chains (blocks of 512 to K = 1024, else 1024),
//   through the strip kernel, on f32 and on f16 bits (the lm_head).
// That these orders are torch's is measured elsewhere (tools/ref/probe_f16_onerow.py,
// tools/ref/probe_f16_amx_order.py, test_grad, test_linear_bwd); this test holds the fast paths to them.
#include "gptmeg/core.h"
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static uint32_t rng = 12345u;
static float rnd(float scale) {
  rng = rng * 1664525u + 1013904223u;
  return gm_f16_to_f32(gm_f32_to_f16(((float)(rng >> 8) / 16777216.0f - 0.5f) * scale));
}

static float chain(const float *a, const float *b, size_t sb, int K, int bs) {
  float tot = 0.0f;
  for (int k0 = 0; k0 < K; k0 += bs) {
    float acc = 0.0f;
    for (int k = k0; k < K && k < k0 + bs; k++) acc = acc + a[k] * b[(size_t)k * sb];
    tot = k0 ? tot + acc : acc;
  }
  return tot;
}

static float dot4(const float *a, const float *b, size_t sb, int K) {
  float p[4] = {0, 0, 0, 0};
  int l = 0;
  for (; l + 4 <= K; l += 4)
    for (int k = 0; k < 4; k++) p[k] = p[k] + a[l + k] * b[(size_t)(l + k) * sb];
  for (; l < K; l++) p[0] = p[0] + a[l] * b[(size_t)l * sb];
  return ((p[0] + p[1]) + p[2]) + p[3];
}

int main(void) {
  gm_torch_target_set(GM_TT_INTEL_AMX);
  const int one_row[][2] = {{768, 2304}, {3072, 768}, {50257, 40}, {100, 1500}, {33, 17}, {16, 16}};
  const int n1 = test_quick() ? 4 : 6;
  for (int s = 0; s < n1; s++) {
    const int K = one_row[s][0], N = one_row[s][1];
    float *a = malloc((size_t)K * 4), *B = malloc((size_t)K * N * 4), *bias = malloc((size_t)N * 4);
    float *c1 = malloc((size_t)N * 4), *c2 = malloc((size_t)N * 4), *c3 = malloc((size_t)N * 4), *want = malloc((size_t)N * 4);
    uint16_t *Bh = malloc((size_t)K * N * 2);
    for (int k = 0; k < K; k++) a[k] = rnd(1.0f);
    for (size_t i = 0; i < (size_t)K * N; i++) {
      B[i] = rnd(0.1f);
      Bh[i] = gm_f32_to_f16(B[i]);
    }
    for (int j = 0; j < N; j++) bias[j] = rnd(1.0f);
    const bool onednn = (double)N * K > 4096.0;
    for (int j = 0; j < N; j++) want[j] = bias[j] + (onednn ? chain(a, B + j, (size_t)N, K, K) : dot4(a, B + j, (size_t)N, K));
    gm_matmul_f16_torch(a, K, B, N, false, bias, 1.0f, c1, N, 1, N, K, 2);
    gm_matmul_f16_torch_h(a, K, Bh, N, false, bias, 1.0f, c2, N, 1, N, K, 2);
    gm_matmul_f16_onednn(a, K, false, B, N, false, bias, 1.0f, c3, N, 1, N, K, 2);
    CHECK(test_count_diff(c1, want, (size_t)N) == 0, "one row K %d N %d: gm_matmul_f16_torch", K, N);
    CHECK(test_count_diff(c2, want, (size_t)N) == 0, "one row K %d N %d: gm_matmul_f16_torch_h", K, N);
    if (onednn) CHECK(test_count_diff(c3, want, (size_t)N) == 0, "one row K %d N %d: gm_matmul_f16_onednn", K, N);
    free(a), free(B), free(bias), free(c1), free(c2), free(c3), free(want), free(Bh);
  }
  const int rows_t[][3] = {{5, 1100, 70}, {3, 768, 130}, {2, 300, 65}}; // M, K, N: B^T [N, K]
  for (int s = 0; s < 3; s++) {
    const int M = rows_t[s][0], K = rows_t[s][1], N = rows_t[s][2];
    float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)N * K * 4);
    float *c1 = malloc((size_t)M * N * 4), *c2 = malloc((size_t)M * N * 4), *want = malloc((size_t)M * N * 4);
    uint16_t *Bh = malloc((size_t)N * K * 2);
    for (size_t i = 0; i < (size_t)M * K; i++) A[i] = rnd(1.0f);
    for (size_t i = 0; i < (size_t)N * K; i++) {
      B[i] = rnd(0.1f);
      Bh[i] = gm_f32_to_f16(B[i]);
    }
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) want[(size_t)i * N + j] = chain(A + (size_t)i * K, B + (size_t)j * K, 1, K, K <= 1024 ? 512 : 1024);
    gm_matmul_f16_torch(A, K, B, K, true, NULL, 1.0f, c1, N, M, N, K, 2);
    gm_matmul_f16_torch_h(A, K, Bh, K, true, NULL, 1.0f, c2, N, M, N, K, 2);
    CHECK(test_count_diff(c1, want, (size_t)M * N) == 0, "%d rows against B^T, K %d: gm_matmul_f16_torch", M, K);
    CHECK(test_count_diff(c2, want, (size_t)M * N) == 0, "%d rows against B^T, K %d: gm_matmul_f16_torch_h", M, K);
    free(A), free(B), free(c1), free(c2), free(want), free(Bh);
  }
  // op(A) = A^T (the linears' dW): chains of 512 at any K, through the f32 chains in row blocks;
  // K 1100 and 2500 tell 512 from the 1024 of A as stored; M 700 x K 2500 takes several row blocks
  const int rows_ta[][4] = {{70, 1100, 33, 0}, {40, 300, 65, 1}, {700, 2500, 20, 0}, {9, 2500, 40, 1}}; // M, K, N, trans_b
  for (int s = 0; s < (test_quick() ? 2 : 4); s++) {
    const int M = rows_ta[s][0], K = rows_ta[s][1], N = rows_ta[s][2];
    const bool tb = rows_ta[s][3] != 0;
    float *A = malloc((size_t)K * M * 4), *B = malloc((size_t)N * K * 4), *bias = malloc((size_t)N * 4);
    float *At = malloc((size_t)M * K * 4), *c1 = malloc((size_t)M * N * 4), *want = malloc((size_t)M * N * 4);
    for (size_t i = 0; i < (size_t)K * M; i++) A[i] = rnd(1.0f); // A [K, M]
    for (size_t i = 0; i < (size_t)N * K; i++) B[i] = rnd(0.1f);
    for (int j = 0; j < N; j++) bias[j] = rnd(1.0f);
    for (int k = 0; k < K; k++)
      for (int i = 0; i < M; i++) At[(size_t)i * K + k] = A[(size_t)k * M + i];
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++)
        want[(size_t)i * N + j] =
            bias[j] + 0.5f * chain(At + (size_t)i * K, tb ? B + (size_t)j * K : B + j, tb ? 1 : (size_t)N, K, 512);
    for (int th = 1; th <= 2; th++) {
      gm_matmul_f16_onednn(A, M, true, B, tb ? K : N, tb, bias, 0.5f, c1, N, M, N, K, th);
      CHECK(test_count_diff(c1, want, (size_t)M * N) == 0, "A^T [%d, %d] against %s, N %d, %d threads: gm_matmul_f16_onednn", M, K,
            tb ? "B^T" : "B", N, th);
    }
    free(A), free(B), free(bias), free(At), free(c1), free(want);
  }
  return test_done("test_f16_amx_rows");
}
