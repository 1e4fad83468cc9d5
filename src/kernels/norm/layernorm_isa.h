// The layer-norm family's per-ISA bodies, declared once for layernorm.c and layernorm_bwd.c (the
// dispatchers) and layernorm_avx2.c / layernorm_bwd_avx2.c: AVX2 + FMA builds, the bits of the
// baseline code.
#ifndef GPTMEG_KERNELS_LAYERNORM_ISA_H
#define GPTMEG_KERNELS_LAYERNORM_ISA_H

#include "gptmeg/kernels.h"

void gm_layernorm_row_avx2(const float *x, const float *w, const float *b, float *y, int D, float eps, gm_ln_kernel kernel);
// layernorm_bwd.c's row loops (layernorm_bwd_avx2.c): bw += dy * (a * x + bm); bb += dy;
// dx = fma(b2, x, (a * dy) * w) + c2.
void gm_ln_bwd_dw_row_avx2(float *bw, const float *dy, const float *x, float a, float bm, int D);
void gm_ln_bwd_db_row_avx2(float *bb, const float *dy, int D);
void gm_ln_bwd_dx_row_avx2(float *dx, const float *dy, const float *x, const float *w, float a, float b2, float c2, int D);

#endif
