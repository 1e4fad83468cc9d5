// MLP activation: out = act(inp) in the dtype, or Megatron's fused bias_gelu (inp + bias in f32).
// Numerics contract: the GELU family through gm_gelu_fwd in the profile's mode (each mode's own
// rounding contract, gptmeg/gelu.h; torch-cpu evaluated with PyTorch's one-thread split, so the
// bits do not depend on the thread count); relu exact (NaN propagates); silu x / (1 + exp(-x)) in
// f32 opmath as ATen's one-thread kernel, one rounding. Fused bias: inp + bias formed in f32, the
// activation evaluated in f32, one rounding to the dtype at the end.
#include "gptmeg/kernels.h"
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

int gm_op_act_fwd(const gm_op_ctx *c, gm_activation act, float *out, const float *inp, const float *bias, int N, int OC) {
  const gm_profile *p = c->profile;
  size_t n = (size_t)N * OC;
  gm_gelu_mode mode = p->gelu_mode;
  if (!p->act_from_config) {
    act.kind = GM_ACT_GELU_FAMILY;
    act.gelu = p->act_override.variant;
    mode = p->act_override.mode;
  }
  if (!bias) return act_in_dtype(act, mode, c->dtype, inp, out, n, c->threads);
  // Megatron bias_gelu, jit-fused: x + b in f32, the activation in f32, one rounding at the end.
  for (int i = 0; i < N; i++)
    for (int j = 0; j < OC; j++) out[(size_t)i * OC + j] = inp[(size_t)i * OC + j] + bias[j];
  int rc = act_in_dtype(act, mode, GM_F32, out, out, n, c->threads);
  if (!rc) gm_op_round(c, out, n);
  return rc;
}

int gm_op_act_bwd(const gm_op_ctx *c, gm_activation act, float *dinp, float *dbias, const float *dout, const float *inp,
                  const float *bias, int N, int OC) {
  (void)c, (void)act, (void)dinp, (void)dbias, (void)dout, (void)inp, (void)bias, (void)N, (void)OC;
  return gm_op_not_yet("activation");
}
