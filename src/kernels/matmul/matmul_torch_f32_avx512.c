// AVX-512 bodies of gm_matmul_f32_torch (order and contract in matmul_torch_f32.c): the same
// operations as its scalar definition, lane by lane, so the same bits.
#include "gptmeg/kernels.h"

#include <immintrin.h>
#include <math.h>

#include "kernels/matmul/matmul_isa.h"
#include "kernels/matmul/transpose16_avx512.h"

enum { ROWS = 6, VECS = 4, STRIP = 64 };

// acc[r][v] = the chain over k in [k0, k1) of a_r[k] * B[k][16v ..] from zero, for rows r < nr;
// nr is a constant at each call (one unrolled loop per row count). The chains run in locals and
// are copied out at the end: __m512 may alias anything, so chains kept in acc would be stored and
// reloaded around every load of B. full (a constant at each call): all 64 columns are there, and B
// is read with plain loads: on Intel's cores a masked 512-bit load is a load plus a blend on port
// 0 or 5, the ports of the two FMA units (4 blends per 24 FMAs: the kernel ran at 174 GF/s masked,
// 227 unmasked, on L1-resident data; the same chains, so the same bits). The k loop is unrolled by
// four (one loop test per 96 FMAs; 208 -> 222 GF/s with 384-deep blocks, whose B strip, 96 KB, is
// read from L2; software prefetch of B rows 8 or 16 ahead gained nothing). Both apply on Zen 4 too
// (the strip driver's kernel), where masked loads cost nothing extra: not measured there.
static inline __attribute__((always_inline)) void block_chains(int nr, bool full, const float *const a[ROWS],
                                                              const float *B, int ldb, int k0, int k1,
                                                              const __mmask16 m[VECS], __m512 acc[ROWS][VECS]) {
  __m512 p[ROWS][VECS];
#pragma GCC unroll 6
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 4
    for (int v = 0; v < VECS; v++) p[r][v] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int k = k0; k < k1; k++) {
    const float *b = B + (size_t)k * ldb;
    __m512 bv[VECS];
#pragma GCC unroll 4
    for (int v = 0; v < VECS; v++) bv[v] = full ? _mm512_loadu_ps(b + 16 * v) : _mm512_maskz_loadu_ps(m[v], b + 16 * v);
#pragma GCC unroll 6
    for (int r = 0; r < nr; r++) {
      __m512 x = _mm512_set1_ps(a[r][k]);
#pragma GCC unroll 4
      for (int v = 0; v < VECS; v++) p[r][v] = _mm512_fmadd_ps(x, bv[v], p[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 4
    for (int v = 0; v < VECS; v++) acc[r][v] = p[r][v];
}

static void block_chains_rows(int R, bool full, const float *const a[ROWS], const float *B, int ldb, int k0, int k1,
                              const __mmask16 m[VECS], __m512 acc[ROWS][VECS]) {
  if (full) switch (R) {
    case 1: block_chains(1, true, a, B, ldb, k0, k1, m, acc); break;
    case 2: block_chains(2, true, a, B, ldb, k0, k1, m, acc); break;
    case 3: block_chains(3, true, a, B, ldb, k0, k1, m, acc); break;
    case 4: block_chains(4, true, a, B, ldb, k0, k1, m, acc); break;
    case 5: block_chains(5, true, a, B, ldb, k0, k1, m, acc); break;
    default: block_chains(ROWS, true, a, B, ldb, k0, k1, m, acc); break;
    }
  else switch (R) {
    case 1: block_chains(1, false, a, B, ldb, k0, k1, m, acc); break;
    case 2: block_chains(2, false, a, B, ldb, k0, k1, m, acc); break;
    case 3: block_chains(3, false, a, B, ldb, k0, k1, m, acc); break;
    case 4: block_chains(4, false, a, B, ldb, k0, k1, m, acc); break;
    case 5: block_chains(5, false, a, B, ldb, k0, k1, m, acc); break;
    default: block_chains(ROWS, false, a, B, ldb, k0, k1, m, acc); break;
    }
}

// The lane masks of ncols (<= 64) columns as four vectors, and the bias's vectors (zero without one).
static inline void strip_masks(int ncols, const float *bias, __mmask16 m[VECS], __m512 vb[VECS]) {
  for (int v = 0; v < VECS; v++) {
    int n = ncols - 16 * v;
    m[v] = n >= 16 ? (__mmask16)0xffff : n > 0 ? (__mmask16)((1u << n) - 1u) : 0;
  }
  for (int v = 0; v < VECS; v++) vb[v] = bias ? _mm512_maskz_loadu_ps(m[v], bias + 16 * v) : _mm512_setzero_ps();
}

// One block's sums of R rows onto C (row stride ldc): post times each, then added to what C holds
// (onto: a later block), else onto the bias (when there is one) or stored alone.
static inline void rows_onto_c(int R, __m512 acc[ROWS][VECS], float *C, int ldc, const __mmask16 m[VECS],
                               const __m512 vb[VECS], bool bias, bool onto, float post) {
  const __m512 vpost = _mm512_set1_ps(post);
  for (int r = 0; r < R; r++) {
    float *c = C + (size_t)r * ldc;
    for (int v = 0; v < VECS; v++) {
      if (!m[v]) continue;
      __m512 s = acc[r][v];
      if (post != 1.0f) s = _mm512_mul_ps(vpost, s);
      if (onto) s = _mm512_add_ps(_mm512_maskz_loadu_ps(m[v], c + 16 * v), s);
      else if (bias) s = _mm512_add_ps(vb[v], s);
      _mm512_mask_storeu_ps(c + 16 * v, m[v], s);
    }
  }
}

// C[:, strip] for ncols (<= 64) columns of B [K, ncols] (row stride ldb, alpha already applied):
// six rows of A by four vectors at a time (24 accumulators; 4 loads of B and 6 broadcasts of A per
// 24 FMAs). Each block's sums meet C in order: the first is stored (onto the bias when there is
// one), later ones are added to what C holds.
void gm_f32_torch_strip_avx512(const float *A, int lda, const float *B, int ldb, int M, int ncols, int K,
                               const float *bias, float *C, int ldc, gm_f32_blocks blocks, float post) {
  __mmask16 m[VECS];
  __m512 vb[VECS];
  strip_masks(ncols, bias, m, vb);
  for (int i = 0; i < M; i += ROWS) {
    int R = M - i < ROWS ? M - i : ROWS;
    const float *a[ROWS];
    for (int r = 0; r < ROWS; r++) a[r] = A + (size_t)(i + (r < R ? r : 0)) * lda;
    for (int k0 = 0, k1; k0 < K; k0 = k1) {
      k1 = gm_f32_torch_block_end_for(blocks, K, k0);
      __m512 acc[ROWS][VECS];
      block_chains_rows(R, ncols == STRIP, a, B, ldb, k0, k1, m, acc);
      rows_onto_c(R, acc, C + (size_t)i * ldc, ldc, m, vb, bias != NULL, k0 > 0, post);
    }
  }
}

// One K block [k0, k0 + kc) of C[0..M, 0..ncols) (ncols <= 64) from a packed strip Bs [kc, 64]
// (alpha applied, columns past ncols zero, so every load of B is a plain one) and A already
// offset to column k0: six rows at a time, each output's chain over the block from zero (the
// strip kernel's chains), then post times it, then onto C (first: onto the bias, or stored alone).
void gm_f32_torch_panel_avx512(const float *A, int lda, const float *Bs, int M, int ncols, int kc, bool first,
                               const float *bias, float *C, int ldc, float post) {
  __mmask16 m[VECS];
  __m512 vb[VECS];
  strip_masks(ncols, bias, m, vb);
  for (int i = 0; i < M; i += ROWS) {
    int R = M - i < ROWS ? M - i : ROWS;
    const float *a[ROWS];
    for (int r = 0; r < ROWS; r++) a[r] = A + (size_t)(i + (r < R ? r : 0)) * lda;
    __m512 acc[ROWS][VECS];
    block_chains_rows(R, true, a, Bs, STRIP, 0, kc, m, acc);
    rows_onto_c(R, acc, C + (size_t)i * ldc, ldc, m, vb, bias != NULL, !first, post);
  }
}

// Bs = ns strips, each [kc, 64] (strip s at Bs + s * kc * 64), of alpha times B [kc, ncols] as
// stored (row stride ldb): row by row, so each row of B is read once, in order; columns past ncols
// zero. scale: alpha != 1 (without it B's bits are copied as they are).
void gm_f32_torch_pack_rows_avx512(const float *B, int ldb, int ncols, int kc, float alpha, float *Bs) {
  const __m512 va = _mm512_set1_ps(alpha);
  const bool scale = alpha != 1.0f;
  const int ns = (ncols + STRIP - 1) / STRIP;
  for (int k = 0; k < kc; k++) {
    const float *b = B + (size_t)k * ldb;
    if (k + 4 < kc) // four rows ahead (rows of a wide B are pages apart): 12 -> 16 GB/s from memory
      for (int j = 0; j < ncols; j += 16) _mm_prefetch((const char *)(b + 4 * (size_t)ldb + j), _MM_HINT_T0);
    for (int s = 0; s < ns; s++) {
      float *d = Bs + ((size_t)s * kc + k) * STRIP;
      int n = ncols - s * STRIP;
      if (n >= STRIP) {
#pragma GCC unroll 4
        for (int v = 0; v < VECS; v++) {
          __m512 x = _mm512_loadu_ps(b + s * STRIP + 16 * v);
          _mm512_storeu_ps(d + 16 * v, scale ? _mm512_mul_ps(va, x) : x);
        }
      } else {
        for (int v = 0; v < VECS; v++) {
          int w = n - 16 * v;
          __mmask16 mv = w >= 16 ? (__mmask16)0xffff : w > 0 ? (__mmask16)((1u << w) - 1u) : 0;
          __m512 x = _mm512_maskz_loadu_ps(mv, b + s * STRIP + 16 * v);
          _mm512_storeu_ps(d + 16 * v, scale ? _mm512_mul_ps(va, x) : x);
        }
      }
    }
  }
}

// Bs [K, 64] = alpha times the first ncols (<= 64) rows of B [.., K] (row stride ldb), transposed;
// columns of Bs past ncols are zero.
static inline __attribute__((always_inline)) void pack_trans(const float *B, int ldb, int ncols, int K, float alpha,
                                                            float *Bs, bool prefetch) {
  __m512 va = _mm512_set1_ps(alpha);
  for (int j = 0; j < STRIP; j += 16)
    for (int k = 0; k < K; k += 16) {
      int nk = K - k < 16 ? K - k : 16;
      __mmask16 mk = (__mmask16)(nk == 16 ? 0xffffu : (1u << nk) - 1u);
      __m512 r[16], T[16];
#pragma GCC unroll 16
      for (int q = 0; q < 16; q++) {
        if (prefetch && j + q < ncols && k + 64 < K)
          _mm_prefetch((const char *)(B + (size_t)(j + q) * ldb + k + 64), _MM_HINT_T0);
        r[q] = j + q < ncols ? _mm512_mul_ps(va, _mm512_maskz_loadu_ps(mk, B + (size_t)(j + q) * ldb + k))
                             : _mm512_setzero_ps();
      }
      gm_transpose16_avx512(r, T);
      for (int t = 0; t < nk; t++) _mm512_storeu_ps(Bs + (size_t)(k + t) * STRIP + j, T[t]);
    }
}

void gm_f32_torch_pack_trans_avx512(const float *B, int ldb, int ncols, int K, float alpha, float *Bs) {
  pack_trans(B, ldb, ncols, K, alpha, Bs, false);
}

// The same, each row of B prefetched 64 floats (four tiles) ahead: the blocked driver's packing,
// whose rows of B come from L3 or memory (12 -> 13 GB/s packing K 2304 x N 768 from memory).
void gm_f32_torch_pack_trans_pf_avx512(const float *B, int ldb, int ncols, int K, float alpha, float *Bs) {
  pack_trans(B, ldb, ncols, K, alpha, Bs, true);
}

// At [cols, rows] = X^T, X [rows, cols] with row stride ldx: 16 x 16 tiles loaded (masked at the
// edges), transposed in registers, stored as rows of At. The scalar 32 x 32 tile copy it replaces
// wrote At a float at a time down columns 1 KB apart: 4.2 ms for a 256 x 768 A^T (the dW of
// c_attn), as long as the product's 5.5 ms.
void gm_f32_transpose_avx512(const float *X, int ldx, int rows, int cols, float *At) {
  for (int c0 = 0; c0 < cols; c0 += 16) {
    int nc = cols - c0 < 16 ? cols - c0 : 16;
    __mmask16 mc = (__mmask16)(nc == 16 ? 0xffffu : (1u << nc) - 1u);
    for (int r0 = 0; r0 < rows; r0 += 16) {
      int nr = rows - r0 < 16 ? rows - r0 : 16;
      __mmask16 mr = (__mmask16)(nr == 16 ? 0xffffu : (1u << nr) - 1u);
      __m512 in[16], T[16];
#pragma GCC unroll 16
      for (int q = 0; q < 16; q++)
        in[q] = q < nr ? _mm512_maskz_loadu_ps(mc, X + (size_t)(r0 + q) * ldx + c0) : _mm512_setzero_ps();
      gm_transpose16_avx512(in, T);
      for (int t = 0; t < nc; t++) _mm512_mask_storeu_ps(At + (size_t)(c0 + t) * rows + r0, mr, T[t]);
    }
  }
}

// acc[r] += the chain over t < nk of a_r[k + t] * T[t], rows r < nr (a constant at each call).
static inline __attribute__((always_inline)) void tile_chains(int nr, const float *const a[4], int k, int nk,
                                                             const __m512 T[16], __m512 acc[4]) {
  if (nk == 16) {
#pragma GCC unroll 16
    for (int t = 0; t < 16; t++)
#pragma GCC unroll 4
      for (int r = 0; r < nr; r++) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r][k + t]), T[t], acc[r]);
  } else {
    for (int t = 0; t < nk; t++)
#pragma GCC unroll 4
      for (int r = 0; r < nr; r++) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r][k + t]), T[t], acc[r]);
  }
}

