// The row kernel of layernorm.c (contract in nn.h), included by layernorm.c (built for the baseline
// ISA, where fmaf is a libm call) and by layernorm_avx2.c (built with FMA, where fmaf is one
// instruction and the 8-lane loops vectorise). fmaf is exact either way: both give the same bits.
#ifndef GPTMEG_KERNELS_LAYERNORM_ROW_H
#define GPTMEG_KERNELS_LAYERNORM_ROW_H

#include "gptmeg/kernels.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

enum { ACC_LANES = 8, MAX_LANES = 8, CHUNK = 16, MAX_DEPTH = 40 };

typedef struct {
  long count;
  float m1[MAX_LANES], m2[MAX_LANES];
} moments;

// Merges (cnt, m1a, m2a) into (m0, m1, m2) for one lane (ATen's AddMoments).
static void merge_lane(long cnt, float m1a, float m2a, long *m0, float *m1, float *m2) {
  long n = *m0 + cnt;
  float c = n == 0 ? 0.0f : (float)cnt / (float)n;
  float d = m1a - *m1;
  *m1 = fmaf(c, d, *m1);
  *m2 = *m2 + fmaf(d * d * c, (float)*m0, m2a);
  *m0 = n;
}

// Merges the 8-lane accumulators a into `into` (ATen's AddMomentsVec: the two halves of an f16/bf16
// step, and the chunk cascade). Its roundings differ from the scalar merge's, as torch 2.15's build
// compiled it (read from its AVX2 RowwiseMomentsImpl<float>: vmulps, vaddps, vfmadd231ps): the
// mean's product is rounded before the add, and the m2 update is fma(m0 * d, c * d, m2 + m2_add),
// both products rounded and the old sums added first. (An earlier fit, fma(d, (d * c) * m0, ...),
// agreed with torch's mean and rstd on all but about 1 row in 1000 at lengths that are no 128 x 2^k.)
static void merge_moments(const moments *a, moments *into, int lanes) {
  long n = into->count + a->count;
  float c = n == 0 ? 0.0f : (float)a->count / (float)n, m0 = (float)into->count;
  for (int k = 0; k < lanes; k++) {
    float d = a->m1[k] - into->m1[k];
    into->m1[k] = into->m1[k] + c * d;
    into->m2[k] = fmaf(m0 * d, c * d, into->m2[k] + a->m2[k]);
  }
  into->count = n;
}

static int ceil_log2(long x) {
  if (x <= 2) return 1;
  int d = 0;
  for (long v = x - 1; v > 0; v >>= 1) d++;
  return d;
}

// Mean and biased variance of x[0..N). ATen loads `width` elements per step (8 f32, or 16 f16/bf16
// widened into two 8-lane halves); each half runs its own Welford update and the halves are merged
// one after the other into 8-lane accumulators.
static void row_moments(const float *x, int N, gm_ln_kernel kernel, float *mean, float *var) {
  const int width = kernel == GM_LN_KERNEL_F32 ? 8 : 16;
  static const float inv[CHUNK] = {1.0f,       1.0f / 2,  1.0f / 3,  1.0f / 4,  1.0f / 5,  1.0f / 6,
                                   1.0f / 7,  1.0f / 8,  1.0f / 9,  1.0f / 10, 1.0f / 11, 1.0f / 12,
                                   1.0f / 13, 1.0f / 14, 1.0f / 15, 1.0f / 16};
  const int lanes = ACC_LANES, halves = width / ACC_LANES;
  long n = N / width, chunks = (n + CHUNK - 1) / CHUNK;
  int depth = ceil_log2(chunks);
  moments stack[MAX_DEPTH];
  memset(stack, 0, sizeof stack);
  for (long i = 0; i < chunks; i++) {
    long steps = n - i * CHUNK < CHUNK ? n - i * CHUNK : CHUNK;
    for (int h = 0; h < halves; h++) {
      moments cm;
      memset(&cm, 0, sizeof cm);
      cm.count = steps;
      for (long j = 0; j < steps; j++) {
        const float *xv = x + (i * CHUNK + j) * width + h * lanes;
        for (int k = 0; k < lanes; k++) {
          float d = xv[k] - cm.m1[k];
          cm.m1[k] = fmaf(d, inv[j], cm.m1[k]);
          cm.m2[k] = fmaf(d, xv[k] - cm.m1[k], cm.m2[k]);
        }
      }
      merge_moments(&cm, &stack[0], lanes);
    }
    long mask = i + 1;
    for (int j = 1; j < depth && (mask & 1) == 0; j++) {
      merge_moments(&stack[j - 1], &stack[j], lanes);
      memset(&stack[j - 1], 0, sizeof stack[j - 1]);
      mask >>= 1;
    }
  }
  for (int j = 1; j < depth; j++) merge_moments(&stack[j], &stack[0], lanes);
  long m0 = 0;
  float m1 = 0.0f, m2 = 0.0f;
  for (long i = n * width; i < N; i++) {
    float d = x[i] - m1;
    m0++;
    m1 = m1 + d / (float)m0;
    // measured: torch's f16 kernel fuses this multiply-add, its bf16 and f32 kernels do not
    m2 = kernel == GM_LN_KERNEL_F16 ? fmaf(d, x[i] - m1, m2) : m2 + d * (x[i] - m1);
  }
  for (int k = 0; k < lanes; k++) merge_lane(stack[0].count, stack[0].m1[k], stack[0].m2[k], &m0, &m1, &m2);
  *mean = m1;
  *var = m2 / (float)N;
}

// The row's mean and rstd = 1 / sqrt(var + eps), as the kernel hands them to its output loop.
static void row_stats(const float *x, int D, gm_ln_kernel kernel, float eps, float *mean, float *rstd) {
  float var;
  row_moments(x, D, kernel, mean, &var);
  *rstd = 1.0f / sqrtf(var + eps);
}

static void layernorm_row(const float *x, const float *w, const float *b, float *y, int D, float eps, gm_ln_kernel kernel) {
  float mean, rstd;
  row_stats(x, D, kernel, eps, &mean, &rstd);
  if (kernel == GM_LN_KERNEL_F32) { // ATen's f32 kernel: (x - mean) * rstd, then * w + b fused
    for (int i = 0; i < D; i++) y[i] = fmaf((x[i] - mean) * rstd, w[i], b[i]);
  } else { // its reduced-type kernel: x * rstd + (-rstd * mean) fused, then * w + b fused
    float shift = -rstd * mean;
    for (int i = 0; i < D; i++) y[i] = fmaf(fmaf(x[i], rstd, shift), w[i], b[i]);
  }
}

#endif
