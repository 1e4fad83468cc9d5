// Layer norm over the last dimension in PyTorch's CPU order (contract in nn.h).
//
// Mean and variance follow ATen's RowwiseMoments as built for this machine class (AVX2): the row is
// read in steps of `width` elements as 8-lane vectors (lane k holds x[k], x[k+8], ... of its half);
// each lane runs Welford's update over chunks of 16 steps, chunks are merged through a binary
// cascade, the leftover N % width elements run a scalar Welford, and the 8 lanes are then merged
// into it one by one.
// Which multiply-adds torch's build fused was measured, site by site, against torch 2.15's own mean
// and rstd (tools/ref/probe_layernorm_f16.py; tests/test_layernorm.c holds every dtype to them bit
// for bit; the vector merge's m2 read from torch's own machine code, 2026-12-06): the Welford steps
// and the scalar merges are fused, the vector merges round the mean's product and fuse
// (m0 * d) * (c * d) onto (m2 + m2_add), and the scalar tail's m2 step is fused only in the f16 kernel. Those sites are written as fmaf or as separate operations (this project
// builds with -ffp-contract=off), so the bits do not depend on our compiler.
// rstd = 1 / sqrt(var + (float)eps); y = fma((x - mean) * rstd, w, b) for f32 rows (width 8),
// y = fma(fma(x, rstd, -rstd * mean), w, b) for f16/bf16 rows (width 16).
#include "kernels/norm/layernorm_row.h"
#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"
#include "kernels/norm/layernorm_isa.h"

#include <omp.h>

typedef void (*row_fn)(const float *x, const float *w, const float *b, float *y, int D, float eps, gm_ln_kernel kernel);

void gm_layernorm_f32(const float *x, const float *w, const float *b, float *y, int R, int D, double eps, gm_ln_kernel kernel,
                      int threads) {
  if (threads <= 0) threads = omp_get_max_threads();
  // The AVX2 level (and AVX-512's) runs the row built with FMA; below it, the baseline build here.
  const row_fn row = gm_cpu_simd() >= GM_SIMD_AVX2 ? gm_layernorm_row_avx2 : layernorm_row;
#pragma omp parallel for schedule(static) num_threads(threads) if (R > 16)
  for (int r = 0; r < R; r++) row(x + (size_t)r * D, w, b, y + (size_t)r * D, D, (float)eps, kernel);
}

void gm_layernorm_row_stats(const float *x, int D, double eps, gm_ln_kernel kernel, float *mean, float *rstd) {
  row_stats(x, D, kernel, (float)eps, mean, rstd);
}
