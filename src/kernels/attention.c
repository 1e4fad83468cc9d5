// Causal attention of one (batch, head) over a KV cache, f32 (contract in nn.h).
#include "kernels/nn.h"

#include <string.h>

void gm_attention_head_f32(const float *q, int ldq, const float *k, const float *v, int hd, int t0, int Tq,
                           const gm_attn_rule *r, float *scratch, float *out, int ldo) {
  int len = t0 + Tq;
  // scores [Tq, len] = alpha * q @ k^T
  gm_sgemm1(q, ldq, k, hd, true, r->alpha, 0.0f, scratch, len, Tq, len, hd);
  for (int i = 0; i < Tq; i++) {
    float *s = scratch + (size_t)i * len;
    int visible = t0 + i + 1;
    if (r->divide != 0.0f)
      for (int j = 0; j < visible; j++) s[j] = s[j] / r->divide;
    if (r->divide2 != 0.0f)
      for (int j = 0; j < visible; j++) s[j] = s[j] / r->divide2;
    gm_softmax_row_f32(s, visible, len - visible, r->mask_value);
    if (visible < len) memset(s + visible, 0, (size_t)(len - visible) * sizeof(float));
  }
  // out [Tq, hd] = P @ v
  gm_sgemm1(scratch, len, v, hd, false, 1.0f, 0.0f, out, ldo, Tq, hd, len);
}
