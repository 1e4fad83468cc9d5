// torch-cpu mode, AVX-512 half: the vector code paths the pinned PyTorch (2.15.0, CPU capability
// AVX512, oneDNN 3.13) runs for F.gelu, re-expressed on f32 arrays. Every function works on f32
// (f16/bf16 callers widen first and round afterwards) and keeps each operation of the original,
// with each FMA written explicitly (measured against torch: see tools/ref/gen_gelu_aten_goldens.py).
//
// Two families:
//  - ATen's Vectorized<float> lambdas (aten/src/ATen/native/cpu/Activation.cpp): 16 lanes, tanh is
//    SLEEF Sleef_tanhf16_u10, erf is ATen's own Abramowitz-Stegun 7.1.26 polynomial with
//    Sleef_expf16_u10, exp is Sleef_expf16_u10. GCC's -ffp-contract=fast fused some products into
//    FMAs; the fused sites below are the ones that reproduce torch bit for bit.
//  - oneDNN's JIT eltwise gelu_erf (forward: piecewise minimax polynomial in |x| over 24 intervals
//    picked from the exponent and 2 mantissa bits; backward: Abramowitz-Stegun with oneDNN's own
//    exp polynomial). Lanes are independent and the tail is masked, so any n is fine.
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <sleef.h>

#include "kernels/gelu/torch/gelu_torch_aten_isa.h"

static __m512 splat_bits(uint32_t u) { return _mm512_castsi512_ps(_mm512_set1_epi32((int)u)); }
static __m512 splat(float f) { return _mm512_set1_ps(f); }

static const float kBetaF = (float)(M_SQRT2 * M_2_SQRTPI * 0.5); // sqrt(2/pi), rounded once
static const float kKappaF = 0.044715f;
static const float kAlphaF = (float)M_SQRT1_2;
static const float kPdfF = (float)(M_2_SQRTPI * M_SQRT1_2 * 0.5); // 1/sqrt(2 pi)

// ---- ATen Vectorized<float> (AVX-512) ------------------------------------------------------

// ATen's vector erf: sign(x) * (1 - t*r(t)*exp(-x^2)), t = 1/(1+p|x|), all FMAs as in the source.
static __m512 aten_erf16(__m512 v) {
  const __m512 one = splat(1.0f);
  __m512 sign = _mm512_and_ps(splat(-0.0f), v);
  __m512 ax = _mm512_abs_ps(v);
  __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(splat(0.3275911f), ax, one));
  __m512 r = _mm512_fmadd_ps(splat(1.061405429f), t, splat(-1.453152027f));
  r = _mm512_fmadd_ps(r, t, splat(1.421413741f));
  r = _mm512_fmadd_ps(r, t, splat(-0.284496736f));
  r = _mm512_fmadd_ps(r, t, splat(0.254829592f));
  __m512 neg_e = _mm512_xor_ps(splat(-0.0f), Sleef_expf16_u10(_mm512_xor_ps(splat(-0.0f), _mm512_mul_ps(v, v))));
  __m512 res = _mm512_fmadd_ps(_mm512_mul_ps(neg_e, t), r, one);
  return _mm512_xor_ps(sign, res);
}

// y = 0.5*x*(1 + tanh(kBeta*fma(kKappa, x*x*x, x))); n a multiple of 16.
void gm_aten_vec_tanh_fwd(const float *x, float *y, size_t n) {
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    __m512 cube = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
    __m512 inner = _mm512_mul_ps(splat(kBetaF), _mm512_fmadd_ps(splat(kKappaF), cube, v));
    __m512 t = Sleef_tanhf16_u10(inner);
    __m512 r = _mm512_mul_ps(_mm512_mul_ps(splat(0.5f), v), _mm512_add_ps(splat(1.0f), t));
    _mm512_storeu_ps(y + i, r);
  }
}

