// torch's f32 orders on 1 to 16 threads under MKL's Intel AVX-512 sgemm (issue 23): the K cut into
// parts on even thread counts (gm_f32_torch_kparts). Goldens:
// tests/golden/targets/<target>/matmul_mt/f32_kparts.safetensors for each target whose host made
// one (tools/ref/gen_matmul_kparts_goldens.py, the real torch 2.15; intel-avx512-fp16's on an Intel
// Xeon with AVX512-FP16), each checked under its target (the f32 sgemm is the same MKL kernel under
// intel-amx, intel-avx512-fp16, intel-avx512-bf16 and intel-avx512); at least one must exist. For
// every product and thread count t torch ran it on:
//   - gm_matmul_f32_torch_mt with torch_threads = t gives torch's bits (the stored first 32 columns
//     of every row), whatever the work's thread count (1, 2) and SIMD path (native, avx2, scalar;
//     the last two on the products of up to 72 rows);
//   - the op layer (gm_op_matmul, f32, c->threads = t) gives them too: gptmeg's f32 follows
//     --threads as torch's follows its thread count;
//   - the row limits hold (17 rows B as stored, 65 B^T, at most 384 on 4 threads), and the rules
//     measured beyond GPT-2 124M (GPT-2 medium's c_attn, N >= 2048 on 8 or more threads with its
//     at most t / 2 parts that divide t: 10, 12, 14 and 24 threads, sizes that are no multiple of
//     256, min(M, N) against K / 8, 384 and 768), and the packed kernel's
//     order below 192 rows, B^T's unpacked order up to 64 rows, MKL's dot kernel's shapes (4..15
//     rows, B^T: cut, packed on odd thread counts or unpacked; 2 and 3 rows, or sizes a multiple of
//     256, keep the dot kernel) and the packed order of odd thread counts (gm_f32_torch_blocks_mt):
//     gm_f32_torch_kparts cuts, or the other order runs, exactly where torch's bits leave its
//     1-thread bits;
//   - few rows against N <= 64 t columns on 8 to 64 threads cut K into gm_f32_torch_kgroups's parts
//     with its row groups' orders (GPT-2 124M's c_proj at 5 and 16 tokens, 2 rows on 32 and 64
//     threads, B^T and the dot kernel's shapes, the parts' rounding to 4, the edges N 768 / 800 on
//     12 threads, 572 / 576 in K, 17 rows against B as stored, 128 / 129 against B^T, and
//     gm_f32_torch_kparts's cut where it holds);
//   - MKL's packed path halves K below 768 on one thread (300 x 477 x 500, 100 x 600 x 500 B^T);
//     17..128 rows against B as stored where neither K nor N is a multiple of 256 take the row
//     groups on 8 or more threads against N <= 64 t, and from 192 rows (B^T from 129) the unpacked
//     order there; up to 128 rows against N <= 378 cut K as few rows do, odd thread counts too;
//     two row-grouped parts hold at any width from M N K = 292584; 17..175 rows against 32..378
//     columns cut K in t parts on odd t (and on even t where min(M, N) > K / 8);
//   - the goldens hold cuts into 2..16 parts (torch's t-thread bits differ from its
//     1-thread bits), so a path that ignored the thread count could not pass.
#include "harness.h"

#include "gptmeg/kernels.h"
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { OP_ADDMM, OP_MM, OP_LINEAR_B } op_kind;
typedef struct {
  op_kind op;
  int M, K, N;
  int threads[12]; // ending in 0
} product;

