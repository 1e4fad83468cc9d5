// AVX-512 packing of gm_matmul_bf16's operands into bf16 pairs (matmul_bf16.c's pack_cols and
// pack_rows, the same words): no arithmetic, so no numerics of its own. Each f32 input is taken
// as the bf16 it holds (its high 16 bits; the operands are bf16 values stored as f32), with a
// subnormal flushed to a zero of its sign, as oneDNN's packing does; word p of a row or column is
// element 2p in the low half and element 2p + 1 in the high half, 0 past K.
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul/matmul_isa.h"
#include "kernels/matmul/transpose16_avx512.h"

// 16 f32 as their bit patterns, subnormals (exponent 0) flushed to a signed zero; lanes off in m
// read as 0.
static inline __m512i load_daz(__mmask16 m, const float *p) {
  __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, p));
  __mmask16 normal = _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_mov_epi32(_mm512_and_si512(u, _mm512_set1_epi32((int)0x80000000u)), normal, u);
}

// The 16 pair words of 32 consecutive elements (u0: elements 0-15, u1: 16-31): word q takes the high
// halves of elements 2q and 2q + 1 (16-bit lanes 4q + 1 and 4q + 3 of the two vectors together).
static inline __m512i pairs_of(__m512i u0, __m512i u1) {
  const __m512i odd = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27, 25,
                                       23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  return _mm512_permutex2var_epi16(u0, odd, u1);
}

static inline __mmask16 first(int n) { return n >= 16 ? (__mmask16)0xffff : n > 0 ? (__mmask16)((1u << n) - 1u) : 0; }

// The pair words p0 .. p0 + 15 of one row of K elements (row[2p], row[2p + 1]).
static inline __m512i row_pairs(const float *row, int K, int p0) {
  int k0 = 2 * p0;
  return pairs_of(load_daz(first(K - k0), row + k0), load_daz(first(K - k0 - 16), row + k0 + 16));
}

// The pair words of 16 columns from two rows: element lo[c] in the low half of word c, hi[c] in the
// high half (0 where hi is NULL: past K); lanes off in m are 0.
static inline __m512i col_pairs(__mmask16 m, const float *lo, const float *hi) {
  __m512i l = load_daz(m, lo), h = hi ? load_daz(m, hi) : _mm512_setzero_si512();
  return _mm512_or_si512(_mm512_srli_epi32(l, 16), _mm512_and_si512(h, _mm512_set1_epi32((int)0xffff0000u)));
}

// Bp[p * ldp + j] for p < ceil(K/2), j < N: the pairs of op(B) [K, N] (B [K, N] row stride ldb, or
// B^T: B [N, K]). Nothing else of Bp is written.
void gm_bf16_pack_cols_avx512(const float *B, int ldb, bool trans_b, int K, int N, uint32_t *Bp, int ldp) {
  const int P = (K + 1) / 2;
  if (!trans_b) { // rows 2p and 2p + 1 of B, lane by lane
    for (int p = 0; p < P; p++) {
      const float *lo = B + (size_t)(2 * p) * ldb, *hi = lo + ldb;
      bool has_hi = 2 * p + 1 < K;
      for (int j = 0; j < N; j += 16) {
        __mmask16 m = first(N - j);
        _mm512_mask_storeu_epi32(Bp + (size_t)p * ldp + j, m, col_pairs(m, lo + j, has_hi ? hi + j : NULL));
      }
    }
    return;
  }
  for (int j = 0; j < N; j += 16) { // 16 rows of B (columns of op(B)) by 16 pairs, transposed
    const int nj = N - j < 16 ? N - j : 16;
    for (int p0 = 0; p0 < P; p0 += 16) {
      __m512 r[16], T[16]; // the words as f32 lanes for the shared transpose (bitwise casts)
      for (int q = 0; q < 16; q++)
        r[q] = _mm512_castsi512_ps(q < nj ? row_pairs(B + (size_t)(j + q) * ldb, K, p0) : _mm512_setzero_si512());
      gm_transpose16_avx512(r, T);
      const int np = P - p0 < 16 ? P - p0 : 16;
      for (int t = 0; t < np; t++) _mm512_mask_storeu_epi32(Bp + (size_t)(p0 + t) * ldp + j, first(nj), _mm512_castps_si512(T[t]));
    }
  }
}

