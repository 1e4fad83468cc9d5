// Megatron's qk-layer-scaled f32 scores on more torch threads than heads (issue 23): torch's
// baddbmm (alpha = (1/8) / 3 at layer 2, no power of two) calls MKL's batched sgemm, which folds
// alpha into k^T in every slice once the threads outnumber the slices, from T = 64, below twice
// as many only where ceil(slices T / t) >= 64 (ops_attention.c, batch_folds). Goldens:
// tests/golden/targets/<target>/attention/fold.safetensors (tools/ref/gen_attention_fold_goldens.py,
// the real torch 2.15 on an Intel Xeon with AVX512-FP16), checked under each target that has one
// (the same MKL kernel under intel-amx, intel-avx512-fp16, intel-avx512-bf16 and intel-avx512);
// at least one must exist. For every case (12 heads, 768 wide, T tokens) and torch thread count t:
//   - gm_op_attention_fwd under the megatron profile, f32, c->threads = t, gives torch's softmax
//     input (the stored first 32 columns of every row of every head, masked entries 0);
//   - head sizes 128 and 80 fold from T = head size on the same terms;
//   - the goldens hold 9 runs whose bits differ from the 1-thread run's, so a path that ignored the
//     thread count could not pass;
//   - T 65 on one thread: the scores' last row is part of the 65-row product, not a one-row product
//     of its own (MKL's one-row kernel; 124M's logits at 65, 129 and 193 tokens before 2026-12-06);
//   - under avx2 (its own cases, check_avx2): the scores as MKL's AVX2 sgemm gives them with k^T
//     passed as B transposed, every column.
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LAYER = 2, COLS = 32 };

// The generator's CASES, in its order (c<index>.t<threads>): 768 wide with 12 heads of 64, then
// head sizes 128 (1024 wide, 8 heads) and 80 (640, 8), which fold from T = head size.
static const struct {
  int T;
  int threads[6]; // ending in 0
  int C, NH;
} CASES[] = {{100, {1, 12, 13, 19, 20}, 768, 12}, {64, {1, 16, 24, 25}, 768, 12}, {67, {1, 24, 36}, 768, 12},
             {63, {1, 36}, 768, 12},           {191, {1, 13}, 768, 12},        {65, {1}, 768, 12},
             {128, {1, 8, 9, 16}, 1024, 8},    {127, {1, 24}, 1024, 8},        {81, {1, 16, 17}, 640, 8},
             {79, {1, 17}, 640, 8}};

// The scores of one case (C wide, NH heads) on t threads into S (NH x T x T). 0 on success.
static int run_case(const gm_profile *p, int T, int C, int NH, int t, float *S) {
  gm_op_ctx c;
  gm_op_ctx_init(&c, p, t, NULL, NULL);
  float *qkv = malloc(sizeof(float) * T * 3 * C), *out = malloc(sizeof(float) * T * C);
  float *probs = malloc(sizeof(float) * NH * T * T), *kc = malloc(sizeof(float) * T * C);
  float *vc = malloc(sizeof(float) * T * C);
  int rc = -1;
  if (qkv && out && probs && kc && vc) {
    test_formula_a(qkv, T, 3 * C);
    gm_op_attn a = {1, T, 0, C, NH, LAYER, true, false, false, kc, vc, T};
    rc = gm_op_attention_fwd(&c, &a, out, S, probs, qkv);
  }
  free(qkv), free(out), free(probs), free(kc), free(vc);
  return rc;
}

