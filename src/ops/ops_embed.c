// Token + position embedding: out[b, t] = R(wte[tok] + wpe[t0 + t]).
// Numerics contract: one f32 addition of two dtype values per element, one rounding to the dtype
// (transformers' inputs_embeds + position_embeds in the dtype).
// Backward (autograd of GPT2Model's wte(input_ids) + wpe(position_ids), position_ids [1, T]):
//   dwte: ATen's embedding_dense_backward_cpu: zeros, then for each token in (b, t) order its
//         row of dout added onto row tok: dwte[tok] = R(dwte[tok] + dout[b, t]), one rounding to
//         the dtype per add (add_stub on a dtype tensor);
//   dwpe: the broadcast's gradient sum(dout, dim 0) over the batch (ATen's sum: f32 accumulation
//         in b order, one rounding), then the embedding backward of positions t0 .. t0+T-1, each
//         once: dwpe[t0 + t] = R(sum_b dout[b, t]), zero elsewhere.
// Measured against torch 2.15 (tools/ref/gen_embedding_bwd_goldens.py): the bits do not depend on
// the thread count (ATen splits embedding_dense_backward by weight row, the sum by output), nor
// here, where the columns are split across threads.
#include "ops/ops_internal.h"

#include <string.h>

int gm_op_embedding_fwd(const gm_op_ctx *c, float *out, const int32_t *tokens, const float *wte, const float *wpe, int B,
                        int T, int t0, int C) {
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const float *e = wte + (size_t)tokens[b * T + t] * C, *pe = wpe + (size_t)(t0 + t) * C;
      float *o = out + ((size_t)b * T + t) * C;
      for (int i = 0; i < C; i++) o[i] = e[i] + pe[i];
    }
  gm_op_round(c, out, (size_t)B * T * C);
  return 0;
}

int gm_op_embedding_bwd(const gm_op_ctx *c, float *dwte, float *dwpe, const float *dout, const int32_t *tokens, int B,
                        int T, int t0, int C, int V, int P) {
  if (dwte) {
    memset(dwte, 0, (size_t)V * C * sizeof(float));
    for (int i = 0; i < B * T; i++) {
      float *w = dwte + (size_t)tokens[i] * C;
      const float *g = dout + (size_t)i * C;
      for (int j = 0; j < C; j++) w[j] = gm_round_f32(c->dtype, w[j] + g[j]);
    }
  }
  if (dwpe) {
    if (t0 < 0 || t0 + T > P) return gm_fail("embedding backward: positions %d..%d outside wpe's %d rows", t0, t0 + T - 1, P);
    memset(dwpe, 0, (size_t)P * C * sizeof(float));
    for (int t = 0; t < T; t++) {
      float *w = dwpe + (size_t)(t0 + t) * C;
      for (int j = 0; j < C; j++) {
        float s = dout[(size_t)t * C + j];
        for (int b = 1; b < B; b++) s = s + dout[((size_t)b * T + t) * C + j];
        w[j] = gm_round_f32(c->dtype, w[j] + s); // onto the zeros, as torch (-0 becomes +0)
      }
    }
  }
  return 0;
}
