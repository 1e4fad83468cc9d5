// Token + position embedding: out[b, t] = R(wte[tok] + wpe[t0 + t]).
// Numerics contract: one f32 addition of two dtype values per element, one rounding to the dtype
// (transformers' inputs_embeds + position_embeds in the dtype).
// Backward (autograd of GPT2Model's wte(input_ids) + wpe(position_ids), position_ids [1, T]):
//   dwte: ATen's embedding_dense_backward_cpu: zeros, then for each token in (b, t) order its
//         row of dout added onto row tok: dwte[tok] = R(dwte[tok] + dout[b, t]), one rounding to
//         the dtype per add (add_stub on a dtype tensor);
//   dwpe: the broadcast's gradient sum(dout, dim 0) over the batch (ATen's cascade sum, f32
//         accumulation, one rounding: a running sum in b order below 16 rows; see batch_sum), then
//         the embedding backward of positions t0 .. t0+T-1, each once: dwpe[t0 + t] =
//         R(sum_b dout[b, t]), zero elsewhere.
// Measured against torch 2.15 (tools/ref/gen_embedding_bwd_goldens.py): the bits do not depend on
// the thread count (ATen splits embedding_dense_backward by weight row, the sum by output columns),
// nor do gptmeg's (dwpe's column groups are shared between c->threads; dwte is one pass in order).
#include "gptmeg/kernels.h"
#include "ops/ops_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int gm_op_embedding_fwd(const gm_op_ctx *c, float *out, const int32_t *tokens, const float *wte, const uint16_t *wte_bf16,
                        const float *wpe, int B, int T, int t0, int C) {
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const size_t row = (size_t)tokens[b * T + t] * C;
      const float *pe = wpe + (size_t)(t0 + t) * C;
      float *o = out + ((size_t)b * T + t) * C;
      if (wte) {
        for (int i = 0; i < C; i++) o[i] = wte[row + i] + pe[i];
      } else {
        gm_dtype_to_f32_buf(GM_BF16, wte_bf16 + row, o, (size_t)C); // exact
        for (int i = 0; i < C; i++) o[i] = o[i] + pe[i];
      }
    }
  gm_op_round(c, out, (size_t)B * T * C);
  return 0;
}

enum { SUM_COLS = 32 }; // the widest column group ATen sums at once (4 vectors of 8 f32 lanes)

// ATen's cascade sum (SumKernel.cpp multi_row_sum) down each of w <= SUM_COLS adjacent columns:
// out[k] = sum of v[i * stride + k] for i < n, f32. Blocks of 2^p rows (p = max(4, ceil_log2(n) / 4))
// run into level 0, each full block is carried up the 4 levels as far as the row count's bits say,
// and the levels are added at the end; n < 16 is a running sum from 0.
static void cascade_sum(float *out, const float *v, size_t stride, int64_t n, int w) {
  int lg = 1;
  if (n > 2)
    for (lg = 0; ((uint64_t)(n - 1) >> lg) != 0; lg++) {}
  const int p = lg / 4 > 4 ? lg / 4 : 4;
  const int64_t step = (int64_t)1 << p, mask = step - 1;
  float acc[4][SUM_COLS] = {{0.0f}};
  int64_t i = 0;
  while (i + step <= n) {
    for (int64_t j = 0; j < step; j++, i++)
      for (int k = 0; k < w; k++) acc[0][k] = acc[0][k] + v[(size_t)i * stride + k];
    for (int l = 1; l < 4; l++) {
      for (int k = 0; k < w; k++) {
        acc[l][k] = acc[l][k] + acc[l - 1][k];
        acc[l - 1][k] = 0.0f;
      }
      if ((i & (mask << (l * p))) != 0) break;
    }
  }
  for (; i < n; i++)
    for (int k = 0; k < w; k++) acc[0][k] = acc[0][k] + v[(size_t)i * stride + k];
  for (int k = 0; k < w; k++) out[k] = ((acc[0][k] + acc[1][k]) + acc[2][k]) + acc[3][k];
}

// ATen's row_sum down one column: its n values as (n / 4, 4), a cascade sum of each of the four
// interleaved sub-columns, the leftover n % 4 values added to the first, then the four in order.
static float ilp_sum(const float *v, size_t stride, int64_t n) {
  const int64_t m = n / 4;
  float p[4];
  for (int k = 0; k < 4; k++) cascade_sum(&p[k], v + (size_t)k * stride, 4 * stride, m, 1);
  for (int64_t i = m * 4; i < n; i++) p[0] = p[0] + v[(size_t)i * stride];
  return ((p[0] + p[1]) + p[2]) + p[3];
}

