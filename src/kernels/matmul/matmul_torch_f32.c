// f32 matmul in PyTorch 2.15's CPU order on AVX-512 x86 (the MKL sgemm torch calls for addmm,
// linear, mm, bmm and matmul when A has 4 or more rows; found with tools/ref/probe_gemm_order.py
// and emulations, docs/numerics.md). K is cut into blocks (gm_f32_torch_block_end); within a block
// each output is one FMA chain over k in order, starting from zero, of a[k] * R(alpha * b[k]) (MKL
// scales B as it packs it); the blocks' sums are added in order onto the bias (or onto the first
// block when there is none). An output's bits depend only on its row of A, its column of op(B), K,
// alpha and the bias, so any thread count, work split or choice of rows gives the same bits.
// That is MKL's AMD kernel (zen4 target). Under MKL's Intel AVX-512 kernel (gm_torch_target_active()
// with mkl GM_MKL_SGEMM_INTEL_AVX512) the K blocks are of 384 (gm_f32_torch_block_end_for); on its
// small-matrix path B is not scaled and each block's sum is multiplied by alpha before it is added,
// on its packed path (big products) alpha is folded into B as here (gptmeg/kernels.h). The
// same kernels run both: they take the block schedule and that per-block factor (post).
// Speed only, never bits: on AVX-512 the packed products run the strip driver (B's 64-column strip
// copied whole, every row of A against it; shaped for Zen 4's one 512-bit FMA pipe, where it beats
// torch, and left as it was for AMD CPUs) or, on Intel CPUs, the blocked driver (blocked_path:
// GotoBLAS's loop order, sized for Sapphire Rapids' two FMA pipes and 2 MB L2; not measured on
// Zen 4). GPTMEG_F32_GEMM=strip|blocked overrides the vendor's choice.
#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/matmul/matmul_isa.h"

enum { STRIP = 64 };       // columns per work item (the AVX-512 strip kernel's width)
enum { ROW_BLOCK = 1024 }; // columns per work item of the one-row kernel (B as stored)
enum { FEW_ROWS = 8 };     // below this many rows, B transposed is read in place (no strip copy)

// K < 192: one block; even K below 384: two halves; odd K below 384: two halves of K - 1, then the
// last product alone; from 384 on: blocks of 192, then the rest (one block, odd or even).
int gm_f32_torch_block_end(int K, int k0) {
  if (K <= 192) return K;
  if (K < 384) {
    int even = K & ~1;
    return k0 < even / 2 ? even / 2 : k0 < even ? even : K;
  }
  return K - k0 > 192 ? k0 + 192 : K;
}

int gm_f32_torch_block_end_for(gm_f32_blocks blocks, int K, int k0) {
  if (blocks == GM_F32_BLOCKS_ZEN4) return gm_f32_torch_block_end(K, k0);
  int rest = K - k0;
  if (blocks == GM_F32_BLOCKS_INTEL_DOT16 || blocks == GM_F32_BLOCKS_INTEL_ROW8 || blocks == GM_F32_BLOCKS_AVX2_ROW ||
      blocks == GM_F32_BLOCKS_AVX2_GEMV8) // no K blocks
    return K;
  if (blocks == GM_F32_BLOCKS_ONEDNN_F16) return rest <= (K <= 1024 ? 512 : 1024) ? K : k0 + (K <= 1024 ? 512 : 1024);
  if (blocks == GM_F32_BLOCKS_ONEDNN_F16_TA) return rest <= 512 ? K : k0 + 512;
  // MKL's packed path (INTEL_384) cuts a K below 768 in two halves as well (300 x 477 x 500 and
  // 100 x 477 x 500 B^T, one thread: 239 + 238); from 768 on in blocks of 384 (SPLIT's blocks)
  if ((blocks == GM_F32_BLOCKS_INTEL_SPLIT || blocks == GM_F32_BLOCKS_INTEL_384) && K < 768)
    return K <= 384 || k0 > 0 ? K : (K + 1) / 2;
  if (blocks == GM_F32_BLOCKS_AVX2_256) return rest <= 256 ? K : rest < 512 ? k0 + (rest + 1) / 2 : k0 + 256;
  if (blocks == GM_F32_BLOCKS_AVX2_96) return rest <= 96 ? K : rest < 192 ? k0 + (rest + 1) / 2 : k0 + 96;
  if (blocks == GM_F32_BLOCKS_AVX2_BIG && K < 384) return gm_f32_torch_block_end_for(GM_F32_BLOCKS_AVX2_256, K, k0);
  if (blocks == GM_F32_BLOCKS_AVX2_BIG) return rest <= 192 ? K : k0 + 192;
  if (rest <= 384) return K;
  if (blocks == GM_F32_BLOCKS_INTEL_HALVES && rest < 768) return k0 + (rest + 1) / 2;
  return k0 + 384;
}

gm_f32_blocks gm_f32_torch_blocks(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b) {
  if (mkl == GM_MKL_SGEMM_INTEL_AVX2 && M == 1) // its one-row kernels
    return trans_b ? GM_F32_BLOCKS_AVX2_GEMV8 : GM_F32_BLOCKS_AVX2_ROW;
  if (mkl == GM_MKL_SGEMM_INTEL_AVX2) // its kernels for big products, else its 4..6-row chains
    return (trans_b ? M >= 56 && N >= 56 : M >= 72 && N >= 72) ? GM_F32_BLOCKS_AVX2_BIG
                                                                          : GM_F32_BLOCKS_AVX2_256;
  if (mkl != GM_MKL_SGEMM_INTEL_AVX512) return GM_F32_BLOCKS_ZEN4; // the AMD order
  if (trans_b && M >= 2 && M <= 15 && N >= 2 && K >= 24 * M) return GM_F32_BLOCKS_INTEL_DOT16;
  if (trans_b && M == 1 && K >= 1) return GM_F32_BLOCKS_INTEL_GEMV; // alpha = 1 only (order_for)
  if (!trans_b && M == 1) return GM_F32_BLOCKS_INTEL_ROW8;
  bool packed = trans_b ? (M >= 16 && N >= 192) || (K <= 64 && N >= 64) : M >= 192 && N >= 192;
  return packed ? GM_F32_BLOCKS_INTEL_384 : GM_F32_BLOCKS_INTEL_HALVES;
}

// MKL's Intel dot kernel: 16 lanes, lane l the FMA chain over k = l, l + 16, ... from zero; the
// four groups of four lanes added in order, lane by lane; then (g0 + g1) + (g2 + g3).
float gm_f32_torch_dot16(const float *a, const float *b, int K) {
  float lane[16] = {0};
  for (int k = 0; k < K; k++) lane[k % 16] = fmaf(a[k], b[k], lane[k % 16]);
  float g[4];
  for (int l = 0; l < 4; l++) g[l] = ((lane[l] + lane[4 + l]) + lane[8 + l]) + lane[12 + l];
  return (g[0] + g[1]) + (g[2] + g[3]);
}

// v[0] after v[l] += v[l + n/2] for l < n/2, halving n down to 1 (n = 16 or 8).
static float halve(float *v, int n) {
  for (int h = n / 2; h >= 1; h /= 2)
    for (int l = 0; l < h; l++) v[l] = v[l] + v[l + h];
  return v[0];
}

// MKL's Intel kernel for a chunk of 1..3 columns against B^T that its threads leave over (found with
// FPRev-style probes, +-2^40 at two k against ones, and live torch on 3 and 16 threads; where it
// runs: gm_f32_torch_narrow): 16 lanes,
// lane l the FMA chain over k = l (mod 16) from zero; for an even row of the product (two) two sets
// of 16 lanes over k = 32 s + l and 32 s + 16 + l while 32 or more products remain, added lane by
// lane, then the rest onto the sum's lanes; for an odd row one set through K; then the 16 lanes
// halved (l + 8, + 4, + 2, + 1). Before the bias.
float gm_f32_torch_narrow_dot(const float *a, const float *b, int K, bool two) {
  float v[16] = {0}, w[16] = {0};
  int k = 0;
  if (two) {
    for (; K - k >= 32; k += 32)
      for (int l = 0; l < 16; l++) {
        v[l] = fmaf(a[k + l], b[k + l], v[l]);
        w[l] = fmaf(a[k + 16 + l], b[k + 16 + l], w[l]);
      }
    for (int l = 0; l < 16; l++) v[l] = v[l] + w[l];
  }
  for (; k < K; k++) v[k % 16] = fmaf(a[k], b[k], v[k % 16]);
  return halve(v, 16);
}

// MKL's Intel AVX-512 one-row kernel against B^T (M = 1, alpha = 1; measured on live torch, one
// thread): one output a . b over K >= 1, by the column's kind. Columns in whole groups of four
// (GEMV_MAIN): lane 0 of 16 starts as R(a0*b0); 16-lane FMA chains over k = 1.. while 16 or more
// remain; halved into lane 0 of 8; the next (up to) 8 products as 8-lane FMA chains, the rest
// (up to 7) as R(a*b) added; halved. The N % 4 leftover columns: product 0 is added last, as
// R(a0*b0), onto the halved 16 lanes over k = 1..; the second leftover column (GEMV_ONE) runs one
// 16-lane FMA chain per lane through K; the first and the third (GEMV_TWO) two accumulators over
// steps of 32 (k .. k+15, k+16 .. k+31), added, then 16 more products onto the sum if 16 remain,
// then the rest onto its first lanes (FMA).
float gm_f32_torch_gemv16(const float *a, const float *b, int K, gm_f32_gemv kind) {
  float v[16] = {0}, w[16] = {0};
  int k = 1;
  if (kind == GM_F32_GEMV_MAIN) {
    v[0] = a[0] * b[0];
    for (; K - k >= 16; k += 16)
      for (int l = 0; l < 16; l++) v[l] = fmaf(a[k + l], b[k + l], v[l]);
    float e[8] = {halve(v, 16)};
    for (int l = 0; l < 8 && k + l < K; l++) e[l] = fmaf(a[k + l], b[k + l], e[l]);
    for (int l = 8; k + l < K; l++) e[l - 8] = e[l - 8] + a[k + l] * b[k + l];
    return halve(e, 8);
  }
  if (kind == GM_F32_GEMV_ONE) {
    for (; k < K; k++) v[(k - 1) % 16] = fmaf(a[k], b[k], v[(k - 1) % 16]);
  } else {
    for (; K - k >= 32; k += 32)
      for (int l = 0; l < 16; l++) {
        v[l] = fmaf(a[k + l], b[k + l], v[l]);
        w[l] = fmaf(a[k + 16 + l], b[k + 16 + l], w[l]);
      }
    for (int l = 0; l < 16; l++) v[l] = v[l] + w[l];
    if (K - k >= 16)
      for (int l = 0; l < 16; l++, k++) v[l] = fmaf(a[k], b[k], v[l]);
    for (int l = 0; k < K; l++, k++) v[l] = fmaf(a[k], b[k], v[l]);
  }
  return halve(v, 16) + a[0] * b[0];
}

// MKL's Intel AVX-512 one-row kernel with B as stored (contract in gptmeg/kernels.h).
float gm_f32_torch_row8(const float *a, const float *b, size_t stride, int K, float alpha, bool row8, float s) {
  int k = 0;
  if (row8)
    for (; k + 8 <= K; k += 8) {
      float x[8], p[8];
      for (int i = 0; i < 8; i++) {
        x[i] = alpha * a[k + i];
        p[i] = b[(size_t)(k + i) * stride];
      }
      s = fmaf(x[6], p[6], s);
      s = fmaf(x[4], p[4], s);
      s = s + fmaf(x[5], p[5], x[7] * p[7]);
      s = s + (fmaf(x[0], p[0], x[2] * p[2]) + fmaf(x[1], p[1], x[3] * p[3]));
    }
  for (; k < K; k++) s = fmaf(alpha * a[k], b[(size_t)k * stride], s);
  return s;
}

float gm_f32_torch_gemv8(const float *a, const float *b, int K) {
  float c[8] = {0};
  for (int k = 0; k < K; k++) c[k % 8] = fmaf(a[k], b[k], c[k % 8]);
  const float h0 = c[0] + c[1], h1 = c[2] + c[3], h2 = c[4] + c[5], h3 = c[6] + c[7];
  return (h0 + h2) + (h1 + h3);
}

// MKL's one-row kernels with B as stored (GM_F32_BLOCKS_INTEL_ROW8, GM_F32_BLOCKS_AVX2_ROW).
static bool row_as_stored(gm_f32_blocks blocks) {
  return blocks == GM_F32_BLOCKS_INTEL_ROW8 || blocks == GM_F32_BLOCKS_AVX2_ROW;
}

// The columns of N that take MKL's Intel AVX-512 one-row kernel's steps of 8 (its whole groups of
// 16) under blocks: none under MKL's AVX2 one-row kernel (one chain each).
static int row8_cols(gm_f32_blocks blocks, int N) { return blocks == GM_F32_BLOCKS_INTEL_ROW8 ? N - N % 16 : 0; }

// Columns j0..j1 of the one row C = a B (+ bias) in that order (GM_F32_BLOCKS_INTEL_ROW8 or
// GM_F32_BLOCKS_AVX2_ROW), element by element.
static void row8_scalar(const float *a, const float *B, int ldb, const float *bias, float alpha, float *C, int N,
                        int j0, int j1, int K, gm_f32_blocks blocks) {
  const int n8 = row8_cols(blocks, N);
  for (int j = j0; j < j1; j++) C[j] = gm_f32_torch_row8(a, B + j, (size_t)ldb, K, alpha, j < n8, bias ? bias[j] : 0.0f);
}