// The generator's PRODUCTS, in its order (p<index>.t<threads>).
static const product PRODUCTS[] = {
    {OP_ADDMM, 24, 3072, 768, {1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16}},
    {OP_ADDMM, 16, 3072, 768, {1, 4}},
    {OP_ADDMM, 17, 3072, 768, {1, 4}},
    {OP_LINEAR_B, 72, 3072, 768, {1, 4, 8}},
    {OP_LINEAR_B, 64, 3072, 768, {1, 4}},
    {OP_MM, 24, 3072, 1536, {1, 8, 12}},
    {OP_ADDMM, 24, 2303, 768, {1, 6, 8}},
    {OP_ADDMM, 24, 3071, 768, {1, 8}},
    {OP_MM, 24, 1153, 1536, {1, 4, 6, 12}},
    {OP_ADDMM, 384, 4096, 768, {1, 4}},
    {OP_ADDMM, 385, 4096, 768, {1, 4, 6}},
    {OP_ADDMM, 32, 1024, 3072, {1, 4, 6, 8, 12}},
    {OP_ADDMM, 32, 4096, 2048, {1, 8, 10, 16}},
    {OP_ADDMM, 32, 4096, 2047, {1, 8}},
    {OP_ADDMM, 113, 1600, 1000, {1, 4, 6}},
    {OP_ADDMM, 112, 1600, 1000, {1, 4}},
    {OP_ADDMM, 64, 3200, 2268, {1, 6}},
    {OP_ADDMM, 64, 3200, 2267, {1, 6}},
    {OP_ADDMM, 64, 1600, 1792, {1, 6, 8}},
    {OP_ADDMM, 256, 1024, 1024, {1, 4}},
    {OP_ADDMM, 1100, 8192, 256, {1, 4, 8}},
    {OP_ADDMM, 700, 8192, 384, {1, 4}},
    {OP_ADDMM, 700, 8192, 385, {1, 4, 8}},
    {OP_ADDMM, 900, 8192, 768, {1, 8}},
    {OP_ADDMM, 900, 8192, 769, {1, 8}},
    {OP_LINEAR_B, 128, 1024, 4096, {1, 4, 8}},
    {OP_ADDMM, 160, 1024, 2048, {1, 2, 4, 8}},
    {OP_ADDMM, 150, 1100, 1000, {1, 2, 4, 6}},
    {OP_ADDMM, 129, 1024, 3072, {1, 2, 16}},
    {OP_ADDMM, 191, 1024, 384, {1, 2, 4}},
    {OP_LINEAR_B, 32, 1024, 4096, {1, 4, 8}},
    {OP_LINEAR_B, 32, 2048, 4096, {1, 4, 6}},
    {OP_LINEAR_B, 16, 1600, 2048, {1, 4, 6}},
    {OP_ADDMM, 8, 1600, 4800, {1, 4, 6}},
    {OP_ADDMM, 4, 3072, 4096, {1, 6, 8}},
    {OP_ADDMM, 12, 1024, 4096, {1, 4}},
    {OP_LINEAR_B, 5, 1600, 4800, {1, 2, 3, 4, 6, 8}},
    {OP_LINEAR_B, 8, 1600, 300, {1, 3, 4}},
    {OP_LINEAR_B, 6, 1600, 378, {1, 3, 4}},
    {OP_LINEAR_B, 6, 1600, 379, {1, 4}},
    {OP_LINEAR_B, 6, 1510, 300, {1, 4}},
    {OP_LINEAR_B, 6, 1520, 300, {1, 4}},
    {OP_LINEAR_B, 5, 1600, 4096, {1, 2, 4}},
    {OP_LINEAR_B, 3, 5000, 4800, {1, 2}},
    {OP_LINEAR_B, 8, 700, 4800, {1, 2, 4}},
    {OP_LINEAR_B, 6, 1130, 2000, {1, 3}},
    {OP_LINEAR_B, 6, 1140, 2000, {1, 3}},
    {OP_ADDMM, 5, 1600, 1600, {1, 3, 5}},
    {OP_ADDMM, 5, 1600, 378, {1, 3, 4}},
    {OP_ADDMM, 5, 1600, 379, {1, 3, 4}},
    {OP_ADDMM, 100, 1600, 1000, {1, 3}},
    {OP_ADDMM, 64, 1000, 1600, {1, 3}},
    {OP_LINEAR_B, 32, 1130, 4000, {1, 3}},
    {OP_LINEAR_B, 32, 1140, 4000, {1, 3, 5}},
    {OP_ADDMM, 16, 1024, 4096, {1, 3, 4, 6}},
    {OP_ADDMM, 16, 1024, 4352, {1, 3, 4}},
    {OP_ADDMM, 16, 1600, 300, {1, 3, 4}},
    {OP_ADDMM, 7, 1600, 300, {1, 3}},
    {OP_ADDMM, 16, 6400, 1600, {1, 5, 6}},
    {OP_ADDMM, 16, 6144, 1600, {1, 6}},
    {OP_LINEAR_B, 100, 1600, 4000, {1, 5, 6, 8}},
    {OP_LINEAR_B, 150, 1600, 4000, {1, 5, 6}},
    {OP_ADDMM, 224, 1600, 1600, {1, 7, 8}},
    {OP_ADDMM, 225, 1600, 1600, {1, 8}},
    // few rows (B^T: up to 128) against N <= 64 t on 8 or more threads (gm_f32_torch_kgroups)
    {OP_ADDMM, 16, 768, 768, {1, 12, 13, 16, 24, 32}},
    {OP_ADDMM, 5, 3072, 768, {1, 12, 14, 15, 16, 20, 24, 32, 48, 64}},
    {OP_LINEAR_B, 16, 768, 768, {1, 12, 16}},
    {OP_LINEAR_B, 8, 1000, 700, {1, 12, 16}},
    {OP_ADDMM, 2, 768, 768, {1, 32, 64}},
    {OP_ADDMM, 16, 1024, 768, {1, 12, 14}},
    {OP_ADDMM, 16, 704, 768, {1, 18, 24}},
    {OP_ADDMM, 16, 768, 1000, {1, 12, 16}},
    {OP_ADDMM, 16, 768, 800, {1, 12}},
    {OP_ADDMM, 16, 572, 768, {1, 12}},
    {OP_ADDMM, 16, 576, 768, {1, 12}},
    {OP_ADDMM, 17, 768, 768, {1, 12}},
    {OP_ADDMM, 16, 768, 2304, {1, 48, 64}},
    {OP_ADDMM, 16, 5000, 300, {1, 16}},
    {OP_ADDMM, 16, 6144, 300, {1, 16}},
    {OP_LINEAR_B, 32, 768, 768, {1, 12, 16, 32}},
    {OP_LINEAR_B, 128, 768, 768, {1, 12}},
    {OP_LINEAR_B, 129, 768, 768, {1, 12}},
    {OP_LINEAR_B, 64, 3072, 768, {1, 12, 16}},
    {OP_LINEAR_B, 65, 3072, 768, {1, 12}},
    {OP_LINEAR_B, 100, 768, 256, {1, 12}},
    // 16 rows from K 6400 against N a multiple of 256 run as 17 rows (few_rows)
    {OP_MM, 16, 8000, 768, {1, 4, 8}},
    {OP_MM, 16, 6399, 768, {1, 4}},
    {OP_MM, 16, 8000, 1000, {1, 4}},
    // from N 2048 on 8 or more threads: at most t / 2 parts, a divisor of t (not of t / 2)
    {OP_ADDMM, 64, 1153, 2048, {1, 10, 12}},
    {OP_LINEAR_B, 65, 1024, 2048, {1, 14}},
    {OP_ADDMM, 64, 3072, 2048, {1, 24}},
    // the packed path on one thread halves K below 768
    {OP_ADDMM, 300, 477, 500, {1, 2}},
    {OP_LINEAR_B, 100, 600, 500, {1}},
    // 17..128 rows against B as stored, neither K nor N a multiple of 256, N <= 64 t: row groups
    {OP_ADDMM, 64, 1000, 1000, {1, 16, 32}},
    {OP_ADDMM, 32, 1600, 1600, {1, 24, 28, 32}},
    {OP_ADDMM, 64, 1000, 300, {1, 32}}, // column chunks of 38 (B^T needs 64 from 17 rows)
    // from 192 rows (B^T 129) where MKL does not share the product out, N <= 64 t: the unpacked order
    {OP_ADDMM, 192, 1000, 1000, {1, 16}},
    {OP_LINEAR_B, 129, 1600, 1600, {1, 32}},
    // up to 128 rows against N <= 378 cut K as few rows do, odd thread counts too
    {OP_ADDMM, 64, 4000, 300, {1, 8, 9, 12}},
    {OP_LINEAR_B, 64, 4000, 300, {1, 9}},
    // two row-grouped parts at any width from M N K = 292584 (292500 keeps the 1-thread bits)
    {OP_LINEAR_B, 100, 384, 65, {1, 8, 24}},
    {OP_LINEAR_B, 71, 478, 113, {1, 24}},
    {OP_ADDMM, 12, 384, 65, {1, 8}},
    {OP_ADDMM, 10, 384, 65, {1, 8}},
    {OP_ADDMM, 8, 501, 73, {1, 16}},
    {OP_ADDMM, 8, 500, 73, {1, 16}},
    // 17..175 rows (B^T from 65) against 32..378 columns: K in t parts on odd t, and on even t where
    // the smaller of M and N exceeds K / 8
    {OP_ADDMM, 64, 1024, 100, {1, 3, 4, 6, 15}},
    {OP_ADDMM, 160, 1024, 256, {1, 2, 4}},
    {OP_LINEAR_B, 175, 1024, 256, {1, 3}},
    {OP_LINEAR_B, 100, 1024, 300, {1, 5}},
    {OP_ADDMM, 64, 1024, 32, {1, 3, 4}},
    // the dot kernel's shapes leave it above a work edge that depends on the thread count; the
    // unpacked order on 8 or more threads where K is not cut in row groups
    {OP_LINEAR_B, 8, 384, 65, {1, 5, 6, 7}},
    {OP_LINEAR_B, 5, 640, 45, {1, 3}},
    {OP_LINEAR_B, 5, 640, 46, {1, 3}},
    {OP_LINEAR_B, 4, 500, 64, {1, 4}},
    {OP_LINEAR_B, 4, 500, 65, {1, 4}},
    {OP_LINEAR_B, 4, 500, 130, {1, 5, 9}},
    {OP_LINEAR_B, 4, 500, 131, {1, 5, 9}},
    {OP_LINEAR_B, 4, 500, 128, {1, 6, 10}},
    {OP_LINEAR_B, 4, 500, 129, {1, 6, 10}},
    {OP_LINEAR_B, 8, 384, 84, {1, 8, 16}},
    {OP_LINEAR_B, 13, 368, 85, {1, 12}},
    {OP_LINEAR_B, 7, 1296, 107, {1, 9, 11, 13}},
    // B^T of 16..64 rows in three row-grouped parts or more: from 33 columns where t / kg is odd, from
    // 16 (t / kg - 2) + 1 where it is even
    {OP_LINEAR_B, 20, 768, 65, {1, 12, 15, 16, 18}},
    {OP_LINEAR_B, 40, 768, 40, {1, 12, 15, 20}},
    {OP_LINEAR_B, 40, 768, 65, {1, 18, 24}},
    {OP_LINEAR_B, 40, 768, 97, {1, 32}},
    {OP_LINEAR_B, 16, 768, 65, {1, 15, 18}},
    {OP_LINEAR_B, 48, 1542, 39, {1, 15}},
    // B^T of 65..128 rows: the row-grouped cut in 2 row blocks where t / kg = 4, in 5 where it is 5, up
    // to 128 columns; from 129 in one
    {OP_LINEAR_B, 100, 768, 65, {1, 12, 16}},
    {OP_LINEAR_B, 80, 768, 100, {1, 15, 20}},
    {OP_LINEAR_B, 80, 768, 48, {1, 15}},
    {OP_LINEAR_B, 80, 768, 128, {1, 12}},
    {OP_LINEAR_B, 80, 768, 129, {1, 12}},
    {OP_LINEAR_B, 80, 768, 200, {1, 16}},
    {OP_LINEAR_B, 126, 768, 65, {1, 15, 20}},
};
static const char *OP_NAMES[] = {"addmm", "mm", "linear_b"};
enum { NB = 4800, COLS = 32 };

