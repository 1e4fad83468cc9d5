// Residual add: out = R(branch + resid).
// Numerics contract: one f32 addition of two dtype values, one rounding to the dtype (eager
// torch's add of two dtype tensors: f32 opmath, rounded once). Elementwise: any thread count.
#include "ops/ops_internal.h"

int gm_op_residual_fwd(const gm_op_ctx *c, float *out, const float *resid, const float *branch, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = branch[i] + resid[i];
  gm_op_round(c, out, n);
  return 0;
}

// Autograd's InputBuffer adds the second gradient of a tensor to the first: one f32 addition of
// two dtype values, one rounding (commutative, so the arrival order does not matter for two).
int gm_op_residual_bwd(const gm_op_ctx *c, float *dresid, const float *dout, size_t n) {
  for (size_t i = 0; i < n; i++) dresid[i] = dresid[i] + dout[i];
  gm_op_round(c, dresid, n);
  return 0;
}