// c[r] (16 outputs: rows b0 .. b0 + 15 of B, row stride ldb) for rows r < nr of A, B transposed:
// each 16 x 16 tile of B is loaded (times alpha when scale), transposed in registers and run
// through the chains. nr and scale are constants at each call.
static inline __attribute__((always_inline)) void group16(int nr, const float *const a[4], const float *b0, size_t ldb,
                                                         int K, bool scale, __m512 va, const float *bias, __m512 c[4],
                                                         gm_f32_blocks blocks, float post) {
  __m512 vpost = _mm512_set1_ps(post);
  for (int k0 = 0, k1; k0 < K; k0 = k1) {
    k1 = gm_f32_torch_block_end_for(blocks, K, k0);
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int k = k0; k < k1; k += 16) {
      int nk = k1 - k < 16 ? k1 - k : 16;
      __mmask16 mk = (__mmask16)(nk == 16 ? 0xffffu : (1u << nk) - 1u);
      __m512 r[16], T[16];
#pragma GCC unroll 16
      for (int q = 0; q < 16; q++) {
        r[q] = _mm512_maskz_loadu_ps(mk, b0 + q * ldb + k);
        if (scale) r[q] = _mm512_mul_ps(va, r[q]);
      }
      gm_transpose16_avx512(r, T);
      tile_chains(nr, a, k, nk, T, acc);
    }
#pragma GCC unroll 4
    for (int r = 0; r < nr; r++) {
      if (post != 1.0f) acc[r] = _mm512_mul_ps(vpost, acc[r]);
      c[r] = k0 > 0 ? _mm512_add_ps(c[r], acc[r]) : bias ? _mm512_add_ps(_mm512_loadu_ps(bias), acc[r]) : acc[r];
    }
  }
}

