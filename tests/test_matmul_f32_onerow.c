// torch's f32 one-row products under MKL's Intel AVX-512 sgemm (issue 23): its one-row kernel with B
// as stored (GM_F32_BLOCKS_INTEL_ROW8, gm_f32_torch_row8: a decode step's Conv1D) on 1 to 16 threads
// (K cut into t parts, gm_f32_torch_kparts), and its one-row kernel against B^T with alpha != 1
// (GM_F32_BLOCKS_INTEL_GEMV, C = fma(alpha, r, bias): a decode step's baddbmm scores) on 1 and 2.
// Goldens: tests/golden/targets/<target>/matmul_onerow/f32_onerow.safetensors for each target whose
// host made one (tools/ref/gen_matmul_onerow_goldens.py, the real torch 2.15; intel-avx512-fp16's on an Intel Xeon
// with AVX512-FP16), each checked under its target (the f32 sgemm is the same MKL kernel under the
// four Intel AVX-512 targets); at least one must exist. For every product and thread count t torch
// ran it on:
//   - gm_matmul_f32_torch_mt with torch_threads = t gives torch's bits (whole rows: the leftover
//     columns too), whatever the work's thread count (1, 2) and SIMD path (native, avx2: the
//     definition, scalar);
//   - the op layer (gm_op_matmul, f32, c->threads = t) gives them too;
//   - gptmeg cuts K exactly where torch's t-thread bits differ from its 1-thread bits, on both sides
//     of each threshold, so a rule off by one K or N could not pass; against B^T it splits the
//     columns wherever torch's 2-thread bits differ.
#include "harness.h"

#include "gptmeg/kernels.h"
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { OP_ADDMM, OP_MM, OP_ADDMM_T, OP_MM_T, OP_BMM_BF16_T, OP_LINEAR_BF16_T } op_kind;
static const char *OP_NAMES[] = {"addmm", "mm", "addmm_t", "mm_t", "bmm_bf16_t", "linear_bf16_t"};
typedef struct {
  op_kind op; // addmm(bias, a, B, alpha), mm(a, B); _t: against W^T (W [N, K]), mm_t with alpha (beta 0)
  int K, N;
  float alpha;
  int threads[12]; // ending in 0; the first is 1
} product;

// The generator's PRODUCTS, in its order (p<index>.t<threads>).
static const product PRODUCTS[] = {
    {OP_ADDMM, 768, 768, 1.0f, {1, 2, 3, 4, 8}},
    {OP_ADDMM, 768, 2304, 1.0f, {1, 2, 4, 5}},
    {OP_ADDMM, 768, 3072, 1.0f, {1, 2, 8}},
    {OP_ADDMM, 3072, 768, 1.0f, {1, 2, 3, 4, 5, 6, 7, 8, 12, 16}},
    {OP_ADDMM, 255, 100, 1.0f, {1, 2}},
    {OP_ADDMM, 256, 100, 1.0f, {1, 2}},
    {OP_ADDMM, 383, 100, 1.0f, {1, 3}},
    {OP_ADDMM, 384, 100, 1.0f, {1, 3}},
    {OP_ADDMM, 768, 1001, 1.0f, {1, 2}},
    {OP_ADDMM, 768, 1002, 1.0f, {1, 2}},
    {OP_ADDMM, 1000, 2003, 1.0f, {1, 4}},
    {OP_ADDMM, 1000, 2004, 1.0f, {1, 4}},
    {OP_ADDMM, 999, 40, 1.0f, {1, 2}},
    {OP_ADDMM, 999, 41, 1.0f, {1, 2}},
    {OP_ADDMM, 1000, 41, 1.0f, {1, 2}},
    {OP_ADDMM, 999, 69, 1.0f, {1, 2}},
    {OP_ADDMM, 999, 70, 1.0f, {1, 2}},
    {OP_ADDMM, 100, 50, 1.0f, {1}},
    {OP_ADDMM, 13, 40, 1.0f, {1}},
    {OP_ADDMM, 5, 3, 1.0f, {1}},
    {OP_MM, 1000, 1009, 1.0f, {1, 2}},
    {OP_ADDMM, 768, 768, 0.3f, {1}},
    {OP_ADDMM_T, 768, 768, 0.3f, {1, 2}},
    {OP_ADDMM_T, 768, 2053, 0.3f, {1, 2}},
    {OP_ADDMM_T, 64, 17, 0.3f, {1}},
    {OP_MM_T, 64, 300, (float)(0.125 / 3), {1, 2}},
    {OP_BMM_BF16_T, 64, 40, 1.0f, {1}},
    {OP_BMM_BF16_T, 64, 70, 1.0f, {1}},
    {OP_LINEAR_BF16_T, 64, 40, 1.0f, {1}},
    {OP_MM_T, 1024, 8193, 1.0f, {1, 3, 4, 8}},
    {OP_MM_T, 768, 8193, 1.0f, {1, 6}},
    // below 8192 columns on 3..8 threads: t chunks from the 2-thread split's smallest N
    {OP_MM_T, 384, 65, 1.0f, {1, 3, 8}},
    {OP_MM_T, 384, 57, 1.0f, {1, 3}},
    {OP_MM_T, 1600, 33, 1.0f, {1, 5, 7}},
    // below 8192 columns on 9 to 32 threads: t chunks from 2280 multiply-adds a thread (9..12) or 4700
    // and 3 columns (13..32), else one
    {OP_MM_T, 768, 65, 1.0f, {1, 9, 12, 14, 16}},
    {OP_MM_T, 1024, 100, 1.0f, {1, 10, 16, 20, 32}},
    {OP_MM_T, 384, 65, 1.0f, {1, 10, 11, 16}},
    {OP_MM_T, 1790, 57, 1.0f, {1, 20}},
};
enum { KA = 3072, NB = 3072, N_MAX = 8193, N_RUNS = 94 }; // N_MAX x 1024 fits B's and Bt's KA x NB

