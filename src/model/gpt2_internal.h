// Internal pieces of the GPT-2 model shared between src/model/*.c.
#ifndef GPTMEG_MODEL_GPT2_INTERNAL_H
#define GPTMEG_MODEL_GPT2_INTERNAL_H

#include "gptmeg/model.h"

// Fills a with the activation table of a forward of B sequences of T new positions (len keys)
// keeping `keep` logits rows each: per_layer, one slice a layer of every per-layer point plus the
// layer norms' statistics; else the shared buffers of a forward that keeps nothing. The logits
// point is `logits` (not owned). a must be zeroed or a table this function made: a kept table of
// the same shape is reused as it is (its pages stay mapped), any other is freed first. Free with
// gm_acts_free.
int gm_gpt2_acts_alloc(gm_acts *a, const gm_gpt2_config *c, int B, int T, int len, int keep, bool per_layer,
                       float *logits);

// gm_gpt2_grad's buffers kept on the gradients between calls (gm_gpt2.grad_ws), released here.
void gm_gpt2_grad_ws_free(gm_gpt2 *g);

// Autocast (gm_gpt2_run_opts.autocast): m f32, ac its separate bf16 working copy, p a bf16 profile;
// else gm_fail. lo = the linears'/attention's/activation's profile (p; its softmax in f32 under hf's
// attention rules, matmul-div and the finfo mask: transformers' f32 mask promotes the scores), hi =
// the f32 stream's (p in f32).
int gm_gpt2_autocast_check(const gm_gpt2 *m, const gm_gpt2 *ac, const gm_profile *p);
void gm_gpt2_autocast_profiles(const gm_profile *p, gm_profile *lo, gm_profile *hi);

#endif
