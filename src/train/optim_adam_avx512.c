// AVX-512 bodies of the Adam step (optim_adam.c): the same formulas lane for lane, every FMA
// written (_mm512_fmadd_ps), so the bits are those of the scalar code (tests/test_optim.c runs
// both: GPTMEG_SIMD=scalar). Numerics contract: optim_adam.c's.
#include "train/optim_isa.h"

#include <immintrin.h>

static inline __m512 lerp16(const gm_train_adam_k *k, __m512 m, __m512 g) {
  __m512 d = _mm512_sub_ps(g, m);
  return k->w_small ? _mm512_fmadd_ps(_mm512_set1_ps(k->w), d, m) : _mm512_fmadd_ps(_mm512_set1_ps(k->wm1), d, g);
}

void gm_train_adam_pre_avx512(const gm_train_adam_k *k, float *p, const float *g, float *m, float *v, size_t n) {
  const __m512 keep = _mm512_set1_ps(k->keep), wd = _mm512_set1_ps(k->wd);
  const __m512 b2 = _mm512_set1_ps(k->b2), c2 = _mm512_set1_ps(k->c2);
  for (size_t i = 0; i < n; i += 16) {
    __m512 gi = _mm512_loadu_ps(g + i);
    if (k->decay) {
      __m512 pi = _mm512_loadu_ps(p + i);
      if (k->adamw) _mm512_storeu_ps(p + i, _mm512_mul_ps(pi, keep));
      else gi = _mm512_fmadd_ps(pi, wd, gi);
    }
    _mm512_storeu_ps(m + i, lerp16(k, _mm512_loadu_ps(m + i), gi));
    __m512 vi = _mm512_mul_ps(_mm512_loadu_ps(v + i), b2);
    _mm512_storeu_ps(v + i, _mm512_fmadd_ps(_mm512_mul_ps(c2, gi), gi, vi));
  }
}

void gm_train_adam_post_avx512(const gm_train_adam_k *k, float *p, const float *m, const float *r, size_t n) {
  const __m512 bc2 = _mm512_set1_ps(k->bc2_sqrt), eps = _mm512_set1_ps(k->eps), ns = _mm512_set1_ps(k->neg_step);
  for (size_t i = 0; i < n; i += 16) {
    __m512 d = _mm512_add_ps(_mm512_div_ps(_mm512_loadu_ps(r + i), bc2), eps);
    __m512 q = _mm512_div_ps(_mm512_mul_ps(ns, _mm512_loadu_ps(m + i)), d);
    _mm512_storeu_ps(p + i, _mm512_add_ps(_mm512_loadu_ps(p + i), q));
  }
}

void gm_train_adam_fused_avx512(const gm_train_adam_k *k, float *p, const float *g, float *m, float *v, size_t n) {
  const __m512 keep = _mm512_set1_ps(k->keep), wd = _mm512_set1_ps(k->wd);
  const __m512 b2 = _mm512_set1_ps(k->b2), c2 = _mm512_set1_ps(k->c2);
  const __m512 bc2 = _mm512_set1_ps(k->bc2_sqrt), eps = _mm512_set1_ps(k->eps), ns = _mm512_set1_ps(k->neg_step);
  for (size_t i = 0; i < n; i += 16) {
    __m512 gi = _mm512_loadu_ps(g + i), pi = _mm512_loadu_ps(p + i);
    if (k->decay) {
      if (k->adamw) pi = _mm512_mul_ps(pi, keep);
      else gi = _mm512_fmadd_ps(pi, wd, gi);
    }
    __m512 mi = lerp16(k, _mm512_loadu_ps(m + i), gi);
    __m512 vi = _mm512_fmadd_ps(_mm512_mul_ps(c2, gi), gi, _mm512_mul_ps(_mm512_loadu_ps(v + i), b2));
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    __m512 d = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), bc2), eps);
    _mm512_storeu_ps(p + i, _mm512_add_ps(pi, _mm512_div_ps(_mm512_mul_ps(ns, mi), d)));
  }
}