// Columns j0..j1 of the one row C = fma(alpha, a B^T, bias) in MKL's AVX2 one-row order.
static void gemv8_scalar(const float *a, const float *B, int ldb, const float *bias, float alpha, float *C, int j0,
                         int j1, int K) {
  for (int j = j0; j < j1; j++) {
    const float r = gm_f32_torch_gemv8(a, B + (size_t)j * ldb, K);
    C[j] = bias ? fmaf(alpha, r, bias[j]) : alpha * r;
  }
}

static gm_f32_gemv gemv_kind(int N, int j) {
  int n4 = N - N % 4;
  return j < n4 ? GM_F32_GEMV_MAIN : j == n4 + 1 ? GM_F32_GEMV_ONE : GM_F32_GEMV_TWO;
}

// Columns j0..j1 of the one row C = fma(alpha, a B^T, bias) (alpha * a B^T without bias; bias + r
// when alpha = 1) in that order, element by element.
static void gemv_scalar(const float *a, const float *B, int ldb, const float *bias, float alpha, float *C, int N, int j0,
                        int j1, int K) {
  for (int j = j0; j < j1; j++) {
    float r = gm_f32_torch_gemv16(a, B + (size_t)j * ldb, K, gemv_kind(N, j));
    C[j] = bias ? fmaf(alpha, r, bias[j]) : alpha * r;
  }
}

// C = fma(alpha, dot, bias) (alpha * dot without bias) for rows 0..M-1, columns j0..j1 of B^T, the
// dot kernel's order: the scalar definition, and the kernels' tail.
static void dot16_scalar(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha, float *C,
                         int ldc, int M, int j0, int j1, int K) {
  for (int i = 0; i < M; i++)
    for (int j = j0; j < j1; j++) {
      float d = gm_f32_torch_dot16(A + (size_t)i * lda, B + (size_t)j * ldb, K);
      C[(size_t)i * ldc + j] = bias ? fmaf(alpha, d, bias[j]) : alpha * d;
    }
}

// MKL's Intel AVX2 sgemm (avx2 target): rows in groups of six from the top of each row block
// (avx2_block_end); each output's kernel by its group's size and its column (avx2_chain_cols).
typedef enum { AVX2_CHAIN, AVX2_PAIRS_FMA, AVX2_PAIRS_MUL } avx2_kernel;

// MKL's AVX2 kernels for big products (GM_F32_BLOCKS_AVX2_BIG: B^T with M and N >= 56, B as stored
// with M and N >= 72; measured K 64..3072) take every row alike and the columns in panels of 24
// (not the 4..6-row kernels' 16), the leftover r = N % 24 as a panel of
// 16 (when r >= 16), then one of 8, 4, 2 and 1 as they fit: the panels of 24 and 16 and the last 1
// run one FMA chain per K block, the panels of 8, 4 and 2 the even/odd pairs. The number of pair
// columns, which end before an odd N's last column (measured on N 56..767). Their K blocks: of 192
// from K 384 (the packed path), else the 4..6-row kernels' (the pairs' groups of four: avx2_output).
static int avx2_packed_pairs(int N) {
  int r = N % 24;
  if (r >= 16) r -= 16;
  return r - r % 2;
}

// B as stored: MKL's 4..6-row kernels take the rows in blocks, each grouped in sixes from its own
// top: blocks of 48 while more than 96 rows remain, then the rest as one block, or as two halves
// (the first ceil) where more than 72 remain (so 80, 128, 176, 224 and 512 rows end in no short
// group). B^T: one block. Measured 2026-12-06 at M 66..150, 217, 218, 224, 230 (K 64 and K = M,
// N 64: the attention's P @ V), 122 x 300 x 50; B^T at 77 and 122 rows.
static int avx2_block_end(int M, int i0, bool trans_b) {
  const int rem = M - i0;
  if (trans_b || rem <= 72) return M;
  return rem > 96 ? i0 + 48 : i0 + (rem + 1) / 2;
}

// The size of row i's group (up to six rows) within its block.
static int avx2_group_rows(int M, int i, bool trans_b) {
  int b0 = 0, b1;
  while ((b1 = avx2_block_end(M, b0, trans_b)) <= i) b0 = b1;
  const int g0 = b0 + (i - b0) / 6 * 6;
  return b1 - g0 < 6 ? b1 - g0 : 6;
}

// The big-product kernels take the rows in groups of four; M % 4 = 2 or 3 leaves a group of two
// (every column one FMA chain), M % 4 = 1 or 3 a last row alone (its columns after the panels of
// 24 and 16, the pair panels and an odd N's last column, in even/odd pairs). Measured on M 57..300,
// N % 24 of 1, 2, 5, 17 and 21, B as stored and B^T.
static avx2_kernel avx2_big_kernel(int M, int N, int i, int j) {
  int pairs = avx2_packed_pairs(N), lead = M - M % 4;
  if (i >= lead && M % 4 >= 2 && i < lead + 2) return AVX2_CHAIN;
  if (i >= lead && i == M - 1) return j >= N - pairs - N % 2 ? AVX2_PAIRS_FMA : AVX2_CHAIN;
  return j >= N - pairs - N % 2 && j < N - N % 2 ? AVX2_PAIRS_FMA : AVX2_CHAIN;
}

// The 4..6-row kernels' chain columns: the whole panels of 16, and the leftover N % 16 too where it
// is 9 or more (a panel of 16 part filled); a leftover of 1..8 runs the pairs.
static int avx2_chain_cols(int N) { return N % 16 >= 9 ? N : N - N % 16; }

static avx2_kernel avx2_kernel_for(gm_f32_blocks blocks, int M, int N, int i, int j, bool trans_b) {
  if (blocks == GM_F32_BLOCKS_AVX2_BIG) return avx2_big_kernel(M, N, i, j);
  int r = avx2_group_rows(M, i, trans_b);
  if (r <= 2) return AVX2_PAIRS_MUL; // a last row alone runs the 2-row kernel
  if (r == 3) return AVX2_PAIRS_FMA;
  return j < avx2_chain_cols(N) ? AVX2_CHAIN : AVX2_PAIRS_FMA;
}

// One output under MKL's Intel AVX2 kernels: per K block (GM_F32_BLOCKS_AVX2_256, _96, _BIG) one FMA chain
// from zero (AVX2_CHAIN), or two chains, over even and odd k of the block (from its start), added,
// the odd block's last product then onto their sum: with FMA (AVX2_PAIRS_FMA), or as R(a*b) added
// (AVX2_PAIRS_MUL). The big-product kernels' pair panels run the chains over whole groups of four
// and FMA the block's last len % 4 products onto the sum one by one (the same where len % 4 < 2;
// found 2026-12-07 on 80 x K x 300, K 769..1001: the last block's length % 4 of 2 or 3 differed).
// C = bias, then C + R(alpha * block) block by block (no bias: the first block).
static float avx2_output(const float *a, const float *b, size_t stride, const float *bias, float alpha, avx2_kernel kn,
                         int K, gm_f32_blocks blocks) {
  float c = 0.0f;
  for (int k0 = 0, k1; k0 < K; k0 = k1) {
    k1 = gm_f32_torch_block_end_for(blocks, K, k0);
    float acc = 0.0f;
    if (kn == AVX2_CHAIN)
      for (int k = k0; k < k1; k++) acc = fmaf(a[k], b[k * stride], acc);
    else {
      float e = 0.0f, o = 0.0f;
      int k = k0;
      // the big-product kernels' pair panels take the block in whole groups of four (two pairs)
      const int kp = blocks == GM_F32_BLOCKS_AVX2_BIG && kn == AVX2_PAIRS_FMA ? k1 - (k1 - k0) % 4 : k1;
      for (; k + 1 < kp; k += 2)
        if (kn == AVX2_PAIRS_FMA) {
          e = fmaf(a[k], b[k * stride], e);
          o = fmaf(a[k + 1], b[(k + 1) * stride], o);
        } else {
          e += a[k] * b[k * stride];
          o += a[k + 1] * b[(k + 1) * stride];
        }
      acc = e + o;
      for (; k < k1; k++) // the rest (an odd block's last product; up to three in groups of four), in order
        acc = kn == AVX2_PAIRS_FMA ? fmaf(a[k], b[k * stride], acc) : acc + a[k] * b[k * stride];
    }
    acc = alpha * acc;
    c = k0 > 0 ? c + acc : bias ? *bias + acc : acc;
  }
  return c;
}

// Rows 0..M-1, columns j0..j1 of C under MKL's Intel AVX2 kernels, element by element.
static void avx2_scalar(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                        float *C, int ldc, int M, int N, int j0, int j1, int K, gm_f32_blocks blocks) {
  for (int i = 0; i < M; i++)
    for (int j = j0; j < j1; j++) {
      const float *b = trans_b ? B + (size_t)j * ldb : B + j;
      C[(size_t)i * ldc + j] = avx2_output(A + (size_t)i * lda, b, trans_b ? 1 : (size_t)ldb, bias ? bias + j : NULL,
                                           alpha, avx2_kernel_for(blocks, M, N, i, j, trans_b), K, blocks);
    }
}

// The order of one call: the block schedule, the factor on B (the AMD kernel's alpha) and the
// factor on each block's sum (the Intel kernels' alpha).
typedef struct {
  gm_f32_blocks blocks;
  float b_scale, post;
} f32_order;

static f32_order order_for(int M, int N, int K, bool trans_b, float alpha) {
  const gm_torch_target_info *ti = gm_torch_target_get_info(gm_torch_target_active());
  gm_mkl_sgemm mkl = ti ? ti->mkl : GM_MKL_SGEMM_AMD_AVX512;
  f32_order o = {gm_f32_torch_blocks(mkl, M, N, K, trans_b), alpha, 1.0f};
  if (o.blocks == GM_F32_BLOCKS_INTEL_HALVES || o.blocks == GM_F32_BLOCKS_AVX2_256 || o.blocks == GM_F32_BLOCKS_AVX2_96 ||
      o.blocks == GM_F32_BLOCKS_AVX2_BIG) { // alpha on each block's sum
    o.b_scale = 1.0f;
    o.post = alpha;
  }
  return o;
}

// Bs [K, 64] = alpha * the nc columns of op(B) from column j0, element by element (AVX2, or alpha
// != 1 with B as stored).
static void pack_strip_scalar(const float *B, int ldb, bool trans_b, int j0, int nc, int K, float alpha, float *Bs) {
  if (trans_b)
    for (int j = 0; j < nc; j++)
      for (int k = 0; k < K; k++) Bs[(size_t)k * STRIP + j] = alpha * B[(size_t)(j0 + j) * ldb + k];
  else
    for (int k = 0; k < K; k++)
      for (int j = 0; j < nc; j++) Bs[(size_t)k * STRIP + j] = alpha * B[(size_t)k * ldb + j0 + j];
}

// The element-by-element definition: the fallback without SIMD and the tests' reference.
// Columns j0..j1 of rows 0..M-1.
static void matmul_scalar(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, f32_order o,
                          float *C, int ldc, int M, int j0, int j1, int K) {
  for (int i = 0; i < M; i++)
    for (int j = j0; j < j1; j++) {
      const float *a = A + (size_t)i * lda;
      float c = bias ? bias[j] : 0.0f;
      for (int k0 = 0, k1; k0 < K; k0 = k1) {
        k1 = gm_f32_torch_block_end_for(o.blocks, K, k0);
        float acc = 0.0f;
        for (int k = k0; k < k1; k++)
          acc = fmaf(a[k], o.b_scale * (trans_b ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]), acc);
        if (o.post != 1.0f) acc = o.post * acc;
        c = k0 == 0 && !bias ? acc : c + acc;
      }
      C[(size_t)i * ldc + j] = c;
    }
}

void gm_matmul_f32_torch_scalar(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias,
                                float alpha, float *C, int ldc, int M, int N, int K) {
  if (M <= 0 || N <= 0) return;
  f32_order o = order_for(M, N, K, trans_b, alpha);
  if (o.blocks == GM_F32_BLOCKS_AVX2_256 || o.blocks == GM_F32_BLOCKS_AVX2_BIG)
    avx2_scalar(A, lda, B, ldb, trans_b, bias, alpha, C, ldc, M, N, 0, N, K, o.blocks);
  else if (o.blocks == GM_F32_BLOCKS_INTEL_GEMV) gemv_scalar(A, B, ldb, bias, alpha, C, N, 0, N, K);
  else if (row_as_stored(o.blocks))
    row8_scalar(A, B, ldb, bias, alpha, C, N, 0, N, K, o.blocks);
  else if (o.blocks == GM_F32_BLOCKS_AVX2_GEMV8) gemv8_scalar(A, B, ldb, bias, alpha, C, 0, N, K);
  else if (o.blocks == GM_F32_BLOCKS_INTEL_DOT16) dot16_scalar(A, lda, B, ldb, bias, alpha, C, ldc, M, 0, N, K);
  else matmul_scalar(A, lda, B, ldb, trans_b, bias, o, C, ldc, M, 0, N, K);
}

// One row, B as stored (decode): B streams row by row through column blocks of at most ROW_BLOCK,
// as many per thread (each element's bits do not depend on the cut: the blocks are whole groups
// of 16 columns but the last, so only N's own leftover columns are a block's leftover).
static void one_row(const float *A, const float *B, int ldb, const float *bias, f32_order o, float *C, int N, int K,
                    int threads) {
  int per_thread = (N + threads * ROW_BLOCK - 1) / (threads * ROW_BLOCK);
  int n_blocks = threads * per_thread;
  int width = ((N + n_blocks - 1) / n_blocks + 15) / 16 * 16;
  n_blocks = (N + width - 1) / width;
  if (threads > n_blocks) threads = n_blocks;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int s = 0; s < n_blocks; s++) {
    int j0 = s * width, nc = N - j0 < width ? N - j0 : width;
    if (row_as_stored(o.blocks))
      gm_f32_torch_row8_avx512(A, B + j0, ldb, K, nc, row8_cols(o.blocks, nc), o.b_scale, bias ? bias + j0 : NULL,
                               C + j0);
    else gm_f32_torch_row_avx512(A, B + j0, ldb, K, nc, o.b_scale, bias ? bias + j0 : NULL, C + j0, o.blocks, o.post);
  }
}