// y = x*0.5*(1 + erf(x*M_SQRT1_2)) with ATen's vector erf; n a multiple of 16.
void gm_aten_vec_erf_fwd(const float *x, float *y, size_t n) {
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    __m512 e = aten_erf16(_mm512_mul_ps(v, splat(kAlphaF)));
    __m512 r = _mm512_mul_ps(_mm512_mul_ps(v, splat(0.5f)), _mm512_add_ps(splat(1.0f), e));
    _mm512_storeu_ps(y + i, r);
  }
}

// dx = dy*(0.5*(1+t) + (0.5x*(1-t*t))*(kBeta*(1+3kKappa*x^2))), with FMAs at: the inner
// argument, 1-t*t and 1+3kKappa*x^2 (the final sum is not fused). n a multiple of 16.
void gm_aten_vec_tanh_bwd(const float *x, const float *dy, float *dx, size_t n) {
  const __m512 one = splat(1.0f), half = splat(0.5f);
  const __m512 three_kappa = _mm512_mul_ps(splat(3.0f), splat(kKappaF));
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i), d = _mm512_loadu_ps(dy + i);
    __m512 sq = _mm512_mul_ps(v, v);
    __m512 cube = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
    __m512 inner = _mm512_mul_ps(splat(kBetaF), _mm512_fmadd_ps(splat(kKappaF), cube, v));
    __m512 t = Sleef_tanhf16_u10(inner);
    __m512 left = _mm512_mul_ps(half, v);
    __m512 left_d = _mm512_mul_ps(half, _mm512_add_ps(one, t));
    __m512 tanh_d = _mm512_fnmadd_ps(t, t, one);
    __m512 inner_d = _mm512_mul_ps(splat(kBetaF), _mm512_fmadd_ps(three_kappa, sq, one));
    __m512 sum = _mm512_add_ps(left_d, _mm512_mul_ps(_mm512_mul_ps(left, tanh_d), inner_d));
    _mm512_storeu_ps(dx + i, _mm512_mul_ps(d, sum));
  }
}

// dx = dy*(cdf + x*pdf), cdf = 0.5*(1+erf(x/sqrt2)), pdf = kPdf*exp(x*x*-0.5), the sum NOT fused
// (measured against torch 2.15.0 on f16, the one dtype that reaches this lambda with n >= 2 on a
// CPU without AVX512-FP16: the fused form differs near x = -0.75). n % 16 == 0.
void gm_aten_vec_erf_bwd(const float *x, const float *dy, float *dx, size_t n) {
  const __m512 one = splat(1.0f), half = splat(0.5f);
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i), d = _mm512_loadu_ps(dy + i);
    __m512 cdf = _mm512_mul_ps(half, _mm512_add_ps(one, aten_erf16(_mm512_mul_ps(v, splat(kAlphaF)))));
    __m512 pdf = _mm512_mul_ps(splat(kPdfF), Sleef_expf16_u10(_mm512_mul_ps(_mm512_mul_ps(v, v), splat(-0.5f))));
    _mm512_storeu_ps(dx + i, _mm512_mul_ps(d, _mm512_add_ps(cdf, _mm512_mul_ps(v, pdf))));
  }
}

// ---- oneDNN JIT eltwise gelu_erf (avx512_core and up) --------------------------------------

