// Shared by fuzz_torch_bin.c and fuzz_megatron.c: uses what a checkpoint loader returned.
#ifndef GPTMEG_FUZZ_CKPT_H
#define GPTMEG_FUZZ_CKPT_H

#include "gptmeg/ckpt.h"

#include <stdlib.h>

// Every tensor found by name, every readable one (up to 16M elements) widened to f32: this reads
// every byte the checkpoint claims for it.
static inline void fz_use_ckpt(const gm_ckpt *c) {
  for (int i = 0; i < c->n_tensors; i++) {
    const gm_ckpt_tensor *t = &c->tensors[i];
    (void)gm_ckpt_find(c, t->name);
    if (!t->readable || t->numel > ((uint64_t)1 << 24)) continue;
    float *out = malloc((t->numel ? t->numel : 1) * sizeof *out);
    if (!out) abort();
    gm_ckpt_read_f32(t, out);
    free(out);
  }
}

#endif
