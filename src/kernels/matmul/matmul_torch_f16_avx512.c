// AVX-512 bodies of gm_matmul_f16_torch (order and contract in matmul_torch_f16.c). FMA is
// exact-equivalent here because the products of f16/bf16 values are exact in f32.
//
// B as stored: six rows by 64 columns (four vectors) at a time. The four partial sums of an output
// (l = 0, 1, 2, 3 mod 4) are independent chains, so they run as four passes over K, one residue
// each, with 24 accumulators per pass (4 loads of B and 6 broadcasts of A per 24 FMAs); each pass's
// sums wait in a buffer until ((p0 + p1) + p2) + p3.
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul/matmul_isa.h"

enum { ROWS = 6, VECS = 4 };

// p[r][v] += a_r[l] * B[l][16v .. 16v + 15] for the nr rows: one step of a pass's chains.
static inline __attribute__((always_inline)) void fma_step(int nr, const float *const a[ROWS], const float *B, int ldb,
                                                          int l, const __mmask16 m[VECS], __m512 p[ROWS][VECS]) {
  const float *b = B + (size_t)l * ldb;
  __m512 bv[VECS];
#pragma GCC unroll 4
  for (int v = 0; v < VECS; v++) bv[v] = _mm512_maskz_loadu_ps(m[v], b + 16 * v);
#pragma GCC unroll 6
  for (int r = 0; r < nr; r++) {
    __m512 x = _mm512_set1_ps(a[r][l]);
#pragma GCC unroll 4
    for (int v = 0; v < VECS; v++) p[r][v] = _mm512_fmadd_ps(x, bv[v], p[r][v]);
  }
}

// One residue pass: p[r][v] = sum over l = kk, kk + 4, ... < K4 (then the tail K4..K-1 when kk = 0)
// of a_r[l] * B[l][16v .. 16v + 15], in order of l.
// nr (1 <= nr <= ROWS) is a constant at every call, so each row count gets its own unrolled loop.
static inline __attribute__((always_inline)) void residue_pass(int nr, const float *const a[ROWS], const float *B, int ldb,
                                                              int K4, int K, int kk, const __mmask16 m[VECS],
                                                              __m512 out[ROWS][VECS]) {
  __m512 p[ROWS][VECS];
#pragma GCC unroll 6
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 4
    for (int v = 0; v < VECS; v++) p[r][v] = _mm512_setzero_ps();
  for (int l = kk; l < K4; l += 4) fma_step(nr, a, B, ldb, l, m, p);
  if (kk == 0)
    for (int l = K4; l < K; l++) fma_step(nr, a, B, ldb, l, m, p);
#pragma GCC unroll 6
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 4
    for (int v = 0; v < VECS; v++) out[r][v] = p[r][v];
}

static void residue_passes(int R, const float *const a[ROWS], const float *B, int ldb, int K4, int K,
                           const __mmask16 m[VECS], __m512 sums[4][ROWS][VECS]) {
  for (int kk = 0; kk < 4; kk++) switch (R) {
    case 2: residue_pass(2, a, B, ldb, K4, K, kk, m, sums[kk]); break;
    case 3: residue_pass(3, a, B, ldb, K4, K, kk, m, sums[kk]); break;
    case 4: residue_pass(4, a, B, ldb, K4, K, kk, m, sums[kk]); break;
    case 5: residue_pass(5, a, B, ldb, K4, K, kk, m, sums[kk]); break;
    default: residue_pass(ROWS, a, B, ldb, K4, K, kk, m, sums[kk]); break;
    }
}