// C[:, 0..ncols) for a few rows of A (decode, short prompts) against B transposed ([ncols, K],
// row stride ldb), with no copy of B: 16 rows of B at a time through group16 for up to four rows
// of A; the last ncols % 16 columns one by one (the same chains, scalar).
void gm_f32_torch_rows_trans_avx512(const float *A, int lda, const float *B, int ldb, int M, int ncols, int K, float alpha,
                                    const float *bias, float *C, int ldc, gm_f32_blocks blocks, float post) {
  __m512 va = _mm512_set1_ps(alpha);
  bool sc = alpha != 1.0f;
  int j = 0;
  for (; j + 16 <= ncols; j += 16) {
    const float *b0 = B + (size_t)j * ldb;
    const float *bj = bias ? bias + j : NULL;
    for (int i = 0; i < M; i += 4) {
      int R = M - i < 4 ? M - i : 4;
      const float *a[4];
      for (int r = 0; r < 4; r++) a[r] = A + (size_t)(i + (r < R ? r : 0)) * lda;
      __m512 c[4];
      if (R == 1 && !sc) group16(1, a, b0, (size_t)ldb, K, false, va, bj, c, blocks, post); // decode's lm_head
      else if (R == 1) group16(1, a, b0, (size_t)ldb, K, true, va, bj, c, blocks, post);
      else if (R == 2) group16(2, a, b0, (size_t)ldb, K, sc, va, bj, c, blocks, post);
      else if (R == 3) group16(3, a, b0, (size_t)ldb, K, sc, va, bj, c, blocks, post);
      else group16(4, a, b0, (size_t)ldb, K, sc, va, bj, c, blocks, post);
      for (int r = 0; r < R; r++) _mm512_storeu_ps(C + (size_t)(i + r) * ldc + j, c[r]);
    }
  }
  for (; j < ncols; j++)
    for (int i = 0; i < M; i++) {
      const float *a = A + (size_t)i * lda, *b = B + (size_t)j * ldb;
      float c = bias ? bias[j] : 0.0f;
      for (int k0 = 0, k1; k0 < K; k0 = k1) {
        k1 = gm_f32_torch_block_end_for(blocks, K, k0);
        float acc = 0.0f;
        for (int k = k0; k < k1; k++) acc = fmaf(a[k], alpha * b[k], acc);
        if (post != 1.0f) acc = post * acc;
        c = k0 == 0 && !bias ? acc : c + acc;
      }
      C[(size_t)i * ldc + j] = c;
    }
}