// MKL's Intel AVX2 kernels (avx2_scalar's order) over strips of 64 columns, each copied contiguous
// ([K, 64], alpha not applied): per row block, groups of 4..6 rows through the chain strip kernel
// on the chain columns (avx2_chain_cols), the pair kernels for the rest; groups of 3 rows the pairs
// with FMA, of 2 rows and a last row alone the pairs without.
static float *pack_buffer(size_t floats); // below: one kept buffer per thread

static void avx2_path(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                      float *C, int ldc, int M, int N, int K, int threads, gm_simd_level isa, gm_f32_blocks blocks) {
  int n_strips = (N + STRIP - 1) / STRIP, n16 = avx2_chain_cols(N);
  if (threads > n_strips) threads = n_strips;
#pragma omp parallel num_threads(threads) if (threads > 1 && (double)M * N * K > 1e5)
  {
    float *Bs = isa >= GM_SIMD_AVX2 ? pack_buffer((size_t)K * STRIP) : NULL;
#pragma omp for schedule(dynamic, 2)
    for (int s = 0; s < n_strips; s++) {
      int j0 = s * STRIP, nc = N - j0 < STRIP ? N - j0 : STRIP;
      if (!Bs) { // no SIMD, or no memory for the copy: the definition itself
        avx2_scalar(A, lda, B, ldb, trans_b, bias, alpha, C, ldc, M, N, j0, j0 + nc, K, blocks);
        continue;
      }
      if (trans_b) pack_strip_scalar(B, ldb, true, j0, nc, K, 1.0f, Bs);
      else
        for (int k = 0; k < K; k++) memcpy(Bs + (size_t)k * STRIP, B + (size_t)k * ldb + j0, (size_t)nc * sizeof(float));
      int nch = n16 - j0 < 0 ? 0 : n16 - j0 < nc ? n16 - j0 : nc; // chain columns of this strip
      const float *bj = bias ? bias + j0 : NULL;
      for (int i = 0, b1 = 0, r; i < M; i += r) {
        if (i >= b1) b1 = avx2_block_end(M, i, trans_b); // a new block of rows starts at i
        r = b1 - i < 6 ? b1 - i : 6;
        float *Ci = C + (size_t)i * ldc + j0;
        if (r >= 4) {
          int n_chain = nch;
          if (n_chain > 0)
            gm_f32_torch_strip_avx2(A + (size_t)i * lda, lda, Bs, STRIP, r, n_chain, K, bj, Ci, ldc,
                                    blocks, alpha);
          if (n_chain < nc)
            for (int q = 0; q < r; q++)
              gm_f32_torch_pairs_avx2(A + (size_t)(i + q) * lda, Bs + n_chain, STRIP, nc - n_chain, K,
                                      bj ? bj + n_chain : NULL, Ci + (size_t)q * ldc + n_chain, alpha, true, blocks);
        } else
          for (int q = 0; q < r; q++)
            gm_f32_torch_pairs_avx2(A + (size_t)(i + q) * lda, Bs, STRIP, nc, K, bj, Ci + (size_t)q * ldc, alpha, r == 3,
                                    blocks);
      }
    }
  }
}

// Which driver runs the packed f32 products on AVX-512: the strip driver (shaped on Zen 4, where
// it beats torch) or the blocked one (Intel cores). GPTMEG_F32_GEMM=strip|blocked picks one for
// tests and comparisons, read on every call; otherwise the blocked driver runs on Intel CPUs. Both
// give the same bits: the choice is a speed choice.
static bool blocked_driver(void) {
  const char *e = getenv("GPTMEG_F32_GEMM");
  if (e && !strcmp(e, "strip")) return false;
  if (e && !strcmp(e, "blocked")) return true;
  return gm_cpu_host()->vendor_id == GM_CPU_VENDOR_INTEL;
}

// Strips packed together per K block (4 x 64 columns x 384 k: 384 KB, in L2). Measured on the
// GPT-2 training shapes (1 thread, same runs): 4 beat 8 by 1-5% (B transposed most), 2 and 16
// lost 2-7%; 192 rows a panel beat 96, 256 and 288.
enum { GROUP_STRIPS = 4 };
enum { PANEL_ROWS = 192 }; // rows of A walked against one packed group at a time (192 x 384 k: 288 KB)

// The thread's kept buffer (matmul_scratch.c).
static float *pack_buffer(size_t floats) { return gm_matmul_scratch(GM_SCRATCH_F32_STRIP, floats * sizeof(float)); }

// The blocked driver (GotoBLAS's loop order, AVX-512, Intel; blocked_path below): each thread owns
// a contiguous run of 64-column strips, taken GROUP_STRIPS at a time; for each group, each K block
// in order (or for each K block, each group: k_outer), the group's strips are packed together
// ([kc, 64] each, alpha applied, zero-padded: B read once, row by row with rows prefetched, or in
// 16 x 16 tiles when transposed), then PANEL_ROWS rows at a time meet every strip of the group (the
// panel kernel: six rows by 64 columns, the strip kernel's chains over the block). A's block
// [rows, kc], the packed group and the group's columns of C stay in L2, where the strip driver read
// all of A for every strip. Each output still gets one chain per K block, the blocks added onto C
// in order: the same bits.

// One K block [k0, k1) of the group of gs strips from g0 (a thread's share): the group packed into
// Bp, then PANEL_ROWS rows at a time against each of its strips.
static void group_block(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float *C,
                        int ldc, int M, int N, int g0, int gs, int k0, int k1, const f32_order o, float *Bp) {
  int j0 = g0 * STRIP, nc = N - j0 < gs * STRIP ? N - j0 : gs * STRIP, kc = k1 - k0;
  if (trans_b)
    for (int s = 0; s < gs; s++)
      gm_f32_torch_pack_trans_pf_avx512(B + (size_t)(j0 + s * STRIP) * ldb + k0, ldb,
                                        nc - s * STRIP < STRIP ? nc - s * STRIP : STRIP, kc, o.b_scale,
                                        Bp + (size_t)s * kc * STRIP);
  else gm_f32_torch_pack_rows_avx512(B + (size_t)k0 * ldb + j0, ldb, nc, kc, o.b_scale, Bp);
  for (int i0 = 0; i0 < M; i0 += PANEL_ROWS) {
    int mc = M - i0 < PANEL_ROWS ? M - i0 : PANEL_ROWS;
    for (int s = 0; s < gs; s++) {
      int js = j0 + s * STRIP, ncs = nc - s * STRIP < STRIP ? nc - s * STRIP : STRIP;
      gm_f32_torch_panel_avx512(A + (size_t)i0 * lda + k0, lda, Bp + (size_t)s * kc * STRIP, mc, ncs, kc, k0 == 0,
                                bias ? bias + js : NULL, C + (size_t)i0 * ldc + js, ldc, o.post);
    }
  }
}

static void blocked_path(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float *C,
                         int ldc, int M, int N, int K, int threads, const f32_order o) {
  int n_strips = (N + STRIP - 1) / STRIP;
  if (threads > n_strips) threads = n_strips;
  int kc_max = 0, n_blocks = 0;
  for (int k0 = 0, k1; k0 < K; k0 = k1, n_blocks++) {
    k1 = gm_f32_torch_block_end_for(o.blocks, K, k0);
    if (k1 - k0 > kc_max) kc_max = k1 - k0;
  }
#pragma omp parallel num_threads(threads) if (threads > 1 && (double)M * N * K > 1e5)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int s0 = (int)((int64_t)n_strips * t / nt), s1 = (int)((int64_t)n_strips * (t + 1) / nt);
    int g_max = s1 - s0 < GROUP_STRIPS ? s1 - s0 : GROUP_STRIPS;
    float *Bp = s1 > s0 ? pack_buffer((size_t)kc_max * g_max * STRIP) : NULL;
    if (s1 > s0 && !Bp) { // no memory for the packed group: the definition itself
      int j1 = s1 * STRIP < N ? s1 * STRIP : N;
      matmul_scalar(A, lda, B, ldb, trans_b, bias, o, C, ldc, M, s0 * STRIP, j1, K);
    }
    // K blocks outermost when there are more than two and this thread's columns of C (at most 1 MB)
    // stay in L2 between blocks: each block of A is then read once, not once per group (the
    // lm_head's dX, K 50257: 140 -> 151 GF/s; the dX of c_attn and c_fc, 6 and 8 blocks: +3-5%;
    // same runs, 1 thread). Either order adds each output's blocks in order: the same bits.
    bool k_outer = n_blocks > 2 && (size_t)M * (s1 - s0) * STRIP * sizeof(float) <= (1u << 20);
    if (Bp && k_outer)
      for (int k0 = 0, k1; k0 < K; k0 = k1) {
        k1 = gm_f32_torch_block_end_for(o.blocks, K, k0);
        for (int g0 = s0; g0 < s1; g0 += GROUP_STRIPS)
          group_block(A, lda, B, ldb, trans_b, bias, C, ldc, M, N, g0, s1 - g0 < GROUP_STRIPS ? s1 - g0 : GROUP_STRIPS,
                      k0, k1, o, Bp);
      }
    else if (Bp)
      for (int g0 = s0; g0 < s1; g0 += GROUP_STRIPS)
        for (int k0 = 0, k1; k0 < K; k0 = k1) {
          k1 = gm_f32_torch_block_end_for(o.blocks, K, k0);
          group_block(A, lda, B, ldb, trans_b, bias, C, ldc, M, N, g0, s1 - g0 < GROUP_STRIPS ? s1 - g0 : GROUP_STRIPS,
                      k0, k1, o, Bp);
        }
  }
}

// The product in order o (gm_matmul_f32_torch's body), but for the pair columns of MKL's AVX2
// packed path (matmul_order below).
static void matmul_order_body(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias,
                              float alpha, float *C, int ldc, int M, int N, int K, int threads, const f32_order o) {
  gm_simd_level isa = K > 0 ? gm_cpu_simd() : GM_SIMD_SCALAR;
  bool simd = isa == GM_SIMD_AVX512;
  if (o.blocks == GM_F32_BLOCKS_AVX2_256 || o.blocks == GM_F32_BLOCKS_AVX2_96) { // MKL's Intel AVX2 kernels (AVX2 body)
    avx2_path(A, lda, B, ldb, trans_b, bias, alpha, C, ldc, M, N, K, threads, isa, o.blocks);
    return;
  }
  if (o.blocks == GM_F32_BLOCKS_INTEL_GEMV || o.blocks == GM_F32_BLOCKS_AVX2_GEMV8) { // MKL's one-row kernels
    int n_strips = (N + ROW_BLOCK - 1) / ROW_BLOCK;                                      // against B^T (decode)
    if (threads > n_strips) threads = n_strips;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && (double)N * K > 1e5)
    for (int s = 0; s < n_strips; s++) {
      int j0 = s * ROW_BLOCK, j1 = N - j0 < ROW_BLOCK ? N : j0 + ROW_BLOCK;
      if (o.blocks == GM_F32_BLOCKS_AVX2_GEMV8 && isa >= GM_SIMD_AVX2)
        gm_f32_torch_gemv8_avx2(A, B, ldb, bias, alpha, C, j0, j1, K);
      else if (o.blocks == GM_F32_BLOCKS_AVX2_GEMV8) gemv8_scalar(A, B, ldb, bias, alpha, C, j0, j1, K);
      else if (simd) gm_f32_torch_gemv_avx512(A, B, ldb, bias, alpha, C, N, j0, j1, K);
      else gemv_scalar(A, B, ldb, bias, alpha, C, N, j0, j1, K);
    }
    return;
  }
  if (o.blocks == GM_F32_BLOCKS_INTEL_DOT16) { // MKL's Intel dot kernel (B transposed, few rows, long K)
    int n_strips = (N + STRIP - 1) / STRIP;
    if (threads > n_strips) threads = n_strips;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && (double)M * N * K > 1e5)
    for (int s = 0; s < n_strips; s++) {
      int j0 = s * STRIP, j1 = N - j0 < STRIP ? N : j0 + STRIP;
      if (simd) gm_f32_torch_dot16_avx512(A, lda, B, ldb, bias, alpha, C, ldc, M, j0, j1, K);
      else if (isa == GM_SIMD_AVX2) gm_f32_torch_dot16_avx2(A, lda, B, ldb, bias, alpha, C, ldc, M, j0, j1, K);
      else dot16_scalar(A, lda, B, ldb, bias, alpha, C, ldc, M, j0, j1, K);
    }
    return;
  }
  alpha = o.b_scale; // what B is scaled by (1 under the Intel kernels: o.post scales each block); A under ROW8
  if (row_as_stored(o.blocks) && !simd) { // MKL's one-row kernels, B as stored: the definition
    row8_scalar(A, B, ldb, bias, alpha, C, N, 0, N, K, o.blocks);
    return;
  }
  if (simd && M == 1 && !trans_b) {
    one_row(A, B, ldb, bias, o, C, N, K, threads);
    return;
  }
  int n_strips = (N + STRIP - 1) / STRIP;
  if (threads > n_strips) threads = n_strips;
  if ((simd && M < FEW_ROWS && trans_b) || (isa == GM_SIMD_AVX2 && M == 1 && trans_b)) { // decode's lm_head: no strip copy
#pragma omp parallel for schedule(dynamic, 8) num_threads(threads) if (threads > 1)
    for (int s = 0; s < n_strips; s++) {
      int j0 = s * STRIP, nc = N - j0 < STRIP ? N - j0 : STRIP;
      if (simd)
        gm_f32_torch_rows_trans_avx512(A, lda, B + (size_t)j0 * ldb, ldb, M, nc, K, alpha, bias ? bias + j0 : NULL,
                                       C + j0, ldc, o.blocks, o.post);
      else
        gm_f32_torch_row_trans_avx2(A, B + (size_t)j0 * ldb, ldb, nc, K, alpha, bias ? bias + j0 : NULL, C + j0, o.blocks,
                                    o.post);
    }
    return;
  }
  if (simd && (M > 6 || trans_b) && blocked_driver()) {
    blocked_path(A, lda, B, ldb, trans_b, bias, C, ldc, M, N, K, threads, o);
    return;
  }
  // B's strip is copied contiguous ([K, 64], times alpha) when it is transposed (a transpose per
  // 16 x 16 tile), when alpha != 1, or when more than one block of six rows walks it: read in
  // place, a strip of a long K spans K rows of B, one page each for wide B (TLB misses, no prefetch).
  bool pack = isa > GM_SIMD_SCALAR && (trans_b || M > 6 || alpha != 1.0f);
