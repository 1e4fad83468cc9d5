// The intel-amx target's one-row bf16 products against a transposed weight (a decode step's
// lm_head: F.linear(x[1, K], W[N, K] (+ bias)), torch.mm(x, W.t())) bit for bit against torch 2.15
// (tools/ref/gen_bf16_onerow_goldens.py, 1 and 2 threads): oneDNN's 16 lane chains and lane tree
// when N * K > 4096, ATen's dot otherwise (matmul_bf16.c, ORDER_ROW16 / ORDER_ATEN_DOT), through
// gm_matmul_bf16 (B as floats, 1 and 2 threads), from packed pairs, the unpacked reference, and
// the scalar twin (GPTMEG_SIMD=scalar).
#include "gptmeg/kernels.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

enum { P_FLOATS, P_FLOATS_2T, P_PACKED, P_UNPACKED, P_SCALAR, N_PATHS };
static const char *PATH_NAMES[N_PATHS] = {"floats", "floats 2 threads", "packed", "unpacked", "scalar"};

static void product(int path, const float *x, const float *W, const float *bias, float *y, int N, int K) {
  if (path == P_SCALAR) test_set_simd("scalar");
  if (path == P_PACKED) {
    uint32_t *Wp = malloc(gm_bf16_packed_size(K, N) * sizeof(uint32_t));
    gm_bf16_pack(W, K, true, K, N, Wp);
    gm_matmul_bf16_packed(x, K, Wp, bias, 1.0f, y, N, 1, N, K, 1);
    free(Wp);
  } else if (path == P_UNPACKED) {
    gm_matmul_bf16_unpacked(x, K, W, K, true, NULL, bias, 1.0f, y, N, 1, N, K);
  } else {
    gm_matmul_bf16(x, K, W, K, true, bias, 1.0f, y, N, 1, N, K, path == P_FLOATS_2T ? 2 : 1);
  }
  if (path == P_SCALAR) test_set_simd(NULL);
  gm_round_inplace(GM_BF16, y, (size_t)N);
}

int main(void) {
  char file[1024];
  snprintf(file, sizeof file, "%s/tests/golden/targets/intel-amx/matmul/bf16_onerow.safetensors", GPTMEG_SOURCE_DIR);
  gm_safetensors st;
  if (gm_st_open(&st, file)) {
    CHECK(0, "%s", gm_errmsg());
    return test_done("test_bf16_onerow");
  }
  gm_torch_target_set(GM_TT_INTEL_AMX);
  int products = 0;
  for (int s = 0;; s++) {
    int64_t one, K, N;
    float *x = test_matmul_golden_f32(&st, s, "x", &one, &K);
    if (!x) break;
    float *W = test_matmul_golden_f32(&st, s, "W", &N, NULL), *bias = test_matmul_golden_f32(&st, s, "bias", NULL, NULL);
    float *out1 = test_matmul_golden_f32(&st, s, "out1", NULL, NULL), *out2 = test_matmul_golden_f32(&st, s, "out2", NULL, NULL);
    float *wb = test_matmul_golden_f32(&st, s, "with_bias", NULL, NULL);
    float *y = malloc((size_t)N * sizeof(float));
    CHECK(W && bias && out1 && out2 && wb && y, "%s: product %d incomplete", file, s);
    if (W && bias && out1 && out2 && wb && y) {
      CHECK(!test_count_diff(out1, out2, (size_t)N), "product %d: torch's 1- and 2-thread results differ", s);
      const bool with_bias = wb[0] != 0.0f;
      for (int p = 0; p < N_PATHS; p++) {
        product(p, x, W, with_bias ? bias : NULL, y, (int)N, (int)K);
        int bad = test_count_diff(y, out1, (size_t)N);
        CHECK(bad == 0, "K %d N %d%s (%s): %d of %d outputs differ from torch", (int)K, (int)N, with_bias ? " + bias" : "",
              PATH_NAMES[p], bad, (int)N);
      }
      products++;
    }
    free(x), free(W), free(bias), free(out1), free(out2), free(wb), free(y);
  }
  gm_st_close(&st);
  CHECK(products >= 10, "only %d products in %s", products, file);
  printf("  %d one-row products x %d paths against torch\n", products, N_PATHS);
  gm_torch_target_unset();
  return test_done("test_bf16_onerow");
}
