// The optimizer module's per-ISA bodies (src/train/optim_*_avx512.c), declared once for the
// dispatcher and the ISA files.
#ifndef GPTMEG_TRAIN_OPTIM_ISA_H
#define GPTMEG_TRAIN_OPTIM_ISA_H

#include <stddef.h>

// MKL VML's vmsSqrt (high accuracy) as its Intel AVX-512 code computes it, out[i] for in[i], i < n
// (both (n) f32; may alias). Needs AVX-512F (vrsqrt14ps): see optim_sqrt_avx512.c.
void gm_train_vml_sqrt_avx512(const float *in, float *out, size_t n);

#endif