// Minimax coefficients of oneDNN's piecewise erf(x/sqrt2) approximation, as f32 bit patterns:
// row = degree 0..5, column = interval index 0..24 (index 23 saturates to 1, 24 is the identity);
// rows padded with zeros to 32 entries, the two registers a permute reads.
static const uint32_t kDnnErfPoly[6][32] = {
    {0xa6f2cb94, 0x32827792, 0x3381cc0c, 0x34523d4a, 0x351ac44d, 0x35f36d88, 0x36ee8229, 0x37b8a3bb,
     0x3867a213, 0x3940033b, 0x3a2a5a1d, 0x3ae35863, 0x3b7828f2, 0x3c08b14b, 0x3c515ed3, 0xbb503236,
     0xbd8d8e5e, 0xbe8abcd9, 0xbf0c19a2, 0xbeccb328, 0x3e176ced, 0x3f470d99, 0x3f7abb28, 0x3f800000, 0},
    {0x3f4c422a, 0x3f4c421f, 0x3f4c4207, 0x3f4c41cb, 0x3f4c413b, 0x3f4c3fad, 0x3f4c3a2f, 0x3f4c2d40,
     0x3f4c146a, 0x3f4bc341, 0x3f4ad08c, 0x3f48f8cf, 0x3f45fac7, 0x3f404e07, 0x3f3b980f, 0x3f48dff3,
     0x3f78b21b, 0x3fbb0704, 0x40019c32, 0x3fe536d6, 0x3f81331e, 0x3e6c8684, 0x3c98f936, 0, 0x3f800000},
    {0xb62173f4, 0x3735e4cf, 0x37f2ff89, 0x388c23be, 0x3917535c, 0x39ab2ab0, 0x3a60fadb, 0x3af9b960,
     0x3b6e5491, 0x3c0a4ec5, 0x3ca5aa8c, 0x3d2138d9, 0x3d8737d4, 0x3ddfb660, 0x3e0f27ab, 0x3d94004b,
     0xbe0efdeb, 0xbf1d96c3, 0xbf89db58, 0xbf6d9897, 0xbef69fb8, 0xbdc4f8a8, 0xbbde6422, 0, 0},
    {0xbe081a19, 0xbe084570, 0xbe08639b, 0xbe089837, 0xbe08f409, 0xbe09ab95, 0xbe0b66d0, 0xbe0e400a,
     0xbe124df8, 0xbe1bde02, 0xbe2f19c9, 0xbe4931bf, 0xbe685fbc, 0xbe89c95f, 0xbe96cbca, 0xbe8044aa,
     0xbe0550f2, 0x3dcfd6a1, 0x3e94c826, 0x3e79345f, 0x3decec91, 0x3ca46568, 0x3aa1e00a, 0, 0},
    {0xba3d61db, 0x39f097a3, 0x3a5845dc, 0x3ab1fa35, 0x3b0cefb8, 0x3b653ab6, 0x3bcae527, 0x3c221712,
     0x3c6c5840, 0x3cc0a703, 0x3d1dcc19, 0x3d63656d, 0x3d955907, 0x3dbf9910, 0x3dd53f69, 0x3db7dcef,
     0x3d639ebe, 0xba6ede48, 0xbd22be69, 0xbd041cf1, 0xbc64f5ab, 0xbb097a32, 0xb8ebf380, 0, 0},
    {0x3cb7d80c, 0x3c9b6050, 0x3c978d11, 0x3c92e850, 0x3c8d058b, 0x3c848454, 0x3c6cd623, 0x3c4c824b,
     0x3c2a7935, 0x3be0b390, 0x3b0651ac, 0xbb232f53, 0xbbd42fa0, 0xbc2c5366, 0xbc492c9e, 0xbc2a7aa6,
     0xbbd55d04, 0xba823a76, 0x3b102aa8, 0x3ae25a7e, 0x3a31f792, 0x38b84375, 0x3689bb5a, 0, 0},
};

// Coefficient `deg` of each lane's polynomial (a two-register permute, like the JIT's vpermt2ps).
static __m512 dnn_coeff(int deg, __m512i idx) {
  __m512i lo = _mm512_loadu_si512(kDnnErfPoly[deg]), hi = _mm512_loadu_si512(kDnnErfPoly[deg] + 16);
  return _mm512_castsi512_ps(_mm512_permutex2var_epi32(lo, idx, hi));
}

