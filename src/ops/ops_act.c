// MLP activation: out = act(inp) in the dtype, or Megatron's fused bias_gelu (inp + bias in f32).
// Numerics contract: the GELU family through gm_gelu_fwd in the profile's mode (each mode's own
// rounding contract, gptmeg/gelu.h; torch-cpu evaluated with PyTorch's one-thread split, so the
// bits do not depend on the thread count); relu exact (NaN propagates); silu x / (1 + exp(-x)) in
// f32 opmath as ATen's one-thread kernel, one rounding. Fused bias: inp + bias formed in f32, the
// activation evaluated in f32, one rounding to the dtype at the end.
// Backward (gm_op_act_bwd), autograd of eager torch 2.15 CPU on c->threads threads, bit for bit
// (tests/test_act_bwd.c against tools/ref/gen_act_bwd_goldens.py): the GELU family through
// gm_gelu_bwd with torch's thread count (its split of each op over the threads, grain 32768, so
// the bits depend on c->threads where torch's do); relu threshold_backward (exact); silu ATen's
// silu_backward: per at::parallel_for chunk the whole 32/64-element steps in the vector lambda
// (SLEEF expf_u10), the rest in the scalar one (libm expf), s = 1/(1 + e),
// dx = R((dy*s) * fma(x, 1 - s, 1)) (GCC's contraction, both lambdas). Fused bias (Megatron's
// GeLUFunction): x = R(bias + inp) in the dtype, bias_gelu_back op by op in the dtype (torch.jit
// runs it unfused on CPU), dbias = R(ATen's cascade sum over dim 0 in f32) split over the columns
// as TensorIterator's parallel_dim_reduction does, or for one column the inner sum and, on 2+
// threads, two_pass_reduction (gm_op_sum_rows).
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"
#include "ops/ops_internal.h"

#include <math.h>
#include <stdlib.h>

enum { TORCH_CHUNK = 16384 }; // a multiple of every vector step of ATen's GELU loops (at most 64)

// One torch-cpu GELU call over x [n] of dtype dt into y; via16: x and y are f32 buffers holding
// f16/bf16 values, passed to the GELU as 16-bit bits chunk by chunk (no n-sized copies).
typedef struct {
  gm_gelu_spec s;
  gm_dtype dt;
  const void *x;
  void *y;
  bool via16;
} gelu_job;

// Elements at..at+len of the job on the calling thread (16-bit buffers on its stack when via16).
static int gelu_chunk(const gelu_job *j, size_t at, size_t len) {
  if (!j->via16) {
    size_t es = gm_dtype_size(j->dt);
    return gm_gelu_fwd(j->s, j->dt, (const char *)j->x + at * es, (char *)j->y + at * es, len, 1);
  }
  uint16_t bx[TORCH_CHUNK], by[TORCH_CHUNK];
  gm_f32_to_dtype_buf(j->dt, (const float *)j->x + at, bx, len);
  if (gm_gelu_fwd(j->s, j->dt, bx, by, len, 1)) return -1;
  gm_dtype_to_f32_buf(j->dt, by, (float *)j->y + at, len);
  return 0;
}

// torch-cpu GELU as PyTorch computes it on one thread (one contiguous run: vector steps, then the
// scalar tail), evaluated in chunks on `threads` threads. Every chunk but the last is a whole number
// of vector steps, so each element takes the path it takes in the one-thread run: same bits
// (tests/test_profile.c checks chunked against one call).
static int gelu_torch_one_thread(const gelu_job *j, size_t n, int threads) {
  long chunks = (long)((n + TORCH_CHUNK - 1) / TORCH_CHUNK);
  // The first chunk on this thread, so that a refusal (an unsupported variant/dtype) keeps its
  // message, which is thread-local; the other chunks can then only fail the same way.
  if (gelu_chunk(j, 0, n < TORCH_CHUNK ? n : TORCH_CHUNK)) return -1;
  int rc = 0;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(| : rc)
  for (long c = 1; c < chunks; c++) {
    size_t at = (size_t)c * TORCH_CHUNK, len = n - at < TORCH_CHUNK ? n - at : TORCH_CHUNK;
    rc |= gelu_chunk(j, at, len) != 0;
  }
  return rc ? gm_fail("GELU %s failed on a later chunk", gm_gelu_variant_info(j->s.variant)->name) : 0;
}

