// The FMA peak of one core at 512 bits (gm_f32_fma_peak_gflops, matmul_peak.c): twelve independent
// chains of vfmadd231ps, enough to cover the FMA latency (4 cycles) on two pipes. No numerics: a
// speed measurement, the ceiling `gptmeg bench gemm` divides by.
#include "gptmeg/kernels.h"

#include <immintrin.h>

#include "kernels/matmul/matmul_isa.h"

float gm_fma_chains_avx512(long iters) {
  __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  // distinct starts, or the compiler would see twelve copies of one chain
  __m512 c0 = _mm512_set1_ps(1.0f), c1 = _mm512_set1_ps(1.01f), c2 = _mm512_set1_ps(1.02f), c3 = _mm512_set1_ps(1.03f);
  __m512 c4 = _mm512_set1_ps(1.04f), c5 = _mm512_set1_ps(1.05f), c6 = _mm512_set1_ps(1.06f), c7 = _mm512_set1_ps(1.07f);
  __m512 c8 = _mm512_set1_ps(1.08f), c9 = _mm512_set1_ps(1.09f), c10 = _mm512_set1_ps(1.1f), c11 = _mm512_set1_ps(1.11f);
  for (long i = 0; i < iters; i++) {
    c0 = _mm512_fmadd_ps(c0, x, y), c1 = _mm512_fmadd_ps(c1, x, y), c2 = _mm512_fmadd_ps(c2, x, y);
    c3 = _mm512_fmadd_ps(c3, x, y), c4 = _mm512_fmadd_ps(c4, x, y), c5 = _mm512_fmadd_ps(c5, x, y);
    c6 = _mm512_fmadd_ps(c6, x, y), c7 = _mm512_fmadd_ps(c7, x, y), c8 = _mm512_fmadd_ps(c8, x, y);
    c9 = _mm512_fmadd_ps(c9, x, y), c10 = _mm512_fmadd_ps(c10, x, y), c11 = _mm512_fmadd_ps(c11, x, y);
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                           _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
  return _mm512_reduce_add_ps(s);
}