// 0.5*x*(1 + sign(x)*P_i(|x|)), i from the bits of |x| (+bias, >>21 arithmetic), clamped to [1,24],
// 23 above the saturation bound.
static __m512 dnn_gelu_erf16(__m512 x) {
  __m512 pos = _mm512_and_ps(x, splat_bits(0x7fffffff));
  __m512i idx = _mm512_add_epi32(_mm512_castps_si512(pos), _mm512_set1_epi32((int)0xc21fffff));
  idx = _mm512_srai_epi32(idx, 21);
  idx = _mm512_max_epi32(idx, _mm512_set1_epi32(1));
  idx = _mm512_min_epi32(idx, _mm512_set1_epi32(24));
  __mmask16 saturated = _mm512_cmp_ps_mask(splat_bits(0x40b15cee), pos, _CMP_LT_OS);
  idx = _mm512_mask_blend_epi32(saturated, idx, _mm512_set1_epi32(23));
  __m512 pol = dnn_coeff(5, idx);
  for (int deg = 4; deg >= 0; deg--) pol = _mm512_fmadd_ps(pol, pos, dnn_coeff(deg, idx));
  pol = _mm512_xor_ps(pol, _mm512_and_ps(x, splat_bits(0x80000000)));
  pol = _mm512_add_ps(pol, splat(1.0f));
  return _mm512_mul_ps(_mm512_mul_ps(x, pol), splat(0.5f));
}

// oneDNN's exp: clamp to [ln FLT_MIN, ln FLT_MAX], n = floor(x*log2e + 0.5), degree-5 polynomial
// in r = x - n*ln2 (one FMA), scaled by 2^(n-1) and 2; zero below ln FLT_MIN.
static __m512 dnn_exp16(__m512 x) {
  const __m512 lo = splat_bits(0xc2aeac50), one = splat(1.0f);
  __mmask16 underflow = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OS);
  x = _mm512_min_ps(x, splat_bits(0x42b17218));
  x = _mm512_max_ps(x, lo);
  __m512 fx = _mm512_add_ps(_mm512_mul_ps(x, splat_bits(0x3fb8aa3b)), splat(0.5f));
  fx = _mm512_roundscale_ps(fx, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fx, splat_bits(0x3f317218), x);
  __m512i e = _mm512_cvtps_epi32(_mm512_sub_ps(fx, one));
  e = _mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(127)), 23);
  e = _mm512_mask_blend_epi32(underflow, e, _mm512_setzero_si512());
  __m512 p = splat_bits(0x3c07cfce);
  p = _mm512_fmadd_ps(p, r, splat_bits(0x3d2b9d0d));
  p = _mm512_fmadd_ps(p, r, splat_bits(0x3e2aad40));
  p = _mm512_fmadd_ps(p, r, splat_bits(0x3efffee3));
  p = _mm512_fmadd_ps(p, r, splat_bits(0x3f7ffffb));
  p = _mm512_fmadd_ps(p, r, one);
  return _mm512_mul_ps(_mm512_mul_ps(p, _mm512_castsi512_ps(e)), splat(2.0f));
}

// d gelu/dx = 0.5 + R*exp(-R^2)/sqrt(pi) + 0.5*erf(R), R = x/sqrt2, erf by Abramowitz-Stegun.
static __m512 dnn_gelu_erf_deriv16(__m512 s) {
  const __m512 one = splat(1.0f), sign_bit = splat_bits(0x80000000);
  __m512 R = _mm512_mul_ps(s, splat_bits(0x3f3504f3));
  __m512 q = dnn_exp16(_mm512_xor_ps(_mm512_mul_ps(R, R), sign_bit));
  __m512 T = _mm512_mul_ps(_mm512_mul_ps(R, splat_bits(0x3f106eba)), q);
  q = _mm512_xor_ps(q, sign_bit);
  __m512 sign = _mm512_and_ps(R, sign_bit);
  __m512 aR = _mm512_and_ps(R, splat_bits(0x7fffffff));
  __m512 w = _mm512_div_ps(one, _mm512_fmadd_ps(splat_bits(0x3ea7ba05), aR, one));
  q = _mm512_mul_ps(q, w);
  __m512 r = splat_bits(0x3f87dc22);
  r = _mm512_fmadd_ps(r, w, splat_bits(0xbfba00e3));
  r = _mm512_fmadd_ps(r, w, splat_bits(0x3fb5f0e3));
  r = _mm512_fmadd_ps(r, w, splat_bits(0xbe91a98e));
  r = _mm512_fmadd_ps(r, w, splat_bits(0x3e827906));
  __m512 erf = _mm512_xor_ps(_mm512_fmadd_ps(q, r, one), sign);
  return _mm512_fmadd_ps(erf, splat(0.5f), _mm512_add_ps(T, splat(0.5f)));
}

