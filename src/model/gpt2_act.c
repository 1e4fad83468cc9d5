// MLP activation of the GPT-2 forward under a numerics profile (contract in gpt2_internal.h).
#include "kernels/nn.h"
#include "model/gpt2_internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

enum { TORCH_CHUNK = 16384 }; // a multiple of every vector step of ATen's GELU loops (at most 64)

// torch-cpu GELU as PyTorch computes it on one thread (one contiguous run: vector steps, then the
// scalar tail), evaluated in chunks on `threads` threads. Every chunk but the last is a whole number
// of vector steps, so each element takes the path it takes in the one-thread run: same bits
// (tests/test_profile.c checks chunked against one call).
static int gelu_torch_one_thread(gm_gelu_spec s, gm_dtype dt, const void *x, void *y, size_t n, int threads) {
  long chunks = (long)((n + TORCH_CHUNK - 1) / TORCH_CHUNK);
  size_t es = gm_dtype_size(dt);
  // The first chunk on this thread, so that a refusal (an unsupported variant/dtype) keeps its
  // message, which is thread-local; the other chunks can then only fail the same way.
  if (gm_gelu_fwd(s, dt, x, y, n < TORCH_CHUNK ? n : TORCH_CHUNK, 1)) return -1;
  int rc = 0;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(| : rc)
  for (long c = 1; c < chunks; c++) {
    size_t at = (size_t)c * TORCH_CHUNK, len = n - at < TORCH_CHUNK ? n - at : TORCH_CHUNK;
    rc |= gm_gelu_fwd(s, dt, (const char *)x + at * es, (char *)y + at * es, len, 1) != 0;
  }
  return rc ? gm_fail("GELU %s failed on a later chunk", gm_gelu_variant_info(s.variant)->name) : 0;
}

// One chunk of the 16-bit torch-cpu GELU: y[at..at+len) from x[at..at+len) (f32 buffers holding dt
// values) through dt's bits in buffers on this thread's stack.
static int gelu_torch_chunk16(gm_gelu_spec s, gm_dtype dt, const float *x, float *y, size_t at, size_t len) {
  uint16_t bx[TORCH_CHUNK], by[TORCH_CHUNK];
  gm_f32_to_dtype_buf(dt, x + at, bx, len);
  if (gm_gelu_fwd(s, dt, bx, by, len, 1)) return -1;
  gm_dtype_to_f32_buf(dt, by, y + at, len);
  return 0;
}

// gelu_torch_one_thread for f16/bf16 values held in f32 buffers, chunk by chunk (the same chunks,
// so the same bits), with no n-sized 16-bit copies (they cost page faults on every call).
static int gelu_torch_one_thread16(gm_gelu_spec s, gm_dtype dt, const float *x, float *y, size_t n, int threads) {
  long chunks = (long)((n + TORCH_CHUNK - 1) / TORCH_CHUNK);
  if (gelu_torch_chunk16(s, dt, x, y, 0, n < TORCH_CHUNK ? n : TORCH_CHUNK)) return -1; // the message stays on this thread
  int rc = 0;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(| : rc)
  for (long c = 1; c < chunks; c++) {
    size_t at = (size_t)c * TORCH_CHUNK, len = n - at < TORCH_CHUNK ? n - at : TORCH_CHUNK;
    rc |= gelu_torch_chunk16(s, dt, x, y, at, len) != 0;
  }
  return rc ? gm_fail("GELU %s failed on a later chunk", gm_gelu_variant_info(s.variant)->name) : 0;
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
    if (dt == GM_F32 || n == 0)
      return mode == MODE_TORCH_CPU ? gelu_torch_one_thread(s, GM_F32, x, y, n, threads) : gm_gelu_fwd(s, GM_F32, x, y, n, threads);
    if (mode == MODE_TORCH_CPU) return gelu_torch_one_thread16(s, dt, x, y, n, threads);
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

int gpt2_mlp_act(const gpt2_run *r, const float *x, const float *bias, float *y) {
  const gm_profile *p = r->p;
  const int I = r->m->cfg.n_inner;
  size_t n = (size_t)r->N * I;
  gm_activation a = r->m->cfg.act;
  gm_gelu_mode mode = p->gelu_mode;
  if (!p->act_from_config) {
    a.kind = GM_ACT_GELU_FAMILY;
    a.gelu = p->act_override.variant;
    mode = p->act_override.mode;
  }
  if (!bias) return act_in_dtype(a, mode, r->dt, x, y, n, r->threads);
  // Megatron bias_gelu, jit-fused: x + b in f32, the activation in f32, one rounding at the end.
  for (int i = 0; i < r->N; i++)
    for (int j = 0; j < I; j++) y[(size_t)i * I + j] = x[(size_t)i * I + j] + bias[j];
  int rc = act_in_dtype(a, mode, GM_F32, y, y, n, r->threads);
  if (!rc) gm_round_inplace(r->dt, y, n);
  return rc;
}