// y = act(x) for n values of dtype dt held in f32 buffers; GELU family through gm_gelu_fwd in
// `mode` (f16/bf16 go through 16-bit buffers), relu and silu as torch computes them (silu in f32
// opmath, one rounding).
static int act_in_dtype(gm_activation a, gm_gelu_mode mode, gm_dtype dt, const float *x, float *y, size_t n,
                        int threads) {
  long ln = (long)n;
  switch (a.kind) {
  case GM_ACT_RELU: // max(x, 0), NaN propagates
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long i = 0; i < ln; i++) y[i] = x[i] > 0.0f ? x[i] : (x[i] == x[i] ? 0.0f : x[i]);
    return 0;
  case GM_ACT_SILU: { // x / (1 + exp(-x)) in f32, as ATen's one-thread silu_kernel: SLEEF's expf_u10
    // (Vectorized<float>::exp) in the vector body, libm's expf in the last n % step elements (steps
    // of two vectors: 32 f32 elements, 64 f16/bf16)
    long n_vec = ln - ln % (dt == GM_F32 ? 32 : 64), chunks = (n_vec + TORCH_CHUNK - 1) / TORCH_CHUNK;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long c = 0; c < chunks; c++) {
      long at = c * TORCH_CHUNK, len = n_vec - at < TORCH_CHUNK ? n_vec - at : TORCH_CHUNK;
      for (long i = at; i < at + len; i++) y[i] = -x[i];
      gm_exp_shift_row(y + at, (int)len, 0.0f);
      for (long i = at; i < at + len; i++) y[i] = x[i] / (1.0f + y[i]);
    }
    for (long i = n_vec; i < ln; i++) y[i] = x[i] / (1.0f + expf(-x[i]));
    gm_round_inplace(dt, y, n);
    return 0;
  }
  case GM_ACT_GELU_FAMILY: {
    gm_gelu_spec s = {a.gelu, mode};
    if (mode == GM_MODE_TORCH_CPU && n > 0)
      return gelu_torch_one_thread(&(gelu_job){s, dt, x, y, dt != GM_F32}, n, threads);
    if (dt == GM_F32 || n == 0) return gm_gelu_fwd(s, GM_F32, x, y, n, threads);
    uint16_t *bx = malloc(n * sizeof(uint16_t)), *by = malloc(n * sizeof(uint16_t));
    if (!bx || !by) { free(bx); free(by); return gm_fail("out of memory for the activation (%zu values)", n); }
    gm_f32_to_dtype_buf(dt, x, bx, n);
    int rc = gm_gelu_fwd(s, dt, bx, by, n, threads);
    if (!rc) gm_dtype_to_f32_buf(dt, by, y, n);
    free(bx);
    free(by);
    return rc;
  }
  }
  return gm_fail("unknown activation kind %d", (int)a.kind);
}

// The activation the profile runs: its override (a GELU in the override's mode), else `act` (the
// config's) in the profile's GELU mode. Returns the mode; *act is updated.
static gm_gelu_mode resolve_act(const gm_profile *p, gm_activation *act) {
  if (p->act_from_config) return p->gelu_mode;
  act->kind = GM_ACT_GELU_FAMILY;
  act->gelu = p->act_override.variant;
  return p->act_override.mode;
}

int gm_op_act_fwd(const gm_op_ctx *c, gm_activation act, float *out, const float *inp, const float *bias, int N, int OC) {
  size_t n = (size_t)N * OC;
  gm_gelu_mode mode = resolve_act(c->profile, &act);
  if (!bias) return act_in_dtype(act, mode, c->dtype, inp, out, n, c->threads);
  // Megatron bias_gelu, jit-fused: x + b in f32, the activation in f32, one rounding at the end.
  for (int i = 0; i < N; i++)
    for (int j = 0; j < OC; j++) out[(size_t)i * OC + j] = inp[(size_t)i * OC + j] + bias[j];
  int rc = act_in_dtype(act, mode, GM_F32, out, out, n, c->threads);
  if (!rc) gm_op_round(c, out, n);
  return rc;
}