static __mmask16 tail_mask(size_t left) {
  return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

void gm_onednn_gelu_erf_fwd(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, k, dnn_gelu_erf16(_mm512_maskz_loadu_ps(k, x + i)));
  }
}

void gm_onednn_gelu_erf_bwd(const float *x, const float *dy, float *dx, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    __m512 d = dnn_gelu_erf_deriv16(_mm512_maskz_loadu_ps(k, x + i));
    _mm512_mask_storeu_ps(dx + i, k, _mm512_mul_ps(d, _mm512_maskz_loadu_ps(k, dy + i)));
  }
}

// oneDNN's gelu_erf forward below avx512_core (the AVX2 JIT: no two-register permute for the
// minimax table): Abramowitz-Stegun 7.1.26 with oneDNN's exp, in its operation order:
//   x = s*(1/sqrt2); t = 1/fma(p, |x|, 1); e = -exp(-(x*x)); e = e*t;
//   r = fma(fma(fma(fma(a5, t, a4), t, a3), t, a2), t, a1); erf = sign(s) ^ fma(e, r, 1);
//   S = 0.5*s; gelu = fma(erf, S, S).
// Its lanes are independent, so 16 lanes give the 8-lane JIT's bits.
static __m512 dnn_gelu_erf_as16(__m512 s) {
  const __m512 one = splat(1.0f), sign_bit = splat_bits(0x80000000);
  __m512 x = _mm512_mul_ps(s, splat_bits(0x3f3504f3));
  __m512 ax = _mm512_and_ps(x, splat_bits(0x7fffffff));
  __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(splat_bits(0x3ea7ba05), ax, one));
  __m512 e = _mm512_xor_ps(dnn_exp16(_mm512_xor_ps(_mm512_mul_ps(x, x), sign_bit)), sign_bit);
  __m512 sign = _mm512_and_ps(s, sign_bit);
  e = _mm512_mul_ps(e, t);
  __m512 r = splat_bits(0x3f87dc22);
  r = _mm512_fmadd_ps(r, t, splat_bits(0xbfba00e3));
  r = _mm512_fmadd_ps(r, t, splat_bits(0x3fb5f0e3));
  r = _mm512_fmadd_ps(r, t, splat_bits(0xbe91a98e));
  r = _mm512_fmadd_ps(r, t, splat_bits(0x3e827906));
  __m512 erf = _mm512_xor_ps(_mm512_fmadd_ps(e, r, one), sign);
  __m512 half_s = _mm512_mul_ps(s, splat(0.5f));
  return _mm512_fmadd_ps(erf, half_s, half_s);
}

void gm_onednn_gelu_erf_fwd_as(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 k = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, k, dnn_gelu_erf_as16(_mm512_maskz_loadu_ps(k, x + i)));
  }
}

