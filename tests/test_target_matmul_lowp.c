// The bf16 and f16 matmuls under each torch CPU target whose goldens differ from zen4's
// (tests/golden/targets/<target>/matmul/{bf16,f16}.safetensors, torch 2.15 on that class of CPU).
// Per target and dtype, gm_target_support_get says whether gptmeg is exact there: an exact row must
// match every golden product bit for bit on every path (1 and 2 threads, the scalar cap, pre-packed
// B or, for f16, B as f16 bits, the unpacked fallback); a row that is not exact must NOT match everything (else the table is
// stale), and the share that matches is printed. Then, under intel-amx, the AMX tile kernel against
// the scalar twin on random shapes (row, column and K tails, odd K, one row).
#include "gptmeg/core.h"
#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALPHA 0.35355339059327373f // the f16 goldens' alpha (1/sqrt(8))

typedef struct {
  const char *name; // the golden tensor
  bool trans, bias;
  float alpha;
} golden_out;

static const golden_out BF16_OUTS[] = {{"addmm", false, true, 1.0f}, {"linear", true, true, 1.0f}, {"matmul", false, false, 1.0f}};
static const golden_out F16_OUTS[] = {{"addmm", false, true, 1.0f}, {"matmul", false, false, 1.0f},
                                      {"matmul_t", true, false, 1.0f}, {"linear", true, true, 1.0f},
                                      {"baddbmm_t", true, false, ALPHA}};

typedef enum { P_DEFAULT, P_PACKED, P_UNPACKED } path_kind;
typedef struct {
  const char *name;
  path_kind kind;
  const char *simd; // GPTMEG_SIMD cap, NULL for none
  int threads;
} path;

static const path PATHS[] = {{"1 thread", P_DEFAULT, NULL, 1},       {"2 threads", P_DEFAULT, NULL, 2},
                             {"scalar, 2 threads", P_DEFAULT, "scalar", 2}, {"pre-packed B", P_PACKED, NULL, 2},
                             {"unpacked fallback", P_UNPACKED, NULL, 1}};

static void mm(gm_dtype dt, const path *p, const float *A, const float *B, bool trans, const float *bias, float alpha,
               float *C, int M, int N, int K) {
  int ldb = trans ? K : N;
  if (p->simd) test_set_simd(p->simd);
  if (dt == GM_F16 && p->kind == P_PACKED) { // "pre-packed" for f16: B as f16 bits
    uint16_t *Bh = malloc(sizeof(uint16_t) * ((size_t)K * N + 1));
    gm_f32_to_dtype_buf(GM_F16, B, Bh, (size_t)K * N);
    gm_matmul_f16_torch_h(A, K, Bh, ldb, trans, bias, alpha, C, N, M, N, K, p->threads);
    free(Bh);
  } else if (dt == GM_F16) gm_matmul_f16_torch(A, K, B, ldb, trans, bias, alpha, C, N, M, N, K, p->threads);
  else if (p->kind == P_DEFAULT) gm_matmul_bf16(A, K, B, ldb, trans, bias, alpha, C, N, M, N, K, p->threads);
  else if (p->kind == P_UNPACKED) gm_matmul_bf16_unpacked(A, K, B, ldb, trans, NULL, bias, alpha, C, N, M, N, K);
  else {
    uint32_t *Bp = malloc(gm_bf16_packed_size(K, N) * sizeof(uint32_t));
    gm_bf16_pack(B, ldb, trans, K, N, Bp);
    gm_matmul_bf16_packed(A, K, Bp, bias, alpha, C, N, M, N, K, p->threads);
    free(Bp);
  }
  test_set_simd(NULL);
}

