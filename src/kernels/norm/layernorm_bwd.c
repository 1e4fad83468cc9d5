// Layer-norm backward in PyTorch 2.15's CPU order (ATen's LayerNormBackwardKernelImplInternal;
// contract in gptmeg/kernels.h). Like the forward, ATen runs this kernel's AVX2 build even under
// its AVX512 capability (REGISTER_DISPATCH leaves AVX512 out): Vectorized<float> has 8 lanes, f16/bf16
// rows go 16 elements a step as two 8-lane halves (measured: the 16-lane shape fails the goldens).
//
// Numerics contract, per row i (a = rstd[i], m = mean[i], g = w, f32 arithmetic):
//   dgamma buffer[t][j] = fma(dy, fma(a, x, -a * m), buffer)     (t: the thread chunk of row i)
//   dbeta  buffer[t][j] = buffer + dy
//   ds = sum_j (dy * x) * g,  db = sum_j dy * g      (reduce_row: ATen's map*_reduce_all order)
//   b' = fma(db, m, -ds) * a * a * a * (1/C),  c' = fma(-b', m, -(db * a * (1/C)))
//   dx = fma(b', x, (a * dy) * g) + c'
//   dgamma[j] = the f32 sum of the thread buffers in thread order, from 0; likewise dbeta.
// GM_LN_KERNEL_F32 is the kernel of f32 tensors: nothing is rounded. GM_LN_KERNEL_F16/BF16 is the
// kernel of f16/bf16 x, w and b (ATen's generic frame with T = T2 = the dtype, opmath f32): mean and
// rstd are read as torch saved them, rounded to the dtype; each buffer update is rounded to the
// dtype (the buffers are dtype tensors); dx, and dgamma/dbeta (the f32 sum of the rounded buffers)
// are rounded once.
// Which multiply-adds GCC fused in torch's build (-ffp-contract=fast) was found by trying the
// candidates against torch (tools/ref/gen_layernorm_bwd_goldens.py, tests/test_layernorm_bwd.c);
// they are written as fmaf, the rest as separate operations (this project: -ffp-contract=off).
// Threads: ATen's parallel_for(0, R, 1) gives min(T, R) chunks of ceil(R / chunks) rows (one chunk
// when R == 1 or T == 1), each accumulating into its thread's buffer; the bits of dgamma/dbeta
// follow that split for T = `threads` (checked against torch for 1 to 4), dx does not depend on it.
#include "gptmeg/core.h"
#include "gptmeg/kernels.h"
#include "gptmeg/cpu.h"
#include "kernels/norm/layernorm_isa.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

enum { LANES = 8 };

// Sum of the products p(j) * g[j] for j < n, p(j) = dy[j] * x[j] (x given) or dy[j], in the order
// of ATen's map3_reduce_all / map2_reduce_all (AVX2 build): `bw` elements per step (8 for f32
// tensors; 16 = two 8-lane halves for f16/bf16 ones). A row shorter than one step is summed lane by
// lane (the f16/bf16 high half first folded onto the low half); else the lanes accumulate, the
// halves are added, and the 8 lanes fold as a tree (k + 4, k + 2, k + 1). Where GCC fused the
// product onto its accumulator in torch's build (measured): every f16/bf16 step, and the f32
// kernel's last partial step; not the f32 kernel's full steps.
static float reduce_row(const float *dy, const float *x, const float *g, int n, bool reduced) {
  const int bw = reduced ? 2 * LANES : LANES;
#define P1(j) (x ? dy[j] * x[j] : dy[j])
  if (n < bw) { // one partial vector, its lanes summed one by one
    float v[2 * LANES] = {0};
    for (int k = 0; k < n; k++) v[k] = P1(k) * g[k];
    int lanes = n;
    if (reduced && n > LANES) { // the high half folded onto the low half first
      for (int k = 0; k < n - LANES; k++) v[k] = fmaf(P1(LANES + k), g[LANES + k], v[k]);
      lanes = LANES;
    }
    float s = v[0];
    for (int k = 1; k < lanes; k++) s = s + v[k];
    return s;
  }
  float acc[2 * LANES];
  for (int k = 0; k < bw; k++) acc[k] = P1(k) * g[k];
  int d = bw;
  for (; d + bw <= n; d += bw)
    for (int k = 0; k < bw; k++) acc[k] = reduced ? fmaf(P1(d + k), g[d + k], acc[k]) : acc[k] + P1(d + k) * g[d + k];
  for (int k = 0; d + k < n; k++) acc[k] = fmaf(P1(d + k), g[d + k], acc[k]);
#undef P1
  if (reduced)
    for (int k = 0; k < LANES; k++) acc[k] = acc[k] + acc[LANES + k];
  for (int w = LANES / 2; w >= 1; w /= 2) // 128-bit halves, 64-bit pairs, neighbours
    for (int k = 0; k < w; k++) acc[k] = acc[k] + acc[k + w];
  return acc[0];
}

