// Linear layer: out = R(inp @ op(w) + bias), and its backward.
// Numerics contract (forward): f32 accumulation in PyTorch 2.15's CPU order for the dtype (f32: MKL's sgemm
// order; f16: ATen's; bf16: oneDNN's AVX512-BF16 pair order), the bias added inside the product as
// addmm does, then one rounding to the dtype. The packed bf16 copy and the f16 bits copy are read
// instead of the f32 storage where present: the same bits, faster. Any thread count, any split
// of the rows: the same bits.
// Numerics contract (backward, gm_op_linear_bwd): torch 2.15 autograd of transformers' Conv1D
// (addmm(b, x, W), W [C, OC]) and of the bias-free lm_head (F.linear(x, W), W [OC, C]). Autograd
// issues mm(dout, W^T) and mm(x^T, dout) (Conv1D), mm(dout, W) and mm(dout^T, x) (lm_head: the
// weight is the transposed view's column-major input, so mm_mat2_backward computes dout^T @ x),
// each through addmm_impl_cpu_ (beta 0, alpha 1) with the strides autograd gives them: here
// gm_op_matmul_t with the same transpositions. Each product is rounded once to the dtype. dbias is
// autograd's sum_to_size: ATen's sum over dim 0 (aten_sum_rows below: the AVX2 cascade_sum kernel,
// which ATen also runs on AVX512 CPUs), in f32 for every dtype, rounded once.
// Bits (measured: tests/test_linear_bwd.c, goldens of tools/ref/gen_linear_bwd_goldens.py, torch
// on 1 and 2 threads, intel-amx target; GPT-2's shapes N in {1..256} x 8 (C, OC) + lm_head V in
// {64, 50257}, and 9 more):
//   f32: all three gradients on 1 and 2 threads (MKL's K split reproduced; on more threads the
//        K cut into parts, gm_f32_torch_kparts, for N 768..1536: GPT-2 124M's gradients on 4, 6
//        and 8 threads), the lm_head's dinp of one row too (MKL's one-row kernel for B as stored,
//        GM_F32_BLOCKS_INTEL_ROW8, since 2026-12-05: before, 144 of 1568 outputs);
//   f16: all (dinp of one row against W^T is ATen's gemv, fp16_dot_with_fp32_arith: not oneDNN);
//   bf16: all three on 1 and 2 threads (oneDNN's K chunks, K splits and K-tail calls from the
//        model of its blocking heuristics, onednn_amx.h; the one-row dinp against W^T is oneDNN's
//        AVX512_CORE_BF16 lane order, matmul_bf16.c's ORDER_ROW16).
// The f32 order is the Intel MKL one (the intel-* targets share it); zen4 and
// avx2 run the forward's kernels for these shapes, unverified. The sum is the same on every target.
#include "gptmeg/kernels.h"
#include "ops/ops_internal.h"

int gm_op_linear_fwd(const gm_op_ctx *c, float *out, const float *inp, const gm_op_weight *w, const float *bias, int N,
                     int C, int OC) {
  const int ldw = w->trans ? C : OC;
  if (c->dtype == GM_BF16 && w->bf16p) { // rounded strip by strip inside the product
    gm_matmul_bf16_packed_rounded(inp, C, w->bf16p, bias, 1.0f, out, OC, N, OC, C, c->threads);
    return 0;
  }
  // the f16 kernels' fast shapes; several rows against W^T under oneDNN's chains read the f32 copy
  // (the f16 bits would be widened first: the lm_head of an all-logits prefill)
  if (c->dtype == GM_F16 && w->f16h && (N == 1 || (w->trans && !gm_matmul_f16_trans_widens())))
    gm_matmul_f16_torch_h(inp, C, w->f16h, ldw, w->trans, bias, 1.0f, out, OC, N, OC, C, c->threads);
  else gm_op_matmul(c, inp, C, w->w, ldw, w->trans, bias, 1.0f, out, OC, N, OC, C);
  gm_op_round(c, out, (size_t)N * OC);
  return 0;
}

enum { SUM_GROUP = 32 }; // columns summed side by side (ATen's 4 vectors of 8)

// ATen's cascade sum (multi_row_sum) of w <= SUM_GROUP side-by-side columns: out[c] = the sum of
// x[i * stride + c] over the n rows i, each column on its own: rows added one by one into level 0;
// every 2^p rows (p = max(4, ceil(log2 n) / 4)) level 0 is added onto level 1 and cleared, and
// each level whose count of rows is a multiple of the next step moves up likewise (4 levels); the
// rest of the rows onto level 0, then level 0 + 1, + 2, + 3, in order. Rows are read whole (w
// contiguous floats), so the columns' chains run side by side.
static inline __attribute__((always_inline)) void cascade_cols_w(const float *x, size_t stride, int n, int w, float *out) {
  int lg = 1;
  while (n > 2 && (1L << lg) < n) lg++;
  const int power = lg / 4 > 4 ? lg / 4 : 4;
  const long step = 1L << power, mask = step - 1;
  float acc[4][SUM_GROUP];
  for (int l = 0; l < 4; l++)
    for (int c = 0; c < w; c++) acc[l][c] = 0.0f;
  long i = 0;
  while (i + step <= n) {
    for (long j = 0; j < step; j++, i++) {
      const float *r = x + (size_t)i * stride;
      for (int c = 0; c < w; c++) acc[0][c] = acc[0][c] + r[c];
    }
    for (int l = 1; l < 4; l++) {
      for (int c = 0; c < w; c++) {
        acc[l][c] = acc[l][c] + acc[l - 1][c];
        acc[l - 1][c] = 0.0f;
      }
      if (i & (mask << (l * power))) break;
    }
  }
  for (; i < n; i++) {
    const float *r = x + (size_t)i * stride;
    for (int c = 0; c < w; c++) acc[0][c] = acc[0][c] + r[c];
  }
  for (int c = 0; c < w; c++) out[c] = ((acc[0][c] + acc[1][c]) + acc[2][c]) + acc[3][c];
}