// One row a [K] against ncols (<= 1024) columns of B as stored (decode). B streams row after row
// (four rows at a time, each a whole segment of ncols), and every column's block chain waits in
// L1, loaded and stored once per four rows: p = fma(a[l+3], B[l+3], ... fma(a[l], B[l], p)), the
// same chain as one row at a time. Then C = (bias +) the first block's chains, + each later
// block's. The chains take a[l] * R(alpha * B[l][j]) (scale: alpha != 1, a constant at each call).
static inline __attribute__((always_inline)) __m512 load_b(const float *b, __mmask16 m, bool scale, __m512 va) {
  __m512 v = _mm512_maskz_loadu_ps(m, b);
  return scale ? _mm512_mul_ps(va, v) : v;
}

static inline __attribute__((always_inline)) void row_block(const float *a, const float *B, size_t ldb, int k0, int k1,
                                                           int nv, __mmask16 last, bool scale, __m512 va, __m512 *p) {
  for (int v = 0; v < nv; v++) p[v] = _mm512_setzero_ps();
  int l = k0;
  for (; l + 4 <= k1; l += 4) {
    const float *b0 = B + (size_t)l * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
    __m512 x0 = _mm512_set1_ps(a[l]), x1 = _mm512_set1_ps(a[l + 1]), x2 = _mm512_set1_ps(a[l + 2]),
           x3 = _mm512_set1_ps(a[l + 3]);
    for (int v = 0; v < nv; v++) {
      __mmask16 m = v + 1 < nv ? (__mmask16)0xffff : last;
      __m512 acc = _mm512_fmadd_ps(x0, load_b(b0 + 16 * v, m, scale, va), p[v]);
      acc = _mm512_fmadd_ps(x1, load_b(b1 + 16 * v, m, scale, va), acc);
      acc = _mm512_fmadd_ps(x2, load_b(b2 + 16 * v, m, scale, va), acc);
      p[v] = _mm512_fmadd_ps(x3, load_b(b3 + 16 * v, m, scale, va), acc);
    }
  }
  for (; l < k1; l++) {
    const float *b0 = B + (size_t)l * ldb;
    __m512 x0 = _mm512_set1_ps(a[l]);
    for (int v = 0; v < nv; v++)
      p[v] = _mm512_fmadd_ps(x0, load_b(b0 + 16 * v, v + 1 < nv ? (__mmask16)0xffff : last, scale, va), p[v]);
  }
}

