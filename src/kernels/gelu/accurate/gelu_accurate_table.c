// Accurate mode of f16 and bf16 by table: a 16-bit input has only 65536 bit patterns, so the first
// call for a (variant, dtype) evaluates the accurate kernel once on every pattern (gelu_accurate.c:
// f64 lanes, one rounding to the dtype) and keeps the results; every later call looks them up.
// Forward: the 65536 results, NaN payloads included, so a lookup gives bit for bit what the direct
// evaluation gives. Backward: the kernel's f64 derivative of every pattern, which the caller
// multiplies by dy in f64 and rounds once, as the kernel does (gm_gelu_acc_bwd16_parts).
// The lazy, atomically published tables and the forward-over-every-pattern build are shared with
// the torch-cpu mode's tables (gelu_torch_aten.c, gelu_torch_fast.c): gm_gelu_table_once,
// gm_gelu_fwd16_table_build.
#include "kernels/gelu/gelu_math.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { N_PATTERNS = 65536 };

void *gm_gelu_table_once(_Atomic(void *) *slot, void *(*build)(const void *ctx), const void *ctx) {
  void *t = atomic_load_explicit(slot, memory_order_acquire);
  if (t) return t;
  if (!(t = build(ctx))) return NULL;
  void *expected = NULL;
  if (!atomic_compare_exchange_strong_explicit(slot, &expected, t, memory_order_acq_rel, memory_order_acquire)) {
    free(t);
    return expected;
  }
  return t;
}

uint16_t *gm_gelu_fwd16_table_build(void (*fwd)(const void *ctx, const uint16_t *x, uint16_t *y, size_t n),
                                 const void *ctx) {
  uint16_t *in = malloc(N_PATTERNS * sizeof *in), *out = malloc(N_PATTERNS * sizeof *out);
  if (in && out) {
    for (int i = 0; i < N_PATTERNS; i++) in[i] = (uint16_t)i;
    fwd(ctx, in, out, N_PATTERNS);
  } else {
    free(out);
    out = NULL;
  }
  free(in);
  return out;
}

static void acc_fwd16(const void *ctx, const uint16_t *x, uint16_t *y, size_t n) {
  const gelu_variant_key *k = ctx;
  gm_gelu_acc_fwd16_direct(k->v, k->dt, x, y, n);
}

static void *build_fwd16(const void *ctx) { return gm_gelu_fwd16_table_build(acc_fwd16, ctx); }

static void *build_bwd16(const void *ctx) {
  const gelu_variant_key *k = ctx;
  gelu_acc_bwd16 *t = malloc(sizeof *t);
  if (!t) return NULL;
  gm_gelu_acc_bwd16_parts(k->v, k->dt, t->d, t->fixed);
  for (int i = 0; i < N_PATTERNS; i++) { // d as f32 only where it is a normal f32 (an f32 product keeps its bound)
    double d = t->d[i];
    t->dh[i] = isfinite(d) && fabs(d) >= 0x1p-126 && fabs(d) <= FLT_MAX ? (float)d : NAN;
  }
  return t;
}

static _Atomic(void *) fwd_tables[GM_GELU_N_VARIANTS][2]; // [variant][0: f16, 1: bf16]
static _Atomic(void *) bwd_tables[GM_GELU_N_VARIANTS][2];

// NULL only when out of memory: the caller evaluates directly.
const uint16_t *gm_gelu_acc_fwd16_table(gm_gelu_variant v, gm_dtype dt) {
  gelu_variant_key k = {v, dt};
  return gm_gelu_table_once(&fwd_tables[v][dt == GM_BF16], build_fwd16, &k);
}

const gelu_acc_bwd16 *gm_gelu_acc_bwd16_table(gm_gelu_variant v, gm_dtype dt) {
  gelu_variant_key k = {v, dt};
  return gm_gelu_table_once(&bwd_tables[v][dt == GM_BF16], build_bwd16, &k);
}

// y[i] = table[x[i]], 2 bytes read and written per element. Four at a time into one 64-bit store on
// little-endian hosts: on one Zen 4 core, f16 `gelu` of N(0, 3^2) at 2^20 2.87 -> 3.5-3.8 Gelem/s
// against the AVX-512 gathers this replaced (bf16 3.01 -> 3.64), at 2^25 f16 the same and bf16
// 2.95 -> 3.1-3.2 in `bench act` (3.7-3.8 in act_vs_torch's run). Non-temporal stores of whole
// lines were slower at 2^25 in `bench act` (f16 2.45 -> 2.25, bf16 3.2 -> 2.9), though faster in a
// loop of their own; not kept.
void gm_gelu_acc_fwd16_lookup(const uint16_t *table, const uint16_t *x, uint16_t *y, size_t n) {
  size_t i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  for (; i + 4 <= n; i += 4) {
    uint64_t four = (uint64_t)table[x[i]] | (uint64_t)table[x[i + 1]] << 16 | (uint64_t)table[x[i + 2]] << 32 |
                    (uint64_t)table[x[i + 3]] << 48;
    memcpy(y + i, &four, sizeof four);
  }
#endif
  for (; i < n; i++) y[i] = table[x[i]];
}
