// Block driver for the op graphs (gelu_ops.h): dtype conversion in and out, OpenMP over blocks.
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/gelu/gelu_ops.h"

enum { RUN_BLOCK = 2048 };

double gm_gelu_ops_round_f32(gm_dtype dt, float f) {
  switch (dt) {
  case GM_F16: return (double)gm_f16_to_f32(gm_f32_to_f16(f));
  case GM_BF16: return (double)gm_bf16_to_f32(gm_f32_to_bf16(f));
  default: return (double)f;
  }
}

static void load_block(gm_dtype dt, const void *src, size_t off, size_t n, double *dst) {
  if (dt == GM_F32) {
    const float *s = (const float *)src + off;
    for (size_t i = 0; i < n; i++) dst[i] = (double)s[i];
  } else if (dt == GM_F64) {
    const double *s = (const double *)src + off;
    for (size_t i = 0; i < n; i++) dst[i] = s[i];
  } else if (dt == GM_F16) {
    const uint16_t *s = (const uint16_t *)src + off;
    for (size_t i = 0; i < n; i++) dst[i] = (double)gm_f16_to_f32(s[i]);
  } else {
    const uint16_t *s = (const uint16_t *)src + off;
    for (size_t i = 0; i < n; i++) dst[i] = (double)gm_bf16_to_f32(s[i]);
  }
}

// The values are already on the dtype's grid, so these conversions are exact.
static void store_block(gm_dtype dt, const double *src, size_t off, size_t n, void *dst) {
  if (dt == GM_F32) {
    float *d = (float *)dst + off;
    for (size_t i = 0; i < n; i++) d[i] = (float)src[i];
  } else if (dt == GM_F64) {
    double *d = (double *)dst + off;
    for (size_t i = 0; i < n; i++) d[i] = src[i];
  } else if (dt == GM_F16) {
    uint16_t *d = (uint16_t *)dst + off;
    for (size_t i = 0; i < n; i++) d[i] = gm_f32_to_f16((float)src[i]);
  } else {
    uint16_t *d = (uint16_t *)dst + off;
    for (size_t i = 0; i < n; i++) d[i] = gm_f32_to_bf16((float)src[i]);
  }
}

int gm_gelu_ops_run(gm_gelu_variant v, const gelu_op_set *o, const void *x, const void *dy, void *out,
                 int compute_threads) {
  if (!gm_gelu_ops_has_graph(v))
    return gm_fail("gelu ops: variant %d is not written as separate ops", (int)v);
  if (o->dt != GM_F32 && o->dt != GM_F16 && o->dt != GM_BF16 && o->dt != GM_F64)
    return gm_fail("gelu ops: dtype %s is not a float dtype", gm_dtype_name(o->dt));
  size_t n = o->numel;
  if (n == 0) return 0;
  size_t nblocks = (n + RUN_BLOCK - 1) / RUN_BLOCK;
  int nt = gelu_threads_for(n, compute_threads);
  size_t per = (size_t)RUN_BLOCK * (3 + gm_gelu_ops_scratch_len(1));
  double *mem = malloc((size_t)nt * per * sizeof(double));
  if (!mem) return gm_fail("gelu ops: out of memory for %d x %zu scratch doubles", nt, per);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (size_t b = 0; b < nblocks; b++) {
    int tid = 0;
#ifdef _OPENMP
    tid = omp_get_thread_num();
#endif
    double *xb = mem + (size_t)tid * per, *gb = xb + RUN_BLOCK, *ob = gb + RUN_BLOCK,
           *scratch = ob + RUN_BLOCK;
    size_t off = b * RUN_BLOCK, len = n - off < RUN_BLOCK ? n - off : RUN_BLOCK;
    load_block(o->dt, x, off, len, xb);
    if (dy) {
      load_block(o->dt, dy, off, len, gb);
      gm_gelu_ops_graph_bwd(v, o, off, len, xb, gb, ob, scratch);
    } else {
      gm_gelu_ops_graph_fwd(v, o, off, len, xb, ob, scratch);
    }
    store_block(o->dt, ob, off, len, out);
  }
  free(mem);
  return 0;
}
