// The optimizer module's per-ISA bodies (src/train/optim_*_avx512.c), declared once for the
// dispatcher and the ISA files.
#ifndef GPTMEG_TRAIN_OPTIM_ISA_H
#define GPTMEG_TRAIN_OPTIM_ISA_H

#include <stdbool.h>
#include <stddef.h>

// One Adam step's f32 constants (optim_adam.c says how each is rounded).
typedef struct {
  bool adamw, decay;
  float wd;         // f32(wd) (Adam's grad.add alpha)
  float keep;       // f32(1 - lr*wd) (AdamW's param.mul_)
  float w, wm1;     // lerp weight f32(1 - beta1) and w - 1
  bool w_small;     // |w| < 0.5
  float b2, c2;     // f32(beta2), f32(1 - beta2)
  float bc2_sqrt;   // f32(bias_correction2_sqrt)
  float eps;        // f32(eps)
  float neg_step;   // f32(-step_size)
} gm_train_adam_k;

// The AVX-512 bodies of optim_adam.c's loops, n a multiple of 16, the same bits as its scalar code:
// the single-tensor step's first part (decay, lerp, second moment: p, m, v updated, (n) f32 each;
// g (n) read) and its second (r (n) the sqrt of v: denominator and the parameter update), and the
// fused step's vector form (every element takes the 16-lane body's formulas).
void gm_train_adam_pre_avx512(const gm_train_adam_k *k, float *p, const float *g, float *m, float *v, size_t n);
void gm_train_adam_post_avx512(const gm_train_adam_k *k, float *p, const float *m, const float *r, size_t n);
void gm_train_adam_fused_avx512(const gm_train_adam_k *k, float *p, const float *g, float *m, float *v, size_t n);

// MKL VML's vmsSqrt (high accuracy) as its Intel AVX-512 code computes it, out[i] for in[i], i < n
// (both (n) f32; may alias). Needs AVX-512F (vrsqrt14ps): see optim_sqrt_avx512.c.
void gm_train_vml_sqrt_avx512(const float *in, float *out, size_t n);

#endif
