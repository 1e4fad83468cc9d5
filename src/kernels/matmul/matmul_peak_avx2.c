// The FMA peak of one core at 256 bits (gm_f32_fma_peak_gflops, matmul_peak.c): twelve independent
// chains of vfmadd231ps on ymm registers. A speed measurement, no numerics.
#include "gptmeg/kernels.h"

#include <immintrin.h>

#include "kernels/matmul/matmul_isa.h"

float gm_fma_chains_avx2(long iters) {
  __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  // distinct starts, or the compiler would see twelve copies of one chain
  __m256 c0 = _mm256_set1_ps(1.0f), c1 = _mm256_set1_ps(1.01f), c2 = _mm256_set1_ps(1.02f), c3 = _mm256_set1_ps(1.03f);
  __m256 c4 = _mm256_set1_ps(1.04f), c5 = _mm256_set1_ps(1.05f), c6 = _mm256_set1_ps(1.06f), c7 = _mm256_set1_ps(1.07f);
  __m256 c8 = _mm256_set1_ps(1.08f), c9 = _mm256_set1_ps(1.09f), c10 = _mm256_set1_ps(1.1f), c11 = _mm256_set1_ps(1.11f);
  for (long i = 0; i < iters; i++) {
    c0 = _mm256_fmadd_ps(c0, x, y), c1 = _mm256_fmadd_ps(c1, x, y), c2 = _mm256_fmadd_ps(c2, x, y);
    c3 = _mm256_fmadd_ps(c3, x, y), c4 = _mm256_fmadd_ps(c4, x, y), c5 = _mm256_fmadd_ps(c5, x, y);
    c6 = _mm256_fmadd_ps(c6, x, y), c7 = _mm256_fmadd_ps(c7, x, y), c8 = _mm256_fmadd_ps(c8, x, y);
    c9 = _mm256_fmadd_ps(c9, x, y), c10 = _mm256_fmadd_ps(c10, x, y), c11 = _mm256_fmadd_ps(c11, x, y);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                           _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
  float v[8];
  _mm256_storeu_ps(v, s);
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}
