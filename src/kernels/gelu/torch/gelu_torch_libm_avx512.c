// torch-cpu's stand-in for MKL VML when MKL is not loaded: out[i] = (float)f((double)in[i]) with
// f glibc's double tanh, erf or exp (gelu_torch_ops.c), the same bits, 8 lanes at a time.
//
// Numerics contract: SLEEF's double functions (Sleef_tanhd8_u35avx512f, documented max error 3.5
// ulp; Sleef_erfd8_u10avx512f and Sleef_expd8_u10avx512f, 1.0 ulp) give m close to the true value; glibc's double result g is within a few ulp of
// it too (libm-test-ulps for x86_64: tanh/erf/exp at most 2). Both round to the same f32 unless a
// midpoint between adjacent floats lies between them, so a lane keeps (float)m only when m is
// further than 2^-46 |m| (at least 64 double ulp, far more than both errors together) from every f32
// midpoint; the other lanes, every non-finite input and every result from 2^127 up are recomputed
// with glibc itself (about one element in 2^20 on N(0,1) inputs). tests/test_gelu_torch_fast.c
// compares with the plain glibc loop.
#include <immintrin.h>
#include <math.h>
#include <sleef.h>

#include "kernels/gelu/gelu_ops.h"
#include "kernels/gelu/torch/gelu_torch_ops_simd.h"

static __m512d sleef_double(int op, __m512d d) {
  if (op == GELU_VML_TANH) return Sleef_tanhd8_u35avx512f(d);
  if (op == GELU_VML_ERF) return Sleef_erfd8_u10avx512f(d);
  return Sleef_expd8_u10avx512f(d);
}

static float glibc_rounded(int op, float a) {
  if (op == GELU_VML_TANH) return (float)tanh((double)a);
  if (op == GELU_VML_ERF) return (float)erf((double)a);
  return (float)exp((double)a);
}

void gm_gelu_torch_double_rounded_avx512(int op, const float *in, float *out, size_t n) {
  const __m512d abs_mask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7fffffffffffffffLL));
  for (size_t i = 0; i < n; i += 8) {
    __mmask8 k = n - i >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - i)) - 1u);
    __m512d d = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(k, in + i));
    __m512d m = sleef_double(op, d);
    __m256 f = _mm512_cvtpd_ps(m); // RNE
    __m512d back = _mm512_cvtps_pd(f);
    // The f32 next to f on m's side (magnitude up when |m| >= |f|, else down; f is never the
    // largest finite here, see below) and half the gap to it: where the midpoint lies.
    __mmask8 up = _mm512_cmp_pd_mask(_mm512_and_pd(m, abs_mask), _mm512_and_pd(back, abs_mask), _CMP_GE_OQ);
    __m256i fbits = _mm256_castps_si256(f);
    __m256i nbits = _mm256_mask_add_epi32(_mm256_sub_epi32(fbits, _mm256_set1_epi32(1)), up, fbits,
                                          _mm256_set1_epi32(1));
    __m512d next = _mm512_cvtps_pd(_mm256_castsi256_ps(nbits));
    __m512d half_gap = _mm512_mul_pd(_mm512_and_pd(_mm512_sub_pd(next, back), abs_mask), _mm512_set1_pd(0.5));
    __m512d margin = _mm512_mul_pd(_mm512_and_pd(m, abs_mask), _mm512_set1_pd(0x1p-46));
    __m512d dist = _mm512_add_pd(_mm512_and_pd(_mm512_sub_pd(m, back), abs_mask), margin);
    __mmask8 safe = _mm512_cmp_pd_mask(dist, half_gap, _CMP_LT_OQ); // false for NaN and inf
    safe &= _mm512_cmp_pd_mask(_mm512_and_pd(d, abs_mask), _mm512_set1_pd(INFINITY), _CMP_LT_OQ);
    safe &= _mm512_cmp_pd_mask(_mm512_and_pd(back, abs_mask), _mm512_set1_pd(0x1p127), _CMP_LT_OQ);
    _mm256_mask_storeu_ps(out + i, k, f);
    __mmask8 redo = (__mmask8)(k & ~safe);
    while (redo) {
      int lane = __builtin_ctz(redo);
      out[i + (size_t)lane] = glibc_rounded(op, in[i + (size_t)lane]);
      redo &= (__mmask8)(redo - 1);
    }
  }
}