// Ap[i * P + p] for i < M, p < P = ceil(K/2): the pairs of each row of A [M, K] (row stride lda).
void gm_bf16_pack_rows_avx512(const float *A, int lda, int M, int K, uint32_t *Ap, int ldp) {
  const int P = (K + 1) / 2;
  for (int i = 0; i < M; i++)
    for (int p0 = 0; p0 < P; p0 += 16)
      _mm512_mask_storeu_epi32(Ap + (size_t)i * ldp + p0, first(P - p0), row_pairs(A + (size_t)i * lda, K, p0));
}

// Ap[i * ldp + p] for i < M, p < P = ceil(K/2): the pairs of each row of op(A) = A^T, A [K, M] (row
// stride lda): word (i, p) is (A[2p][i], A[2p + 1][i]). 16 pairs by 16 rows are formed as
// gm_bf16_pack_cols_avx512 forms them (rows 2p and 2p + 1 of A, lane by lane), then transposed.
void gm_bf16_pack_rows_t_avx512(const float *A, int lda, int M, int K, uint32_t *Ap, int ldp) {
  const int P = (K + 1) / 2;
  for (int i0 = 0; i0 < M; i0 += 16) {
    const __mmask16 mi = first(M - i0);
    const int ni = M - i0 < 16 ? M - i0 : 16;
    for (int p0 = 0; p0 < P; p0 += 16) {
      const int np = P - p0 < 16 ? P - p0 : 16;
      __m512 r[16], T[16];
      for (int q = 0; q < 16; q++) {
        if (q >= np) { r[q] = _mm512_setzero_ps(); continue; }
        const float *lo = A + (size_t)(2 * (p0 + q)) * lda + i0;
        r[q] = _mm512_castsi512_ps(col_pairs(mi, lo, 2 * (p0 + q) + 1 < K ? lo + lda : NULL));
      }
      gm_transpose16_avx512(r, T);
      for (int t = 0; t < ni; t++)
        _mm512_mask_storeu_epi32(Ap + (size_t)(i0 + t) * ldp + p0, first(np), _mm512_castps_si512(T[t]));
    }
  }
}

// Output strip t of gm_bf16_pack_transposed (matmul_bf16.c's transpose_strip, the same words): for
// each strip s of Bp (32 words: the elements n, output rows p' = 16s ..) its 16 rows p = 16t ..
// (the elements k = 2p, 2p + 1: output columns 32t + 2q, 2q + 1). Of each row's 64 halves (word w's
// low half is lane 2w of the pair of vectors, its high half lane 2w + 1) the low halves of words 2q'
// and 2q' + 1 form output column 2q's word q' (lanes 4q', 4q' + 2: index 2L for 16-bit lane L), the
// high halves column 2q + 1's (index 2L + 1); then 32 columns by 16 rows, as two 16 x 16 blocks,
// are transposed.
void gm_bf16_transpose_strip_avx512(const uint32_t *Bp, int K, int N, int t, uint32_t *dst) {
  enum { STRIP = 32 };
  const int P = (K + 1) / 2, Pt = (N + 1) / 2, n_src = (N + STRIP - 1) / STRIP;
  const __m512i lows = _mm512_set_epi16(62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28, 26, 24, 22,
                                        20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i highs = _mm512_add_epi16(lows, _mm512_set1_epi16(1));
  for (int s = 0; s < n_src; s++) {
    __m512 r[32], T0[16], T1[16]; // r[c]: output column 32t + c over the rows p' = 16s + q'
    for (int q = 0; q < 16; q++) {
      const int p = 16 * t + q;
      __m512i w0 = _mm512_setzero_si512(), w1 = w0;
      if (p < P) {
        const uint32_t *src = Bp + ((size_t)s * P + p) * STRIP;
        w0 = _mm512_loadu_si512(src);
        w1 = _mm512_loadu_si512(src + 16);
      }
      r[2 * q] = _mm512_castsi512_ps(_mm512_permutex2var_epi16(w0, lows, w1));
      r[2 * q + 1] = _mm512_castsi512_ps(_mm512_permutex2var_epi16(w0, highs, w1));
    }
    gm_transpose16_avx512(r, T0);
    gm_transpose16_avx512(r + 16, T1);
    for (int q = 0; q < 16 && 16 * s + q < Pt; q++) {
      uint32_t *o = dst + (size_t)(16 * s + q) * STRIP;
      _mm512_storeu_si512(o, _mm512_castps_si512(T0[q]));
      _mm512_storeu_si512(o + 16, _mm512_castps_si512(T1[q]));
    }
  }
}
