// Accurate mode of f16 and bf16 by table: a 16-bit input has only 65536 bit patterns, so the first
// call for a (variant, dtype) evaluates the accurate kernel once on every pattern (gelu_accurate.c:
// f64 lanes, one rounding to the dtype) and keeps the results; every later call looks them up.
// Forward: the 65536 results, NaN payloads included, so a lookup gives bit for bit what the direct
// evaluation gives. Backward: the kernel's f64 derivative of every pattern, which the caller
// multiplies by dy in f64 and rounds once, as the kernel does (gelu_acc_bwd16_parts).
#include "kernels/gelu_math.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { N_PATTERNS = 65536 };

static _Atomic(uint16_t *) tables[GELU_N_VARIANTS][2]; // [variant][0: f16, 1: bf16]
static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;

const uint16_t *gelu_acc_fwd16_table(gm_gelu_variant v, gm_dtype dt) {
  _Atomic(uint16_t *) *slot = &tables[v][dt == GM_BF16];
  uint16_t *t = atomic_load_explicit(slot, memory_order_acquire);
  if (t) return t;
  pthread_mutex_lock(&build_lock);
  t = atomic_load_explicit(slot, memory_order_relaxed);
  if (!t) {
    // one spare entry: the AVX-512 lookup reads a 32-bit word at every entry
    uint16_t *in = malloc(N_PATTERNS * sizeof *in), *out = malloc((N_PATTERNS + 1) * sizeof *out);
    if (in && out) {
      for (int i = 0; i < N_PATTERNS; i++) in[i] = (uint16_t)i;
      gelu_acc_fwd16_direct(v, dt, in, out, N_PATTERNS);
      out[N_PATTERNS] = 0;
      t = out;
      atomic_store_explicit(slot, t, memory_order_release);
    } else {
      free(out);
    }
    free(in);
  }
  pthread_mutex_unlock(&build_lock);
  return t; // NULL only when the 128 KiB could not be allocated: the caller evaluates directly
}

static _Atomic(gelu_acc_bwd16 *) bwd_tables[GELU_N_VARIANTS][2];

const gelu_acc_bwd16 *gelu_acc_bwd16_table(gm_gelu_variant v, gm_dtype dt) {
  _Atomic(gelu_acc_bwd16 *) *slot = &bwd_tables[v][dt == GM_BF16];
  gelu_acc_bwd16 *t = atomic_load_explicit(slot, memory_order_acquire);
  if (t) return t;
  pthread_mutex_lock(&build_lock);
  t = atomic_load_explicit(slot, memory_order_relaxed);
  if (!t && (t = malloc(sizeof *t))) {
    gelu_acc_bwd16_parts(v, dt, t->d, t->fixed);
    atomic_store_explicit(slot, t, memory_order_release);
  }
  pthread_mutex_unlock(&build_lock);
  return t; // NULL only when out of memory: the caller evaluates directly
}

// y[i] = table[x[i]]: 2 bytes read and written per element; AVX-512 gathers where the CPU has them
// (and GPTMEG_SIMD does not cap it), else a plain loop.
void gelu_acc_fwd16_lookup(const uint16_t *table, const uint16_t *x, uint16_t *y, size_t n) {
  const char *cap = getenv("GPTMEG_SIMD");
  if ((!cap || !strcmp(cap, "avx512")) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    gelu_acc_fwd16_lookup_avx512(table, x, y, n);
    return;
  }
  for (size_t i = 0; i < n; i++) y[i] = table[x[i]];
}