// Every check above on one golden file, under target; 0 when the file is absent.
static int check_file(int target) {
  char file[1024];
  gm_safetensors st;
  gm_profile prof;
  float *bias;
  if (!test_open_f32_golden(target, "matmul_mt/f32_kparts.safetensors", &st, file, sizeof file, &prof, NB, &bias))
    return 0;
  const int n_paths = test_quick() ? 2 : TEST_N_PATHS;
  int runs = 0, cut = 0;
  for (size_t q = 0; q < sizeof PRODUCTS / sizeof PRODUCTS[0] && bias; q++) {
    const product *p = &PRODUCTS[q];
    const int M = p->M, K = p->K, N = p->N;
    const bool trans = p->op == OP_LINEAR_B;
    // the generator's formulas, float32 correctly rounded: A (M x K), op(B) = B (K x N) as stored or
    // B^T made contiguous (N x K)
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    float *Bt = trans ? malloc(sizeof(float) * N * K) : NULL, *C = malloc(sizeof(float) * M * N);
    CHECK(A && B && C && (Bt || !trans), "out of memory for %d x %d x %d", M, K, N);
    if (!A || !B || !C || (trans && !Bt)) {
      free(A); free(B); free(Bt); free(C);
      continue;
    }
    test_formula_a(A, M, K);
    test_formula_b(B, K, N);
    if (trans)
      for (int j = 0; j < N; j++)
        for (int k = 0; k < K; k++) Bt[(size_t)j * K + k] = B[(size_t)k * N + j];
    const float *Bp = trans ? Bt : B, *bp = p->op == OP_MM ? NULL : bias;
    const int ldb = trans ? K : N;
    // the avx2 and scalar paths on the products of up to 72 rows and 2e8 multiply-adds
    const int paths = M > 72 || (double)M * N * K > 2e8 ? (n_paths > 2 ? 2 : n_paths) : n_paths;
    // quick runs (the sanitized build) check the products of over 1e9 multiply-adds on one path only
    const bool big_quick = test_quick() && (double)M * N * K > 1e9;
    float *ref1 = NULL;
    for (int ti = 0; p->threads[ti]; ti++) {
      const int t = p->threads[ti];
      char name[32];
      snprintf(name, sizeof name, "p%zu.t%d", q, t);
      int64_t r0 = 0, r1 = 0;
      float *ref = test_st_f32(&st, name, &r0, &r1);
      CHECK(ref && r0 == M && r1 == COLS, "%s: %s missing or not %d x %d", file, name, M, COLS);
      if (!ref) continue;
      if (t == 1) ref1 = ref;
      const bool differs = ref1 && ref1 != ref && test_count_diff(ref, ref1, (size_t)M * COLS) > 0;
      cut += differs;
      for (int pa = 0; pa < (big_quick ? 1 : paths); pa++) {
        if (TEST_PATHS[pa].simd) test_set_simd(TEST_PATHS[pa].simd);
        memset(C, 0xff, sizeof(float) * (size_t)M * N);
        int rc = gm_matmul_f32_torch_mt(A, K, false, Bp, ldb, trans, bp, 1.0f, C, N, M, N, K, TEST_PATHS[pa].threads, t);
        int bad = test_count_diff_cols(C, N, 0, ref, COLS, M);
        CHECK(rc == 0 && bad == 0, "%s %d x %d x %d, torch on %d threads, %s: %d of %d outputs differ from torch",
              OP_NAMES[p->op], M, K, N, t, TEST_PATHS[pa].name, bad, M * COLS);
        test_set_simd(NULL);
      }
      if (!big_quick) {
        gm_op_ctx c; // the op layer at c->threads = t
        gm_op_ctx_init(&c, &prof, t, NULL, NULL);
        memset(C, 0xff, sizeof(float) * (size_t)M * N);
        gm_op_matmul(&c, A, K, Bp, ldb, trans, bp, 1.0f, C, N, M, N, K);
        int bad = test_count_diff_cols(C, N, 0, ref, COLS, M);
        CHECK(bad == 0, "gm_op_matmul %s %d x %d x %d, %d threads: %d of %d differ from torch", OP_NAMES[p->op], M, K,
              N, t, bad, M * COLS);
      }
      const int kg = gm_f32_torch_kgroups(GM_MKL_SGEMM_INTEL_AVX512, M, N, K, trans, t);
      const int kp = kg > 1 ? kg : gm_f32_torch_kparts(GM_MKL_SGEMM_INTEL_AVX512, M, N, K, trans, t);
      const gm_f32_blocks b1 = gm_f32_torch_blocks(GM_MKL_SGEMM_INTEL_AVX512, M, N, K, trans);
      const gm_f32_blocks bt = gm_f32_torch_blocks_mt(GM_MKL_SGEMM_INTEL_AVX512, M, N, K, trans, 1.0f, t);
      const bool packs = kp == 1 && kg <= 1 && bt != b1;
      // the packed and unpacked orders coincide where K is a multiple of 384 (blocks of 384 either way)
      // or below 768 (two halves either way)
      const bool same = b1 != GM_F32_BLOCKS_INTEL_DOT16 && (K % 384 == 0 || K < 768);
      CHECK(t == 1 || (kp > 1 || (packs && !same)) == differs, "%s %d x %d x %d, %d threads: gptmeg cuts K into %d part(s)%s where "
            "torch's bits %s its 1-thread bits", OP_NAMES[p->op], M, K, N, t, kp,
            kg > 1 ? " in row groups" : packs ? ", (un)packed" : "",
            differs ? "differ from" : "equal");
      printf("  %-8s %2d x %4d x %4d, %2d threads: %d K part(s)%s, torch's bits %s its 1-thread bits\n", OP_NAMES[p->op],
             M, K, N, t, kp, kg > 1 ? " in row groups" : packs ? ", (un)packed" : "", differs ? "differ from" : "equal");
      runs++;
      if (ref != ref1) free(ref);
    }
    free(ref1);
    free(A); free(B); free(Bt); free(C);
  }
  CHECK(runs == 382, "ran %d of 382 product and thread count pairs", runs);
  CHECK(cut >= 198, "only %d runs where torch's bits differ from its 1-thread bits (expected 198 or more)", cut);
  free(bias);
  gm_st_close(&st);
  gm_torch_target_unset();
  return 1;
}

int main(void) {
  CHECK(test_intel_targets(false, check_file) >= 1, "no tests/golden/targets/*/matmul_mt/f32_kparts.safetensors (tools/ref/gen_matmul_kparts_goldens.py)");
  return test_done("test_matmul_f32_kparts");
}
