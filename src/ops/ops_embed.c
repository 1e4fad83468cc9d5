// Token + position embedding: out[b, t] = R(wte[tok] + wpe[t0 + t]).
// Numerics contract: one f32 addition of two dtype values per element, one rounding to the dtype
// (transformers' inputs_embeds + position_embeds in the dtype).
#include "ops/ops_internal.h"

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
                        int T, int t0, int C) {
  (void)c, (void)dwte, (void)dwpe, (void)dout, (void)tokens, (void)B, (void)T, (void)t0, (void)C;
  return gm_op_not_yet("embedding");
}
