// layernorm_row.h built with AVX2 + FMA (fmaf inline, lanes vectorised): the same bits as the
// baseline build of layernorm.c, faster. One row: y[D] = layer_norm(x[D]) * w + b (contract in nn.h).
#include "kernels/norm/layernorm_row.h"
#include "kernels/norm/layernorm_isa.h"

void gm_layernorm_row_avx2(const float *x, const float *w, const float *b, float *y, int D, float eps, gm_ln_kernel kernel) {
  layernorm_row(x, w, b, y, D, eps, kernel);
}
