// Linear layer: out = R(inp @ op(w) + bias).
// Numerics contract: f32 accumulation in PyTorch 2.15's CPU order for the dtype (f32: MKL's sgemm
// order; f16: ATen's; bf16: oneDNN's AVX512-BF16 pair order), the bias added inside the product as
// addmm does, then one rounding to the dtype. The packed bf16 copy and the f16 bits copy are read
// instead of the f32 storage where present: the same bits, faster. Any thread count, any split
// of the rows: the same bits.
#include "gptmeg/kernels.h"
#include "ops/ops_internal.h"

int gm_op_linear_fwd(const gm_op_ctx *c, float *out, const float *inp, const gm_op_weight *w, const float *bias, int N,
                     int C, int OC) {
  const int ldw = w->trans ? C : OC;
  if (c->dtype == GM_BF16 && w->bf16p) gm_matmul_bf16_packed(inp, C, w->bf16p, bias, 1.0f, out, OC, N, OC, C, c->threads);
  else if (c->dtype == GM_F16 && w->f16h && (w->trans || N == 1)) // the f16 kernels' fast shapes
    gm_matmul_f16_torch_h(inp, C, w->f16h, ldw, w->trans, bias, 1.0f, out, OC, N, OC, C, c->threads);
  else gm_op_matmul(c, inp, C, w->w, ldw, w->trans, bias, 1.0f, out, OC, N, OC, C);
  gm_op_round(c, out, (size_t)N * OC);
  return 0;
}

int gm_op_linear_bwd(const gm_op_ctx *c, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const gm_op_weight *w, int N, int C, int OC) {
  (void)c, (void)dinp, (void)dweight, (void)dbias, (void)dout, (void)inp, (void)w, (void)N, (void)C, (void)OC;
  return gm_op_not_yet("linear");
}