void gm_f32_torch_row_avx512(const float *a, const float *B, int ldb, int K, int ncols, float alpha, const float *bias,
                             float *C, gm_f32_blocks blocks, float post) {
  __m512 vpost = _mm512_set1_ps(post);
  enum { NV = 1024 / 16 };
  __m512 c[NV], p[NV];
  int nv = (ncols + 15) / 16;
  __mmask16 last = (__mmask16)(ncols % 16 ? (1u << (ncols % 16)) - 1u : 0xffffu);
  __m512 va = _mm512_set1_ps(alpha);
  for (int k0 = 0, k1; k0 < K; k0 = k1) {
    k1 = gm_f32_torch_block_end_for(blocks, K, k0);
    if (alpha == 1.0f) row_block(a, B, (size_t)ldb, k0, k1, nv, last, false, va, p);
    else row_block(a, B, (size_t)ldb, k0, k1, nv, last, true, va, p);
    for (int v = 0; v < nv; v++) {
      if (post != 1.0f) p[v] = _mm512_mul_ps(vpost, p[v]);
      if (k0 > 0) c[v] = _mm512_add_ps(c[v], p[v]);
      else if (bias) c[v] = _mm512_add_ps(_mm512_maskz_loadu_ps(v + 1 < nv ? 0xffff : last, bias + 16 * v), p[v]);
      else c[v] = p[v];
    }
  }
  for (int v = 0; v < nv; v++) _mm512_mask_storeu_ps(C + 16 * v, v + 1 < nv ? 0xffff : last, c[v]);
}