int gm_layernorm_bwd_f32(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                          const float *mean, const float *rstd, int R, int D, gm_ln_kernel kernel, int threads) {
  if (threads <= 0) threads = omp_get_max_threads();
  const bool reduced = kernel != GM_LN_KERNEL_F32;
  const gm_dtype dt = kernel == GM_LN_KERNEL_F16 ? GM_F16 : kernel == GM_LN_KERNEL_BF16 ? GM_BF16 : GM_F32;
  const float scale = 1.0f / (float)D;
  // ATen's parallel_for(0, R, 1): serial for one row or one thread, else min(threads, R) chunks.
  const int chunks = (R > 1 && threads > 1) ? (threads < R ? threads : R) : 1;
  const int rows_per = chunks ? (R + chunks - 1) / chunks : 0;
  const bool want_w = dw != NULL, want_b = db != NULL;
  float *buf = NULL;
  if (want_w || want_b) {
    buf = calloc((size_t)2 * chunks * D, sizeof(float));
    if (!buf) return gm_fail("layer norm backward: out of memory for 2 x %d x %d buffer floats", chunks, D);
  }
  const bool avx2 = gm_cpu_simd() >= GM_SIMD_AVX2; // the row loops' AVX2 + FMA bodies (same bits)
#pragma omp parallel for schedule(static, 1) num_threads(chunks)
  for (int t = 0; t < chunks; t++) {
    float *bw = buf ? buf + (size_t)t * D : NULL, *bb = buf ? buf + ((size_t)chunks + t) * D : NULL;
    const int r1 = (t + 1) * rows_per < R ? (t + 1) * rows_per : R;
    for (int i = t * rows_per; i < r1; i++) {
      const float *dyr = dy + (size_t)i * D, *xr = x + (size_t)i * D;
      const float a = gm_round_f32(dt, rstd[i]), m = gm_round_f32(dt, mean[i]);
      if (want_w) {
        const float bm = -a * m;
        if (avx2) gm_ln_bwd_dw_row_avx2(bw, dyr, xr, a, bm, D);
        else
          for (int j = 0; j < D; j++) bw[j] = fmaf(dyr[j], fmaf(a, xr[j], bm), bw[j]);
        if (reduced) gm_round_inplace(dt, bw, (size_t)D); // the buffer is a dtype tensor
      }
      if (want_b) {
        if (avx2) gm_ln_bwd_db_row_avx2(bb, dyr, D);
        else
          for (int j = 0; j < D; j++) bb[j] = bb[j] + dyr[j];
        if (reduced) gm_round_inplace(dt, bb, (size_t)D);
      }
      if (dx) {
        const float ds = reduce_row(dyr, xr, w, D, reduced), dbs = reduce_row(dyr, NULL, w, D, reduced);
        const float b2 = fmaf(dbs, m, -ds) * a * a * a * scale;
        const float c2 = fmaf(-b2, m, -(dbs * a * scale));
        float *dxr = dx + (size_t)i * D;
        if (avx2) gm_ln_bwd_dx_row_avx2(dxr, dyr, xr, w, a, b2, c2, D);
        else
          for (int j = 0; j < D; j++) dxr[j] = fmaf(b2, xr[j], (a * dyr[j]) * w[j]) + c2;
        if (reduced) gm_round_inplace(dt, dxr, (size_t)D);
      }
    }
  }
  for (int j = 0; j < D && buf; j++) {
    float sw = 0.0f, sb = 0.0f;
    for (int t = 0; t < chunks; t++) {
      sw = sw + buf[(size_t)t * D + j];
      sb = sb + buf[((size_t)chunks + t) * D + j];
    }
    if (want_w) dw[j] = gm_round_f32(dt, sw);
    if (want_b) db[j] = gm_round_f32(dt, sb);
  }
  free(buf);
  return 0;
}