// The bf16 probes (the generator's probe_bf16): one row of ones against W [N, K] of ones with +2^40
// at i_n = 7 n % K and -2^40 at j_n = (13 n + 5) % K (+1 if equal), as a slice of the attention's
// batched q @ k^T (gm_matmul_bf16_slice) or as a plain F.linear (gm_matmul_bf16); 0 when they match.
static int check_bf16_probe(const char *file, const char *name, op_kind op, int K, int N, const float *ref) {
  float *a = malloc(sizeof(float) * K), *W = malloc(sizeof(float) * K * N), *C = malloc(sizeof(float) * N);
  int bad = N;
  if (a && W && C) {
    for (int k = 0; k < K; k++) a[k] = 1.0f;
    for (int n = 0; n < N; n++) {
      int i = 7 * n % K, j = (13 * n + 5) % K;
      if (j == i) j = (j + 1) % K;
      for (int k = 0; k < K; k++) W[(size_t)n * K + k] = k == i ? 0x1p40f : k == j ? -0x1p40f : 1.0f;
    }
    if (op == OP_BMM_BF16_T) gm_matmul_bf16_slice(a, K, false, W, K, true, NULL, 1.0f, C, N, 1, N, K, 1, 12, 1);
    else gm_matmul_bf16(a, K, W, K, true, NULL, 1.0f, C, N, 1, N, K, 1);
    gm_round_inplace(GM_BF16, C, (size_t)N);
    bad = test_count_diff(C, ref, (size_t)N);
  }
  CHECK(bad == 0, "%s %s 1 x %d x %d: %d of %d outputs differ from torch", file, name, K, N, bad, N);
  free(a), free(W), free(C);
  return bad;
}

