// The f32 matmul under every torch CPU target whose f32 goldens differ from zen4's
// (tests/golden/targets/<target>/matmul/f32.safetensors: tools/ref/gen_matmul_goldens.py run by
// the real torch on that class of CPU). For each target, each golden shape and product (addmm,
// addmm with alpha, linear, matmul, matmul with B transposed, bmm, baddbmm with alpha) and each
// path (1 and 2 threads at the CPU's level, AVX2 cap, scalar definition):
//   - every path gives the scalar definition's bits (the ISA is never a numerics choice);
//   - where gm_target_support_get says the target's f32 matmul is exact, every output matches;
//   - where it says not exact, the products whose order gptmeg knows for that target's MKL kernel
//     (gm_f32_torch_known) must match, and the whole file must NOT match (else the table is stale);
//     the share of identical outputs is printed.
#include "harness.h"

#include "gptmeg/kernels.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"

#include <stdlib.h>
#include <string.h>

#define ALPHA 0.35355339059327373f // the goldens' alpha (1/sqrt(8))

typedef struct {
  const char *name;
  bool trans, bias;
  float alpha;
} product;

static const product PRODUCTS[] = {{"addmm", false, true, 1.0f},   {"addmm_alpha", false, true, ALPHA},
                                   {"linear", true, true, 1.0f},   {"matmul", false, false, 1.0f},
                                   {"matmul_t", true, false, 1.0f}, {"bmm_t", true, false, 1.0f},
                                   {"baddbmm_t", true, false, ALPHA}};

typedef struct {
  const char *name;
  const char *simd; // GPTMEG_SIMD, NULL: the CPU's own level
  int threads;      // 0: the scalar definition
} path;

static const path PATHS[] = {{"1 thread", NULL, 1}, {"2 threads", NULL, 2}, {"AVX2 cap, 2 threads", "avx2", 2},
                             {"scalar definition", NULL, 0}};

// Whether gptmeg knows torch's order for this product under MKL kernel mkl (kernels.h): the AMD
// kernel for every golden shape; Intel AVX-512 with B as stored from two rows on, with B
// transposed from 16 rows on, while K fits one block of the small-row kernel's pattern, or from
// K = 24 * M on (the dot kernel; from N = 4 on below that); Intel AVX2 its small-matrix kernels
// (groups of 2 to 6 rows: M % 6 != 1).
static bool known(gm_mkl_sgemm mkl, int M, int N, int K, bool trans) {
  if (mkl == GM_MKL_SGEMM_AMD_AVX512) return true;
  if (mkl == GM_MKL_SGEMM_INTEL_AVX2) return M % 6 != 1;
  if (!trans) return M >= 2;
  if (M >= 2 && M <= 15 && N >= 2 && K >= 24 * M) return true;
  return M >= 2 && N >= 4 && (M >= 16 || K <= 64 || K < 24 * M);
}

static void run_path(const path *p, const float *A, const float *B, const product *pr, const float *bias, float *C, int M,
                     int N, int K) {
  int ldb = pr->trans ? K : N;
  if (p->simd) test_set_simd(p->simd);
  if (p->threads == 0)
    gm_matmul_f32_torch_scalar(A, K, B, ldb, pr->trans, pr->bias ? bias : NULL, pr->alpha, C, N, M, N, K);
  else gm_matmul_f32_torch(A, K, B, ldb, pr->trans, pr->bias ? bias : NULL, pr->alpha, C, N, M, N, K, p->threads);
  test_set_simd(NULL);
}

