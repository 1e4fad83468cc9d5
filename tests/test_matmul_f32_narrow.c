// torch's f32 B^T products whose last 1 or 2 columns MKL's Intel AVX-512 sgemm leaves to its narrow
// kernel on 3 to 24 threads (issue 23; gm_f32_torch_narrow, gm_f32_torch_narrow_dot). Goldens:
// tests/golden/targets/<target>/matmul_mt/f32_narrow.safetensors for each target whose host made
// one (tools/ref/gen_matmul_narrow_goldens.py, the real torch 2.15; intel-avx512-fp16's on an Intel
// Xeon with AVX512-FP16), each checked under its target; at least one must exist. For every product
// and thread count t torch ran it on:
//   - gm_matmul_f32_torch_mt with torch_threads = t gives torch's bits on every output, whatever
//     the work's thread count (1, 2) and SIMD path (native, avx2, scalar);
//   - the op layer (gm_op_matmul, f32, c->threads = t) gives them too;
//   - gptmeg runs the narrow kernel on the products where torch does (a 384-wide GPT-2's lm_head
//     against 65 characters on 3, 4 and 8..24 threads, 2 columns, K below 384, the row-grouped
//     cut's rows by parity and group) and not on 2 threads, and the row-grouped cut's work edge
//     where t / kg is odd (320320 / 320400 on 10 threads) holds on both sides; K below 384 (a
//     256-wide GPT-2's lm_head: few rows outside the dot kernel on 3 and 4 threads, 17..31 rows in
//     two groups from the cut's work edges); and it runs none beside them (3 columns at 12 rows, K
//     2227 and 2107, 209 columns on 20 threads, 2 chunks of the cut, 97 columns at K 340).
#include "harness.h"

#include "gptmeg/kernels.h"
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int M, K, N;
  int threads[8]; // ending in 0; the first is 1
} product;

// The generator's PRODUCTS, in its order (p<index>.t<threads>): F.linear(A, W, bias), W [N, K].
static const product PRODUCTS[] = {
    {8, 384, 65, {1, 2, 3, 4}},   {11, 604, 34, {1, 3}},  {10, 302, 193, {1, 8}},
    {12, 384, 65, {1, 8, 10, 12, 14, 16}},
    {13, 384, 65, {1, 16}},       {17, 384, 65, {1, 16, 24}}, {31, 384, 65, {1, 16}},
    {20, 495, 50, {1, 16}},       {11, 364, 80, {1, 10}},  {8, 445, 90, {1, 10}},
    // where MKL runs none (a last chunk of 3 columns at 12 rows, K above 1024 or 800, more than 98
    // columns on more than 10 threads)
    {12, 355, 35, {1, 4}},        {12, 2227, 50, {1, 9}},  {14, 2107, 17, {1, 10}}, {10, 302, 209, {1, 20}},
    // the row-grouped cut in 4 and 2 parts: narrow; 16 + 2 columns on 10 threads and 20 rows at K 1600
    // keep the cut's order
    {4, 1600, 145, {1, 16}},      {4, 1600, 146, {1, 16}}, {9, 2047, 34, {1, 14}},  {7, 2680, 18, {1, 10}},
    {20, 1600, 97, {1, 64}},
    // K below 384: few rows outside the dot kernel on 3 and 4 threads, 17..31 rows in two groups
    // without a K cut from the cut's work edges (not 17 rows on 8 threads, 19 on 10), none at 97
    {12, 256, 65, {1, 3, 4}},     {20, 256, 65, {1, 8, 10, 12, 16}}, {17, 256, 65, {1, 8}},
    {19, 256, 65, {1, 10}},       {31, 256, 65, {1, 16}},  {27, 340, 97, {1, 8}},
};
enum { NB = 220, N_RUNS = 61 };

