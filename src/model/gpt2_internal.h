// Internal pieces of the GPT-2 model shared between src/model/*.c.
#ifndef GPTMEG_MODEL_GPT2_INTERNAL_H
#define GPTMEG_MODEL_GPT2_INTERNAL_H

#include "gptmeg/model.h"

// Fills a with the activation table of a forward of B sequences of T new positions (len keys)
// keeping `keep` logits rows each: per_layer, one slice a layer of every per-layer point plus the
// layer norms' statistics; else the shared buffers of a forward that keeps nothing. The logits
// point is `logits` (not owned). Free with gm_acts_free.
int gm_gpt2_acts_alloc(gm_acts *a, const gm_gpt2_config *c, int B, int T, int len, int keep, bool per_layer,
                       float *logits);

#endif
