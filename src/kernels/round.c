// Rounding of f32 buffers to a storage dtype in place (contract in nn.h).
#include "kernels/nn.h"

void gm_round_inplace(gm_dtype dt, float *x, size_t n) {
  if (dt == GM_F32) return;
  if (dt == GM_F16)
    for (size_t i = 0; i < n; i++) x[i] = gm_f16_to_f32(gm_f32_to_f16(x[i]));
  else
    for (size_t i = 0; i < n; i++) x[i] = gm_bf16_to_f32(gm_f32_to_bf16(x[i]));
}