// ---- backward ----------------------------------------------------------------------------------

enum { TORCH_GRAIN = 32768 }; // at::internal::GRAIN_SIZE: TensorIterator's elementwise and reduction grain

static size_t divup(size_t a, size_t b) { return (a + b - 1) / b; }

// Vectorized<float>::size() of the active torch target's ATen capability: 16 (AVX512), 8 (AVX2).
static int aten_lanes(void) {
  return gm_torch_target_get_info(gm_torch_target_active())->aten == GM_ATEN_AVX2 ? 8 : 16;
}

// The chunk of one elementwise ATen op over n elements on `threads` threads: TensorIterator::for_each
// runs serially below the grain or on one thread, else at::parallel_for(0, n, grain) gives each of
// min(threads, divup(n, grain)) threads divup(n, used) elements (the last fewer).
static size_t torch_chunk(size_t n, int threads) {
  if (threads <= 1 || n < TORCH_GRAIN) return n ? n : 1;
  size_t used = divup(n, TORCH_GRAIN) < (size_t)threads ? divup(n, TORCH_GRAIN) : (size_t)threads;
  return divup(n, used);
}

// ATen's silu_backward on [b, e), one at::parallel_for chunk: the first floor(len/step)*step
// elements (step = two Vectorized<scalar_t>: 32 f32 / 64 f16,bf16 under AVX512, half under AVX2)
// take the vector lambda (SLEEF expf_u10), the rest the scalar one (libm expf); both
// s = 1/(1 + exp(-x)), dx = R((dy*s) * fma(x, 1 - s, 1)) in f32 (GCC contracts the source's
// `1 + x*(1 - s)` in both lambdas: found against torch, tools/ref/gen_act_bwd_goldens.py).
static void silu_bwd_chunk(gm_dtype dt, int lanes, const float *x, const float *dy, float *dx, size_t b, size_t e) {
  size_t step = (size_t)(dt == GM_F32 ? 2 : 4) * lanes, nv = b + (e - b) / step * step;
  float ex[TORCH_CHUNK];
  for (size_t at = b; at < e; at += TORCH_CHUNK) {
    size_t len = e - at < TORCH_CHUNK ? e - at : TORCH_CHUNK;
    size_t vlen = nv > at ? (nv - at < len ? nv - at : len) : 0;
    for (size_t i = 0; i < vlen; i++) ex[i] = -x[at + i];
    gm_exp_shift_row(ex, (int)vlen, 0.0f);
    for (size_t i = vlen; i < len; i++) ex[i] = expf(-x[at + i]);
    for (size_t i = 0; i < len; i++) {
      float s = 1.0f / (1.0f + ex[i]);
      dx[at + i] = (dy[at + i] * s) * fmaf(x[at + i], 1.0f - s, 1.0f);
    }
    gm_round_inplace(dt, dx + at, len);
  }
}

// dx = act'(x) * dy for n values of dtype dt held in f32 buffers, as torch's backward computes it
// on `threads` threads (GELU family through gm_gelu_bwd, which follows torch's split itself).
// The GELU family's backward in f16/bf16 with its 16-bit operands in dx's own memory (its n floats
// hold the 2n halves of bx and bdy; dx must not alias dy): bx already written there (n halves at dx),
// dy's bits beside it, the result through a buffer of n halves, then widened into dx.
// The result's buffer is the context's scratch when it is large enough.
static int gelu_bwd_in_dx(const gm_op_ctx *c, gm_gelu_spec s, gm_dtype dt, const float *dy, float *dx, size_t n, int threads) {
  const bool lent = c->ws && c->ws_bytes >= n * sizeof(uint16_t);
  uint16_t *bx = (uint16_t *)dx, *bdy = bx + n, *bdx = lent ? c->ws : malloc(n * sizeof *bdx);
  if (!bdx) return gm_fail("out of memory for the activation's backward (%zu values)", n);
  gm_f32_to_dtype_buf(dt, dy, bdy, n);
  int rc = gm_gelu_bwd(s, dt, bx, bdy, bdx, n, threads);
  if (!rc) gm_dtype_to_f32_buf(dt, bdx, dx, n);
  if (!lent) free(bdx);
  return rc;
}