static void run_target(gm_torch_target t) {
  char buf[1024];
  const char *file = test_golden_for(t, "matmul/f32.safetensors", buf, sizeof buf);
  if (t != GM_TT_ZEN4 && !strstr(file, "/targets/")) return; // the same goldens as zen4 (test_ops)
  gm_torch_target_set(t);
  const gm_torch_target_info *ti = gm_torch_target_get_info(t);
  gm_target_support sup = gm_target_support_get(t, GM_KOP_MATMUL, GM_F32);
  gm_safetensors st;
  if (gm_st_open(&st, file)) {
    CHECK(0, "%s", gm_errmsg());
    return;
  }
  long same = 0, total = 0, known_same = 0, known_total = 0;
  int shapes = 0;
  for (int s = 0;; s++) {
    int64_t M, K, k2, N;
    float *A = test_matmul_golden_f32(&st, s, "A", &M, &K);
    if (!A) break;
    shapes++;
    float *B = test_matmul_golden_f32(&st, s, "B", &k2, &N), *Bt = test_matmul_golden_f32(&st, s, "Bt", NULL, NULL);
    float *bias = test_matmul_golden_f32(&st, s, "bias", NULL, NULL);
    size_t n = (size_t)M * N;
    float *C = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
    CHECK(B && Bt && bias && C && ref, "%s: shape %d incomplete", file, s);
    for (size_t o = 0; B && Bt && bias && C && ref && o < sizeof PRODUCTS / sizeof PRODUCTS[0]; o++) {
      const product *pr = &PRODUCTS[o];
      float *g = test_matmul_golden_f32(&st, s, pr->name, NULL, NULL);
      CHECK(g != NULL, "%s: shape %d lacks %s", file, s, pr->name);
      if (!g) continue;
      bool kn = known(ti->mkl, (int)M, (int)N, (int)K, pr->trans);
      run_path(&PATHS[3], A, pr->trans ? Bt : B, pr, bias, ref, (int)M, (int)N, (int)K);
      for (size_t p = 0; p < sizeof PATHS / sizeof PATHS[0]; p++) {
        run_path(&PATHS[p], A, pr->trans ? Bt : B, pr, bias, C, (int)M, (int)N, (int)K);
        int d_ref = test_count_diff(C, ref, n), d_torch = test_count_diff(C, g, n);
        CHECK(d_ref == 0, "%s s%d %s (M %d K %d N %d), %s: %d of %zu outputs differ from the scalar definition",
              ti->name, s, pr->name, (int)M, (int)K, (int)N, PATHS[p].name, d_ref, n);
        if (sup.exact || sup.partial || kn)
          CHECK(d_torch == 0, "%s s%d %s (M %d K %d N %d), %s: %d of %zu outputs differ from torch", ti->name, s,
                pr->name, (int)M, (int)K, (int)N, PATHS[p].name, d_torch, n);
        same += (long)(n - (size_t)d_torch);
        total += (long)n;
        if (kn) {
          known_same += (long)(n - (size_t)d_torch);
          known_total += (long)n;
        }
      }
      free(g);
    }
    free(A);
    free(B);
    free(Bt);
    free(bias);
    free(C);
    free(ref);
  }
  gm_st_close(&st);
  CHECK(shapes >= 10, "only %d shapes in %s", shapes, file);
  printf("  %-18s %s: %s; %ld of %ld outputs bit-identical to torch (%.1f%%); the known orders %ld of %ld\n", ti->name,
         sup.family, sup.exact ? "exact" : sup.partial ? "exact on the goldens' shapes" : "not exact", same, total, total ? 100.0 * same / total : 0.0, known_same,
         known_total);
  if (!sup.exact && !sup.partial)
    CHECK(same < total, "%s: every f32 golden output matches, but target_support.c says not exact (stale table)",
          ti->name);
  gm_torch_target_unset();
}

// One row against B^T under every target (the goldens hold no M = 1 product; the Intel AVX-512
// targets run MKL's one-row kernel there, docs/numerics.md): every path gives the scalar
// definition's bits, for K and N around the kernel's steps (16, 8, 32; N % 4 leftover columns).
static void one_row_paths(void) {
  static const int KS[] = {1, 2, 7, 16, 17, 24, 25, 33, 48, 49, 64, 65, 97, 768}, NS[] = {1, 2, 3, 4, 5, 6, 7, 70, 1031};
  for (int t = 0; t < GM_TT_N; t++) {
    gm_torch_target_set((gm_torch_target)t);
    for (size_t ki = 0; ki < sizeof KS / sizeof KS[0]; ki++)
      for (size_t ni = 0; ni < sizeof NS / sizeof NS[0]; ni++) {
        int K = KS[ki], N = NS[ni];
        float *a = malloc((size_t)K * sizeof(float)), *B = malloc((size_t)N * K * sizeof(float));
        float *bias = malloc((size_t)N * sizeof(float)), *ref = malloc((size_t)N * sizeof(float)), *C = malloc((size_t)N * sizeof(float));
        uint32_t x = 12345u + (uint32_t)(K * 131 + N);
        for (int i = 0; i < K; i++) a[i] = (float)((x = x * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
        for (int i = 0; i < N * K; i++) B[i] = (float)((x = x * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
        for (int i = 0; i < N; i++) bias[i] = (float)((x = x * 1664525u + 1013904223u) >> 8) / 16777216.0f;
        for (int hb = 0; hb < 2; hb++) {
          gm_matmul_f32_torch_scalar(a, K, B, K, true, hb ? bias : NULL, 1.0f, ref, N, 1, N, K);
          for (int th = 1; th <= 2; th++) {
            gm_matmul_f32_torch(a, K, B, K, true, hb ? bias : NULL, 1.0f, C, N, 1, N, K, th);
            CHECK(test_count_diff(C, ref, (size_t)N) == 0, "%s: one row, K %d N %d, bias %d, %d thread(s): not the definition's bits",
                  gm_torch_target_name((gm_torch_target)t), K, N, hb, th);
          }
        }
        free(a);
        free(B);
        free(bias);
        free(ref);
        free(C);
      }
    gm_torch_target_unset();
  }
}

int main(void) {
  printf("f32 matmul per torch CPU target (kernel level %s)\n", gm_simd_level_name(gm_cpu_simd()));
  for (int t = 0; t < GM_TT_N; t++) run_target((gm_torch_target)t);
  one_row_paths();
  return test_done("test_target_matmul_f32");
}