#pragma omp parallel num_threads(threads) if (threads > 1 && (double)M * N * K > 1e5)
  {
    float *Bs = pack ? pack_buffer((size_t)K * STRIP) : NULL; // the thread's kept buffer (not freed here)
#pragma omp for schedule(dynamic, 2)
    for (int s = 0; s < n_strips; s++) {
      int j0 = s * STRIP, nc = N - j0 < STRIP ? N - j0 : STRIP;
      if (isa == GM_SIMD_SCALAR || (pack && !Bs)) { // no SIMD, or no memory for the copy: the definition itself
        matmul_scalar(A, lda, B, ldb, trans_b, bias, o, C, ldc, M, j0, j0 + nc, K);
        continue;
      }
      const float *Bst = B + j0;
      int ldbs = ldb;
      if (Bs && trans_b && isa == GM_SIMD_AVX512) gm_f32_torch_pack_trans_avx512(B + (size_t)j0 * ldb, ldb, nc, K, alpha, Bs);
      else if (Bs && (trans_b || alpha != 1.0f)) pack_strip_scalar(B, ldb, trans_b, j0, nc, K, alpha, Bs);
      else if (Bs)
        for (int k = 0; k < K; k++) memcpy(Bs + (size_t)k * STRIP, B + (size_t)k * ldb + j0, (size_t)nc * sizeof(float));
      if (Bs) {
        Bst = Bs;
        ldbs = STRIP;
      }
      if (isa == GM_SIMD_AVX512)
        gm_f32_torch_strip_avx512(A, lda, Bst, ldbs, M, nc, K, bias ? bias + j0 : NULL, C + j0, ldc, o.blocks, o.post);
      else gm_f32_torch_strip_avx2(A, lda, Bst, ldbs, M, nc, K, bias ? bias + j0 : NULL, C + j0, ldc, o.blocks, o.post);
    }
  }
}


// The product in order o. Under MKL's AVX2 kernels for big products (GM_F32_BLOCKS_AVX2_BIG) the chain columns
// run as any chain order does, then the columns after the panels of 24 and 16 (the pair columns,
// at most 14, and an odd N's last) are recomputed element by element (avx2_big_kernel).
static void matmul_order(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                         float *C, int ldc, int M, int N, int K, int threads, const f32_order o) {
  matmul_order_body(A, lda, B, ldb, trans_b, bias, alpha, C, ldc, M, N, K, threads, o);
  if (o.blocks != GM_F32_BLOCKS_AVX2_BIG) return;
  for (int j = N - N % 2 - avx2_packed_pairs(N); j < N; j++)
    for (int i = 0; i < M; i++) {
      avx2_kernel kn = avx2_big_kernel(M, N, i, j);
      if (kn == AVX2_CHAIN && j == N - 1 && N % 2) continue; // the chain order's own
      const float *b = trans_b ? B + (size_t)j * ldb : B + j;
      C[(size_t)i * ldc + j] = avx2_output(A + (size_t)i * lda, b, trans_b ? 1 : (size_t)ldb, bias ? bias + j : NULL,
                                           alpha, kn, K, GM_F32_BLOCKS_AVX2_BIG);
    }
}

void gm_matmul_f32_torch(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                         float *C, int ldc, int M, int N, int K, int threads) {
  if (M <= 0 || N <= 0) return;
  if (threads <= 0) threads = omp_get_max_threads();
  matmul_order(A, lda, B, ldb, trans_b, bias, alpha, C, ldc, M, N, K, threads, order_for(M, N, K, trans_b, alpha));
}

// The largest divisor of a thread count t that is at most MKL's number of K blocks of 384
// (ceil(K / 384)) and at most cap: the K parts MKL's Intel AVX-512 sgemm runs on t threads where
// it cuts K.
static int kparts_for(int t, int K, int cap) {
  int blocks = (K + 383) / 384, p = 1;
  for (int d = 1; d <= t; d++)
    if (t % d == 0 && d <= blocks && d <= cap) p = d;
  return p;
}

// Whether MKL's Intel AVX-512 sgemm shares a product of K > 768 out to t threads at all when
// neither K nor N is a multiple of 256: only where M > 28 t, or K >= 378 t and N >= 378 t (edges
// exact on 4, 6, 8, 12 and 16 threads, tools/ref/probe_f32_mt.py --kscan); otherwise it runs the
// 1-thread order. Any such product is shared out when K or N is a multiple of 256.
// K and N both at least 378 t: where MKL's Intel AVX-512 sgemm shares out products of few rows, or
// of sizes that are no multiple of 256, on t threads.
static bool wide_for(int K, int N, int t) { return K >= 378 * t && N >= 378 * t; }

// Where MKL shares out a product of few rows (up to 15 or 16; B as stored, or B^T in its dot
// kernel's shapes) on t threads: K >= 378 t, and N >= 378 t or N <= 378 (edges exact at N 378 / 379
// and 1500 / 1520 on 3 and 4 threads, K 1600).
static bool few_shares(int K, int N, int t) { return K >= 378 * t && (N >= 378 * t || N <= 378); }

static bool intel_shares(int M, int N, int K, int t) {
  return K % 256 == 0 || N % 256 == 0 || M > 28 * t || wide_for(K, N, t);
}

// The K parts of a cut on t >= 4 threads: kparts_for(t, K, t), but from N = 2048 on 8 or more
// threads at most t / 2 parts (MKL gives the columns at least two threads; exact at N 2047 / 2048).
// The parts divide t, not t / 2: on 10 threads K 1024 and 1153 cut in 2, on 12 threads 1153..1920
// in 4, on 24 threads 3072..4096 in 8 (measured on 8..24 threads at K 1024..8192 against 3072
// columns, tools/ref/probe_f32_mt.py --kparts).
static int kparts_cut(int t, int N, int K) { return kparts_for(t, K, t >= 8 && N >= 2048 ? t / 2 : t); }

// MKL's Intel dot kernel's shapes (GM_F32_BLOCKS_INTEL_DOT16: B^T, 2..15 rows, K >= 24 M) that
// leave the dot kernel on t >= 2 threads: 4 rows or more, neither K nor N a multiple of 256, M N K
// above a work edge that depends on t: 192000 on 2 threads, 144000 on 3, 128000 on 4, 256000 on
// an even t from 6, 260000 on an odd t from 5 (tools/ref/probe_f32_mt.py --kscan N at M 4..15, K
// 333..1200 on 2..10, 12 and 16 threads: every edge within one column of these; --kparts and --gm
// at M 2..15, K 100..6400, N 20..50257: 2 and 3 rows, or K or N a multiple of 256, keep the 1-thread
// bits). Below the edge every thread runs the dot kernel on its columns: the 1-thread bits.
static int64_t dot_work_edge(int t) {
  if (t <= 4) return t == 2 ? 192000 : t == 3 ? 144000 : 128000;
  return t % 2 ? 260000 : 256000;
}

static bool dot_leaves(int M, int N, int K, int t) {
  return M >= 4 && M <= 15 && K % 256 && N % 256 && (int64_t)M * N * K > dot_work_edge(t);
}

// Few rows against B as stored: up to 15, and 16 except against 4096 columns or from K = 6400 where
// K or N is a multiple of 256 (those run as 17 rows do: 16 x 1024 x 4096, 16 x 6400 x 1600 (GPT-2
// XL's c_proj at 16 tokens), 16 x 8192, 12288, 12800, 16384 x 1600, and 16 x 6401..50257 x 768
// (the lm_head's dx at 16 tokens); not 4095, 4352, 8192 or 3072 columns at K 1024, nor K 4096, 6144,
// 6200, 6399, 6401, 7000, 9600, 10000 against 1600 columns, nor 6401..50257 against 1000: measured
// on 2..9 threads).
static bool few_rows(int M, int N, int K) {
  return M <= 15 || (M == 16 && N != 4096 && !(K >= 6400 && (K % 256 == 0 || N % 256 == 0)));
}

// Where a product of few rows (few_rows, or the dot kernel's shapes that leave it) cuts K: K > 768
// where MKL shares it out (few_shares; edges exact on 2, 4, 6 and 8 threads: K 1510 / 1520, 2260 /
// 2270, 3020 / 3030 on 4, 6, 8), on even t; on odd t only with N <= 378 and 8 rows or more (7 / 8
// on 3 threads at K 1600, B as stored or B^T; 5 threads at K 2000).
static bool few_cut(int M, int N, int K, int t) {
  return K > 768 && few_shares(K, N, t) && (t % 2 == 0 || (N <= 378 && M >= 8));
}

// The work above which MKL's row-grouped cut runs two parts (or shares the columns as its two
// row groups do, K < 384), nt = t / 2 the column threads: 292500 where nt is even, 320320 where it
// is odd (gm_f32_torch_kgroups; kgroups_uncut's measurements).
static int64_t kg2_work_edge(int nt) { return nt % 2 ? 320320 : 292500; }

// Few rows against few columns on 8 or more threads (2..16 rows against B as stored, up to 128
// where neither K nor N is a multiple of 256 (32 x 800 x 600 and 64 x 1000 x 1000 on 16 and 32
// threads, GPT-2 XL's attention projection at 17..128 tokens on 25 to 64 threads; 129 rows keep
// the 1-thread bits), 2..128 against B^T outside MKL's dot kernel or in the dot kernel's shapes
// that leave it; N <= 64 t; where gm_f32_torch_kparts does not cut): MKL gives the columns t / kg
// threads and cuts K into kg parts, kg the largest divisor of t with 4 kg <= t and 192 kg <= K
// (measured on 8..64 threads at K 384..6400, N 16..4096: 12 threads cut 768 in 3, 576 in 3, 572
// in 2; 16 threads 768 in 4, 764 in 2; 20 threads 960 in 5, 956 in 4; 14 threads in 2). Two equal
// halves of K <= 768 give the 1-thread bits anyway (K 544 and 760 on 12 and 16 threads). 0 where
// it does not apply; the caller has asked gm_f32_torch_kparts, which takes precedence (few_cut;
// B^T from 65 rows).
static int kgroups_uncut(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, int torch_threads) {
  const int t = torch_threads;
  // B as stored from 17 rows only where neither K nor N is a multiple of 256 (so not intel_shares)
  const bool uneven = K % 256 && N % 256;
  if (mkl != GM_MKL_SGEMM_INTEL_AVX512 || t < 8 || M < 2 || M > (trans_b || uneven ? 128 : 16) || N < 16 || N > 64 * t)
    return 0;
  const gm_f32_blocks b = gm_f32_torch_blocks(mkl, M, N, K, trans_b);
  if (b == GM_F32_BLOCKS_INTEL_DOT16 ? !dot_leaves(M, N, K, t) : !trans_b && !few_rows(M, N, K) && !uneven) return 0;
  int kg = 0;
  for (int d = 2; 4 * d <= t && 192 * d <= K; d++)
    if (t % d == 0) kg = d;
  if (kg < 2) return 0;
  // Where three parts or more are measured: each of the nt = t / kg column chunks 16 columns or
  // more, 64 from 65 rows against B^T (below, MKL also splits the rows: 16 x 768 x 96 on 32 threads
  // cuts K in 4 for rows 0..7 and 8..15 apart, 100 x 768 x 128 (B^T) on 12 threads in 3 for rows
  // 0..49 and 50..99); B^T of 16..64 rows from N = 33 where nt is odd, from 16 (nt - 2) + 1 where
  // it is even (40 x 768 x 33 and 40 on 12, 15 and 20 threads, 65 on 18 and 24, 97 on 32; 40 x 768
  // x 64 on 18 and 96 on 32 split the rows: not modelled); M N K >= 40000 t or >= 2^20 (below both,
  // MKL runs fewer threads or other cuts: 2 x 768 x 256 cuts K in 3 on 16 and 32 threads, 2 x 600 x
  // 512 in 3 on 32); and with B^T no last chunk of 3 columns (chunks of ceil(N / nt) rounded up to
  // 16, the last the rest: 4 x 1600 x 147 on 16 threads leaves its last columns' bits; a last chunk
  // of 1 or 2 columns runs MKL's narrow kernel: gm_f32_torch_narrow, 4 x 1600 x 145 and 146 on 16
  // threads). Two parts hold at any width, since row groups and row splits then add alike
  // (100 x 384 x 65 B^T on 8..48 threads, a 384-wide GPT-2's lm_head against 65 characters), from
  // M N K = 292584 (292500 keeps the 1-thread bits: 9 x 500 x 65 and 8 x 500 x 73 not, 8 x 501 x 73
  // and 4 x 732 x 100 cut; on 8, 16, 24 and 48 threads alike), and from 320321 where t / kg is odd
  // (11 x 364 x 80 B^T keeps the 1-thread order, 8 x 445 x 90 cuts, on 10, 14, 22, 26 and 30
  // threads; 12 x 384 x 65 B^T on 10 threads, a 384-wide GPT-2's lm_head at 12 tokens, does not
  // cut). A last chunk of 1 or 2 columns of B^T: gm_f32_torch_narrow.
  const int nt = t / kg, w = ((N + nt - 1) / nt + 15) / 16 * 16, last = (N - 1) % w + 1;
  const int64_t work = (int64_t)M * N * K;
  // B^T of 16..64 rows: from 33 columns where nt is odd, from 16 (nt - 2) + 1 where it is even
  // (below, MKL splits the rows in two); 65..128 rows from 33 columns where nt = 4, 48 where nt = 5
  // (kgroups_rows: up to 128 columns in row blocks), else from 64 nt (measured at K 768 on 12..32
  // threads)
  const int n_min = !trans_b || M < 16 ? 16 * nt
                    : M > 64           ? (nt == 4 ? 33 : nt == 5 ? 48 : 64 * nt)
                    : nt % 2           ? 33
                                       : 16 * (nt - 2) + 1;
  if (kg > 2 && (N < n_min || (work < 40000LL * t && work < (1 << 20)) || (trans_b && last == 3)))
    return 0;
  return work > kg2_work_edge(nt) ? kg : 0;
}

