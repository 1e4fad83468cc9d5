// torch's 2-thread f32 orders under MKL's Intel AVX-512 sgemm (intel-amx target; issue 23):
// tests/golden/targets/intel-amx/matmul_mt/f32_mt.safetensors (tools/ref/gen_matmul_mt_goldens.py,
// the real torch 2.15 on an Intel Xeon with AMX, 1 and 2 threads). For every golden product and
// every path (the work on 1 and 2 threads, the AVX2 and scalar caps):
//   - gm_matmul_f32_torch_mt with torch_threads = 1 gives torch's 1-thread bits (out1) and with
//     torch_threads = 2 torch's 2-thread bits (out2), bit for bit: the K split with and without a
//     bias (around its M N K threshold, and around the band of N that keeps one thread's bits), the
//     one-row linear's column split (around its minimum N);
//   - where torch's two results differ, gptmeg's two differ likewise (so a broken 2-thread path
//     cannot pass as the 1-thread one), and at least one product of each kind differs;
//   - the op layer (gm_op_matmul, f32, c->threads = 1 and 2) gives the same bits as torch at that
//     thread count: the forward's products follow torch's thread count.
#include "harness.h"

#include "gptmeg/kernels.h"
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { OP_ADDMM, OP_MM, OP_LINEAR_B, OP_LINEAR } op_kind;
typedef struct {
  int group;
  op_kind op;
  int M, N;
} product;

// The generator's GROUPS, in its order (s<group>.p<index>).
static const product PRODUCTS[] = {
    {0, OP_ADDMM, 4, 16}, {0, OP_ADDMM, 3, 16},  {0, OP_ADDMM, 2, 16},  {0, OP_MM, 4, 16},     {0, OP_LINEAR_B, 4, 16},
    {1, OP_ADDMM, 16, 16}, {1, OP_ADDMM, 15, 16}, {1, OP_MM, 16, 16},    {1, OP_MM, 12, 16},    {2, OP_LINEAR, 1, 41},
    {2, OP_LINEAR, 1, 33}, {2, OP_LINEAR, 1, 38}, {3, OP_LINEAR, 1, 129}, {3, OP_LINEAR, 1, 121}, {3, OP_LINEAR, 1, 126},
    {4, OP_LINEAR, 1, 513}, {4, OP_LINEAR, 1, 505}, {5, OP_MM, 2, 378},    {5, OP_MM, 2, 379},    {5, OP_MM, 2, 755},
    {5, OP_MM, 2, 756}};
static const char *OP_NAMES[] = {"addmm", "mm", "linear_b", "linear"};

typedef struct {
  const char *name, *simd; // GPTMEG_SIMD cap, NULL for none
  int threads;
} path;
static const path PATHS[] = {{"1 thread", NULL, 1}, {"2 threads", NULL, 2}, {"avx2, 2 threads", "avx2", 2},
                             {"scalar", "scalar", 1}};

