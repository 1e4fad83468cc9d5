// The ops' context, probe and the two helpers every op shares: rounding to the run's dtype and
// the dtype's matmul.
// Numerics contract: gm_op_round rounds each value once, RNE, to the context's dtype (the identity
// in f32); gm_op_matmul is the dtype's torch-order product (the kernels' contracts in
// gptmeg/kernels.h), not rounded; in f32 as torch computes it on c->threads threads (the Intel
// targets' K cut into parts on even thread counts and 2-thread column split, gm_matmul_f32_torch_mt),
// otherwise the same bits for any thread count. gm_op_matmul_t is the product
// torch's mm issues for given transpositions (ops.h), as torch computes it on c->threads threads:
// the f32 Intel K cut (gm_matmul_f32_torch_mt) and f16 through oneDNN on intel-amx
// (gm_matmul_f16_onednn); with trans_a otherwise op(A) is copied contiguous and the dtype's order runs.
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"
#include "ops/ops_internal.h"

#include <omp.h>
#include <stdlib.h>

void gm_op_ctx_init(gm_op_ctx *c, const gm_profile *p, int threads, gm_probe_fn probe, void *probe_ctx) {
  c->dtype = p->dtype;
  c->profile = p;
  c->threads = threads > 0 ? threads : omp_get_max_threads();
  c->cpu_target = 0;
  c->probe = probe;
  c->probe_ctx = probe_ctx;
  c->bmm_slice = false;
  c->bmm_batch = 1;
  c->bmm_threads = 0;
  c->ws = NULL;
  c->ws_bytes = 0;
}

const char *gm_point_name(gm_point pt) {
  static const char *names[GM_N_POINTS] = {"embed", "ln_1", "qkv",  "scores", "probs", "attn",   "attn_out", "resid_attn",
                                           "ln_2",  "fc",   "act",  "mlp",    "resid", "ln_f",   "logits"};
  return (unsigned)pt < GM_N_POINTS ? names[pt] : "?";
}

int gm_op_probe(const gm_op_ctx *c, int layer, gm_point pt, float *data, int ndim, const int64_t *shape) {
  if (!c->probe) return 0;
  gm_probe_tensor t = {layer, pt, data, ndim, {0, 0, 0, 0}, 1};
  for (int i = 0; i < ndim; i++) {
    t.shape[i] = shape[i];
    t.numel *= (size_t)shape[i];
  }
  if (c->probe(c->probe_ctx, &t)) return gm_fail("%s (layer %d, %s)", gm_errmsg(), layer, gm_point_name(pt));
  return 0;
}

// Elementwise, so the ctx's threads share long buffers without a change of bits.
void gm_op_round(const gm_op_ctx *c, float *x, size_t n) { gm_round_copy(c->dtype, x, x, n, c->threads); }

void gm_op_matmul(const gm_op_ctx *c, const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias,
                  float alpha, float *Cm, int ldc, int M, int N, int K) {
  if (c->dtype == GM_F16) gm_matmul_f16_torch(A, lda, B, ldb, trans_b, bias, alpha, Cm, ldc, M, N, K, c->threads);
  else if (c->dtype == GM_BF16 && c->bmm_slice)
    gm_matmul_bf16_slice(A, lda, false, B, ldb, trans_b, bias, alpha, Cm, ldc, M, N, K, c->threads, c->bmm_batch, c->bmm_threads);
  else if (c->dtype == GM_BF16) gm_matmul_bf16(A, lda, B, ldb, trans_b, bias, alpha, Cm, ldc, M, N, K, c->threads);
  else // as torch computes it on c->threads threads (no op(A) copy: it cannot fail)
    (void)gm_matmul_f32_torch_mt(A, lda, false, B, ldb, trans_b, bias, alpha, Cm, ldc, M, N, K, c->threads, c->threads);
}

int gm_op_matmul_t(const gm_op_ctx *c, const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b,
                   const float *bias, float alpha, float *Cm, int ldc, int M, int N, int K) {
  if (M <= 0 || N <= 0) return 0;
  const gm_torch_target_info *ti = gm_torch_target_get_info(gm_torch_target_active());
  if (c->dtype == GM_F32) {
    if (gm_matmul_f32_torch_mt(A, lda, trans_a, B, ldb, trans_b, bias, alpha, Cm, ldc, M, N, K, c->threads, c->threads))
      return gm_fail("matmul: out of memory (%d x %d x %d)", M, N, K);
    return 0;
  }
  if (c->dtype == GM_F16 && ti && ti->onednn >= GM_ONEDNN_AVX512_CORE_FP16) { // torch's mm runs oneDNN there
    gm_matmul_f16_onednn(A, lda, trans_a, B, ldb, trans_b, bias, alpha, Cm, ldc, M, N, K, c->threads);
    return 0;
  }
  if (!trans_a) {
    gm_op_matmul(c, A, lda, B, ldb, trans_b, bias, alpha, Cm, ldc, M, N, K);
    return 0;
  }
  if (c->dtype == GM_BF16) { // A^T packed straight into bf16 pairs
    if (c->bmm_slice) gm_matmul_bf16_slice(A, lda, true, B, ldb, trans_b, bias, alpha, Cm, ldc, M, N, K, c->threads, c->bmm_batch,
                                           c->bmm_threads);
    else gm_matmul_bf16_ta(A, lda, B, ldb, trans_b, bias, alpha, Cm, ldc, M, N, K, c->threads);
    return 0;
  }
  float *At = malloc((size_t)M * (K > 0 ? K : 1) * sizeof(float)); // op(A) = A^T made contiguous [M, K]
  if (!At) return gm_fail("matmul: out of memory (%d x %d)", M, K);
  for (int k = 0; k < K; k++)
    for (int i = 0; i < M; i++) At[(size_t)i * K + k] = A[(size_t)k * lda + i];
  gm_op_matmul(c, At, K, B, ldb, trans_b, bias, alpha, Cm, ldc, M, N, K);
  free(At);
  return 0;
}