static int act_bwd_in_dtype(const gm_op_ctx *c, gm_activation a, gm_gelu_mode mode, gm_dtype dt, const float *x, const float *dy, float *dx,
                            size_t n, int threads) {
  long ln = (long)n;
  switch (a.kind) {
  case GM_ACT_RELU: // threshold_backward(dy, relu(x), 0): relu(x) <= 0 ? 0 : dy (NaN x passes dy)
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long i = 0; i < ln; i++) dx[i] = x[i] <= 0.0f ? 0.0f : dy[i];
    return 0;
  case GM_ACT_SILU: {
    size_t chunk = torch_chunk(n, threads);
    long chunks = (long)divup(n, chunk);
    const int lanes = aten_lanes();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long c = 0; c < chunks; c++) {
      size_t b = (size_t)c * chunk, e = n - b < chunk ? n : b + chunk;
      silu_bwd_chunk(dt, lanes, x, dy, dx, b, e);
    }
    return 0;
  }
  case GM_ACT_GELU_FAMILY: {
    gm_gelu_spec s = {a.gelu, mode};
    if (dt == GM_F32 || n == 0) return gm_gelu_bwd(s, GM_F32, x, dy, dx, n, threads);
    if (dx != x && dx != dy) { // x's bits in dx's own memory (the peak of a training step holds one buffer less)
      gm_f32_to_dtype_buf(dt, x, (uint16_t *)dx, n);
      return gelu_bwd_in_dx(c, s, dt, dy, dx, n, threads);
    }
    uint16_t *bx = malloc(n * sizeof(uint16_t)), *bdy = malloc(n * sizeof(uint16_t)), *bdx = malloc(n * sizeof(uint16_t));
    int rc = -1;
    if (!bx || !bdy || !bdx) {
      gm_fail("out of memory for the activation's backward (%zu values)", n);
    } else {
      gm_f32_to_dtype_buf(dt, x, bx, n);
      gm_f32_to_dtype_buf(dt, dy, bdy, n);
      rc = gm_gelu_bwd(s, dt, bx, bdy, bdx, n, threads);
      if (!rc) gm_dtype_to_f32_buf(dt, bdx, dx, n);
    }
    free(bx);
    free(bdy);
    free(bdx);
    return rc;
  }
  }
  return gm_fail("unknown activation kind %d", (int)a.kind);
}

// ---- ATen's sum over dim 0 of a contiguous (N, OC) tensor (cascade_sum, SumKernel.cpp) -----------
// multi_row_sum: `lanes` sums at once over `size` rows (lane k of row i at X[i*rs + k*ls]), in four
// levels: rows are added into level 0 in runs of 2^p (p = max(4, ceil(log2(size)) / 4)); after
// each run level j-1 is added into level j and cleared, climbing while the row count is a
// multiple of the next level's span; leftover rows go into level 0; then level 0 += 1, 2, 3.
static void multi_row_sum(const float *X, long size, size_t rs, size_t ls, int lanes, float *out) {
  float acc[4][64] = {{0}};
  int clog = 0;
  while (clog < 63 && (1L << clog) < size) clog++;
  const int p = clog / 4 > 4 ? clog / 4 : 4;
  const long step = 1L << p, mask = step - 1;
  long i = 0;
  while (i + step <= size) {
    for (long j = 0; j < step; j++, i++)
      for (int k = 0; k < lanes; k++) acc[0][k] += X[(size_t)i * rs + (size_t)k * ls];
    for (int j = 1; j < 4; j++) {
      for (int k = 0; k < lanes; k++) {
        acc[j][k] += acc[j - 1][k];
        acc[j - 1][k] = 0.0f;
      }
      if ((i & (mask << (j * p))) != 0) break;
    }
  }
  for (; i < size; i++)
    for (int k = 0; k < lanes; k++) acc[0][k] += X[(size_t)i * rs + (size_t)k * ls];
  for (int j = 1; j < 4; j++)
    for (int k = 0; k < lanes; k++) acc[0][k] += acc[j][k];
  for (int k = 0; k < lanes; k++) out[k] = acc[0][k];
}

