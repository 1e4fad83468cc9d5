// Internal pieces of the divergence lab (lab/diverge*.c): metrics accumulation and the streaming
// safetensors writer for --dump.
#ifndef GPTMEG_LAB_DIVERGE_INTERNAL_H
#define GPTMEG_LAB_DIVERGE_INTERNAL_H

#include "gptmeg/diverge.h"

// Adds n elements of actual against expected to m (contract in diverge.h, gm_dv_metrics).
void gm_dv_metrics_add(gm_dv_metrics *m, gm_dtype cmp, gm_tolerance tol, uint64_t ulp, const float *actual,
                    const float *expected, size_t n);
// Finishes rms_rel from the accumulators.
void gm_dv_metrics_finish(gm_dv_metrics *m);
// ULP distance of two f32 values after rounding both to cmp.
uint64_t gm_dv_ulp(gm_dtype cmp, float a, float b);

// Streaming dump: the header (every name and shape of a [B, T] forward) is written at open, each
// tensor is appended as it arrives, in execution order; commit renames it into place.
typedef struct {
  gm_outfile o;
  int n_layer, n_rows, next;  // next row expected
  size_t *numel;              // [n_rows]
} dv_dump;
int gm_dv_dump_open(dv_dump *d, const gm_gpt2_config *c, const gm_profile *p, int B, int T, const char *path);
// Appends row `row`'s tensor; it must be the next one in order.
int gm_dv_dump_put(dv_dump *d, int row, const float *data, size_t numel);
int gm_dv_dump_commit(dv_dump *d); // fails unless every row was written
void gm_dv_dump_abort(dv_dump *d);

#endif