// Every check above on one golden file, under target; 0 when the file is absent.
static int check_file(int target) {
  char file[1024];
  gm_safetensors st;
  gm_profile prof;
  float *bias;
  if (!test_open_f32_golden(target, "matmul_onerow/f32_onerow.safetensors", &st, file, sizeof file, &prof, NB, &bias))
    return 0;
  float *a = malloc(sizeof(float) * KA), *B = malloc(sizeof(float) * KA * NB), *C = malloc(sizeof(float) * N_MAX);
  float *Bt = malloc(sizeof(float) * KA * NB);
  CHECK(a && B && Bt && C, "out of memory");
  if (!a || !B || !Bt || !C || !bias) {
    free(a), free(B), free(Bt), free(C), free(bias);
    gm_st_close(&st);
    return 1;
  }
  test_formula_a(a, 1, KA);
  test_formula_b(B, KA, NB);
  int runs = 0, cut = 0;
  for (size_t q = 0; q < sizeof PRODUCTS / sizeof PRODUCTS[0]; q++) {
    const product *p = &PRODUCTS[q];
    const int K = p->K, N = p->N;
    const bool trans = p->op == OP_ADDMM_T || p->op == OP_MM_T;
    const float *bp = p->op == OP_MM || p->op == OP_MM_T ? NULL : bias;
    // wider than NB (B^T only, the t-chunk column split): B [K, N] by the same formula in B's room
    const int ldB = N > NB ? N : NB;
    if (N > NB) test_formula_b(B, K, N);
    if (trans) // W = B[:K, :N]^T contiguous
      for (int j = 0; j < N; j++)
        for (int k = 0; k < K; k++) Bt[(size_t)j * K + k] = B[(size_t)k * ldB + j];
    if (N > NB) test_formula_b(B, KA, NB);
    const float *Bp = trans ? Bt : B;
    const int ldb = trans ? K : NB;
    float *ref1 = NULL;
    for (int ti = 0; p->threads[ti]; ti++) {
      const int t = p->threads[ti];
      char name[32];
      snprintf(name, sizeof name, "p%zu.t%d", q, t);
      int64_t r0 = 0, r1 = 0;
      float *ref = test_st_f32(&st, name, &r0, &r1);
      CHECK(ref && r0 == 1 && r1 == N, "%s: %s missing or not 1 x %d", file, name, N);
      if (!ref) continue;
      if (p->op == OP_BMM_BF16_T || p->op == OP_LINEAR_BF16_T) {
        check_bf16_probe(file, name, p->op, K, N, ref);
        printf("  %-13s 1 x %4d x %4d: the summation order's probe\n", OP_NAMES[p->op], K, N);
        runs++;
        free(ref);
        continue;
      }
      if (t == 1) ref1 = ref;
      const bool differs = ref1 && ref1 != ref && test_count_diff(ref, ref1, (size_t)N) > 0;
      cut += differs;
      for (size_t pa = 0; pa < TEST_N_PATHS; pa++) {
        if (TEST_PATHS[pa].simd) test_set_simd(TEST_PATHS[pa].simd);
        memset(C, 0xff, sizeof(float) * (size_t)N);
        int rc = gm_matmul_f32_torch_mt(a, K, false, Bp, ldb, trans, bp, p->alpha, C, N, 1, N, K, TEST_PATHS[pa].threads, t);
        int bad = test_count_diff(C, ref, (size_t)N);
        CHECK(rc == 0 && bad == 0, "%s 1 x %d x %d alpha %g, torch on %d threads, %s: %d of %d outputs differ from torch",
              OP_NAMES[p->op], K, N, (double)p->alpha, t, TEST_PATHS[pa].name, bad, N);
        test_set_simd(NULL);
      }
      gm_op_ctx c; // the op layer at c->threads = t
      gm_op_ctx_init(&c, &prof, t, NULL, NULL);
      memset(C, 0xff, sizeof(float) * (size_t)N);
      gm_op_matmul(&c, a, K, Bp, ldb, trans, bp, p->alpha, C, N, 1, N, K);
      int bad = test_count_diff(C, ref, (size_t)N);
      CHECK(bad == 0, "gm_op_matmul 1 x %d x %d, %d threads: %d of %d differ from torch", K, N, t, bad, N);
      // the cut gptmeg makes: K parts (B as stored) or the column split (B^T)
      const int kp = trans || p->alpha != 1.0f ? 1 : gm_f32_torch_kparts(GM_MKL_SGEMM_INTEL_AVX512, 1, N, K, false, t);
      const int ns = trans ? gm_f32_torch_nsplit(GM_MKL_SGEMM_INTEL_AVX512, 1, N, K, true, p->alpha, t) +
                             gm_f32_torch_nchunks(GM_MKL_SGEMM_INTEL_AVX512, 1, N, K, true, t)
                           : 0;
      // (a column split at a multiple of 4 gives the 1-thread bits: only 'torch differs -> gptmeg splits' holds)
      CHECK(t == 1 || (trans ? !differs || ns > 0 : (kp > 1) == differs),
            "%s 1 x %d x %d, %d threads: gptmeg cuts %s where torch's bits %s its 1-thread bits", OP_NAMES[p->op], K, N,
            t, kp > 1 || ns ? "K or the columns" : "nothing", differs ? "differ from" : "equal");
      printf("  %-7s 1 x %4d x %4d, %2d threads: %2d K part(s), columns split at %4d, torch's bits %s its 1-thread bits\n",
             OP_NAMES[p->op], K, N, t, kp, ns, differs ? "differ from" : "equal");
      runs++;
      if (ref != ref1) free(ref);
    }
    free(ref1);
  }
  CHECK(runs == N_RUNS, "ran %d of %d product and thread count pairs", runs, N_RUNS);
  CHECK(cut >= 32, "only %d runs where torch's bits differ from its 1-thread bits (expected 32 or more)", cut);
  free(a), free(B), free(Bt), free(C), free(bias);
  gm_st_close(&st);
  gm_torch_target_unset();
  return 1;
}

int main(void) {
  CHECK(test_intel_targets(false, check_file) >= 1, "no tests/golden/targets/*/matmul_onerow/f32_onerow.safetensors (tools/ref/gen_matmul_onerow_goldens.py)");
  return test_done("test_matmul_f32_onerow");
}
