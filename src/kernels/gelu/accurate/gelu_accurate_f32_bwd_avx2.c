// Accurate mode, f32 backward of the erf family and the tanh forms, 8 f32 lanes (AVX2+FMA): the
// operations of gm_gelu_acc32_bwd_scalar (gelu_accurate_f32_bwd.c) in the same order, so the same bits. A
// piece's row is gathered by column index; dy's mantissa and exponent come from its bits (a
// subnormal dy is first scaled by 2^24, exactly); the final scaling by 2^(nT + ge) is an exact f64
// product converted back to f32 (one rounding, as the scalar).
#include "kernels/gelu/accurate/gelu_acc32_lanes.h"

#include <immintrin.h>

typedef struct {
  const float (*E)[GELU_ACC32_ERF_COLUMNS];
  __m256 a0h, a0l, amax, low;
  gelu_acc32_k8 K; // tanh: the forward's reduction constants
} setup8;

static inline __attribute__((always_inline)) __m256 piece_row(const setup8 *B, int j, __m256i i) {
  return _mm256_i32gather_ps(B->E[j], i, 4);
}

// v * 2^n rounded once, for integral n in [-1000, 1000]: exact f64 products, one conversion.
static inline __attribute__((always_inline)) __m256 scale_exact_then_round8(__m256 v, __m256 n) {
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i lo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(ni));
  __m256i hi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(ni, 1));
  const __m256i bias = _mm256_set1_epi64x(1023);
  __m256d plo = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(lo, bias), 52));
  __m256d phi = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(hi, bias), 52));
  __m128 rlo = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), plo));
  __m128 rhi = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), phi));
  return _mm256_insertf128_ps(_mm256_castps128_ps256(rlo), rhi, 1);
}

static inline __attribute__((always_inline)) __m256 one8(bool tanh, bool clip10, const setup8 *B, __m256 x, __m256 g) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 a = _mm256_min_ps(_mm256_andnot_ps(sign, x), B->amax);
  __m256 aT = _mm256_blendv_ps(_mm256_setzero_ps(), a, x), nT, r; // a where x's sign bit is set
  if (tanh) gelu_acc32_reduce8(false, &B->K, aT, &r, &nT); // T = nT + r for aT >= 0
  else gelu_acc32_reduce_erf8(aT, &r, &nT);
  __m256 fl = _mm256_round_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m256i fli = _mm256_cvttps_epi32(fl);
  __m256i pos = _mm256_xor_si256(_mm256_srai_epi32(_mm256_castps_si256(x), 31), _mm256_set1_epi32(-1));
  __m256i i = _mm256_min_epi32(_mm256_add_epi32(fli, _mm256_and_si256(pos, _mm256_set1_epi32(24))), _mm256_set1_epi32(31));
  __m256 off = _mm256_add_ps(fl, _mm256_set1_ps(0.5f));
  if (tanh) { // a < 1/2 (B->low) takes column 15, in u = a - 1/4 (erf: no lane does)
    __m256 low = _mm256_andnot_ps(_mm256_castsi256_ps(pos), _mm256_cmp_ps(a, B->low, _CMP_LT_OQ)); // x < 0 (sign bit)
    __m256 col = _mm256_castsi256_ps(_mm256_set1_epi32(GELU_ACC32_TANH_BWD_LOW_COLUMN));
    i = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(i), col, low));
    off = _mm256_blendv_ps(off, _mm256_set1_ps(0.25f), low);
  }
  __m256 root = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(2), i));
  __m256 u = _mm256_sub_ps(a, off);
  __m256 th, te; // a - a0h with its error
  gelu_acc32_two_sum8(a, _mm256_sub_ps(_mm256_setzero_ps(), B->a0h), &th, &te);
  __m256 tl = _mm256_and_ps(root, _mm256_sub_ps(te, B->a0l));
  __m256 m1 = _mm256_blendv_ps(_mm256_set1_ps(1.0f), th, root);
  __m256 S = piece_row(B, GELU_ACC32_ERF_DEG, i);