// Every check above on one golden file, under target; 0 when the file is absent.
static int check_file(int target) {
  char file[1024];
  gm_safetensors st;
  gm_profile prof;
  float *bias;
  if (!test_open_f32_golden(target, "matmul_mt/f32_narrow.safetensors", &st, file, sizeof file, &prof, NB, &bias))
    return 0;
  int runs = 0, narrow = 0, narrow_differs = 0;
  for (size_t q = 0; q < sizeof PRODUCTS / sizeof PRODUCTS[0] && bias; q++) {
    const product *p = &PRODUCTS[q];
    const int M = p->M, K = p->K, N = p->N;
    // the generator's formulas, float32 correctly rounded: A (M x K), W = B^T contiguous (N x K)
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    float *W = malloc(sizeof(float) * N * K), *C = malloc(sizeof(float) * M * N);
    CHECK(A && B && W && C, "out of memory for %d x %d x %d", M, K, N);
    if (!A || !B || !W || !C) {
      free(A); free(B); free(W); free(C);
      continue;
    }
    test_formula_a(A, M, K);
    test_formula_b(B, K, N);
    for (int j = 0; j < N; j++)
      for (int k = 0; k < K; k++) W[(size_t)j * K + k] = B[(size_t)k * N + j];
    for (int ti = 0; p->threads[ti]; ti++) {
      const int t = p->threads[ti];
      char name[32];
      snprintf(name, sizeof name, "p%zu.t%d", q, t);
      int64_t r0 = 0, r1 = 0;
      float *ref = test_st_f32(&st, name, &r0, &r1);
      CHECK(ref && r0 == M && r1 == N, "%s: %s missing or not %d x %d", file, name, M, N);
      if (!ref) continue;
      for (size_t pa = 0; pa < TEST_N_PATHS; pa++) {
        if (TEST_PATHS[pa].simd) test_set_simd(TEST_PATHS[pa].simd);
        memset(C, 0xff, sizeof(float) * (size_t)M * N);
        int rc = gm_matmul_f32_torch_mt(A, K, false, W, K, true, bias, 1.0f, C, N, M, N, K, TEST_PATHS[pa].threads, t);
        int bad = test_count_diff(C, ref, (size_t)M * N);
        CHECK(rc == 0 && bad == 0, "%d x %d x %d B^T, torch on %d threads, %s: %d of %d outputs differ from torch", M, K, N,
              t, TEST_PATHS[pa].name, bad, M * N);
        test_set_simd(NULL);
      }
      gm_op_ctx c; // the op layer at c->threads = t
      gm_op_ctx_init(&c, &prof, t, NULL, NULL);
      memset(C, 0xff, sizeof(float) * (size_t)M * N);
      gm_op_matmul(&c, A, K, W, K, true, bias, 1.0f, C, N, M, N, K);
      int bad = test_count_diff(C, ref, (size_t)M * N);
      CHECK(bad == 0, "gm_op_matmul %d x %d x %d B^T, %d threads: %d of %d differ from torch", M, K, N, t, bad, M * N);
      // the narrow columns' own order: the last nar columns of each row again without it (one FMA
      // chain onto the bias, the unpacked order's where K <= 384) differ from torch's somewhere
      const int nar = gm_f32_torch_narrow(GM_MKL_SGEMM_INTEL_AVX512, M, N, K, true, 1.0f, t);
      int chain_bad = 0;
      for (int i = 0; i < M && nar; i++)
        for (int j = N - nar; j < N; j++) {
          float s = 0.0f;
          for (int k = 0; k < K; k++) s = fmaf(A[(size_t)i * K + k], W[(size_t)j * K + k], s);
          chain_bad += bias[j] + s != ref[(size_t)i * N + j];
        }
      narrow += nar > 0;
      narrow_differs += chain_bad > 0;
      printf("  %2d x %3d x %3d B^T, %2d threads: %d narrow column(s)%s\n", M, K, N, t, nar,
             nar ? (chain_bad ? ", torch's leave one FMA chain's bits" : ", as one FMA chain") : "");
      runs++;
      free(ref);
    }
    free(A); free(B); free(W); free(C);
  }
  CHECK(runs == N_RUNS, "ran %d of %d product and thread count pairs", runs, N_RUNS);
  CHECK(narrow >= 24 && narrow_differs >= 24, "only %d runs with narrow columns (expected 24 or more), %d where they "
        "leave one FMA chain's bits (expected 24 or more)", narrow, narrow_differs);
  free(bias);
  gm_st_close(&st);
  gm_torch_target_unset();
  return 1;
}

int main(void) {
  CHECK(test_intel_targets(false, check_file) >= 1,
        "no tests/golden/targets/*/matmul_mt/f32_narrow.safetensors (tools/ref/gen_matmul_narrow_goldens.py)");
  return test_done("test_matmul_f32_narrow");
}
