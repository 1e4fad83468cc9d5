// Layer norm: out = R(layer_norm(inp) * weight + bias).
// Numerics contract: ATen's CPU kernel in f32 (Welford moments, rstd = 1/sqrt(var + (float)eps),
// the affine step fused as ATen's vector code does: gm_layernorm_f32), one rounding to the dtype.
// The profile's native rule on f16/bf16 rows runs ATen's reduced-type kernel (16-element steps);
// f32 rows, and the fp32 rule (Megatron's LN on x.float()), its f32 kernel (8-element steps).
// mean and rstd, when asked, are that kernel's f32 row statistics (gm_layernorm_row_stats),
// computed before anything is rounded. Rows are independent: any thread count, the same bits.
// Backward: autograd of torch 2.15's layer norm (gm_layernorm_bwd_f32: ATen's backward kernel, its
// AVX2 build). Native rule on f16/bf16: ATen's kernel for dtype x, w, b (mean/rstd read rounded to
// the dtype, dtype per-thread dgamma/dbeta buffers, every output rounded once). f32 and the fp32
// rule: the f32 kernel, then each gradient rounded once to the dtype (the casts' backward).
// dgamma/dbeta follow ATen's per-thread split for c->threads (torch's bits depend on its thread
// count the same way); dx is the same for any thread count.
#include "gptmeg/kernels.h"
#include "ops/ops_internal.h"

int gm_op_layernorm_fwd(const gm_op_ctx *c, float *out, float *mean, float *rstd, const float *inp, const float *weight,
                        const float *bias, int N, int C, double eps) {
  gm_ln_kernel kernel = GM_LN_KERNEL_F32;
  if (c->profile->layer_norm == GM_LN_NATIVE && c->dtype == GM_F16) kernel = GM_LN_KERNEL_F16;
  if (c->profile->layer_norm == GM_LN_NATIVE && c->dtype == GM_BF16) kernel = GM_LN_KERNEL_BF16;
  if (mean || rstd) { // before the kernel: out may alias inp
#pragma omp parallel for schedule(static) num_threads(c->threads)
    for (int i = 0; i < N; i++) {
      float m_, r_;
      gm_layernorm_row_stats(inp + (size_t)i * C, C, eps, kernel, &m_, &r_);
      if (mean) mean[i] = m_;
      if (rstd) rstd[i] = r_;
    }
  }
  gm_layernorm_f32(inp, weight, bias, out, N, C, eps, kernel, c->threads);
  gm_op_round(c, out, (size_t)N * C);
  return 0;
}

int gm_op_layernorm_bwd(const gm_op_ctx *c, float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean, const float *rstd, int N, int C) {
  if (N <= 0 || C <= 0) { // no rows: zero parameter gradients, as torch's
    for (int j = 0; j < C; j++) {
      if (dweight) dweight[j] = 0.0f;
      if (dbias) dbias[j] = 0.0f;
    }
    return 0;
  }
  if (c->profile->layer_norm == GM_LN_NATIVE && c->dtype != GM_F32) {
    // ATen's kernel for f16/bf16 x, w, b: it rounds everything it writes itself
    return gm_layernorm_bwd_f32(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C,
                                c->dtype == GM_F16 ? GM_LN_KERNEL_F16 : GM_LN_KERNEL_BF16, c->threads);
  }
  // f32 tensors (f32 runs, and the fp32 rule's x.float(), w.float()): the f32 kernel, then the
  // casts' backward rounds each gradient once to the dtype
  if (gm_layernorm_bwd_f32(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, GM_LN_KERNEL_F32, c->threads))
    return -1;
  if (dinp) gm_op_round(c, dinp, (size_t)N * C);
  if (dweight) gm_op_round(c, dweight, (size_t)C);
  if (dbias) gm_op_round(c, dbias, (size_t)C);
  return 0;
}
