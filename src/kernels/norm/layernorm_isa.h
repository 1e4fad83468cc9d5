// The layer-norm family's per-ISA bodies, declared once for layernorm.c (the dispatcher) and
// layernorm_avx2.c: layernorm_row.h built with AVX2 + FMA, the bits of the baseline build.
#ifndef GPTMEG_KERNELS_LAYERNORM_ISA_H
#define GPTMEG_KERNELS_LAYERNORM_ISA_H

#include "gptmeg/kernels.h"

void gm_layernorm_row_avx2(const float *x, const float *w, const float *b, float *y, int D, float eps, gm_ln_kernel kernel);

#endif