// One row (decode): the four partial sums side by side in one pass, so B streams row after row:
// p[kk][v] takes l = kk mod 4 (16 accumulators), the K % 4 tail goes to p[0].
static void one_row_pass(const float *a, const float *B, int ldb, int K4, int K, const __mmask16 m[VECS],
                         __m512 sums[4][ROWS][VECS]) {
  __m512 p[4][VECS];
#pragma GCC unroll 4
  for (int kk = 0; kk < 4; kk++)
#pragma GCC unroll 4
    for (int v = 0; v < VECS; v++) p[kk][v] = _mm512_setzero_ps();
  for (int l = 0; l < K4; l += 4)
#pragma GCC unroll 4
    for (int kk = 0; kk < 4; kk++) {
      const float *b = B + (size_t)(l + kk) * ldb;
      __m512 x = _mm512_set1_ps(a[l + kk]);
#pragma GCC unroll 4
      for (int v = 0; v < VECS; v++) p[kk][v] = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m[v], b + 16 * v), p[kk][v]);
    }
  for (int l = K4; l < K; l++) {
    const float *b = B + (size_t)l * ldb;
    __m512 x = _mm512_set1_ps(a[l]);
#pragma GCC unroll 4
    for (int v = 0; v < VECS; v++) p[0][v] = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m[v], b + 16 * v), p[0][v]);
  }
  for (int kk = 0; kk < 4; kk++)
    for (int v = 0; v < VECS; v++) sums[kk][0][v] = p[kk][v];
}

// C[:, strip] = alpha * A @ B[:, strip] (+ bias) for the ncols (<= 64) columns at B (row stride ldb).
void gm_dot4_strip_avx512(const float *A, int lda, const float *B, int ldb, int M, int K, int ncols, float alpha,
                          const float *bias, float *C, int ldc) {
  __mmask16 m[VECS];
  for (int v = 0; v < VECS; v++) {
    int n = ncols - 16 * v;
    m[v] = n >= 16 ? (__mmask16)0xffff : n > 0 ? (__mmask16)((1u << n) - 1u) : 0;
  }
  __m512 va = _mm512_set1_ps(alpha), vb[VECS];
  for (int v = 0; v < VECS; v++) vb[v] = bias ? _mm512_maskz_loadu_ps(m[v], bias + 16 * v) : _mm512_setzero_ps();
  int K4 = K & ~3;
  for (int i = 0; i < M; i += ROWS) {
    int R = M - i < ROWS ? M - i : ROWS;
    const float *a[ROWS];
    for (int r = 0; r < ROWS; r++) a[r] = A + (size_t)(i + (r < R ? r : 0)) * lda;
    __m512 sums[4][ROWS][VECS];
    if (R == 1) one_row_pass(a[0], B, ldb, K4, K, m, sums);
    else residue_passes(R, a, B, ldb, K4, K, m, sums);
    for (int r = 0; r < R; r++)
      for (int v = 0; v < VECS; v++) {
        if (!m[v]) continue;
        __m512 dot = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(sums[0][r][v], sums[1][r][v]), sums[2][r][v]), sums[3][r][v]);
        __m512 y = _mm512_mul_ps(va, dot);
        if (bias) y = _mm512_add_ps(vb[v], y);
        _mm512_mask_storeu_ps(C + (size_t)(i + r) * ldc + 16 * v, m[v], y);
      }
  }
}

// 16 consecutive elements of B at element index i: f32 values, or (half) f16 bits widened exactly.
static inline __attribute__((always_inline)) __m512 load_b(const void *B, size_t i, bool half) {
  if (half) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)B + i)));
  return _mm512_loadu_ps((const float *)B + i);
}

static inline __attribute__((always_inline)) __m512 maskz_load_b(__mmask16 m, const void *B, size_t i, bool half) {
  if (half) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)B + i));
  return _mm512_maskz_loadu_ps(m, (const float *)B + i);
}

