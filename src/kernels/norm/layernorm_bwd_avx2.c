// AVX2 + FMA bodies of layernorm_bwd.c's elementwise row loops: the same operations lane for lane,
// every FMA written (_mm256_fmadd_ps), so the bits of the scalar loops (fmaf) there.
#include <immintrin.h>

#include "kernels/norm/layernorm_isa.h"

void gm_ln_bwd_dw_row_avx2(float *bw, const float *dy, const float *x, float a, float bm, int D) {
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(bm);
  int j = 0;
  for (; j + 8 <= D; j += 8) {
    __m256 xh = _mm256_fmadd_ps(va, _mm256_loadu_ps(x + j), vb);
    _mm256_storeu_ps(bw + j, _mm256_fmadd_ps(_mm256_loadu_ps(dy + j), xh, _mm256_loadu_ps(bw + j)));
  }
  for (; j < D; j++) bw[j] = __builtin_fmaf(dy[j], __builtin_fmaf(a, x[j], bm), bw[j]);
}

void gm_ln_bwd_db_row_avx2(float *bb, const float *dy, int D) {
  int j = 0;
  for (; j + 8 <= D; j += 8) _mm256_storeu_ps(bb + j, _mm256_add_ps(_mm256_loadu_ps(bb + j), _mm256_loadu_ps(dy + j)));
  for (; j < D; j++) bb[j] = bb[j] + dy[j];
}

void gm_ln_bwd_dx_row_avx2(float *dx, const float *dy, const float *x, const float *w, float a, float b2, float c2, int D) {
  const __m256 va = _mm256_set1_ps(a), vb2 = _mm256_set1_ps(b2), vc2 = _mm256_set1_ps(c2);
  int j = 0;
  for (; j + 8 <= D; j += 8) {
    __m256 t = _mm256_mul_ps(_mm256_mul_ps(va, _mm256_loadu_ps(dy + j)), _mm256_loadu_ps(w + j));
    _mm256_storeu_ps(dx + j, _mm256_add_ps(_mm256_fmadd_ps(vb2, _mm256_loadu_ps(x + j), t), vc2));
  }
  for (; j < D; j++) dx[j] = __builtin_fmaf(b2, x[j], (a * dy[j]) * w[j]) + c2;
}