// row_sum: `size` values X[i*s] as (size/4, 4): four multi_row_sum lanes, the leftover values into
// lane 0, then lane 0 += 1, 2, 3.
static float row_sum(const float *X, long size, size_t s) {
  float p[4] = {0};
  long si = size / 4;
  if (si) multi_row_sum(X, si, 4 * s, s, 4, p);
  for (long i = si * 4; i < size; i++) p[0] += X[(size_t)i * s];
  return ((p[0] + p[1]) + p[2]) + p[3];
}

// Columns [cb, ce) of the (N, ld) rows, unrounded f32 sums into out[cb..ce): vectorized_outer_sum
// where the range holds a whole Vectorized<scalar_t> (vs = 8 f32; 32 f16/bf16 under ATen's AVX512
// capability, 16 under AVX2): blocks of four f32 accumulator vectors (4 * 8 f32 columns; 4 * 16 or
// 4 * 8 for f16/bf16) summed down the rows as lanes, the remaining columns one by one by row_sum
// (its vector blocks and its scalar columns add in the same order); narrower ranges
// scalar_outer_sum: blocks of 4 columns as lanes, the rest by row_sum. The f32 sum runs 8-lane
// vectors under both capabilities (found against torch: 16 lanes fail its AVX512 goldens).
static void outer_sum(gm_dtype dt, const float *x, size_t ld, long N, long cb, long ce, float *out) {
  const long vs = dt == GM_F32 ? 8 : 2L * aten_lanes(), blk = ce - cb >= vs ? 4 * (vs / (dt == GM_F32 ? 1 : 2)) : 4;
  long j = cb;
  for (; j + blk <= ce; j += blk) multi_row_sum(x + j, N, ld, 1, (int)blk, out + j);
  for (; j < ce; j++) out[j] = row_sum(x + j, N, ld);
}

// The contiguous inner sum of n values (OC == 1): vectorized_inner_sum where n holds a whole
// Vectorized<scalar_t> (L f32 / 2L f16,bf16 elements a load, L = 8 for f32, aten_lanes() for
// f16/bf16; f16/bf16 folded to L
// f32 lanes: f16 neighbours 2i, 2i+1, bf16 halves i, i+L), the loads summed by row_sum as L-lane
// vectors, the leftover elements in order into a scalar, then the L lanes in order; else row_sum.
static float inner_sum(gm_dtype dt, const float *x, long n) {
  const int L = dt == GM_F32 ? 8 : aten_lanes(); // f32: 8 lanes under AVX512 too (see outer_sum)
  const long vs = (long)(dt == GM_F32 ? 1 : 2) * L;
  if (n < vs) return row_sum(x, n, 1);
  long nv = n / vs;
  float *lanes = malloc((size_t)nv * (size_t)L * sizeof(float));
  if (!lanes) return NAN;
  for (long v = 0; v < nv; v++)
    for (int k = 0; k < L; k++) {
      const float *p = x + v * vs;
      lanes[v * L + k] = dt == GM_F32 ? p[k] : dt == GM_F16 ? (0.0f + p[2 * k]) + p[2 * k + 1] : p[k] + p[k + L];
    }
  float part[16], acc = 0.0f;
  for (int k = 0; k < L; k++) part[k] = row_sum(lanes + k, nv, (size_t)L);
  free(lanes);
  for (long i = nv * vs; i < n; i++) acc += x[i];
  for (int k = 0; k < L; k++) acc += part[k];
  return acc;
}