// One row of A against ncols (<= 1024) columns of B as stored (decode): the four
// partial sums of every column wait in L1 while B streams row by row, whole row segments at a time.
// p[l mod 4] += a[l] * B[l] in order of l (the K % 4 tail into p[0]); then ((p0 + p1) + p2) + p3.
// B holds f32 values or (half) f16 bits; half is a constant at each call. chain (a constant too):
// one sum over all of K instead (oneDNN's one-row order on intel-amx), p[0] += a[l] * B[l].
static inline __attribute__((always_inline)) void dot4_row(const float *a, const void *B, int ldb, int K, int ncols,
                                                          float alpha, const float *bias, float *C, bool half,
                                                          bool chain) {
  enum { NV = 1024 / 16 };
  __m512 p[4][NV];
  int nv = (ncols + 15) / 16, K4 = chain ? 0 : K & ~3;
  __mmask16 last = (__mmask16)(ncols % 16 ? (1u << (ncols % 16)) - 1u : 0xffffu);
  for (int k = 0; k < 4; k++)
    for (int v = 0; v < nv; v++) p[k][v] = _mm512_setzero_ps();
  for (int l = 0; l < K; l++) {
    int k = l < K4 ? (l & 3) : 0;
    size_t row = (size_t)l * ldb;
    __m512 x = _mm512_set1_ps(a[l]);
    for (int v = 0; v + 1 < nv; v++) p[k][v] = _mm512_fmadd_ps(x, load_b(B, row + 16 * v, half), p[k][v]);
    p[k][nv - 1] = _mm512_fmadd_ps(x, maskz_load_b(last, B, row + 16 * (nv - 1), half), p[k][nv - 1]);
  }
  __m512 va = _mm512_set1_ps(alpha);
  for (int v = 0; v < nv; v++) {
    __mmask16 m = v + 1 < nv ? (__mmask16)0xffff : last;
    __m512 s = chain ? p[0][v] : _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(p[0][v], p[1][v]), p[2][v]), p[3][v]);
    __m512 y = _mm512_mul_ps(va, s);
    if (bias) y = _mm512_add_ps(_mm512_maskz_loadu_ps(m, bias + 16 * v), y);
    _mm512_mask_storeu_ps(C + 16 * v, m, y);
  }
}

void gm_dot4_row_avx512(const float *a, const float *B, int ldb, int K, int ncols, float alpha, const float *bias, float *C) {
  dot4_row(a, B, ldb, K, ncols, alpha, bias, C, false, false);
}

void gm_dot4_row_f16_avx512(const float *a, const uint16_t *B, int ldb, int K, int ncols, float alpha, const float *bias,
                            float *C) {
  dot4_row(a, B, ldb, K, ncols, alpha, bias, C, true, false);
}

void gm_chain_row_avx512(const float *a, const float *B, int ldb, int K, int ncols, float alpha, const float *bias, float *C) {
  dot4_row(a, B, ldb, K, ncols, alpha, bias, C, false, true);
}

void gm_chain_row_f16_avx512(const float *a, const uint16_t *B, int ldb, int K, int ncols, float alpha, const float *bias,
                             float *C) {
  dot4_row(a, B, ldb, K, ncols, alpha, bias, C, true, true);
}