// The row blocks MKL runs the row-grouped cut of kg parts in, each block its own product with its
// own kg row groups: B^T of 65..128 rows against 33..128 columns splits into 2 blocks where t / kg
// = 4 (12 and 16 threads) and into 5 where t / kg = 5 (15 and 20 threads; from 48 columns), blocks
// of ceil(M / blocks) rows, the last the rest (126 rows on 15 threads: 26, 26, 26, 26, 22); from
// 129 columns one block (measured at M 65..128, K 768 and 1600; where t / kg = 6 or 8 the blocks
// are 3 or 4 against 48 and 64 columns, 2 against 100..160: not modelled, no cut there).
static int kgroups_rows(int M, int N, bool trans_b, int torch_threads, int kg) {
  const int nt = torch_threads / kg;
  if (kg < 3 || !trans_b || M <= 64 || N > 128) return 1;
  return nt == 4 ? 2 : nt == 5 ? 5 : 1;
}

int gm_f32_torch_kgroups(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, int torch_threads) {
  if (gm_f32_torch_kparts(mkl, M, N, K, trans_b, torch_threads) > 1) return 0;
  return kgroups_uncut(mkl, M, N, K, trans_b, torch_threads);
}

int gm_f32_torch_kparts(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, int torch_threads) {
  const int t = torch_threads;
  // One row with B as stored (GM_F32_BLOCKS_INTEL_ROW8, and MKL's AVX2 one-row kernel alike), any
  // thread count: MKL cuts K into t parts from K = 128 t while N < 501 t, for 41 <= N <= 69 from
  // K = 1000 (tools/ref/probe_f32_row8.py --threads: edges exact on 2..8, 12 and 16 threads at K
  // 256..50257, N 1..8016; --avx2 on 2 threads).
  if ((mkl == GM_MKL_SGEMM_INTEL_AVX512 || mkl == GM_MKL_SGEMM_INTEL_AVX2) && M == 1 && !trans_b && t >= 2)
    return K >= 128 * t && N < 501 * t && !(N >= 41 && N <= 69 && K < 1000) ? t : 1;
  if (mkl != GM_MKL_SGEMM_INTEL_AVX512 || t < 2 || N < 16) return 1;
  const gm_f32_blocks b = gm_f32_torch_blocks(mkl, M, N, K, trans_b);
  if (b == GM_F32_BLOCKS_INTEL_DOT16) return dot_leaves(M, N, K, t) && few_cut(M, N, K, t) ? kparts_cut(t, N, K) : 1;
  if (K <= 768 || b == GM_F32_BLOCKS_INTEL_GEMV) return 1;
  if ((int64_t)M * N * K <= 192000) return 1; // below this MKL runs one thread (measured: 192000 one, 192192 two)
  // Few rows against B as stored (a short prompt's prefill): cut only where few_cut (measured at
  // M 2..16, K 800..4096, N 100..8192 on 2..9 threads; on 2 threads 379 <= N <= 755 keeps the
  // 1-thread bits, both edges at M = 2 and 8; up to 56 rows at some K: not modelled).
  if (!trans_b && few_rows(M, N, K)) return few_cut(M, N, K, t) ? kparts_cut(t, N, K) : 1;
  // Up to 128 rows against N <= 378 (B as stored or B^T) cut as few rows do, on odd thread counts
  // too (64 x 4000 x 300 in 8, 9 and 10 parts, 46 x 6085 x 316 in 12 and 16, 127 x 6244 x 31 in 8
  // and 9, 100 x 1600 x 300 in 3 and 4, not on 5; measured on 3..16 threads; from 200 rows MKL cuts
  // K below K = 378 t too and otherwise: 300 x 1600 x 300 on 5 and 8 threads, not modelled).
  if (M <= 128 && N <= 378 && few_cut(M, N, K, t)) return kparts_cut(t, N, K);
  // 17..175 rows (B^T 65..175) against 32..378 columns where MKL shares the product out: on an even
  // t the cut below where the smaller of M and N is at most K / 8, else K in t parts, on an odd t
  // too (64 x 1024 x 100 in 3, 5, 7, 9, 11 and 15 parts, 160 x 1024 x 256 in 4, 6, 8 and 10; the
  // edges exact: 175 / 176 rows, 31 / 32 columns, 378 / 379; K = 768 does either: not modelled).
  const int small = M < N ? M : N;
  if (M >= (trans_b ? 65 : 17) && M <= 175 && N >= 32 && N <= 378 && intel_shares(M, N, K, t))
    return t % 2 == 0 && 8 * small <= K ? kparts_cut(t, N, K) : t;
  if (t % 2) return 1;
  if (t == 2) return K < 8 * M ? 1 : 2;
  // 4 or more (even) threads, measured on 4..16 (tools/ref/probe_f32_mt.py --kparts; the edges with
  // its --kscan), B as stored from 17 rows, B^T from 65, N >= 256:
  //   - size: the smaller of M and N at most K / 8, and at most 384 on 4 threads, 768 on 8 (edges
  //     exact at K 1024..16384, N 256..2048). On 6, 10..16 threads MKL also cuts beyond that in
  //     places (6 threads at M 1536, N 1024, K 8192), and where K / 8 < M <= 191 it cuts otherwise
  //     (K 1024, 1280): not modelled; on 16 threads it stops at M 4096 (N 1024, K 8192);
  //   - where MKL shares the product out at all (intel_shares);
  //   - parts: kparts_cut.
  // Below 256 columns it does either or neither (64 x 1024 x 16 cuts on 8 threads, not on 4).
  // B^T of 16..64 rows (one thread packs these): cut only where K >= 378 t and N >= 378 t, else
  // the columns are shared out and each thread runs the unpacked order (unpacks, below).
  if (trans_b && M >= 16 && M <= 64 && wide_for(K, N, t)) return kparts_cut(t, N, K);
  if (N < 256 || M <= (trans_b ? 64 : 15)) return 1;
  if (8 * small > K || (t == 4 && small > 384) || (t == 8 && small > 768)) return 1;
  if (!intel_shares(M, N, K, t)) return 1;
  return kparts_cut(t, N, K);
}

// Whether torch on t threads runs MKL's packed kernel's order (GM_F32_BLOCKS_INTEL_384) where one
// thread runs GM_F32_BLOCKS_INTEL_HALVES: B as stored, K 769..1535 with K < 8 M (no K cut) and
// M < 192, N >= 384, where MKL shares the product out (intel_shares). One thread packs only from
// 192 rows; the product's bits are then its rows' bits padded past 192 (measured on 2..16 threads
// for N >= 384 at K 1024..1300, tools/ref/probe_f32_mt.py --packed; below 384 columns it varies).
// On odd t, where it does not cut K, MKL runs the packed order wherever it shares the product out:
// K > 768 and M < 192, few_rows where few_shares, more rows with N >= 384 where intel_shares
// (measured on 3, 5, 7 and 9 threads, M 2..200, K 1024..6400, N 100..4800).
static bool packs(int M, int N, int K, bool trans_b, int t) {
  if (trans_b || K <= 768 || M >= 192) return false;
  if (t % 2) return few_rows(M, N, K) ? few_shares(K, N, t) : N >= 384 && intel_shares(M, N, K, t);
  return K < 8 * M && N >= 384 && intel_shares(M, N, K, t);
}

// The other way round: whether torch on t threads runs GM_F32_BLOCKS_INTEL_HALVES (the unpacked
// order) where one thread packs: B^T of 16..64 rows, K > 768, on 3 or more threads with N > 64 t,
// where MKL does not share the product out to cut K (even t) or to run the packed order (odd t)
// but shares the columns out instead: not K >= 378 t and N >= 378 t (measured on 3..8, 12 and 16
// threads at K 769..4096, N 1000..50257; at N <= 64 t, 1024 on 16 threads, another order runs; odd
// t's edge K 1130 / 1140 on 3 threads). GPT-2 medium's lm_head at up to 64 tokens.
// Likewise, from 65 rows (B^T) or 192 (B as stored), where MKL does not share the product out at
// all (not intel_shares: up to 28 t rows; measured on 5..8 threads at K 1600, N 1600..50257: GPT-2
// XL's lm_head at 65..191 tokens on 5 threads and more), against any N (N <= 64 t too: 192 x 1000 x
// 1000 on 16 threads, 200 x 1000 x 300 on 8, 160 x 1000 x 300 B^T on 6, GPT-2 XL's attention
// projection 192..512 x 1600 x 1600 on 25 to 64 threads; where the rows below 129 cut K instead,
// gm_f32_torch_kgroups, which takes precedence).
static bool unpacks(int M, int N, int K, bool trans_b, int t) {
  if (t < 3 || K <= 768) return false;
  if (trans_b && M >= 16 && M <= 64) return N > 64 * t && !(t % 2 && wide_for(K, N, t));
  return !intel_shares(M, N, K, t);
}

// The dot kernel's shapes that leave it (dot_leaves) where they do not cut K, on t threads:
// odd t where MKL shares them out (few_shares) run the packed order (GM_F32_BLOCKS_INTEL_384; edges
// K 1130 / 1140 on 3 threads, 1600 / 2000 on 5, 2000 / 3000 on 7), the others the unpacked order
// (the columns shared out; K <= 768 too, on any thread count; on 8 or more threads also where
// gm_f32_torch_kgroups does not cut K: 8 x 384 x 84 on 8..16 threads, 13 x 368 x 85 on 12, odd t
// without a divisor for row groups: 7 x 1296 x 107 on 9, 11 and 13).
static gm_f32_blocks dot_blocks_mt(int M, int N, int K, int t) {
  if (!dot_leaves(M, N, K, t)) return GM_F32_BLOCKS_INTEL_DOT16;
  if (t % 2 && few_shares(K, N, t)) return GM_F32_BLOCKS_INTEL_384;
  return GM_F32_BLOCKS_INTEL_HALVES;
}

gm_f32_blocks gm_f32_torch_blocks_mt(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, float alpha,
                                     int torch_threads) {
  const gm_f32_blocks b = gm_f32_torch_blocks(mkl, M, N, K, trans_b);
  const int t = torch_threads;
  // packs, unpacks and dot_blocks_mt hold only where MKL does not cut K: asked once, here
  if (mkl != GM_MKL_SGEMM_INTEL_AVX512 || t < 2 || gm_f32_torch_kparts(mkl, M, N, K, trans_b, t) != 1 ||
      kgroups_uncut(mkl, M, N, K, trans_b, t) > 1)
    return b;
  if (b == GM_F32_BLOCKS_INTEL_HALVES && packs(M, N, K, trans_b, t)) return GM_F32_BLOCKS_INTEL_384;
  if (alpha != 1.0f) return b; // not measured
  if (b == GM_F32_BLOCKS_INTEL_384 && unpacks(M, N, K, trans_b, t)) return GM_F32_BLOCKS_INTEL_HALVES;
  if (b == GM_F32_BLOCKS_INTEL_DOT16) return dot_blocks_mt(M, N, K, t);
  return b;
}

