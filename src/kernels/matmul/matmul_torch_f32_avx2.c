// AVX2+FMA body of gm_matmul_f32_torch (order and contract in matmul_torch_f32.c), for CPUs
// without AVX-512: the same chains as the scalar definition, 8 lanes at a time, so the same bits.
#include "gptmeg/kernels.h"

#include <immintrin.h>
#include <math.h>

#include "kernels/matmul/matmul_isa.h"

enum { ROWS = 6, VECS = 2 }; // six rows of A by 16 columns: 12 accumulators

static __m256i lane_mask(int n) { // lanes 0..n-1 active (n clamped to 0..8)
  n = n < 0 ? 0 : n > 8 ? 8 : n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// acc[r][v] = the chain over k in [k0, k1) of a_r[k] * B[k][8v ..] from zero, rows r < nr (a
// constant at each call); locals, copied out at the end (so the chains stay in registers).
static inline __attribute__((always_inline)) void block_chains(int nr, const float *const a[ROWS], const float *B, int ldb,
                                                              int k0, int k1, const __m256i m[VECS],
                                                              __m256 acc[ROWS][VECS]) {
  __m256 p[ROWS][VECS];
#pragma GCC unroll 6
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 2
    for (int v = 0; v < VECS; v++) p[r][v] = _mm256_setzero_ps();
  for (int k = k0; k < k1; k++) {
    const float *b = B + (size_t)k * ldb;
    __m256 bv[VECS];
#pragma GCC unroll 2
    for (int v = 0; v < VECS; v++) bv[v] = _mm256_maskload_ps(b + 8 * v, m[v]);
#pragma GCC unroll 6
    for (int r = 0; r < nr; r++) {
      __m256 x = _mm256_broadcast_ss(a[r] + k);
#pragma GCC unroll 2
      for (int v = 0; v < VECS; v++) p[r][v] = _mm256_fmadd_ps(x, bv[v], p[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 2
    for (int v = 0; v < VECS; v++) acc[r][v] = p[r][v];
}

static void block_chains_rows(int R, const float *const a[ROWS], const float *B, int ldb, int k0, int k1,
                              const __m256i m[VECS], __m256 acc[ROWS][VECS]) {
  switch (R) {
  case 1: block_chains(1, a, B, ldb, k0, k1, m, acc); break;
  case 2: block_chains(2, a, B, ldb, k0, k1, m, acc); break;
  case 3: block_chains(3, a, B, ldb, k0, k1, m, acc); break;
  case 4: block_chains(4, a, B, ldb, k0, k1, m, acc); break;
  case 5: block_chains(5, a, B, ldb, k0, k1, m, acc); break;
  default: block_chains(ROWS, a, B, ldb, k0, k1, m, acc); break;
  }
}

// C[:, 0..ncols) (ncols <= 64) from B [K, ncols] (row stride ldb, alpha already applied), 16
// columns at a time; each block's sums meet C in order (the first onto the bias, or stored).
void gm_f32_torch_strip_avx2(const float *A, int lda, const float *B, int ldb, int M, int ncols, int K,
                             const float *bias, float *C, int ldc, gm_f32_blocks blocks, float post) {
  __m256 vpost = _mm256_set1_ps(post);
  for (int j = 0; j < ncols; j += 8 * VECS) {
    __m256i m[VECS];
    __m256 vb[VECS];
    for (int v = 0; v < VECS; v++) {
      m[v] = lane_mask(ncols - j - 8 * v);
      vb[v] = bias ? _mm256_maskload_ps(bias + j + 8 * v, m[v]) : _mm256_setzero_ps();
    }
    for (int i = 0; i < M; i += ROWS) {
      int R = M - i < ROWS ? M - i : ROWS;
      const float *a[ROWS];
      for (int r = 0; r < ROWS; r++) a[r] = A + (size_t)(i + (r < R ? r : 0)) * lda;
      for (int k0 = 0, k1; k0 < K; k0 = k1) {
        k1 = gm_f32_torch_block_end_for(blocks, K, k0);
        __m256 acc[ROWS][VECS];
        block_chains_rows(R, a, B + j, ldb, k0, k1, m, acc);
        for (int r = 0; r < R; r++) {
          float *c = C + (size_t)(i + r) * ldc + j;
          for (int v = 0; v < VECS; v++) {
            __m256 s = acc[r][v];
            if (post != 1.0f) s = _mm256_mul_ps(vpost, s);
            if (k0 > 0) s = _mm256_add_ps(_mm256_maskload_ps(c + 8 * v, m[v]), s);
            else if (bias) s = _mm256_add_ps(vb[v], s);
            _mm256_maskstore_ps(c + 8 * v, m[v], s);
          }
        }
      }
    }
  }
}

// out[t] = lane q of in[q] at position t: an 8 x 8 transpose (interleave by 32 bits, by 64 bits,
// then swap 128-bit halves).
static inline __attribute__((always_inline)) void transpose8(const __m256 in[8], __m256 out[8]) {
  __m256 t[8], u[8];
#pragma GCC unroll 4
  for (int p = 0; p < 4; p++) {
    t[2 * p] = _mm256_unpacklo_ps(in[2 * p], in[2 * p + 1]);
    t[2 * p + 1] = _mm256_unpackhi_ps(in[2 * p], in[2 * p + 1]);
  }
#pragma GCC unroll 2
  for (int g = 0; g < 2; g++) { // u[4g + c]: in each 128-bit half h, rows 4g..4g+3 of column 4h + c
    u[4 * g] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; c++) {
    out[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
    out[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
  }
}

// C[i, 0..ncols) for one row a of A against B transposed ([ncols, K], row stride ldb), with no copy
// of B (decode's lm_head): 8 rows of B at a time, each 8 x 8 tile transposed in registers and run
// through the row's chains; the last ncols % 8 columns one by one (the same chains, scalar).
// MKL's AVX2 one-row kernel against B^T (gm_f32_torch_gemv8): one 8-lane FMA chain per column over K
// (the K % 8 tail masked into the first lanes), then its reduction.
void gm_f32_torch_gemv8_avx2(const float *a, const float *B, int ldb, const float *bias, float alpha, float *C, int j0,
                             int j1, int K) {
  const int k8 = K - K % 8;
  const __m256i mt = lane_mask(K % 8);
  for (int j = j0; j < j1; j++) {
    const float *b = B + (size_t)j * ldb;
    __m256 c = _mm256_setzero_ps();
    for (int k = 0; k < k8; k += 8) c = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), c);
    if (k8 < K) c = _mm256_fmadd_ps(_mm256_maskload_ps(a + k8, mt), _mm256_maskload_ps(b + k8, mt), c);
    float l[8];
    _mm256_storeu_ps(l, c);
    const float h0 = l[0] + l[1], h1 = l[2] + l[3], h2 = l[4] + l[5], h3 = l[6] + l[7];
    const float r = (h0 + h2) + (h1 + h3);
    C[j] = bias ? fmaf(alpha, r, bias[j]) : alpha * r;
  }
}

void gm_f32_torch_row_trans_avx2(const float *a, const float *B, int ldb, int ncols, int K, float alpha,
                                 const float *bias, float *C, gm_f32_blocks blocks, float post) {
  __m256 vpost = _mm256_set1_ps(post);
  __m256 va = _mm256_set1_ps(alpha);
  int j = 0;
  for (; j + 8 <= ncols; j += 8) {
    const float *b0 = B + (size_t)j * ldb;
    __m256 c = bias ? _mm256_loadu_ps(bias + j) : _mm256_setzero_ps();
    for (int k0 = 0, k1; k0 < K; k0 = k1) {
      k1 = gm_f32_torch_block_end_for(blocks, K, k0);
      __m256 acc = _mm256_setzero_ps();
      for (int k = k0; k < k1; k += 8) {
        int nk = k1 - k < 8 ? k1 - k : 8;
        __m256i mk = lane_mask(nk);
        __m256 r[8], T[8];
#pragma GCC unroll 8
        for (int q = 0; q < 8; q++) r[q] = _mm256_mul_ps(va, _mm256_maskload_ps(b0 + (size_t)q * ldb + k, mk));
        transpose8(r, T);
        for (int t = 0; t < nk; t++) acc = _mm256_fmadd_ps(_mm256_broadcast_ss(a + k + t), T[t], acc);
      }
      if (post != 1.0f) acc = _mm256_mul_ps(vpost, acc);
      c = k0 > 0 || bias ? _mm256_add_ps(c, acc) : acc;
    }
    _mm256_storeu_ps(C + j, c);
  }
  for (; j < ncols; j++) {
    const float *b = B + (size_t)j * ldb;
    float c = bias ? bias[j] : 0.0f;
    for (int k0 = 0, k1; k0 < K; k0 = k1) {
      k1 = gm_f32_torch_block_end_for(blocks, K, k0);
      float acc = 0.0f;
      for (int k = k0; k < k1; k++) acc = fmaf(a[k], alpha * b[k], acc);
      if (post != 1.0f) acc = post * acc;
      c = k0 == 0 && !bias ? acc : c + acc;
    }
    C[j] = c;
  }
}

// MKL's Intel dot kernel (matmul_isa.h), its 16 lanes as two vectors of 8 (lanes 0-7, 8-15): full
// 16-element steps in vectors, the K tail lane by lane on the stored lanes; then the four groups of
// four lanes added in order and (g0 + g1) + (g2 + g3), as gm_f32_torch_dot16.
void gm_f32_torch_dot16_avx2(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha, float *C,
                             int ldc, int M, int j0, int j1, int K) {
  int kv = K - K % 16;
  for (int j = j0; j < j1; j++) {
    const float *b = B + (size_t)j * ldb;
    for (int i = 0; i < M; i++) {
      const float *a = A + (size_t)i * lda;
      __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
      for (int k = 0; k < kv; k += 16) {
        lo = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), lo);
        hi = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 8), _mm256_loadu_ps(b + k + 8), hi);
      }
      float lane[16];
      _mm256_storeu_ps(lane, lo);
      _mm256_storeu_ps(lane + 8, hi);
      for (int k = kv; k < K; k++) lane[k - kv] = fmaf(a[k], b[k], lane[k - kv]);
      float g[4];
      for (int l = 0; l < 4; l++) g[l] = ((lane[l] + lane[4 + l]) + lane[8 + l]) + lane[12 + l];
      float d = (g[0] + g[1]) + (g[2] + g[3]);
      C[(size_t)i * ldc + j] = bias ? fmaf(alpha, d, bias[j]) : alpha * d;
    }
  }
}

// One row a of C[0..ncols) under MKL's Intel AVX2 pair kernels (avx2_output in matmul_torch_f32.c):
// B [K, ncols] (row stride ldb), 8 columns at a time; per K block the even and the odd k's chains
// (FMA, or R(a*b) then add when !fma), added, the odd block's last product onto the sum; then
// R(post * block) onto the bias (or stored), later blocks added.
void gm_f32_torch_pairs_avx2(const float *a, const float *B, int ldb, int ncols, int K, const float *bias, float *C,
                             float post, bool fma, gm_f32_blocks blocks) {
  __m256 vpost = _mm256_set1_ps(post);
  for (int j = 0; j < ncols; j += 8) {
    __m256i m = lane_mask(ncols - j);
    __m256 c = _mm256_setzero_ps();
    for (int k0 = 0, k1; k0 < K; k0 = k1) {
      k1 = gm_f32_torch_block_end_for(blocks, K, k0);
      __m256 e = _mm256_setzero_ps(), o = _mm256_setzero_ps();
      int k = k0;
      for (; k + 1 < k1; k += 2) {
        __m256 b0 = _mm256_maskload_ps(B + (size_t)k * ldb + j, m), b1 = _mm256_maskload_ps(B + (size_t)(k + 1) * ldb + j, m);
        __m256 x0 = _mm256_broadcast_ss(a + k), x1 = _mm256_broadcast_ss(a + k + 1);
        if (fma) {
          e = _mm256_fmadd_ps(x0, b0, e);
          o = _mm256_fmadd_ps(x1, b1, o);
        } else {
          e = _mm256_add_ps(e, _mm256_mul_ps(x0, b0));
          o = _mm256_add_ps(o, _mm256_mul_ps(x1, b1));
        }
      }
      __m256 acc = _mm256_add_ps(e, o);
      if (k < k1) {
        __m256 b0 = _mm256_maskload_ps(B + (size_t)k * ldb + j, m), x0 = _mm256_broadcast_ss(a + k);
        acc = fma ? _mm256_fmadd_ps(x0, b0, acc) : _mm256_add_ps(acc, _mm256_mul_ps(x0, b0));
      }
      acc = _mm256_mul_ps(vpost, acc);
      c = k0 > 0 ? _mm256_add_ps(c, acc) : bias ? _mm256_add_ps(_mm256_maskload_ps(bias + j, m), acc) : acc;
    }
    _mm256_maskstore_ps(C + j, m, c);
  }
}