#pragma GCC unroll 8
  for (int j = GELU_ACC32_ERF_DEG - 1; j >= 1; j--) S = _mm256_fmadd_ps(S, u, piece_row(B, j, i));
  __m256 inner = _mm256_fmadd_ps(u, S, _mm256_fmadd_ps(u, piece_row(B, GELU_ACC32_ERF_DEG + 2, i),
                                                        piece_row(B, GELU_ACC32_ERF_DEG + 1, i)));
  __m256 row0 = piece_row(B, 0, i);
  __m256 c0 = _mm256_mul_ps(m1, row0), e = _mm256_fmsub_ps(m1, row0, c0);
  __m256 w = _mm256_fmadd_ps(m1, inner, _mm256_fmadd_ps(tl, _mm256_add_ps(row0, inner), e));
  __m256 P = gelu_acc32_exp2_poly8(r);
  __m256 s = _mm256_mul_ps(r, P), sl = _mm256_fmsub_ps(r, P, s);
  __m256 L = _mm256_fmadd_ps(c0, s, _mm256_fmadd_ps(c0, sl, _mm256_fmadd_ps(w, s, w)));
  __m256 hi, lo;
  gelu_acc32_two_sum8(c0, L, &hi, &lo); // hi + lo = c0 + L exactly
  // dy = gm * 2^ge, gm in [1, 2) with dy's sign: from the bits, a subnormal dy scaled by 2^24 first
  __m256 ag = _mm256_andnot_ps(sign, g);
  __m256 sub = _mm256_cmp_ps(ag, _mm256_set1_ps(0x1p-126f), _CMP_LT_OQ);
  __m256 gn = _mm256_blendv_ps(g, _mm256_mul_ps(g, _mm256_set1_ps(0x1p24f)), sub);
  __m256i gb = _mm256_castps_si256(gn);
  __m256 gm = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(gb, _mm256_set1_epi32((int)0x807fffffu)),
                                                  _mm256_set1_epi32(0x3f800000)));
  __m256i gei = _mm256_sub_epi32(_mm256_and_si256(_mm256_srli_epi32(gb, 23), _mm256_set1_epi32(255)), _mm256_set1_epi32(127));
  __m256 ge = _mm256_sub_ps(_mm256_cvtepi32_ps(gei), _mm256_and_ps(sub, _mm256_set1_ps(24.0f)));
  __m256 y = scale_exact_then_round8(_mm256_fmadd_ps(gm, hi, _mm256_mul_ps(gm, lo)), _mm256_add_ps(nT, ge));
  __m256 special = _mm256_or_ps(_mm256_cmp_ps(g, _mm256_setzero_ps(), _CMP_EQ_OQ),
                                _mm256_cmp_ps(ag, _mm256_set1_ps(INFINITY), _CMP_NLT_UQ)); // 0, inf, NaN
  y = _mm256_blendv_ps(y, _mm256_mul_ps(g, hi), special);
  y = _mm256_blendv_ps(y, g, _mm256_cmp_ps(x, _mm256_set1_ps(GELU_ACC32_BWD_HI), _CMP_GE_OQ));
  if (clip10) y = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(10.0f), _CMP_GT_OQ), y);
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

static inline __attribute__((always_inline)) void run8(bool tanh, bool clip10, const setup8 *B, const float *x,
                                                       const float *dy, float *dx, size_t n) {
  for (size_t i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dx + i, one8(tanh, clip10, B, _mm256_loadu_ps(x + i), _mm256_loadu_ps(dy + i)));
}

void gm_gelu_acc32_bwd_avx2(const gelu_acc_params *p, const float *x, const float *dy, float *dx, size_t n) {
  gelu_acc32_bwd_setup S = gm_gelu_acc32_bwd_setup_of(p);
  setup8 B = {S.E, _mm256_set1_ps(S.a0h), _mm256_set1_ps(S.a0l), _mm256_set1_ps(S.amax), _mm256_set1_ps(S.low),
              {_mm256_set1_ps(S.K.Mh), _mm256_set1_ps(S.K.Ml), _mm256_set1_ps(S.K.Mkh), _mm256_set1_ps(S.K.Mkl)}};
  if (S.tanh) run8(true, false, &B, x, dy, dx, n); // one loop per family (gelu_10 is erf)
  else if (S.clip10) run8(false, true, &B, x, dy, dx, n);
  else run8(false, false, &B, x, dy, dx, n);
  size_t done = n / 8 * 8;
  if (done < n) gm_gelu_acc32_bwd_scalar(p, x + done, dy + done, dx + done, n - done);
}