// Where MKL's threads leave the last chunk of 1 or 2 columns of B^T to gm_f32_torch_narrow_dot: the
// columns in chunks of ceil(N / nt) rounded up to 16, the last one the rest, nt = t where the dot
// kernel's shapes run the unpacked order (gm_f32_torch_blocks_mt) with K <= 1024, on 3..10 threads
// and up to 98 columns on more; nt = t / kg in the row-grouped cut (gm_f32_torch_kgroups) with 3
// chunks or more (16 + 1 columns on 10 threads stay in the cut's order: 14 x 2107 x 17), of 2..15
// rows, and of 17..31 with K <= 800 where nt is even from 8. Measured with random shapes against
// live torch (tools/ref/probe_f32_mt.py; M 2..31, K 200..3000, N 16..400 on 3..64 threads) and at
// K 384, N 65 (nanoGPT's lm_head), M 2..129 on 3..64 threads. Not modelled, where MKL also splits
// the rows or picks other chunks: last chunks of 3 columns (the narrow kernel runs them only below
// 12 rows a thread), K above those edges (12 x 2227 x 50 on 9 threads keeps its last column in the
// unpacked order), more columns on more than 10 threads (10 x 302 x 129 on 12), 16 rows, 17..31 on
// 10, 12 and 14 threads and where nt is odd (18 and 22 threads: some rows), 32..63 rows on 40 to 64
// threads, 65, 66, 69 and 129 rows on 32 and more. The number of columns (1 or 2), or 0.
// gm_f32_torch_narrow, and the row groups whose parity the narrow kernel follows (*groups: kg in the
// row-grouped cut; 2 for 17..31 rows against K < 384 and N <= 66 on an even t of 8..16, which MKL
// shares as the cut's two groups without cutting K, from the cut's work edges: a 256-wide GPT-2's
// lm_head against 65 characters, 18 tokens on 8, 12 and 16 threads, 20 on 10; wider N there takes
// other row groups: 27 x 340 x 97 on 8 threads keeps its last column; else 1). Few rows outside the
// dot kernel (B^T, 2..15 rows, K < 24 M) on 3 and 4 threads are shared like the dot kernel's shapes
// above its work edge (12 x 256 x 65). Random shapes for these (M 2..31, K 100..383, N 17..193 near
// multiples of 16 on 3..16 threads): 14 newly exact in 500, none lost.
static int narrow_plan(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, float alpha, int t, int *groups) {
  *groups = 1;
  if (mkl != GM_MKL_SGEMM_INTEL_AVX512 || !trans_b || alpha != 1.0f || t < 3 || M < 2 ||
      gm_f32_torch_kparts(mkl, M, N, K, trans_b, t) > 1)
    return 0;
  const int kg = kgroups_uncut(mkl, M, N, K, trans_b, t);
  const gm_f32_blocks b1 = gm_f32_torch_blocks(mkl, M, N, K, trans_b);
  const int64_t work = (int64_t)M * N * K;
  int nt = t;
  if (kg > 1) {
    nt = t / kg;
    *groups = kg;
    if (!(M <= 15 || (M >= 17 && M <= 31 && K <= 800 && nt >= 8 && nt % 2 == 0))) return 0;
  } else if (b1 == GM_F32_BLOCKS_INTEL_HALVES && M >= 17 && M <= 31 && K < 384 && t >= 8 && t <= 16 && t % 2 == 0 &&
             N <= 66 && work > kg2_work_edge(t / 2)) {
    nt = t / 2;
    *groups = 2;
  } else if ((t > 10 && N > 98) || K > 1024 ||
             !(b1 == GM_F32_BLOCKS_INTEL_DOT16 || (b1 == GM_F32_BLOCKS_INTEL_HALVES && M <= 15 && t <= 4 &&
                                                     work > dot_work_edge(t))) ||
             gm_f32_torch_blocks_mt(mkl, M, N, K, trans_b, alpha, t) != GM_F32_BLOCKS_INTEL_HALVES) {
    return 0;
  }
  const int w = ((N + nt - 1) / nt + 15) / 16 * 16, last = (N - 1) % w + 1;
  return N > (kg > 1 ? 2 : 1) * w && last <= 2 ? last : 0; // the row-grouped cut: 3 chunks or more
}

int gm_f32_torch_narrow(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, float alpha, int torch_threads) {
  int groups;
  return narrow_plan(mkl, M, N, K, trans_b, alpha, torch_threads, &groups);
}

// MKL's Intel one-row kernel against B^T on 2 threads: the first N it splits, by K (measured with
// tools/ref/probe_f32_mt.py's --gemv-threshold on N = 8 q + 1: the smallest such N that split; a K
// between two rows takes the row below it, whose N is at least the true one).
static const struct {
  int K, n;
} GEMV_SPLIT_MIN[] = {{4, 2049},   {8, 1025},   {16, 513},  {24, 345},  {32, 257},  {48, 185},  {64, 129},  {96, 113},
                      {128, 105},  {192, 89},   {256, 81},  {384, 65},  {512, 57},  {640, 49},  {768, 41},  {1024, 33},
                      {1536, 25},  {2048, 25},  {3072, 17}, {4096, 17}, {8192, 9}};

// The smallest N the one-row kernel splits at K (0: none below K = 4).
static int gemv_split_min(int K) {
  int n_min = 0;
  for (size_t r = 0; r < sizeof GEMV_SPLIT_MIN / sizeof GEMV_SPLIT_MIN[0] && GEMV_SPLIT_MIN[r].K <= K; r++)
    n_min = GEMV_SPLIT_MIN[r].n;
  return n_min;
}

int gm_f32_torch_nsplit(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, float alpha, int torch_threads) {
  (void)alpha; // the split is the same with alpha (C = fma(alpha, r, bias); measured K 64..3072)
  if (mkl != GM_MKL_SGEMM_INTEL_AVX512 || torch_threads != 2) return 0;
  if (gm_f32_torch_blocks(mkl, M, N, K, trans_b) != GM_F32_BLOCKS_INTEL_GEMV) return 0;
  const int n_min = gemv_split_min(K);
  return n_min && N >= n_min ? (N + 1) / 2 : 0;
}

// MKL's Intel one-row kernel against B^T on 3 or more threads: the columns in torch_threads balanced
// chunks (the first N % t one longer), each chunk with its own leftover columns (measured on 3, 4,
// 6 and 8 threads at K 768 and 1024, N 50257: the columns that leave the 1-thread bits are the
// chunks' leftovers; greedy decode of GPT-2 medium's shape on 4 threads). Below N = 8192 on 3 to 8
// threads from the N the 2-thread split starts at (GEMV_SPLIT_MIN: K 384 from N 65, K 1600 from
// 25; measured at K 256..3072, N 16..5000: a 65-character lm_head in a decode step); on more
// threads below 8192 it is not measured (16 threads leave 65 and 100 columns whole at K 384): 0
// there (one chunk). 0 also where it does not apply.
int gm_f32_torch_nchunks(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, int torch_threads) {
  if (mkl != GM_MKL_SGEMM_INTEL_AVX512 || torch_threads < 3 || K < 256) return 0;
  // below N 8192 on 9 to 32 threads: t chunks where each thread gets at least 2280 multiply-adds
  // (9..12 threads: 2269 one, 2496 t), or 4700 and 3 columns each (13..32: 4333 one, 4788 t), else
  // one chunk (random one-row products at K 256..4096, N 16..8191: 266 of 350 newly exact)
  const int t = torch_threads;
  const int64_t per = (int64_t)N * K / t;
  if (N < 8192 && (t > 32 || N < gemv_split_min(K) || (t > 8 && per < (t <= 12 ? 2280 : 4700)) || (t > 12 && N < 3 * t)))
    return 0;
  return gm_f32_torch_blocks(mkl, M, N, K, trans_b) == GM_F32_BLOCKS_INTEL_GEMV ? torch_threads : 0;
}

// One K part's sum for one output when the split's scratch cannot be allocated (the definition):
// the part's blocks (`blocks` over len) added in order, from *start (or from the first block when
// start is NULL).
static float chain_part(const float *a, const float *b, size_t stride, int len, gm_f32_blocks blocks,
                        const float *start) {
  float c = start ? *start : 0.0f;
  for (int k0 = 0, k1; k0 < len; k0 = k1) {
    k1 = gm_f32_torch_block_end_for(blocks, len, k0);
    float acc = 0.0f;
    for (int k = k0; k < k1; k++) acc = fmaf(a[k], b[k * stride], acc);
    c = k0 == 0 && !start ? acc : c + acc;
  }
  return c;
}

static float split_part(const float *a, const float *b, size_t stride, int len, const float *start) {
  return chain_part(a, b, stride, len, GM_F32_BLOCKS_INTEL_SPLIT, start);
}

// Where K part p of kp starts: MKL's balanced cut, the first K % kp parts one longer.
static int part_start(int K, int kp, int p) { return p * (K / kp) + (p < K % kp ? p : K % kp); }

// One row against B as stored in kp > 1 K parts (MKL's Intel one-row kernel on kp threads): each
// part summed alone from zero in the kernel's order (part_start), C = bias + (((part 0 + part 1) +
// part 2) + ...). Without SIMD (the definition) or without memory for a part's row: element by element.
static void row8_parts(const float *a, const float *B, int ldb, const float *bias, float *C, int N, int K, int threads,
                       f32_order o, int kp) {
  float *T = gm_cpu_simd() == GM_SIMD_SCALAR ? NULL : malloc((size_t)N * sizeof(float));
  if (!T) {
    for (int j = 0; j < N; j++) {
      float c = 0.0f;
      for (int p = 0; p < kp; p++) {
        const int k0 = part_start(K, kp, p), k1 = part_start(K, kp, p + 1);
        const float s = gm_f32_torch_row8(a + k0, B + (size_t)k0 * ldb + j, (size_t)ldb, k1 - k0, o.b_scale,
                                          j < row8_cols(o.blocks, N), 0.0f);
        c = p == 0 ? s : c + s;
      }
      C[j] = bias ? bias[j] + c : c;
    }
    return;
  }
  for (int p = 0; p < kp; p++) {
    const int k0 = part_start(K, kp, p), k1 = part_start(K, kp, p + 1);
    matmul_order(a + k0, k1 - k0, B + (size_t)k0 * ldb, ldb, false, NULL, o.b_scale, p == 0 ? C : T, N, 1, N, k1 - k0,
                 threads, o);
    if (p > 0)
      for (int j = 0; j < N; j++) C[j] = C[j] + T[j];
  }
  if (bias)
    for (int j = 0; j < N; j++) C[j] = bias[j] + C[j];
  free(T);
}

// One block of rows of a product whose order o (and K parts kp, N split ns) the whole shape chose: the
// rows of C do not depend on each other, so any block of at least FEW_ROWS rows computes its rows as
// the whole product does. trans_a: this block of op(A) = A^T made contiguous first ([m, K] rows
// r0 .. r0 + m). ns: columns [0, ns) and [ns, N) as two products, each with its own column kinds.
// kp > 1: K in kp parts (part_start), each summed alone, C = (bias + part 0) + (((part 1 + part 2)
// + ...) + part kp-1); one row with B as stored (MKL's one-row kernel GM_F32_BLOCKS_INTEL_ROW8):
// row8_parts. At: the caller's buffer for op(A)'s block (m x K floats at least) when trans_a.
static int rows_block(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b, const float *bias,
                      float alpha, float *C, int ldc, int r0, int m, int N, int K, int threads, f32_order o, int kp,
                      int ns, int nc, float *At) {
  if (trans_a && gm_cpu_simd() == GM_SIMD_AVX512) { // 16 x 16 tiles transposed in registers
    gm_f32_transpose_avx512(A + r0, lda, K, m, At);
    A = At;
    lda = K;
  } else if (trans_a) { // in 32 x 32 tiles: both sides stay in cache
    for (int k0 = 0; k0 < K; k0 += 32)
      for (int i0 = 0; i0 < m; i0 += 32)
        for (int k = k0; k < K && k < k0 + 32; k++)
          for (int i = i0; i < m && i < i0 + 32; i++) At[(size_t)i * K + k] = A[(size_t)k * lda + r0 + i];
    A = At;
    lda = K;
  } else {
    A += (size_t)r0 * lda;
  }
  C += (size_t)r0 * ldc;
  if (nc > 1) { // balanced column chunks, each its own product
    for (int c = 0; c < nc; c++) {
      const int j0 = part_start(N, nc, c), j1 = part_start(N, nc, c + 1);
      const float *Bj = trans_b ? B + (size_t)j0 * ldb : B + j0;
      matmul_order(A, lda, Bj, ldb, trans_b, bias ? bias + j0 : NULL, alpha, C + j0, ldc, m, j1 - j0, K, threads, o);
    }
    return 0;
  }
  if (ns) {
    matmul_order(A, lda, B, ldb, trans_b, bias, alpha, C, ldc, m, ns, K, threads, o);
    const float *B1 = trans_b ? B + (size_t)ns * ldb : B + ns;
    matmul_order(A, lda, B1, ldb, trans_b, bias ? bias + ns : NULL, alpha, C + ns, ldc, m, N - ns, K, threads, o);
    return 0;
  }
  if (kp <= 1) {
    matmul_order(A, lda, B, ldb, trans_b, bias, alpha, C, ldc, m, N, K, threads, o);
    return 0;
  }
  if (row_as_stored(o.blocks)) {
    row8_parts(A, B, ldb, bias, C, N, K, threads, o, kp);
    return 0;
  }
  const size_t bstride = trans_b ? 1 : (size_t)ldb;
  // without SIMD (the definition) or without memory for the parts' scratch: element by element
  float *R = gm_cpu_simd() == GM_SIMD_SCALAR ? NULL : malloc((size_t)m * N * sizeof(float) * (kp > 2 ? 2 : 1));
  if (!R) {
    for (int i = 0; i < m; i++)
      for (int j = 0; j < N; j++) {
        const float *a = A + (size_t)i * lda, *b = trans_b ? B + (size_t)j * ldb : B + j;
        float rest = 0.0f;
        for (int p = 1; p < kp; p++) {
          const int k0 = part_start(K, kp, p), k1 = part_start(K, kp, p + 1);
          const float s = split_part(a + k0, b + k0 * bstride, bstride, k1 - k0, NULL);
          rest = p == 1 ? s : rest + s;
        }
        C[(size_t)i * ldc + j] = split_part(a, b, bstride, part_start(K, kp, 1), bias ? bias + j : NULL) + rest;
      }
    return 0;
  }
  // part 0 onto the bias in C; parts 1.. summed in order in R (part p > 1 through R + m N); C += R
  const f32_order h = {GM_F32_BLOCKS_INTEL_SPLIT, 1.0f, 1.0f};
  float *T = R + (size_t)m * N;
  matmul_order(A, lda, B, ldb, trans_b, bias, 1.0f, C, ldc, m, N, part_start(K, kp, 1), threads, h);
  for (int p = 1; p < kp; p++) {
    const int k0 = part_start(K, kp, p), k1 = part_start(K, kp, p + 1);
    const float *Bp = trans_b ? B + k0 : B + (size_t)k0 * ldb;
    matmul_order(A + k0, lda, Bp, ldb, trans_b, NULL, 1.0f, p == 1 ? R : T, N, m, N, k1 - k0, threads, h);
    if (p > 1)
      for (size_t e = 0; e < (size_t)m * N; e++) R[e] = R[e] + T[e];
  }
  for (int i = 0; i < m; i++)
    for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = C[(size_t)i * ldc + j] + R[(size_t)i * N + j];
  free(R);
  return 0;
}

