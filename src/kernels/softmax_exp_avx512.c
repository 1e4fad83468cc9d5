// exp of a softmax row, y = expf(x - m), eight lanes of doubles at a time, computing what glibc's
// expf (2.28 and later, the __expf_fma build this machine's libm runs) computes, step for step:
//   z  = fma(N/ln2, xd, SHIFT)      xd = (double)x, N = 32, SHIFT = 0x1.8p52: k = round(x*N/ln2)
//   kd = z - SHIFT;  r = fma(N/ln2, xd, -kd)
//   s  = asdouble(T[k % 32] + (k << 47))                        2^(k/N)
//   y  = fma(fma(C0, r, C1), r*r, fma(C2, r, 1)) * s; result (float)y (RNE)
// with glibc's table T and coefficients C (e_exp2f_data.c). Lanes whose |x - m| >= 88 (overflow,
// underflow, inf, NaN: glibc's special cases) are recomputed with expf itself. softmax.c checks a
// sample against expf before using this kernel, and tests/test_softmax.c every f32 input.
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

void gm_exp_shift_row_avx512(float *s, int n, float m);

static const uint64_t exp_tab[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

// expf of 8 floats (none special) through doubles.
static __m256 exp8(__m256 x) {
  const __m512d inv_ln2_n = _mm512_set1_pd(0x1.71547652b82fep+0 * 32), shift = _mm512_set1_pd(0x1.8p+52);
  const __m512d c0 = _mm512_set1_pd(0x1.c6af84b912394p-5 / 32 / 32 / 32);
  const __m512d c1 = _mm512_set1_pd(0x1.ebfce50fac4f3p-3 / 32 / 32), c2 = _mm512_set1_pd(0x1.62e42ff0c52d6p-1 / 32);
  const __m512i t0 = _mm512_loadu_si512(exp_tab), t1 = _mm512_loadu_si512(exp_tab + 8);
  const __m512i t2 = _mm512_loadu_si512(exp_tab + 16), t3 = _mm512_loadu_si512(exp_tab + 24);
  __m512d xd = _mm512_cvtps_pd(x);
  __m512d z = _mm512_fmadd_pd(inv_ln2_n, xd, shift);
  __m512i ki = _mm512_castpd_si512(z);
  __m512d kd = _mm512_sub_pd(z, shift);
  __m512d r = _mm512_fmsub_pd(inv_ln2_n, xd, kd);
  __m512i idx = _mm512_and_si512(ki, _mm512_set1_epi64(31));
  __m512i lo = _mm512_permutex2var_epi64(t0, idx, t1), hi = _mm512_permutex2var_epi64(t2, idx, t3);
  __m512i t = _mm512_mask_blend_epi64(_mm512_test_epi64_mask(idx, _mm512_set1_epi64(16)), lo, hi);
  t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 47));
  __m512d s = _mm512_castsi512_pd(t);
  __m512d p = _mm512_fmadd_pd(r, c0, c1);
  __m512d r2 = _mm512_mul_pd(r, r);
  __m512d y = _mm512_fmadd_pd(r, c2, _mm512_set1_pd(1.0));
  y = _mm512_fmadd_pd(p, r2, y);
  return _mm512_cvtpd_ps(_mm512_mul_pd(y, s));
}

// s[j] = expf(s[j] - m) for j < n (the subtraction in f32, as the scalar code does it).
void gm_exp_shift_row_avx512(float *s, int n, float m) {
  const __m256 mv = _mm256_set1_ps(m);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), big = _mm256_set1_epi32(0x42b00000 - 1); // |x| >= 88
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 x = _mm256_sub_ps(_mm256_loadu_ps(s + j), mv);
    __m256i bits = _mm256_and_si256(_mm256_castps_si256(x), abs_mask);
    int special = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(bits, big)));
    if (!special) {
      _mm256_storeu_ps(s + j, exp8(x));
      continue;
    }
    float xs[8];
    _mm256_storeu_ps(xs, x);
    for (int k = 0; k < 8; k++) s[j + k] = expf(xs[k]);
  }
  for (; j < n; j++) s[j] = expf(s[j] - m);
}