static int check_file(int target) {
  char file[1024];
  gm_safetensors st;
  if (!test_open_target_st(target, "attention/fold.safetensors", &st, file, sizeof file)) return 0;
  gm_profile prof;
  CHECK(gm_profile_get("megatron", GM_F32, &prof) == 0, "profile megatron f32: %s", gm_errmsg());
  int runs = 0, differs = 0;
  for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++) {
    const int T = CASES[ci].T, C = CASES[ci].C, NH = CASES[ci].NH;
    float *S = malloc(sizeof(float) * NH * T * T), *ref1 = NULL;
    CHECK(S != NULL, "out of memory for T %d", T);
    for (int ti = 0; S && CASES[ci].threads[ti]; ti++) {
      const int t = CASES[ci].threads[ti];
      char name[32];
      snprintf(name, sizeof name, "c%zu.t%d", ci, t);
      int64_t d0 = 0, d1 = 0;
      float *ref = test_st_f32(&st, name, &d0, &d1); // (NH * T, COLS)
      CHECK(ref && d0 == (int64_t)NH * T && d1 == COLS, "%s: %s missing or not %d x %d x %d", file, name, NH, T, COLS);
      if (!ref) continue;
      if (t == 1) ref1 = ref;
      else differs += test_count_diff(ref, ref1, (size_t)NH * T * COLS) > 0;
      const int rc = run_case(&prof, T, C, NH, t, S);
      const int bad = rc ? -1 : test_count_diff_cols(S, T, 0, ref, COLS, NH * T);
      CHECK(bad == 0, "megatron scores, T %d, %d heads of %d, layer %d, %d threads: %d of %d outputs differ from torch",
            T, NH, C / NH, LAYER, t, bad, NH * T * COLS);
      printf("  T %3d, %2d heads of %3d, %2d threads: torch's bits %s its 1-thread bits\n", T, NH, C / NH, t,
             ref != ref1 && test_count_diff(ref, ref1, (size_t)NH * T * COLS) ? "differ from" : "equal");
      runs++;
      if (ref != ref1) free(ref);
    }
    free(ref1);
    free(S);
  }
  CHECK(runs == 28, "ran %d of 28 case and thread count pairs", runs);
  CHECK(differs == 9, "%d runs where torch's bits differ from its 1-thread bits (expected 9)", differs);
  gm_st_close(&st);
  gm_torch_target_unset();
  return 1;
}

// avx2 (the generator's AVX2_CASES, one thread, every column stored): torch's k^T view reaches MKL's
// AVX2 sgemm as B transposed, whose big-product kernels start at 56 rows and columns (72 as
// stored): at T 57 and 61 the columns past the panels of 16 run as even/odd pairs there and as one
// FMA chain on the 4..6-row kernels (k passed as stored: the model's logits at 57 tokens 85%
// identical on 2026-12-06); T 71 ends in a last row alone; T 48 is below the fold of alpha.
static void check_avx2(void) {
  static const int AVX2_T[] = {57, 61, 71, 48};
  enum { C = 768, NH = 12 };
  char file[1024];
  gm_safetensors st;
  if (!test_open_target_st(GM_TT_AVX2, "attention/fold.safetensors", &st, file, sizeof file)) {
    test_skip("avx2 scores", "no tests/golden/targets/avx2/attention/fold.safetensors");
    return;
  }
  gm_profile prof;
  CHECK(gm_profile_get("megatron", GM_F32, &prof) == 0, "profile megatron f32: %s", gm_errmsg());
  for (size_t ci = 0; ci < sizeof AVX2_T / sizeof AVX2_T[0]; ci++) {
    const int T = AVX2_T[ci];
    char name[32];
    snprintf(name, sizeof name, "c%zu.t1", ci);
    int64_t d0 = 0, d1 = 0;
    float *ref = test_st_f32(&st, name, &d0, &d1), *S = malloc(sizeof(float) * NH * T * T);
    CHECK(ref && S && d0 == (int64_t)NH * T && d1 == T, "%s: %s missing or not %d x %d x %d", file, name, NH, T, T);
    if (ref && S) {
      const int rc = run_case(&prof, T, C, NH, 1, S);
      const int bad = rc ? -1 : test_count_diff_cols(S, T, 0, ref, T, NH * T);
      CHECK(bad == 0, "avx2 megatron scores, T %d: %d of %d outputs differ from torch", T, bad, NH * T * T);
      printf("  avx2: T %3d, 12 heads of 64, 1 thread\n", T);
    }
    free(ref), free(S);
  }
  gm_st_close(&st);
  gm_torch_target_unset();
}

int main(void) {
  check_avx2();
  CHECK(test_intel_targets(false, check_file) >= 1,
        "no tests/golden/targets/*/attention/fold.safetensors (tools/ref/gen_attention_fold_goldens.py)");
  return test_done("test_attention_fold");
}