// MKL's one-row kernels with B as stored (gm_f32_torch_row8's order, lane by lane): ncols (<= 1024)
// columns; the first n8 (whole groups of 16) take eight rows of B per step, the rest (the Intel
// kernel's N % 16 leftover columns: callers cut whole groups; every column of the AVX2 kernel) run
// FMA chains, masked at the end. s[v] waits in L1 between steps.
void gm_f32_torch_row8_avx512(const float *a, const float *B, int ldb, int K, int ncols, int n8, float alpha,
                              const float *bias, float *C) {
  enum { NV = 1024 / 16 };
  __m512 s[NV];
  const int n16 = n8 / 16, tail = ncols % 16, nv = (ncols + 15) / 16; // vectors [n16, nv): FMA chains
  const __mmask16 mt = (__mmask16)(tail ? (1u << tail) - 1u : 0xffffu);
  const size_t ld = (size_t)ldb;
  for (int v = 0; v < nv; v++)
    s[v] = bias ? _mm512_maskz_loadu_ps(v + 1 < nv ? (__mmask16)0xffff : mt, bias + 16 * v) : _mm512_setzero_ps();
  int k = 0;
  for (; k + 8 <= K; k += 8) {
    const float *b = B + (size_t)k * ld;
    __m512 x[8];
    for (int i = 0; i < 8; i++) x[i] = _mm512_set1_ps(alpha * a[k + i]);
    for (int v = 0; v < n16; v++) {
      const float *bv = b + 16 * v;
      __m512 acc = _mm512_fmadd_ps(x[6], _mm512_loadu_ps(bv + 6 * ld), s[v]);
      acc = _mm512_fmadd_ps(x[4], _mm512_loadu_ps(bv + 4 * ld), acc);
      acc = _mm512_add_ps(acc, _mm512_fmadd_ps(x[5], _mm512_loadu_ps(bv + 5 * ld),
                                               _mm512_mul_ps(x[7], _mm512_loadu_ps(bv + 7 * ld))));
      __m512 e = _mm512_fmadd_ps(x[0], _mm512_loadu_ps(bv), _mm512_mul_ps(x[2], _mm512_loadu_ps(bv + 2 * ld)));
      __m512 o = _mm512_fmadd_ps(x[1], _mm512_loadu_ps(bv + ld), _mm512_mul_ps(x[3], _mm512_loadu_ps(bv + 3 * ld)));
      s[v] = _mm512_add_ps(acc, _mm512_add_ps(e, o));
    }
    for (int v = n16; v < nv; v++) // the chain columns, k0 .. k0 + 7 in order
      for (int i = 0; i < 8; i++)
        s[v] = _mm512_fmadd_ps(x[i], _mm512_maskz_loadu_ps(v + 1 < nv ? (__mmask16)0xffff : mt, b + i * ld + 16 * v), s[v]);
  }
  for (; k < K; k++) {
    __m512 x = _mm512_set1_ps(alpha * a[k]);
    for (int v = 0; v < nv; v++)
      s[v] = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(v + 1 < nv ? (__mmask16)0xffff : mt, B + (size_t)k * ld + 16 * v),
                             s[v]);
  }
  for (int v = 0; v < nv; v++) _mm512_mask_storeu_ps(C + 16 * v, v + 1 < nv ? (__mmask16)0xffff : mt, s[v]);
}

