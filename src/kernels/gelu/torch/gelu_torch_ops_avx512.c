// The vector-body functions of PyTorch's CPU kernels on AVX-512 (capability AVX512), as torch 2.15
// computes them per lane; gelu_torch_ops.c sends the elements that take torch's vector path here.
// Every function maps in[i] -> out[i] for i < n, lane by lane (a lane's result never depends on
// its neighbours, so any grouping of elements into vectors gives the same bits). f32 in and out.
#include <immintrin.h>
#include <sleef.h>
#include <stddef.h>

#include "kernels/gelu/torch/gelu_torch_ops_simd.h"

typedef __m512 (*lane_fn)(__m512);

static void map16(lane_fn f, const float *in, float *out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, f(_mm512_loadu_ps(in + i)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    __m512 v = _mm512_maskz_loadu_ps(m, in + i);
    _mm512_mask_storeu_ps(out + i, m, f(v));
  }
}

// Vectorized<float>::tanh: Sleef_tanhf16_u10.
static __m512 lane_tanh(__m512 x) { return Sleef_tanhf16_u10avx512f(x); }
// Vectorized<float>::exp: Sleef_expf16_u10.
static __m512 lane_exp(__m512 x) { return Sleef_expf16_u10avx512f(x); }

// Vectorized<float>::erf: Abramowitz-Stegun 7.1.26 with its FMAs as written:
//   t = 1 / fma(p, |x|, 1); r = fma(fma(fma(fma(p5, t, p4), t, p3), t, p2), t, p1)
//   erf = sign(x) * fma(t * -exp(-x*x), r, 1), exp by Sleef_expf16_u10.
static __m512 lane_erf(__m512 x) {
  const __m512 neg_zero = _mm512_set1_ps(-0.0f), one = _mm512_set1_ps(1.0f);
  __m512 sign = _mm512_and_ps(neg_zero, x);
  __m512 ax = _mm512_andnot_ps(neg_zero, x);
  __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), ax, one));
  __m512 r = _mm512_fmadd_ps(_mm512_set1_ps(1.061405429f), t, _mm512_set1_ps(-1.453152027f));
  r = _mm512_fmadd_ps(r, t, _mm512_set1_ps(1.421413741f));
  r = _mm512_fmadd_ps(r, t, _mm512_set1_ps(-0.284496736f));
  r = _mm512_fmadd_ps(r, t, _mm512_set1_ps(0.254829592f));
  __m512 e = Sleef_expf16_u10avx512f(_mm512_xor_ps(_mm512_mul_ps(x, x), neg_zero));
  __m512 te = _mm512_mul_ps(t, _mm512_xor_ps(e, neg_zero));
  return _mm512_xor_ps(_mm512_fmadd_ps(te, r, one), sign);
}

// sigmoid's vector lambda: (1 + exp(0 - x)).reciprocal(), i.e. 1 / (1 + Sleef_expf(0 - x)).
static __m512 lane_sigmoid(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return _mm512_div_ps(one, _mm512_add_ps(one, e));
}

void gm_gelu_torch_vec_tanh_avx512(const float *in, float *out, size_t n) { map16(lane_tanh, in, out, n); }
void gm_gelu_torch_vec_exp_avx512(const float *in, float *out, size_t n) { map16(lane_exp, in, out, n); }
void gm_gelu_torch_vec_erf_avx512(const float *in, float *out, size_t n) { map16(lane_erf, in, out, n); }
void gm_gelu_torch_vec_sigmoid_avx512(const float *in, float *out, size_t n) {
  map16(lane_sigmoid, in, out, n);
}

// The 16-bit pattern of each lane (f16 by an exact vcvtps2ph, bf16 the high half), as indices.
static __m512i index16(int half, __m512 v) {
  if (half) return _mm512_cvtepu16_epi32(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return _mm512_srli_epi32(_mm512_castps_si512(v), 16);
}

void gm_gelu_torch_vec_lookup16_avx512(const float *table, int half, const float *in, float *out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_i32gather_ps(index16(half, _mm512_loadu_ps(in + i)), table, 4));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    __m512i idx = index16(half, _mm512_maskz_loadu_ps(m, in + i));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, table, 4));
  }
}