// The same with w a constant for the common width, so the compiler turns the column loops into
// vector adds (each column's adds stay in order: the same bits).
static void cascade_cols(const float *x, size_t stride, int n, int w, float *out) {
  if (w == SUM_GROUP) cascade_cols_w(x, stride, n, SUM_GROUP, out);
  else cascade_cols_w(x, stride, n, w, out);
}

// ATen's row_sum of w side-by-side columns: per column 4 interleaved cascades (rows i = 4q + l,
// lane l) over the n / 4 full groups, the rows past them onto lane 0 one by one, then lane 0 + 1,
// + 2, + 3.
static void ilp_cols(const float *x, size_t stride, int n, int w, float *out) {
  const int q = n / 4;
  float p[4][SUM_GROUP];
  for (int l = 0; l < 4; l++) cascade_cols(x + (size_t)l * stride, 4 * stride, q, w, p[l]);
  for (int i = 4 * q; i < n; i++)
    for (int c = 0; c < w; c++) p[0][c] = p[0][c] + x[(size_t)i * stride + c];
  for (int c = 0; c < w; c++) out[c] = ((p[0][c] + p[1][c]) + p[2][c]) + p[3][c];
}

// out[j] = sum over the N rows of x[N, OC] (row stride OC) as torch 2.15's CPU sum over dim 0
// (SumKernel.cpp's cascade_sum, contiguous outer reduction) computes it in f32: the columns cut
// among the threads as at::parallel_for does (when N * OC >= 32768 and threads > 1: chunks of
// ceil(OC / threads), their ends rounded down to 32 columns); in each chunk, from its first
// column, groups of 32 columns (4 vectors of 8: ATen registers its AVX2 sum kernel on AVX512
// CPUs too) take the cascade, then groups of 8 and single columns take the 4-lane one (with fewer
// than 8 columns: groups of 4 the cascade, single columns the 4-lane one). Each chunk adds its
// sums onto zeros. (The chunks run on as many threads: disjoint columns, the same bits.)
static void aten_sum_rows(const float *x, int N, int OC, float *out, int threads) {
  int nt = (long)N * OC >= 32768 && threads > 1 ? threads : 1;
  if (nt > OC) nt = OC;
  const int chunk = (OC + nt - 1) / nt;
#pragma omp parallel for num_threads(nt) if (nt > 1)
  for (int t = 0; t < nt; t++) {
    int b = t * chunk, e = b + chunk < OC ? b + chunk : OC;
    if (b >= OC) continue;
    b -= b % 32;
    if (e != OC) e -= e % 32;
    if (b >= e) continue;
    const int n = e - b, full = n >= 8 ? n - n % 32 : n - n % 4; // columns [b, b + full): the cascade
    const int gw = n >= 8 ? SUM_GROUP : 4;
    float s[SUM_GROUP];
    for (int j = b; j < e;) {
      const int w = j < b + full ? gw : e - j < 8 || n < 8 ? 1 : 8;
      if (j < b + full) cascade_cols(x + j, (size_t)OC, N, w, s);
      else ilp_cols(x + j, (size_t)OC, N, w, s);
      for (int c = 0; c < w; c++) out[j + c] = 0.0f + s[c];
      j += w;
    }
  }
}

int gm_op_linear_bwd(const gm_op_ctx *c, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const gm_op_weight *w, int N, int C, int OC) {
  if (dinp && c->dtype == GM_BF16 && w->bf16p) { // the same product from the forward's pairs of op(w), transposed
    if (gm_matmul_bf16_packed_t_rounded(dout, OC, w->bf16p, dinp, C, N, C, OC, c->threads))
      return gm_fail("linear backward: out of memory (%d x %d pairs)", C, OC);
  } else if (dinp) { // dout @ op(w)^T: Conv1D's W [C, OC] read transposed; lm_head's W [OC, C] as stored
    if (gm_op_matmul_t(c, dout, OC, false, w->w, w->trans ? C : OC, !w->trans, NULL, 1.0f, dinp, C, N, C, OC)) return -1;
    gm_op_round(c, dinp, (size_t)N * C);
  }
  if (dweight) {
    if (w->trans) { // dout^T @ inp: [OC, C]
      if (gm_op_matmul_t(c, dout, OC, true, inp, C, false, NULL, 1.0f, dweight, C, OC, C, N)) return -1;
    } else if (gm_op_matmul_t(c, inp, C, true, dout, OC, false, NULL, 1.0f, dweight, OC, C, OC, N)) return -1;
    gm_op_round(c, dweight, (size_t)C * OC);
  }
  if (dbias) {
    aten_sum_rows(dout, N, OC, dbias, c->threads);
    gm_op_round(c, dbias, (size_t)OC);
  }
  return 0;
}