// ---- ATen Vectorized<double> (AVX-512, 8 lanes) ----------------------------------------------
// The same lambdas in double: SLEEF Sleef_tanhd8_u10 / Sleef_erfd8_u10 / Sleef_expd8_u10 and the
// same fused sites as the float vector code. n a multiple of 8.
void gm_aten_vec_f64(int tanh, int backward, const double *x, const double *dy, double *out, size_t n) {
  const __m512d one = _mm512_set1_pd(1.0), half = _mm512_set1_pd(0.5);
  const __m512d beta = _mm512_set1_pd(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = _mm512_set1_pd(0.044715);
  const __m512d alpha = _mm512_set1_pd(M_SQRT1_2), pdf_c = _mm512_set1_pd(M_2_SQRTPI * M_SQRT1_2 * 0.5);
  const __m512d three_kappa = _mm512_mul_pd(_mm512_set1_pd(3.0), kappa);
  for (size_t i = 0; i + 8 <= n; i += 8) {
    __m512d v = _mm512_loadu_pd(x + i), r;
    if (tanh) {
      __m512d cube = _mm512_mul_pd(_mm512_mul_pd(v, v), v);
      __m512d t = Sleef_tanhd8_u10(_mm512_mul_pd(beta, _mm512_fmadd_pd(kappa, cube, v)));
      if (!backward) {
        r = _mm512_mul_pd(_mm512_mul_pd(half, v), _mm512_add_pd(one, t));
      } else {
        __m512d left_d = _mm512_mul_pd(half, _mm512_add_pd(one, t));
        __m512d tanh_d = _mm512_fnmadd_pd(t, t, one);
        __m512d inner_d = _mm512_mul_pd(beta, _mm512_fmadd_pd(three_kappa, _mm512_mul_pd(v, v), one));
        __m512d sum = _mm512_add_pd(left_d, _mm512_mul_pd(_mm512_mul_pd(_mm512_mul_pd(half, v), tanh_d), inner_d));
        r = _mm512_mul_pd(_mm512_loadu_pd(dy + i), sum);
      }
    } else {
      __m512d e = Sleef_erfd8_u10(_mm512_mul_pd(v, alpha));
      if (!backward) {
        r = _mm512_mul_pd(_mm512_mul_pd(v, half), _mm512_add_pd(one, e));
      } else {
        __m512d cdf = _mm512_mul_pd(half, _mm512_add_pd(one, e));
        __m512d pdf = _mm512_mul_pd(pdf_c, Sleef_expd8_u10(_mm512_mul_pd(_mm512_mul_pd(v, v), _mm512_set1_pd(-0.5))));
        r = _mm512_mul_pd(_mm512_loadu_pd(dy + i), _mm512_fmadd_pd(v, pdf, cdf));
      }
    }
    _mm512_storeu_pd(out + i, r);
  }
}

// ---- bf16 stores of whole blocks ----------------------------------------------------------------
// RNE on the f32 bits, (u + 0x7fff + ((u >> 16) & 1)) >> 16, with each path's special cases:
// ATen's Vectorized<BFloat16> maps NaN to 0xffff; oneDNN's vcvtneps2bf16 keeps the NaN's payload
// (quieted: (u >> 16) | 0x40) and flushes |x| < 2^-126 to a signed zero (onednn = 1); below
// avx512_core_bf16 oneDNN emulates the instruction with integer RNE that keeps the NaN payload the
// same way but rounds tiny values like any other (onednn = 2: measured on torch's
// ONEDNN_MAX_CPU_ISA=AVX512_CORE, all 65536 bf16 patterns, forward and dy = 1 backward).
// 16 f32 lanes rounded to bf16 bits (in the low half of each 32-bit lane) by one path's rules.
static __m512i bf16_bits16(__m512 v, int onednn) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  __m512i u = _mm512_castps_si512(v);
  __m512i a = _mm512_and_si512(u, abs_mask), hi = _mm512_srli_epi32(u, 16);
  __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  __mmask16 nan = _mm512_cmpgt_epu32_mask(a, inf);
  if (onednn) {
    if (onednn == 1) { // the instruction flushes; oneDNN's avx512_core emulation (2) does not
      __mmask16 tiny = _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32(0x00800000));
      r = _mm512_mask_and_epi32(r, tiny, hi, _mm512_set1_epi32(0x8000));
    }
    r = _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(0x40));
  } else {
    r = _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0xffff));
  }
  return r;
}