// Runs every golden product of one target and dtype; returns whether it ran (the file differs).
static bool run_target(gm_torch_target t, gm_dtype dt) {
  const char *rel = dt == GM_F16 ? "matmul/f16.safetensors" : "matmul/bf16.safetensors";
  char path_buf[1024];
  const char *file = test_golden_for(t, rel, path_buf, sizeof path_buf);
  if (!strstr(file, "/targets/")) return false; // the same bits as zen4's: test_ops holds them
  gm_torch_target_set(t);
  gm_target_support sup = gm_target_support_get(t, GM_KOP_MATMUL, dt);
  gm_safetensors st;
  if (gm_st_open(&st, file)) { CHECK(0, "%s", gm_errmsg()); return true; }
  const golden_out *outs = dt == GM_F16 ? F16_OUTS : BF16_OUTS;
  int n_outs = dt == GM_F16 ? 5 : 3, n_paths = dt == GM_F16 ? 4 : 5; // f16: the fourth is B as f16 bits
  size_t same[8] = {0}, total = 0;
  int shapes = 0, products = 0;
  for (int s = 0;; s++) {
    int64_t M, K, N;
    float *A = test_matmul_golden_f32(&st, s, "A", &M, &K);
    if (!A) break;
    shapes++;
    float *B = test_matmul_golden_f32(&st, s, "B", NULL, &N), *Bt = test_matmul_golden_f32(&st, s, "Bt", NULL, NULL);
    float *bias = test_matmul_golden_f32(&st, s, "bias", NULL, NULL);
    size_t n = (size_t)M * N;
    float *out = malloc((n + 1) * sizeof(float));
    for (int o = 0; o < n_outs; o++) {
      float *ref = test_matmul_golden_f32(&st, s, outs[o].name, NULL, NULL);
      CHECK(ref != NULL, "%s: shape %d lacks %s", file, s, outs[o].name);
      if (!ref) continue;
      products++;
      total += n;
      for (int p = 0; p < n_paths; p++) {
        // the goldens are torch's on one thread; under intel-amx the bf16 order depends on torch's
        // thread count (oneDNN's K chunk and split), so there every path runs as one thread
        path pp = PATHS[p];
        if (t == GM_TT_INTEL_AMX && dt == GM_BF16) pp.threads = 1;
        memset(out, 0xff, (n + 1) * sizeof(float));
        mm(dt, &pp, A, outs[o].trans ? Bt : B, outs[o].trans, outs[o].bias ? bias : NULL, outs[o].alpha, out, (int)M,
           (int)N, (int)K);
        gm_round_inplace(dt, out, n);
        size_t bad = (size_t)test_count_diff(out, ref, n);
        same[p] += n - bad;
        if (sup.exact || sup.partial)
          CHECK(bad == 0, "%s %s %s (M %d K %d N %d) %s: %zu of %zu differ from torch", gm_torch_target_name(t),
                gm_dtype_name(dt), outs[o].name, (int)M, (int)K, (int)N, PATHS[p].name, bad, n);
      }
      free(ref);
    }
    free(out); free(A); free(B); free(Bt); free(bias);
  }
  gm_st_close(&st);
  printf("  %-18s %s matmul (%s): %d shapes, %d products;", gm_torch_target_name(t), gm_dtype_name(dt),
         sup.exact ? "exact" : "not exact", shapes, products);
  for (int p = 0; p < n_paths; p++) printf(" %s %.4f", PATHS[p].name, total ? (double)same[p] / (double)total : 0.0);
  printf("\n");
  CHECK(shapes > 0, "no shapes in %s", file);
  if (!sup.exact && !sup.partial)
    CHECK(same[0] < total, "%s %s matmul: marked not exact but every golden output matches (flip NOT_EXACT)",
          gm_torch_target_name(t), gm_dtype_name(dt));
  gm_torch_target_unset();
  return true;
}

// Under intel-amx: the tile kernel (where the host has AMX) against the scalar twin and the
// unpacked fallback on random bf16 data.
static void amx_kernel_vs_scalar(void) {
  static const int shapes[][3] = {{2, 1, 1},    {2, 2, 3},     {3, 31, 33},  {5, 32, 32},  {16, 64, 16}, {17, 33, 65},
                                  {31, 100, 40}, {33, 768, 70}, {2, 1025, 31}, {40, 3072, 20}, {1, 768, 50}, {1, 33, 7}};
  gm_torch_target_set(GM_TT_INTEL_AMX);
  gm_rng r;
  gm_rng_seed(&r, 23);
  int cases = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
    float *A = malloc(((size_t)M * K + 1) * 4), *B = malloc(((size_t)K * N + 1) * 4), *bias = malloc((size_t)N * 4);
    float *ref = malloc(((size_t)M * N + 1) * 4), *out = malloc(((size_t)M * N + 1) * 4);
    for (size_t i = 0; i < (size_t)M * K; i++) A[i] = gm_round_f32(GM_BF16, (float)(2.0 * gm_rng_normal(&r)));
    for (size_t i = 0; i < (size_t)K * N; i++) B[i] = gm_round_f32(GM_BF16, (float)(0.5 * gm_rng_normal(&r)));
    for (int i = 0; i < N; i++) bias[i] = gm_round_f32(GM_BF16, (float)(0.1 * gm_rng_normal(&r)));
    if (M * K > 3) A[3] = 1e-39f; // a subnormal input: read as zero
    for (int trans = 0; trans < 2; trans++) {
      for (int p = 0; p < 5; p++) { // against the scalar order on the same thread count (it picks the K chunk)
        const path ref_path = {"scalar", P_DEFAULT, "scalar", PATHS[p].threads};
        mm(GM_BF16, &ref_path, A, B, trans, bias, 0.25f, ref, M, N, K);
        mm(GM_BF16, &PATHS[p], A, B, trans, bias, 0.25f, out, M, N, K);
        int bad = test_count_diff(out, ref, (size_t)M * N);
        CHECK(bad == 0, "intel-amx bf16 (M %d K %d N %d, trans %d) %s: %d outputs differ from the scalar order", M, K, N,
              trans, PATHS[p].name, bad);
      }
      cases++;
    }
    free(A); free(B); free(bias); free(ref); free(out);
  }
  gm_torch_target_unset();
  printf("  intel-amx bf16: %d random cases x 5 paths against the scalar order (AMX tiles %s)\n", cases,
         gm_cpu_has(GM_CPU_AMX_BF16) ? "present" : "absent: scalar twin only");
}

int main(void) {
  int ran = 0;
  for (int t = 0; t < GM_TT_N; t++) {
    if (t == GM_TT_ZEN4) continue;
    ran += run_target((gm_torch_target)t, GM_BF16);
    ran += run_target((gm_torch_target)t, GM_F16);
  }
  CHECK(ran > 0, "no target goldens for bf16/f16 matmuls under tests/golden/targets/");
  amx_kernel_vs_scalar();
  return test_done("test_target_matmul_lowp");
}