// The transposed-B order of matmul_torch_f16.c with AVX-512: ATen's eight 8-lane registers of a
// 64-element block sit pairwise in four 16-lane registers (register q holds r = 2q and 2q + 1),
// so the same sums come out. Computes C[i, j] = alpha * dot(A row i, B row j) (+ bias[j]) for
// rows i0..i1 and columns j0..j1, four rows of A against four rows of B at a time; register q of
// the block's 16 pairs is summed in its own pass over K (q = 0..3), then the 16 pairs fold
// together (fold16 below; fold_main one by one at the edges and where K % 64 leaves a rest).
static float fold_main(__m512 q0, __m512 q1, __m512 q2, __m512 q3) {
  __m512 a = _mm512_add_ps(_mm512_add_ps(q0, q2), _mm512_add_ps(q1, q3)); // (r0+r4)+(r2+r6) | (r1+r5)+(r3+r7)
  __m256 r = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));  // r0 + r1
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(r), _mm256_extractf128_ps(r, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// Short K (one or no 64-element block, as the attention scores with head size 64): one row of A
// against 16 rows of B at a time. Each pair's four registers combine lane-wise as in fold_main;
// then the 16 horizontal folds run together, each stage adding the same pairs of lanes as ATen's
// (halves of 8, then 4, 2, 1) for all 16 outputs, with shuffles that bring the pairs together.
static inline __attribute__((always_inline)) __m512 fold16(const __m512 v[16]) {
  __m512 w[8], x[4], y[2];
#pragma GCC unroll 8
  for (int k = 0; k < 8; k++) // lanes l + l+8: output 2k in lanes 0-7, 2k+1 in 8-15
    w[k] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
#pragma GCC unroll 4
  for (int m = 0; m < 4; m++) // lanes i + i+4: 128-bit lane t holds output 4m + t
    x[m] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * m], w[2 * m + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(w[2 * m], w[2 * m + 1], _MM_SHUFFLE(3, 1, 3, 1)));
#pragma GCC unroll 2
  for (int k = 0; k < 2; k++) // s + movehl(s): lanes (0, 1) of 8k + t, then of 8k + 4 + t
    y[k] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * k], x[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(x[2 * k], x[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // s0 + s1: lane 4t + c holds output t + 4c; put output o in lane o.
  __m512 z = _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, z);
}

static void trans_block_short(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha, float *C,
                              int ldc, int i0, int i1, int j0, int j1, int K) {
  int main_end = K & ~63;
  for (int j = j0; j < j1; j += 16) {
    int nj = j1 - j < 16 ? j1 - j : 16;
    __mmask16 mj = (__mmask16)((1u << nj) - 1u);
    const float *ys[16];
    for (int b = 0; b < 16; b++) ys[b] = B + (size_t)(j + (b < nj ? b : 0)) * ldb;
    __m512 vbias = bias ? _mm512_maskz_loadu_ps(mj, bias + j) : _mm512_setzero_ps();
    for (int i = i0; i < i1; i++) {
      const float *x = A + (size_t)i * lda;
      __m512 v[16];
      if (main_end == 64) {
        __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16), x2 = _mm512_loadu_ps(x + 32),
               x3 = _mm512_loadu_ps(x + 48), zero = _mm512_setzero_ps();
#pragma GCC unroll 16
        for (int b = 0; b < 16; b++) {
          __m512 q0 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(ys[b]), zero), q1 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(ys[b] + 16), zero);
          __m512 q2 = _mm512_fmadd_ps(x2, _mm512_loadu_ps(ys[b] + 32), zero), q3 = _mm512_fmadd_ps(x3, _mm512_loadu_ps(ys[b] + 48), zero);
          v[b] = _mm512_add_ps(_mm512_add_ps(q0, q2), _mm512_add_ps(q1, q3));
        }
      } else {
#pragma GCC unroll 16
        for (int b = 0; b < 16; b++) v[b] = _mm512_setzero_ps();
      }
      __m512 sum = fold16(v);
      if (main_end != K) { // the rest after the blocks, output by output
        float t[16];
        _mm512_storeu_ps(t, sum);
        for (int b = 0; b < nj; b++) t[b] = gm_dot_f32arith_tail(x, ys[b], K, t[b]);
        sum = _mm512_loadu_ps(t);
      } else {
        sum = _mm512_add_ps(sum, _mm512_setzero_ps()); // ATen adds the (zero) folded rest register: -0 -> +0
      }
      __m512 out = _mm512_mul_ps(_mm512_set1_ps(alpha), sum);
      if (bias) out = _mm512_add_ps(vbias, out);
      _mm512_mask_storeu_ps(C + (size_t)i * ldc + j, mj, out);
    }
  }
}

enum { TA = 4, TB = 4 }; // rows of A by rows of B per block: 16 pairs, folded together by fold16