void gm_aten_store_bf16(const float *x, uint16_t *y, size_t n, int onednn) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
    __m512i r = bf16_bits16(_mm512_maskz_loadu_ps(k, x + i), onednn);
    // Narrow in a register, then a masked store: the memory form of vpmovdw is slow on Zen 4.
    _mm256_mask_storeu_epi16(y + i, k, _mm512_cvtepi32_epi16(r));
  }
}

static __m512 widen_bf16_16(__mmask16 k, const uint16_t *p) {
  __m256i h = k == 0xffff ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(k, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// oneDNN's gelu_erf on bf16 storage in one pass: widen, the f32 kernel above (forward, or the
// derivative times dy), round with oneDNN's bf16 rules; the same bits as widening a block,
// running gm_onednn_gelu_erf_fwd/bwd and gm_aten_store_bf16(onednn = 1). With have_avx512bf16
// the rounding is oneDNN's own instruction, vcvtneps2bf16 (RNE, |x| < 2^-126 to a signed zero,
// NaN to (u >> 16) | 0x40: the rules bf16_bits16 spells out; test_gelu_torch_aten checks both).
void gm_onednn_gelu_erf_bf16(const uint16_t *x, const uint16_t *dy, uint16_t *out, size_t n, int have_avx512bf16) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
    __m512 v = widen_bf16_16(k, x + i), r;
    if (dy) r = _mm512_mul_ps(dnn_gelu_erf_deriv16(v), widen_bf16_16(k, dy + i));
    else r = dnn_gelu_erf16(v);
    __m256i h = have_avx512bf16 == 1 ? (__m256i)_mm512_cvtneps_pbh(r)
                                     : _mm512_cvtepi32_epi16(bf16_bits16(r, have_avx512bf16 == 2 ? 2 : 1));
    if (k == 0xffff) _mm256_storeu_si256((__m256i *)(out + i), h); // full vectors store unmasked
    else _mm256_mask_storeu_epi16(out + i, k, h);
  }
}

// f16/bf16 -> f32 widening of a block, 16 lanes (exact; f16 NaN made quiet as gm_f16_to_f32).
void gm_aten_widen(int is_f16, const uint16_t *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
    __m256i h = _mm256_maskz_loadu_epi16(k, x + i);
    __m512 v = is_f16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    _mm512_mask_storeu_ps(y + i, k, v);
  }
}

// The vector backward on f16/bf16 storage from a table: d[p] is the f32 factor that multiplies dy
// for the 16-bit pattern p (ATen's lambdas end in dy*(...), oneDNN's in deriv(x)*dy; the factor
// depends on x alone), so dx = dy*d[x] in f32, in the path's operand order (the NaN that
// propagates), rounded once to the dtype: f16 vcvtps2ph RNE (as store_block); bf16 RNE with ATen's
// vector rules (NaN -> 0xffff) or oneDNN's (payload kept, |x| < 2^-126 flushed). Bit for bit the
// widen-compute-store of a block.
void gm_gelu16_bwd_by_factor(int is_f16, int onednn, const float *d, const uint16_t *x, const uint16_t *dy, uint16_t *dx,
                             size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
    __m512i idx = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, x + i));
    __m512 f = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, idx, d, 4);
    __m256i h = _mm256_maskz_loadu_epi16(k, dy + i);
    __m512 g = is_f16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    __m512 r = onednn ? _mm512_mul_ps(f, g) : _mm512_mul_ps(g, f);
    __m256i o = is_f16 ? _mm512_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
                       : _mm512_cvtepi32_epi16(bf16_bits16(r, onednn));
    if (k == 0xffff) _mm256_storeu_si256((__m256i *)(dx + i), o);
    else _mm256_mask_storeu_epi16(dx + i, k, o);
  }
}
