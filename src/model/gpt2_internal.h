// Internal pieces of the GPT-2 model shared between src/model/*.c.
#ifndef GPTMEG_MODEL_GPT2_INTERNAL_H
#define GPTMEG_MODEL_GPT2_INTERNAL_H

#include "gptmeg/model.h"

// One forward call's fixed facts: N = B*T rows, positions t0 .. len-1.
typedef struct {
  const gm_gpt2 *m;
  const gm_profile *p;
  gm_dtype dt;
  gm_kv_cache *kv;
  int B, T, N, t0, len;
  int threads;
  gm_probe_fn probe;
  void *probe_ctx;
} gpt2_run;

// C[M, N] = alpha * A[M, K] @ op(B) (+ bias), f32 accumulation, not rounded: in PyTorch's
// order for f16 (gm_matmul_f16_torch), AVX512-BF16 pair order for bf16 (gm_matmul_bf16), OpenBLAS
// sgemm tiles for f32 (see nn.h).
void gm_gpt2_matmul(gm_dtype dt, const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias,
                 float alpha, float *C, int ldc, int M, int N, int K, int threads);

// Calls r's probe (if any) on data [rows, cols]; its failure becomes the forward's error.
int gm_gpt2_probe2(const gpt2_run *r, int layer, gm_point pt, float *data, int64_t rows, int64_t cols);

// Causal self-attention of layer l: qkv [N, 3D] (rounded to r->dt) -> att [N, D] (heads merged,
// before c_proj). Appends k, v to the cache; scores is scratch [B, H, T, len]. Probes scores,
// probs and attn. Rules: docs/numerics.md "GPT-2 numerics profiles".
int gm_gpt2_attention(const gpt2_run *r, int l, const float *qkv, float *scores, float *att);

// MLP activation: y[N, I] = act(x) under r's profile. bias != NULL (act_bias_fused): x + bias is
// formed in f32 and the activation evaluated in f32, one rounding to r->dt at the end; otherwise
// the activation runs in r->dt (GELU family through gm_gelu_fwd in the profile's mode).
int gm_gpt2_mlp_act(const gpt2_run *r, const float *x, const float *bias, float *y);

#endif
