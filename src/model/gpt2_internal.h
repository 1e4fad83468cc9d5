// Internal pieces of the GPT-2 model shared between src/model/*.c.
#ifndef GPTMEG_MODEL_GPT2_INTERNAL_H
#define GPTMEG_MODEL_GPT2_INTERNAL_H

#include "gptmeg/model.h"

// y[i] = act(x[i]) for n f32 values under profile p (GELU family through gm_gelu_fwd with
// p->gelu_mode, or the private transcription when p->private_gelu; relu and silu here).
int gpt2_act_f32(const gm_profile *p, gm_activation a, const float *x, float *y, size_t n, int threads);

#endif