// Where part q of the grouped cut (gm_f32_torch_kgroups) starts: parts of ceil(K / kg) rounded up
// to a multiple of 4, the last one the rest (16 x 1024 x 768 on 12 threads: 344, 344, 336).
static int group_cut(int K, int kg, int q) {
  const int len = ((K + kg - 1) / kg + 3) / 4 * 4;
  return q * len < K ? q * len : K;
}

// The r-th K part row group g adds in the grouped cut: part 0, then part g, then 1.. without g.
static int group_part(int g, int r) { return r == 0 ? 0 : r == 1 && g > 0 ? g : r - (g > 0 && r <= g); }

// The grouped cut, kg parts (gm_f32_torch_kgroups), the product's whole M rows (no trans_a):
// part q is K [group_cut(q), group_cut(q + 1)), summed in GM_F32_BLOCKS_INTEL_HALVES's blocks, part
// 0 onto the bias; the rows fall in kg balanced groups (part_start(M, kg, g): the first M % kg one
// longer), and group g adds part g next, then the others in order: C = ((((bias + part 0) + part g)
// + part 1) + ...) with part g left out the second time (found with tools/ref/probe_f32_orders.c's
// grouped candidates: MKL's threads of K part g reduce the rows of group g, their own part first).
static void kgroups_path(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float *C,
                         int ldc, int M, int N, int K, int threads, int kg) {
  const f32_order h = {GM_F32_BLOCKS_INTEL_HALVES, 1.0f, 1.0f};
  const size_t bstride = trans_b ? 1 : (size_t)ldb;
  // without SIMD (the definition) or without memory for a part's rows: element by element
  float *T = gm_cpu_simd() == GM_SIMD_SCALAR ? NULL : malloc((size_t)part_start(M, kg, 1) * N * sizeof(float));
  for (int g = 0; g < kg; g++) {
    const int r0 = part_start(M, kg, g), m = part_start(M, kg, g + 1) - r0;
    for (int r = 0; r < kg && m > 0; r++) {
      const int q = group_part(g, r);
      const int k0 = group_cut(K, kg, q), len = group_cut(K, kg, q + 1) - k0;
      if (len <= 0) continue;
      const float *Bq = trans_b ? B + k0 : B + (size_t)k0 * ldb;
      if (!T) {
        for (int i = r0; i < r0 + m; i++)
          for (int j = 0; j < N; j++) {
            const float *a = A + (size_t)i * lda + k0, *b = trans_b ? Bq + (size_t)j * ldb : Bq + j;
            float *c = C + (size_t)i * ldc + j;
            if (q == 0) *c = chain_part(a, b, bstride, len, h.blocks, bias ? bias + j : NULL);
            else *c = *c + chain_part(a, b, bstride, len, h.blocks, NULL);
          }
        continue;
      }
      const float *Ag = A + (size_t)r0 * lda + k0;
      float *Cg = C + (size_t)r0 * ldc;
      if (q == 0) {
        matmul_order(Ag, lda, Bq, ldb, trans_b, bias, 1.0f, Cg, ldc, m, N, len, threads, h);
        continue;
      }
      matmul_order(Ag, lda, Bq, ldb, trans_b, NULL, 1.0f, T, N, m, N, len, threads, h);
      for (int i = 0; i < m; i++)
        for (int j = 0; j < N; j++) Cg[(size_t)i * ldc + j] = Cg[(size_t)i * ldc + j] + T[(size_t)i * N + j];
    }
  }
  free(T);
}

// The last nar columns (gm_f32_torch_narrow) again, in gm_f32_torch_narrow_dot's order: over all of
// K onto the bias, or in the row-grouped cut's kg parts and order (kgroups_path) where kg > 1. A row
// is even or odd in the product, or from 17 rows in its group of `groups` (narrow_plan); a group of
// 16 rows keeps the product's own order there (31 rows on 16 threads: rows 0..15).
static void narrow_path(const float *A, int lda, const float *B, int ldb, const float *bias, float *C, int ldc, int M,
                        int N, int K, int kg, int groups, int nar) {
  for (int j = N - nar; j < N; j++)
    for (int i = 0; i < M; i++) {
      const float *a = A + (size_t)i * lda, *b = B + (size_t)j * ldb;
      float c = 0.0f;
      int g = 0;
      while (g + 1 < groups && i >= part_start(M, groups, g + 1)) g++;
      const int g0 = part_start(M, groups, g);
      if (part_start(M, groups, g + 1) - g0 == 16) continue;
      const bool two = (M >= 17 ? i - g0 : i) % 2 == 0;
      if (kg < 2) {
        c = gm_f32_torch_narrow_dot(a, b, K, two);
        C[(size_t)i * ldc + j] = bias ? c + bias[j] : c;
        continue;
      }
      for (int r = 0; r < kg; r++) {
        const int q = group_part(g, r);
        const int k0 = group_cut(K, kg, q), len = group_cut(K, kg, q + 1) - k0;
        if (len <= 0) continue;
        const float p = gm_f32_torch_narrow_dot(a + k0, b + k0, len, two);
        c = r == 0 ? (bias ? bias[j] + p : p) : c + p;
      }
      C[(size_t)i * ldc + j] = c;
    }
}

enum { TRANS_A_BLOCK_FLOATS = 1 << 18 }; // 1 MiB: op(A) = A^T is made contiguous at most this much at a time

// The product in row blocks when op(A) = A^T (the tied lm_head's dW: [V, N] would be a 50257 x 256
// copy), each of at least FEW_ROWS rows: the order o and the splits kp, ns were chosen for the whole
// shape; otherwise one block. -1 when out of memory for the transposed block.
static int blocked_rows(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b, const float *bias,
                        float alpha, float *C, int ldc, int M, int N, int K, int threads, f32_order o, int kp, int ns,
                        int nc) {
  int blocks = 1;
  if (trans_a && (size_t)M * (K > 0 ? K : 1) > TRANS_A_BLOCK_FLOATS) {
    blocks = (int)(((size_t)M * K + TRANS_A_BLOCK_FLOATS - 1) / TRANS_A_BLOCK_FLOATS);
    if (blocks > M / (4 * FEW_ROWS)) blocks = M / (4 * FEW_ROWS) > 1 ? M / (4 * FEW_ROWS) : 1;
  }
  float *At = NULL; // one buffer for every block (the largest block's rows)
  if (trans_a && !(At = malloc(((size_t)M / blocks + 1) * (K > 0 ? K : 1) * sizeof(float)))) return -1;
  int rc = 0;
  for (int b = 0; b < blocks && !rc; b++) {
    const int r0 = (int)((int64_t)M * b / blocks), r1 = (int)((int64_t)M * (b + 1) / blocks);
    rc = rows_block(A, lda, trans_a, B, ldb, trans_b, bias, alpha, C, ldc, r0, r1 - r0, N, K, threads, o, kp, ns, nc, At);
  }
  free(At);
  return rc;
}

// MKL's AVX2 sgemm on 2 threads: which split it runs, where measured. The columns in halves on the
// big-product kernels ([0, floor(N / 2)) and the rest, each with its own leftover panels) where K
// >= 767 and N >= 766, or K >= 767, N >= 384 and M >= 64 (M 2..128, N 384..50257, K 767..3072; B^T
// too, any alpha). With B as stored, K and N multiples of 64, alpha 1 (measured 2026-12-06 on
// grids at M 16..256, N 32..4096, K 256..4096, and GPT-2-shaped products 256 to 768 wide at T
// 2..128), for N <= 352 from K = 768: the columns in halves on the big-product kernels
// with 2 to 7 rows (N >= 128), K in halves (avx2_kparts) with 8 to 64 rows, or 65 to 128 from
// K = 1024, else the columns in halves up to 128 rows. Otherwise, from 33 rows: the columns in
// halves for 192 <= N <= 1280 (N <= 256 only up to 128 rows), and above 1280 up to K = 1024.
// B^T: the K halves on the same edges (measured at 40 x 768 x 256 and 128 x 1024 x 256, and 50
// random products); and with 56..128 rows, 65..128 columns and K <= 512 (a multiple of 64): the
// 4..6-row kernels over the whole product, where one thread runs the big-product kernels (a
// 65-character lm_head from 56 tokens; measured on M 56..192, N 56..192, K 128..512). 0: none of
// these (not measured: the 1-thread order).
enum { AVX2_T2_COLS = 1, AVX2_T2_KHALVES = 2, AVX2_T2_SMALL = 3 };
static int avx2_two_threads(int M, int N, int K, bool trans_a, bool trans_b, float alpha) {
  if (trans_b && !trans_a && alpha == 1.0f && M >= 56 && M <= 128 && N >= 65 && N <= 128 && K <= 512 && K % 64 == 0)
    return AVX2_T2_SMALL;
  if (!trans_a && M > 1 && K >= 767 && (N >= 766 || (N >= 384 && M >= 64))) return AVX2_T2_COLS;
  if (trans_a || alpha != 1.0f || M < 2 || K % 64 || N % 64) return 0;
  const bool khalves = N <= 352 && K >= 768 && M >= 8 && (M <= 64 || (M <= 128 && K >= 1024));
  if (trans_b) return khalves ? AVX2_T2_KHALVES : 0; // B^T: the K halves only (the same edges)
  if (N <= 352 && K >= 768) {
    if (M <= 7) return N >= 128 ? AVX2_T2_COLS : 0;
    if (khalves) return AVX2_T2_KHALVES;
    return M <= 128 && N >= 128 ? AVX2_T2_COLS : 0;
  }
  if (M < 33 || N < 192 || (N <= 256 && M > 128)) return 0;
  return N <= 1280 || K <= 1024 ? AVX2_T2_COLS : 0;
}

// K in P balanced parts (part_start: the first K % P one longer), each on the big-product kernels:
// C = R(part 0 onto the bias, as its own product) + ((part 1 + part 2) + ... + part P-1), the later
// parts from zero. MKL's AVX2 K halves on 2 threads (avx2_two_threads) and its K cut on more
// (avx2_kcut). 0, or -1 without memory.
static int avx2_kparts(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float *C, int ldc,
                       int M, int N, int K, int threads, int P) {
  const f32_order h = {GM_F32_BLOCKS_AVX2_BIG, 1.0f, 1.0f};
  float *T = malloc(sizeof(float) * (size_t)M * N * (P > 2 ? 2 : 1));
  if (!T) return -1;
  float *U = T + (size_t)M * N; // part p > 1, before it joins T
  for (int p = 0; p < P; p++) {
    const int k0 = part_start(K, P, p), k1 = part_start(K, P, p + 1);
    const float *Bp = trans_b ? B + k0 : B + (size_t)k0 * ldb;
    matmul_order(A + k0, lda, Bp, ldb, trans_b, p == 0 ? bias : NULL, 1.0f, p == 0 ? C : p == 1 ? T : U, p == 0 ? ldc : N, M,
                 N, k1 - k0, threads, h);
    if (p > 1)
      for (size_t e = 0; e < (size_t)M * N; e++) T[e] += U[e];
  }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] += T[(size_t)i * N + j];
  free(T);
  return 0;
}

// MKL's AVX2 sgemm on t >= 3 threads, rows from 49 up to 16 t (measured 2026-12-07 under the avx2
// caps against torch's own 1-thread products of row blocks; M 2..263 on 3..16 threads at 768 x 768,
// GPT-2's (K, N) on 4 threads, and (K, N) of 256..3072 with B as stored and B^T on 3, 4, 6 and 8):
// the rows in p parts of ceil(M / p) (the last the rest), each part in its own 1-thread order (the
// 4..6-row kernels), p the smallest divisor of t that is at least 2 up to 96 rows, at least 3 above.
// Above 16 t rows MKL runs the big-product kernels, which 49..71 rows do not on one thread (3
// threads from 49 rows, 4 from 65; from 160 columns). Returns p (1: neither), or -1 for the
// big-product kernels.
// Only where K is at least 256 and N at least 256 (56 on up to 8 threads, with fewer column parts
// below; the attention's per-head products, K 64, run other orders) with B as stored or B^T, op(A)
// = A and alpha 1; at most 48 rows stay in the 1-thread order.
static int avx2_many_threads(int M, int N, int K, bool trans_a, float alpha, int t) {
  if (t < 3 || trans_a || alpha != 1.0f || K < 256 || M <= 48) return 1;
  if (N < 256 && (N < 56 || t > 8)) return 1;
  if (M > 16 * t) return M < 72 && N >= 160 ? -1 : 1;
  int p = M <= 96 ? 2 : 3;
  while (t % p) p++;
  if (N >= 256) return p;
  // Below 256 columns (up to 8 threads, measured 2026-12-07 at N 56..255): MKL's column parts d,
  // at most the t / p of the rule above, need N > 64 (d - 1): up to 64 columns none (t row parts),
  // 2 from 65, 3 from 129 (6 threads: 60 x 256 x 128 in thirds of the rows, x 129 in halves), 4
  // from 193 (8 threads, up to 96 rows: four row parts at N 160..190, two at 224). The rows go in
  // t / d parts.
  int d = t / p;
  while (d > 1 && (t % d || N <= 64 * (d - 1))) d--;
  return t / d;
}

