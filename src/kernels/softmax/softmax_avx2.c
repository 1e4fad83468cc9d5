// AVX2 bodies of the softmax's exp, maximum, lane sums and scaling and of the score division
// (contracts in nn.h and softmax.c): the same operations as the scalar code, eight lanes at a time,
// so the same bits.
#include <immintrin.h>
#include <sleef.h>

#include "kernels/softmax/softmax_isa.h"

// s[j] = exp(s[j] - m) for j < n with SLEEF's expf_u10 (AVX2 + FMA build: the bits of its AVX-512 build).
void gm_exp_shift_avx2(float *s, int n, float m) {
  __m256 vm = _mm256_set1_ps(m);
  int j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(s + j, Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm)));
  for (; j < n; j++) s[j] = Sleef_expf1_u10purecfma(s[j] - m);
}

void gm_div_row_avx2(float *x, int n, float d) {
  __m256 dv = _mm256_set1_ps(d);
  int j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, _mm256_div_ps(_mm256_loadu_ps(x + j), dv));
  for (; j < n; j++) x[j] = x[j] / d;
}

// The largest of s[0 .. n), NaN skipped (max_ps returns its second operand, the running maximum,
// when the element is NaN), -inf for none: the scalar loop's value (a zero's sign may differ, which
// no use of the maximum can see: exp(s - m) and mask > m give the same for either zero).
float gm_row_max_avx2(const float *s, int n) {
  __m256 vm = _mm256_set1_ps(-__builtin_inff());
  int j = 0;
  for (; j + 8 <= n; j += 8) vm = _mm256_max_ps(_mm256_loadu_ps(s + j), vm);
  float l[8], m = -__builtin_inff();
  _mm256_storeu_ps(l, vm);
  for (int k = 0; k < 8; k++)
    if (l[k] > m) m = l[k];
  for (; j < n; j++)
    if (s[j] > m) m = s[j];
  return m;
}

// lane[j % w] = lane[j % w] + v_j for j0 <= j < end in increasing j (w = 8 or 16, j0 a multiple of
// w), v_j = e[j] below n and rest from there: each lane's adds in the scalar order. Lanes past end
// in the last group are left as they are (not + 0, which would turn -0 into +0).
void gm_lane_acc_avx2(float *lane, const float *e, int w, int j0, int n, int end, float rest) {
  const __m256 vr = _mm256_set1_ps(rest);
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 acc[2] = {_mm256_loadu_ps(lane), w == 16 ? _mm256_loadu_ps(lane + 8) : _mm256_setzero_ps()};
  for (int j = j0; j < end; j += 8) {
    __m256 *a = &acc[w == 16 ? (j / 8) & 1 : 0];
    if (j + 8 <= n && j + 8 <= end) *a = _mm256_add_ps(*a, _mm256_loadu_ps(e + j));
    else if (j >= n && j + 8 <= end) *a = _mm256_add_ps(*a, vr);
    else { // a group across n or end
      const __m256i pos = _mm256_add_epi32(_mm256_set1_epi32(j), idx);
      const __m256i stored = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), pos), inside = _mm256_cmpgt_epi32(_mm256_set1_epi32(end), pos);
      const __m256 v = _mm256_blendv_ps(vr, _mm256_maskload_ps(e + j, stored), _mm256_castsi256_ps(stored));
      *a = _mm256_blendv_ps(*a, _mm256_add_ps(*a, v), _mm256_castsi256_ps(inside));
    }
  }
  _mm256_storeu_ps(lane, acc[0]);
  if (w == 16) _mm256_storeu_ps(lane + 8, acc[1]);
}

void gm_scale_row_avx2(float *s, int n, float inv) {
  __m256 v = _mm256_set1_ps(inv);
  int j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(s + j, _mm256_mul_ps(_mm256_loadu_ps(s + j), v));
  for (; j < n; j++) s[j] = s[j] * inv;
}

// y[j] = (x[j] - m) - l: log_softmax's output.
void gm_log_out_avx2(const float *x, float *y, int n, float m, float l) {
  const __m256 vm = _mm256_set1_ps(m), vl = _mm256_set1_ps(l);
  int j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm), vl));
  for (; j < n; j++) y[j] = (x[j] - m) - l;
}

// d[j] = fma(-e[j], s, j == t ? g : 0): the loss's log-softmax backward (one FMA, as GCC contracts it).
void gm_nll_grad_row_avx2(float *d, const float *e, int n, float s, int t, float g) {
  const __m256 vs = _mm256_set1_ps(s), zero = _mm256_setzero_ps(), sign = _mm256_set1_ps(-0.0f);
  int j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(d + j, _mm256_fmadd_ps(_mm256_xor_ps(_mm256_loadu_ps(e + j), sign), vs, zero));
  for (; j < n; j++) d[j] = __builtin_fmaf(-e[j], s, 0.0f);
  if (t >= 0 && t < n) d[t] = __builtin_fmaf(-e[t], s, g);
}