// Register q of every (row of A, row of B) pair of the block, over the 64-element blocks below
// main_end: 16 accumulators, 4 + 4 loads per 16 FMAs. na, nb are constants at each call.
static inline __attribute__((always_inline)) void trans_pass(int na, int nb, const float *const xs[TA],
                                                            const void *const ys[TB], int main_end, int q,
                                                            __m512 out[TA][TB], bool half) {
  __m512 acc[TA][TB];
#pragma GCC unroll 4
  for (int a = 0; a < na; a++)
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) acc[a][b] = _mm512_setzero_ps();
  for (int l = 16 * q; l < main_end; l += 64) {
    __m512 x[TA];
#pragma GCC unroll 4
    for (int a = 0; a < na; a++) x[a] = _mm512_loadu_ps(xs[a] + l);
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) {
      __m512 y = load_b(ys[b], (size_t)l, half);
#pragma GCC unroll 4
      for (int a = 0; a < na; a++) acc[a][b] = _mm512_fmadd_ps(x[a], y, acc[a][b]);
    }
  }
#pragma GCC unroll 4
  for (int a = 0; a < na; a++)
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) out[a][b] = acc[a][b];
}

// One row of A (decode): the four registers of each of the TB pairs side by side in one pass, so
// the rows of B stream in order. ys point to f32 rows, or (half) to rows of f16 bits.
static inline __attribute__((always_inline)) void trans_one_row_body(const float *x, const void *const ys[TB], int main_end,
                                                                    __m512 sums[4][TA][TB], bool half) {
  __m512 acc[TB][4];
#pragma GCC unroll 4
  for (int b = 0; b < TB; b++)
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) acc[b][q] = _mm512_setzero_ps();
  for (int l = 0; l < main_end; l += 64)
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
      __m512 xv = _mm512_loadu_ps(x + l + 16 * q);
#pragma GCC unroll 4
      for (int b = 0; b < TB; b++) acc[b][q] = _mm512_fmadd_ps(xv, load_b(ys[b], (size_t)l + 16 * q, half), acc[b][q]);
    }
  for (int b = 0; b < TB; b++)
    for (int q = 0; q < 4; q++) sums[q][0][b] = acc[b][q];
}

// Every register of the block, one pass each (a short edge block repeats its spare rows).
static void trans_passes(const float *const xs[TA], const void *const ys[TB], int main_end, __m512 sums[4][TA][TB], bool half) {
  if (half)
    for (int q = 0; q < 4; q++) trans_pass(TA, TB, xs, ys, main_end, q, sums[q], true);
  else
    for (int q = 0; q < 4; q++) trans_pass(TA, TB, xs, ys, main_end, q, sums[q], false);
}

// The sum of the elements after the 64-element blocks (K % 64 of them), added to the blocks' folded
// sum in the f32 order of the rest; y holds f32 values or (half) f16 bits, widened first.
static float add_rest(const float *x, const void *y, int main_end, int K, float sum, bool half) {
  if (main_end == K) return sum + 0.0f; // ATen still adds the (zero) folded rest register: -0 -> +0
  if (!half) return gm_dot_f32arith_tail(x, (const float *)y, K, sum);
  float rest[64];
  const uint16_t *yh = (const uint16_t *)y + main_end;
  for (int k = 0; k < K - main_end; k++) rest[k] = _cvtsh_ss(yh[k]);
  return gm_dot_f32arith_tail(x + main_end, rest, K - main_end, sum);
}

// A full 4 x 4 block with no rest after the 64-element blocks: the 16 pairs fold together (fold16
// adds the same lanes as fold_main), lane 4a + b = C[i + a, j + b]; then alpha *, + 0 (the zero
// rest register), + bias, each a separate rounding as in the element-by-element code.
static inline __attribute__((always_inline)) void store_block16(__m512 sums[4][TA][TB], const float *bias, float alpha,
                                                               float *C, int ldc, int i, int j) {
  __m512 v[16];
#pragma GCC unroll 4
  for (int a = 0; a < TA; a++)
#pragma GCC unroll 4
    for (int b = 0; b < TB; b++)
      v[TB * a + b] = _mm512_add_ps(_mm512_add_ps(sums[0][a][b], sums[2][a][b]), _mm512_add_ps(sums[1][a][b], sums[3][a][b]));
  __m512 out = _mm512_add_ps(fold16(v), _mm512_setzero_ps());
  out = _mm512_mul_ps(_mm512_set1_ps(alpha), out);
  if (bias) out = _mm512_add_ps(_mm512_broadcast_f32x4(_mm_loadu_ps(bias + j)), out);
  _mm_storeu_ps(C + (size_t)i * ldc + j, _mm512_castps512_ps128(out));
  _mm_storeu_ps(C + (size_t)(i + 1) * ldc + j, _mm512_extractf32x4_ps(out, 1));
  _mm_storeu_ps(C + (size_t)(i + 2) * ldc + j, _mm512_extractf32x4_ps(out, 2));
  _mm_storeu_ps(C + (size_t)(i + 3) * ldc + j, _mm512_extractf32x4_ps(out, 3));
}

