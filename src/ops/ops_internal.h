// Private pieces of the ops layer shared between src/ops/*.c.
#ifndef GPTMEG_OPS_INTERNAL_H
#define GPTMEG_OPS_INTERNAL_H

#include "gptmeg/ops.h"

// out (OC) = R(sum over the N rows of x (N, OC)) as ATen's sum(dim=0) computes it on c->threads
// threads (cascade_sum: f32 accumulation in its lane and level order, one rounding to c->dtype):
// autograd's sum_to_size of a bias gradient. ops_act.c.
void gm_op_sum_rows(const gm_op_ctx *c, float *out, const float *x, int N, int OC);

#endif