// out[j] = sum over b < B of in[b * ncols + j], as torch 2.15's CPU sum over dim 0 (cascade_sum,
// its AVX2 build: 8 f32 accumulator lanes): with ncols >= one input vector (8 f32, 16 f16/bf16
// values), columns in groups of 32 take the cascade sum and the rest the interleaved row_sum; with
// fewer columns, groups of 4 the cascade and the rest row_sum. f32 accumulation (f16/bf16 widened).
// ATen splits the columns between threads on 128-byte boundaries, which keeps the groups: the bits
// do not depend on the thread count (here the groups are shared out).
static void batch_sum(float *out, const float *in, int B, int64_t ncols, gm_dtype dt, int threads) {
  const int64_t vec = dt == GM_F32 ? 8 : 16, group = ncols >= vec ? SUM_COLS : 4;
  const int64_t groups = ncols / group;
#pragma omp parallel for schedule(static) num_threads(threads) if (groups > 64)
  for (int64_t g = 0; g < groups; g++) cascade_sum(out + g * group, in + g * group, (size_t)ncols, B, (int)group);
  for (int64_t j = groups * group; j < ncols; j++) out[j] = ilp_sum(in + j, (size_t)ncols, B);
}

// w (C) = R(w + g): one f32 addition of two dtype values a column, one rounding (add_stub on a dtype
// tensor; autograd's sum of two gradients).
static void add_row(const gm_op_ctx *c, float *w, const float *g, int C) {
  for (int j = 0; j < C; j++) w[j] = w[j] + g[j];
  gm_op_round(c, w, (size_t)C);
}

int gm_op_embedding_bwd(const gm_op_ctx *c, float *dwte, float *dwpe, const float *dout, const int32_t *tokens, int B,
                        int T, int t0, int C, int V, int P) {
  if (dwte) {
    memset(dwte, 0, (size_t)V * C * sizeof(float));
    for (int i = 0; i < B * T; i++) add_row(c, dwte + (size_t)tokens[i] * C, dout + (size_t)i * C, C);
  }
  if (dwpe) {
    if (t0 < 0 || t0 + T > P) return gm_fail("embedding backward: positions %d..%d outside wpe's %d rows", t0, t0 + T - 1, P);
    memset(dwpe, 0, (size_t)P * C * sizeof(float));
    float *w = dwpe + (size_t)t0 * C;
    const size_t n = (size_t)T * C;
    if (B == 1) memcpy(w, dout, n * sizeof(float)); // autograd's sum_to_size: no sum
    else batch_sum(w, dout, B, (int64_t)n, c->dtype, c->threads);
    // the sum lands on torch's zero-filled output, then the embedding backward adds it onto zeros
    for (size_t j = 0; j < n; j++) w[j] = gm_round_f32(c->dtype, 0.0f + w[j]);
  }
  return 0;
}

int gm_op_embedding_bwd_tied(const gm_op_ctx *c, float *dwte, const float *dout, const int32_t *tokens, int B, int T,
                             int C, int V) {
  const int n = B * T;
  int32_t *slot = malloc((size_t)V * sizeof *slot);
  float *e = calloc((size_t)(n > 0 ? n : 1) * C, sizeof *e);
  if (!slot || !e) {
    free(slot);
    free(e);
    return gm_fail("embedding backward: out of memory for %d rows of %d", n, C);
  }
  for (int v = 0; v < V; v++) slot[v] = -1;
  int used = 0;
  // embedding_dense_backward's rows, only those a token touches: (b, t) order, one rounding per add
  for (int i = 0; i < n; i++) {
    if (slot[tokens[i]] < 0) slot[tokens[i]] = used++;
    add_row(c, e + (size_t)slot[tokens[i]] * C, dout + (size_t)i * C, C);
  }
  // InputBuffer's sum: lm_head's gradient + the embedding's; untouched rows add +0 (so -0 -> +0)
#pragma omp parallel for schedule(static) num_threads(c->threads) if (V > 1024)
  for (int v = 0; v < V; v++) {
    float *w = dwte + (size_t)v * C;
    if (slot[v] < 0) {
      for (int j = 0; j < C; j++) w[j] = w[j] + 0.0f;
    } else {
      add_row(c, w, e + (size_t)slot[v] * C, C);
    }
  }
  free(slot);
  free(e);
  return 0;
}