void gm_op_sum_rows(const gm_op_ctx *c, float *out, const float *x, int N, int OC) {
  const size_t n = (size_t)N * OC;
  const int threads = c->threads;
  if (N <= 0 || OC <= 0) {
    for (int j = 0; j < OC; j++) out[j] = 0.0f;
    return;
  }
  if (OC == 1) {
    if (n < TORCH_GRAIN || threads <= 1) {
      out[0] = inner_sum(c->dtype, x, N);
    } else { // two_pass_reduction: one partial a thread, stored in the dtype, then summed in order
      size_t chunk = torch_chunk(n, threads);
      float acc = 0.0f;
      for (int t = 0; t < threads; t++) {
        size_t b = (size_t)t * chunk;
        float part = b < n ? inner_sum(c->dtype, x + b, (long)(n - b < chunk ? n - b : chunk)) : 0.0f;
        gm_op_round(c, &part, 1);
        acc += part;
      }
      out[0] = acc;
    }
    gm_op_round(c, out, 1);
    return;
  }
  if (n < TORCH_GRAIN || threads <= 1) {
    outer_sum(c->dtype, x, (size_t)OC, N, 0, OC, out);
  } else { // parallel_dim_reduction: columns split by at::parallel_for, rounded to 128-byte groups
    const long cpb = c->dtype == GM_F32 ? 32 : 64, used = OC < threads ? OC : threads;
    const long chunk = (OC + used - 1) / used;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long t = 0; t < used; t++) {
      long b = t * chunk, e = b + chunk < OC ? b + chunk : OC;
      if (b >= e) continue;
      b -= b % cpb;
      if (e != OC) e -= e % cpb;
      if (b < e) outer_sum(c->dtype, x, (size_t)OC, N, b, e, out);
    }
  }
  gm_op_round(c, out, (size_t)OC);
}

int gm_op_act_bwd(const gm_op_ctx *c, gm_activation act, float *dinp, float *dbias, const float *dout, const float *inp,
                  const float *bias, int N, int OC) {
  size_t n = (size_t)N * OC;
  gm_gelu_mode mode = resolve_act(c->profile, &act);
  if (!bias) return dinp ? act_bwd_in_dtype(c, act, mode, c->dtype, inp, dout, dinp, n, c->threads) : 0;
  if (!dinp && !dbias) return 0;
  if (n == 0) {
    if (dbias) gm_op_sum_rows(c, dbias, dout, N, OC); // zeros
    return 0;
  }
  // Megatron's GeLUFunction.backward: bias_gelu_back(g, bias, y) op by op in the dtype (x = bias + y
  // rounded, then the variant's backward), the same tensor for input and bias.
  if (dinp && c->dtype != GM_F32 && act.kind == GM_ACT_GELU_FAMILY && dinp != dout) { // x's bits straight into dinp
    uint16_t *bx = (uint16_t *)dinp;
    float *row = malloc((size_t)OC * sizeof *row); // one row of bias + y, then its bits (gm_op_round's rounding)
    if (!row) return gm_fail("out of memory for the fused activation's backward (%d values)", OC);
    for (size_t i = 0; i < (size_t)N; i++) {
      for (size_t j = 0; j < (size_t)OC; j++) row[j] = bias[j] + inp[i * OC + j];
      gm_f32_to_dtype_buf(c->dtype, row, bx + i * OC, (size_t)OC);
    }
    free(row);
    int rc = gelu_bwd_in_dx(c, (gm_gelu_spec){act.gelu, mode}, c->dtype, dout, dinp, n, c->threads);
    if (!rc && dbias) gm_op_sum_rows(c, dbias, dinp, N, OC);
    return rc;
  }
  float *x = malloc(n * sizeof(float)), *tmp = dinp ? dinp : malloc(n * sizeof(float));
  int rc = -1;
  if (!x || !tmp) {
    gm_fail("out of memory for the fused activation's backward (%zu values)", n);
  } else {
    for (size_t i = 0; i < (size_t)N; i++)
      for (size_t j = 0; j < (size_t)OC; j++) x[i * OC + j] = bias[j] + inp[i * OC + j];
    gm_op_round(c, x, n);
    rc = act_bwd_in_dtype(c, act, mode, c->dtype, x, dout, tmp, n, c->threads);
    if (!rc && dbias) gm_op_sum_rows(c, dbias, tmp, N, OC);
  }
  free(x);
  if (tmp != dinp) free(tmp);
  return rc;
}