// gm_f32_torch_dot16's reduction of 16 lanes: the four 128-bit groups added in order, then
// (g0 + g1) + (g2 + g3).
static inline float reduce16(__m512 v) {
  __m128 g = _mm_add_ps(_mm_add_ps(_mm_add_ps(_mm512_castps512_ps128(v), _mm512_extractf32x4_ps(v, 1)),
                                   _mm512_extractf32x4_ps(v, 2)),
                        _mm512_extractf32x4_ps(v, 3));
  __m128 h = _mm_hadd_ps(g, g); // g0 + g1, g2 + g3
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

// MKL's Intel dot kernel (matmul_isa.h): each row of B^T against up to four rows of A at a time,
// 16 lanes per chain; the K tail's lanes past K keep their chains (masked FMA).
void gm_f32_torch_dot16_avx512(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha, float *C,
                               int ldc, int M, int j0, int j1, int K) {
  int tail = K % 16, kv = K - tail;
  __mmask16 mt = (__mmask16)((1u << tail) - 1u);
  for (int j = j0; j < j1; j++) {
    const float *b = B + (size_t)j * ldb;
    for (int i = 0; i < M; i += 4) {
      int R = M - i < 4 ? M - i : 4;
      const float *a[4];
      for (int r = 0; r < 4; r++) a[r] = A + (size_t)(i + (r < R ? r : 0)) * lda;
      __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
      for (int k = 0; k < kv; k += 16) {
        __m512 bv = _mm512_loadu_ps(b + k);
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) acc[r] = _mm512_fmadd_ps(_mm512_loadu_ps(a[r] + k), bv, acc[r]);
      }
      if (tail) {
        __m512 bv = _mm512_maskz_loadu_ps(mt, b + kv);
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) acc[r] = _mm512_mask3_fmadd_ps(_mm512_maskz_loadu_ps(mt, a[r] + kv), bv, acc[r], mt);
      }
      for (int r = 0; r < R; r++) {
        float d = reduce16(acc[r]);
        C[(size_t)(i + r) * ldc + j] = bias ? fmaf(alpha, d, bias[j]) : alpha * d;
      }
    }
  }
}

// v[0] after v[l] += v[l + 8], then + 4, + 2, + 1 (gm_f32_torch_gemv16's halving of 16 lanes).
static inline __m128 halve16(__m512 v) {
  __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
  __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
  return _mm_add_ss(h2, _mm_movehdup_ps(h2));
}

// MKL's Intel one-row kernel against B^T (matmul_isa.h): the columns in whole groups of four in
// vectors (lane 0 of the 16 starts as R(a0*b0); the 8-lane stage and the rest lane by lane, as the
// definition), the N % 4 leftover columns through the definition itself.
void gm_f32_torch_gemv_avx512(const float *a, const float *B, int ldb, const float *bias, float alpha, float *C, int N,
                              int j0, int j1, int K) {
  int n4 = N - N % 4;
  for (int j = j0; j < j1; j++) {
    const float *b = B + (size_t)j * ldb;
    float r;
    if (j < n4) {
      __m512 v = _mm512_setzero_ps();
      v = _mm512_mask_mov_ps(v, 1, _mm512_set1_ps(a[0] * b[0]));
      int k = 1;
      for (; K - k >= 16; k += 16) v = _mm512_fmadd_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(b + k), v);
      float e[8] = {_mm_cvtss_f32(halve16(v))};
      for (int l = 0; l < 8 && k + l < K; l++) e[l] = fmaf(a[k + l], b[k + l], e[l]);
      for (int l = 8; k + l < K; l++) e[l - 8] = e[l - 8] + a[k + l] * b[k + l];
      for (int h = 4; h >= 1; h /= 2)
        for (int l = 0; l < h; l++) e[l] = e[l] + e[l + h];
      r = e[0];
    } else r = gm_f32_torch_gemv16(a, b, K, j == n4 + 1 ? GM_F32_GEMV_ONE : GM_F32_GEMV_TWO);
    C[j] = bias ? fmaf(alpha, r, bias[j]) : alpha * r;
  }
}