// C[i, j] = alpha * dot(A row i, B row j) (+ bias[j]) for rows i0..i1, columns j0..j1: four rows
// of A against four rows of B at a time (one row of A: trans_one_row_body). B holds f32 values or
// (half) f16 bits; half is a constant at each call.
static inline __attribute__((always_inline)) void trans_block(const float *A, int lda, const void *B, int ldb,
                                                             const float *bias, float alpha, float *C, int ldc, int i0,
                                                             int i1, int j0, int j1, int K, bool half) {
  int main_end = K & ~63;
  size_t elem = half ? sizeof(uint16_t) : sizeof(float);
  for (int j = j0; j < j1; j += TB) {
    int nj = j1 - j < TB ? j1 - j : TB;
    const void *ys[TB];
    for (int b = 0; b < TB; b++) ys[b] = (const char *)B + (size_t)(j + (b < nj ? b : 0)) * ldb * elem;
    for (int i = i0; i < i1; i += TA) {
      int ni = i1 - i < TA ? i1 - i : TA;
      const float *xs[TA];
      for (int a = 0; a < TA; a++) xs[a] = A + (size_t)(i + (a < ni ? a : 0)) * lda;
      __m512 sums[4][TA][TB];
      if (ni == 1) trans_one_row_body(xs[0], ys, main_end, sums, half);
      else trans_passes(xs, ys, main_end, sums, half);
      if (ni == TA && nj == TB && main_end == K) {
        store_block16(sums, bias, alpha, C, ldc, i, j);
        continue;
      }
      for (int a = 0; a < ni; a++)
        for (int b = 0; b < nj; b++) {
          float sum = fold_main(sums[0][a][b], sums[1][a][b], sums[2][a][b], sums[3][a][b]);
          float v = alpha * add_rest(xs[a], ys[b], main_end, K, sum, half);
          C[(size_t)(i + a) * ldc + j + b] = bias ? bias[j + b] + v : v;
        }
    }
  }
}

void gm_matmul_trans_block_avx512(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha,
                                  float *C, int ldc, int i0, int i1, int j0, int j1, int K) {
  if ((K & ~63) < 128) { trans_block_short(A, lda, B, ldb, bias, alpha, C, ldc, i0, i1, j0, j1, K); return; }
  trans_block(A, lda, B, ldb, bias, alpha, C, ldc, i0, i1, j0, j1, K, false);
}

// The same with B given as f16 bits (an f16 run's lm_head), for any K (with one or no 64-element
// block this is also the short kernel's order: its fold16 adds the same lanes as fold_main). B's
// rows take half the cache, and a decode row streams half the bytes.
void gm_trans_block_f16_avx512(const float *A, int lda, const uint16_t *B, int ldb, const float *bias, float alpha, float *C,
                               int ldc, int i0, int i1, int j0, int j1, int K) {
  trans_block(A, lda, B, ldb, bias, alpha, C, ldc, i0, i1, j0, j1, K, true);
}

// n f16 bits to f32 (exact: every f16 value is an f32 value), 16 at a time (VCVTPH2PS).
void gm_f16_widen_avx512(const uint16_t *h, float *out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + i))));
  if (i < n) {
    const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(out + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h + i)));
  }
}