int main(void) {
  char buf[1024];
  const char *file = test_golden_for(GM_TT_INTEL_AMX, "matmul_mt/f32_mt.safetensors", buf, sizeof buf);
  gm_safetensors st;
  if (gm_st_open(&st, file)) {
    CHECK(0, "%s", gm_errmsg());
    return test_done("test_matmul_f32_mt");
  }
  gm_torch_target_set(GM_TT_INTEL_AMX);
  gm_profile prof;
  CHECK(gm_profile_get("hf", GM_F32, &prof) == 0, "profile hf f32: %s", gm_errmsg());
  const int n_paths = test_quick() ? 2 : (int)(sizeof PATHS / sizeof PATHS[0]);
  int split_kinds[4] = {0}, products = 0, n_differ = 0;
  int group = -1, pi = 0;
  int64_t MA = 0, K = 0, NB = 0;
  float *A = NULL, *B = NULL, *bias = NULL;
  for (size_t q = 0; q < sizeof PRODUCTS / sizeof PRODUCTS[0]; q++) {
    const product *p = &PRODUCTS[q];
    if (p->group != group) {
      free(A); free(B); free(bias);
      group = p->group;
      pi = 0;
      int64_t k2 = 0;
      A = test_matmul_golden_f32(&st, group, "A", &MA, &K);
      B = test_matmul_golden_f32(&st, group, "B", &k2, &NB);
      if (!B) B = test_matmul_golden_f32(&st, group, "W", &NB, &k2); // W [NB, K]: the one-row linears
      if (!B && A) { // not stored: B [K, NB] = ((31 k + 17 n) % 97 - 48) / 64 (the generator's formula_b)
        NB = 0;
        for (size_t r = q; r < sizeof PRODUCTS / sizeof PRODUCTS[0] && PRODUCTS[r].group == group; r++)
          if (PRODUCTS[r].N > NB) NB = PRODUCTS[r].N;
        B = malloc(sizeof(float) * (size_t)K * NB);
        if (B) test_formula_b(B, (int)K, (int)NB);
        k2 = K;
      }
      bias = test_matmul_golden_f32(&st, group, "bias", NULL, NULL);
      CHECK(A && B && bias && k2 == K, "%s: group %d incomplete", file, group);
      if (!A || !B || !bias) break;
    }
    const int M = p->M, N = p->N;
    const size_t n = (size_t)M * N;
    char name[64];
    float *ref[2];
    int64_t r0 = 0, r1 = 0;
    for (int t = 0; t < 2; t++) {
      snprintf(name, sizeof name, "p%d.out%d", pi, t + 1);
      ref[t] = test_matmul_golden_f32(&st, group, name, &r0, &r1);
      CHECK(ref[t] && r0 == M && r1 == N, "%s: s%d.%s missing or not %d x %d", file, group, name, M, N);
    }
    pi++;
    if (!ref[0] || !ref[1]) break;
    // op(B) for this product: B [K, NB] read as its first N columns; B^T made contiguous; W's first N rows
    float *Bt = NULL;
    const float *Bp = B;
    int ldb = (int)NB;
    bool trans = p->op == OP_LINEAR || p->op == OP_LINEAR_B;
    if (p->op == OP_LINEAR_B) {
      Bt = malloc(sizeof(float) * (size_t)N * K);
      for (int j = 0; j < N; j++)
        for (int k = 0; k < K; k++) Bt[(size_t)j * K + k] = B[(size_t)k * NB + j];
      Bp = Bt;
      ldb = (int)K;
    } else if (p->op == OP_LINEAR) ldb = (int)K;
    const float *bp = p->op == OP_ADDMM || p->op == OP_LINEAR_B ? bias : NULL;
    const bool differ = test_count_diff(ref[0], ref[1], n) > 0;
    products++;
    n_differ += differ;
    if (differ) split_kinds[p->op]++;
    float *out = malloc(sizeof(float) * (n + 1)), *o1 = malloc(sizeof(float) * (n + 1));
    for (int pa = 0; pa < n_paths; pa++) {
      if (PATHS[pa].simd) test_set_simd(PATHS[pa].simd);
      for (int tt = 1; tt <= 2; tt++) {
        memset(out, 0xff, sizeof(float) * (n + 1));
        int rc = gm_matmul_f32_torch_mt(A, (int)K, false, Bp, ldb, trans, bp, 1.0f, out, N, M, N, (int)K,
                                        PATHS[pa].threads, tt);
        int bad = test_count_diff(out, ref[tt - 1], n);
        CHECK(rc == 0 && bad == 0, "%s %d x %d x %d, torch on %d thread(s), %s: %d of %zu differ from torch",
              OP_NAMES[p->op], M, (int)K, N, tt, PATHS[pa].name, bad, n);
        if (tt == 1) memcpy(o1, out, sizeof(float) * n);
        else
          CHECK((test_count_diff(o1, out, n) > 0) == differ, "%s %d x %d x %d, %s: gptmeg's 1- and 2-thread orders %s",
                OP_NAMES[p->op], M, (int)K, N, PATHS[pa].name, differ ? "agree where torch's differ" : "differ where torch's agree");
      }
      test_set_simd(NULL);
    }
    for (int th = 1; th <= 2; th++) { // the op layer at c->threads = th
      gm_op_ctx c;
      gm_op_ctx_init(&c, &prof, th, NULL, NULL);
      memset(out, 0xff, sizeof(float) * (n + 1));
      gm_op_matmul(&c, A, (int)K, Bp, ldb, trans, bp, 1.0f, out, N, M, N, (int)K);
      int bad = test_count_diff(out, ref[th - 1], n);
      CHECK(bad == 0, "gm_op_matmul %s %d x %d x %d, %d thread(s): %d of %zu differ from torch", OP_NAMES[p->op], M,
            (int)K, N, th, bad, n);
    }
    printf("  %-8s %3d x %4d x %3d: torch 1 vs 2 threads %s\n", OP_NAMES[p->op], M, (int)K, N, differ ? "differ" : "same");
    free(out); free(o1); free(Bt); free(ref[0]); free(ref[1]);
  }
  free(A); free(B); free(bias);
  gm_st_close(&st);
  CHECK(products == (int)(sizeof PRODUCTS / sizeof PRODUCTS[0]), "ran %d of %zu products", products,
        sizeof PRODUCTS / sizeof PRODUCTS[0]);
  CHECK(split_kinds[OP_ADDMM] > 0 && split_kinds[OP_MM] > 0 && split_kinds[OP_LINEAR] > 0,
        "the goldens lack a 2-thread order (addmm %d, mm %d, linear %d)", split_kinds[OP_ADDMM], split_kinds[OP_MM],
        split_kinds[OP_LINEAR]);
  printf("test_matmul_f32_mt: %d products, %d with torch's 2-thread bits differing from its 1-thread bits\n", products,
         n_differ);
  gm_torch_target_unset();
  return test_done("test_matmul_f32_mt");
}