// MKL's AVX2 sgemm on t >= 3 threads above 16 t rows (the big-product kernels): a grid of tm x tn
// blocks, each on the big-product kernels with its own leftover panels and row groups of four.
// tn = t up to N 767; from 770 the largest tn among t and the powers of two dividing t whose
// columns per block, ceil((N - 1) / tn), exceed 384 (1 if none): 4 threads run 1 x 4 to N 767,
// 2 x 2 for N 770..1537, 1 x 4 from 1538; 8: 4 x 2 from about 800, 2 x 4 from 1540, 1 x 8 from
// 3075; 6: 3 x 2 from about 800, 1 x 6 from 2306. Columns in blocks of ceil((N - 1) / tn), the last
// the rest; rows in tm balanced blocks (the first M % tm one longer), but where M % tm is 1 the
// last one longer. Measured 2026-12-07 under the avx2 caps by rebuilding torch's t-thread products
// from its own 1-thread products of the blocks (rows padded above by a multiple of four for the
// big-product kernels): 4 threads at N 256..2128 every 72 (M 200, K 256), 8, 6 and 3 at N
// 259..3235 every 96, 165 products of M 150..350 on 3..8 threads (every miss a block narrower than
// 72 columns), odd and even M on 4, 6, 8 and 12; N 3072..50257 (M 72..300, K 768 and 3072); and
// gptmeg against torch on 280 products (M 80..333, N 300..5000, K 256 and 768, B as stored and
// B^T, 3..6 and 8 threads): all equal but N 300 at 333 rows. Up to N 767 MKL splits the columns
// only where M < N, in blocks of any width (43 at N 256 on 6 threads), and from M = N the rows, t x
// 1, in blocks of ceil((M - 1) / t) rows, the last the rest (measured 2026-12-07 on M 60..372 x N
// 64..800 every 24 / 32 rows and columns, 3..6 and 8 threads, B and B^T, blocks padded with 72 zero
// columns before them for torch's 1-thread big-product kernels; the M = N edge at N 200 and 300 row
// by row); below 160 columns (128 from M = N) other grids (2 x 2 on 4 threads at N 128). From N 770
// blocks of at least 72 columns. The same rules hold on 7 and 9..16 threads (700 products of M
// 120..384 on 7, 9, 10, 11, 12, 14 and 16 threads: 632 equal, 186 with the grid on 3..6 and 8 only;
// GPT-2 124M's logits on 7, 9, 10 and 11 threads 5% -> 100%). Only from 49 rows (above 16 t) up to
// 384 (beyond, the grid depends on M too: 400 x 256 x 5000 is 3 x 1 on 3 threads, 2 x 2 on 4), K >=
// 256. Returns false where not modelled (one thread's order then runs).
typedef struct {
  int tm, tn, w; // w: the columns of every block but the last
  int h;         // 0: rows balanced; else the rows of every block but the last (t x 1 from M = N)
} avx2_grid;
static bool avx2_big_grid(int M, int N, int K, bool trans_a, float alpha, int t, avx2_grid *g) {
  if (trans_a || alpha != 1.0f || K < 256 || M <= 16 * t || M > 384) return false;
  if (t < 3 || t > 16) return false;
  // N 768 and 769 (torch's 1-thread bits on 6 threads at 100 and 150 rows, where 1 x 6 would show)
  if (N == 768 || N == 769) return false;
  int tn = t;
  if (N > 769) {
    tn = 1;
    for (int d = 2; d <= t; d++)
      if (t % d == 0 && (d == t || (d & (d - 1)) == 0) && (N + d - 2) / d > 384) tn = d;
  } else if (M >= N) {
    if (N < 128) return false; // (2 x 4 on 8 threads at N 96)
    g->tm = t, g->tn = 1, g->w = N, g->h = (M + t - 2) / t; // t x 1, rows as columns: ceil((M - 1) / t)
    return true;
  } else if (N < 160)
    return false; // other grids (2 x 2 on 4 threads at N 128)
  const int w = (N + tn - 2) / tn;
  // from N 770 every block (the last too) at least 72 columns; below, 1 x t at any width (20 at
  // N 160 on 8 threads), each block with its own leftover panels
  if (N > 769 && (w < 72 || N - (tn - 1) * w < 72)) return false;
  g->tm = t / tn;
  g->tn = tn;
  g->w = w;
  g->h = 0;
  return true;
}

// Block i [b0, b1) of n in `parts` blocks of `size`, the last the rest (MKL's split of the columns,
// and of the rows in t x 1; avx2_big_grid).
static void avx2_block(int n, int parts, int size, int i, int *b0, int *b1) {
  *b0 = i * size < n ? i * size : n;
  *b1 = i == parts - 1 || (i + 1) * size > n ? n : (i + 1) * size;
}

// Block i's rows [r0, r1) of M rows in tm blocks of h rows (avx2_block), or balanced (h = 0).
static void avx2_grid_rows(int M, int tm, int h, int i, int *r0, int *r1) {
  const int q = M / tm, r = M % tm;
  if (h > 0) {
    avx2_block(M, tm, h, i, r0, r1);
  } else if (r == 1) {
    *r0 = i * q;
    *r1 = i == tm - 1 ? M : *r0 + q;
  } else {
    *r0 = i * q + (i < r ? i : r);
    *r1 = *r0 + q + (i < r);
  }
}

// MKL's AVX2 sgemm on t >= 3 threads, few rows and columns against a long K (B as stored or B^T): K in t
// balanced parts (the first K % t one longer), each on the big-product kernels (also at 49..71
// rows, which one thread alone runs on the 4..6-row kernels), summed as C = (bias + part 0) +
// ((part 1 + part 2) + ... + part t-1) (avx2_kparts). Where MKL cuts K (measured 2026-12-07 under
// the avx2 caps, torch's product rebuilt from its own 1-thread products of the K slices):
//   - M of 49..378 and N of 72..378 (379 rows or columns: other orders), and K >= 3 M + N + 242 (at
//     K 1000..1700 every product with K - 3 M - N >= 242 cut, none with 241 or less, N 160..376);
//   - and either every part at least 378 deep (K >= 378 t: from 1512 on 4 threads, 1136 on 3, 2304
//     on 6, 3072 on 8), or more rows than the row parts take: M > 16 t (avx2_many_threads), and
//     with at most 128 columns M > 128.
// Mapped on M 16..560, N 96..384 and K 768..3072 (every 8 rows), 3, 4, 6 and 8 threads, with 5, 7,
// 12 and 16 at a few shapes, and against gptmeg on 50 products of 49..80 rows; below 49 rows MKL
// cuts in places too (K halves at 16..48 rows on 4..8 threads), not modelled. Returns the parts, 0
// for none.
static int avx2_kcut(int M, int N, int K, bool trans_a, float alpha, int t) {
  if (t < 3 || t > 16 || trans_a || alpha != 1.0f) return 0;
  if (M <= 48 || M > 378 || N < 72 || N > 378 || (long)K < 3L * M + N + 242) return 0;
  if ((long)K >= 378L * t) return t;
  return M > 16 * t && (N > 128 || M > 128) ? t : 0;
}

int gm_matmul_f32_torch_mt(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b,
                           const float *bias, float alpha, float *C, int ldc, int M, int N, int K, int threads,
                           int torch_threads) {
  if (M <= 0 || N <= 0) return 0;
  if (threads <= 0) threads = omp_get_max_threads();
  const gm_torch_target_info *ti = gm_torch_target_get_info(gm_torch_target_active());
  const gm_mkl_sgemm mkl = ti ? ti->mkl : GM_MKL_SGEMM_AMD_AVX512;
  const int kc = mkl == GM_MKL_SGEMM_INTEL_AVX2 ? avx2_kcut(M, N, K, trans_a, alpha, torch_threads) : 0;
  if (kc > 1) return avx2_kparts(A, lda, B, ldb, trans_b, bias, C, ldc, M, N, K, threads, kc);
  const int many = mkl == GM_MKL_SGEMM_INTEL_AVX2 ? avx2_many_threads(M, N, K, trans_a, alpha, torch_threads) : 1;
  if (many > 1) { // the row parts, each as one thread runs it alone
    const int rows = (M + many - 1) / many;
    for (int r0 = 0; r0 < M; r0 += rows) {
      const int rc = gm_matmul_f32_torch_mt(A + (size_t)r0 * lda, lda, false, B, ldb, trans_b, bias, 1.0f,
                                            C + (size_t)r0 * ldc, ldc, M - r0 < rows ? M - r0 : rows, N, K, threads, 1);
      if (rc) return rc;
    }
    return 0;
  }
  avx2_grid g;
  if (mkl == GM_MKL_SGEMM_INTEL_AVX2 && avx2_big_grid(M, N, K, trans_a, alpha, torch_threads, &g)) {
    const f32_order big = {GM_F32_BLOCKS_AVX2_BIG, 1.0f, 1.0f};
    for (int i = 0; i < g.tm; i++) {
      int r0, r1;
      avx2_grid_rows(M, g.tm, g.h, i, &r0, &r1);
      if (r1 <= r0) continue;
      for (int j = 0; j < g.tn; j++) { // each block on the big-product kernels
        int c0, c1;
        avx2_block(N, g.tn, g.w, j, &c0, &c1);
        if (c1 <= c0) continue;
        const float *Bc = trans_b ? B + (size_t)c0 * ldb : B + c0;
        matmul_order(A + (size_t)r0 * lda, lda, Bc, ldb, trans_b, bias ? bias + c0 : NULL, 1.0f, C + (size_t)r0 * ldc + c0,
                     ldc, r1 - r0, c1 - c0, K, threads, big);
      }
    }
    return 0;
  }
  int kp = alpha != 1.0f ? 1 : gm_f32_torch_kparts(mkl, M, N, K, trans_b, torch_threads);
  const int kg = trans_a || alpha != 1.0f || kp > 1 ? 0 : kgroups_uncut(mkl, M, N, K, trans_b, torch_threads);
  int groups = 1;
  const int nar = trans_a ? 0 : narrow_plan(mkl, M, N, K, trans_b, alpha, torch_threads, &groups);
  if (kg > 1) {
    const int rs = kgroups_rows(M, N, trans_b, torch_threads, kg);
    const int rb = (M + rs - 1) / rs; // blocks of ceil(M / rs) rows, the last the rest
    for (int r = 0; r < rs; r++) {
      const int r0 = r * rb < M ? r * rb : M, r1 = (r + 1) * rb < M ? (r + 1) * rb : M;
      if (r1 <= r0) break;
      kgroups_path(A + (size_t)r0 * lda, lda, B, ldb, trans_b, bias, C + (size_t)r0 * ldc, ldc, r1 - r0, N, K, threads,
                   kg);
    }
    if (nar) narrow_path(A, lda, B, ldb, bias, C, ldc, M, N, K, kg, groups, nar);
    return 0;
  }
  int ns = gm_f32_torch_nsplit(mkl, M, N, K, trans_b, alpha, torch_threads);
  f32_order o = order_for(M, N, K, trans_b, alpha);
  if (!trans_a && kp == 1) o.blocks = gm_f32_torch_blocks_mt(mkl, M, N, K, trans_b, alpha, torch_threads);
  // MKL's AVX2 sgemm on 2 threads (avx2_two_threads). Elsewhere it runs orders not modelled (e.g.
  // 2 x 740 x 768, 4 x 768 x 384, 72 x 768 x 72; and with A transposed): the 1-thread order runs.
  const int t2 = mkl == GM_MKL_SGEMM_INTEL_AVX2 && torch_threads == 2 ? avx2_two_threads(M, N, K, trans_a, trans_b, alpha)
                                                                      : 0;
  if (t2 == AVX2_T2_KHALVES && (o.blocks == GM_F32_BLOCKS_AVX2_256 || o.blocks == GM_F32_BLOCKS_AVX2_BIG))
    return avx2_kparts(A, lda, B, ldb, trans_b, bias, C, ldc, M, N, K, threads, 2);
  if (t2 == AVX2_T2_SMALL && o.blocks == GM_F32_BLOCKS_AVX2_BIG) o.blocks = GM_F32_BLOCKS_AVX2_256;
  if (many < 0 && o.blocks == GM_F32_BLOCKS_AVX2_256) o.blocks = GM_F32_BLOCKS_AVX2_BIG; // avx2_many_threads
  if (t2 == AVX2_T2_COLS && (o.blocks == GM_F32_BLOCKS_AVX2_256 || o.blocks == GM_F32_BLOCKS_AVX2_BIG)) {
    o.blocks = GM_F32_BLOCKS_AVX2_BIG;
    ns = N / 2;
  }
  if (trans_a && o.blocks == GM_F32_BLOCKS_AVX2_256) o.blocks = GM_F32_BLOCKS_AVX2_96;      // likewise, AVX2
  const int nc = ns ? 0 : gm_f32_torch_nchunks(mkl, M, N, K, trans_b, torch_threads);
  const int rc = blocked_rows(A, lda, trans_a, B, ldb, trans_b, bias, alpha, C, ldc, M, N, K, threads, o, kp, ns, nc);
  if (!rc && nar) narrow_path(A, lda, B, ldb, bias, C, ldc, M, N, K, 1, groups, nar);
  return rc;
}

int gm_matmul_f32_chains(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b, float *C, int ldc, int M,
                         int N, int K, int threads, gm_f32_blocks blocks) {
  if (M <= 0 || N <= 0) return 0;
  if (threads <= 0) threads = omp_get_max_threads();
  const f32_order o = {blocks, 1.0f, 1.0f};
  return blocked_rows(A, lda, trans_a, B, ldb, trans_b, NULL, 1.0f, C, ldc, M, N, K, threads, o, 0, 0, 0);
}
