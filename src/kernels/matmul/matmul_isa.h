// The matmul family's per-ISA bodies, declared once for the dispatchers (matmul_torch_f32.c,
// matmul_torch_f16.c, matmul_bf16.c) and the files that define them. Each gives, output by output,
// the bits of its dispatcher's scalar definition; the dispatchers choose from gm_cpu_simd().
#ifndef GPTMEG_KERNELS_MATMUL_ISA_H
#define GPTMEG_KERNELS_MATMUL_ISA_H

#include <stdbool.h>
#include <stdint.h>

#include "gptmeg/kernels.h"

// ---- kept scratch (matmul_scratch.c) -------------------------------------------------------------
// The calling thread's buffer for one slot, 64-byte aligned, at least `bytes` long, kept for the
// thread's next call (grown when too small; its contents are not kept across a growth); NULL when
// out of memory. A slot is in use by one call at a time on a thread: the slots below are distinct
// wherever one call nests inside another on the same thread.
typedef enum {
  GM_SCRATCH_F32_STRIP, // the f32 drivers' packed strips of B
  GM_SCRATCH_BF16_A,    // the bf16 product's pairs of A (the calling thread)
  GM_SCRATCH_BF16_B,    // a worker's strip of B pairs
  GM_SCRATCH_BF16_PART, // the K split's partial sums (all threads' parts, the calling thread)
  GM_SCRATCH_BF16_BALL, // all of B's pairs, when A is taken in row blocks (the calling thread)
  GM_SCRATCH_AMX_ACC,   // the AMX strip kernel's parked accumulators (matmul_bf16_amx.c)
  GM_SCRATCH_AMX_SUM,   // its finished K chunks
  GM_SCRATCH_AMX_BSEG,  // its aligned copy of a B segment
  GM_SCRATCH_SLOTS
} gm_scratch_slot;
void *gm_matmul_scratch(gm_scratch_slot slot, size_t bytes);

// The two bf16 of a packed pair w (low half first, as VDPBF16PS reads it) as f32, exactly.
static inline float bf16_pair_lo(uint32_t w) {
  const uint32_t u = w << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
static inline float bf16_pair_hi(uint32_t w) {
  const uint32_t u = w & 0xffff0000u;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

// oneDNN's fold of a one-row brgemm's 16 lane sums (bf16's pair lanes, f16's lanes): c[l] + c[l + 8],
// then + c[l + 4], then (c0 + c1) + (c2 + c3); c is overwritten.
static inline float onednn_fold16(float c[16]) {
  for (int l = 0; l < 8; l++) c[l] = c[l] + c[l + 8];
  for (int l = 0; l < 4; l++) c[l] = c[l] + c[l + 4];
  return (c[0] + c[1]) + (c[2] + c[3]);
}

// ---- f32, PyTorch's MKL order (matmul_torch_f32.c) ---------------------------------------------
// Every f32 body takes the K block schedule (gm_f32_blocks, gptmeg/kernels.h) and post: each
// block's sum is multiplied by post before it meets C (MKL's Intel kernels apply alpha there; 1,
// no multiplication, for the AMD kernel, which folds alpha into B).
// matmul_torch_f32_avx512.c: a strip of up to 64 columns of B [K, ldb] (already times alpha) for M
// rows; B^T's strip copied contiguous times alpha; a few rows against B^T in place; one row against
// B as stored.
void gm_f32_torch_strip_avx512(const float *A, int lda, const float *B, int ldb, int M, int ncols, int K,
                               const float *bias, float *C, int ldc, gm_f32_blocks blocks, float post);
void gm_f32_torch_pack_trans_avx512(const float *B, int ldb, int ncols, int K, float alpha, float *Bs);
// The blocked driver's pieces (Intel cores, matmul_torch_f32.c): one K block of kc for M rows
// against a packed, zero-padded strip Bs [kc, 64] (A at the block's first column; first: the
// block meets the bias, or is stored alone), and B as stored packed into strips of [kc, 64].
void gm_f32_torch_panel_avx512(const float *A, int lda, const float *Bs, int M, int ncols, int kc, bool first,
                               const float *bias, float *C, int ldc, float post);
void gm_f32_torch_pack_rows_avx512(const float *B, int ldb, int ncols, int kc, float alpha, float *Bs);
void gm_f32_torch_pack_trans_pf_avx512(const float *B, int ldb, int ncols, int K, float alpha, float *Bs);
// C [M, N] = A op(B) as one FMA chain from zero per output and K block of `blocks`, the blocks'
// sums added onto C in order (C = b1, C = C + b2, ...): no bias, no alpha. The f32 kernels and
// drivers of gm_matmul_f32_torch, for other libraries' chains (gm_matmul_f16_onednn: f16 values,
// exact products, so FMA or not gives the same bits). With trans_a, op(A) = A^T for A [K, M], made
// contiguous a row block (at most a few MiB) at a time; -1 when out of memory for that block.
int gm_matmul_f32_chains(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b, float *C, int ldc, int M,
                         int N, int K, int threads, gm_f32_blocks blocks);
// At [cols, rows] (row stride rows) = the transpose of X [rows, cols] (row stride ldx): op(A) = A^T
// made contiguous for gm_matmul_f32_torch_mt (bits copied, nothing computed).
void gm_f32_transpose_avx512(const float *X, int ldx, int rows, int cols, float *At);
void gm_f32_torch_rows_trans_avx512(const float *A, int lda, const float *B, int ldb, int M, int ncols, int K, float alpha,
                                    const float *bias, float *C, int ldc, gm_f32_blocks blocks, float post);
void gm_f32_torch_row_avx512(const float *a, const float *B, int ldb, int K, int ncols, float alpha, const float *bias,
                             float *C, gm_f32_blocks blocks, float post);
// MKL's one-row kernels with B as stored (gm_f32_torch_row8), ncols <= 1024 columns of B [K, ncols]
// from its first: the first n8 (a multiple of 16) in the Intel kernel's steps of 8, the rest one
// FMA chain each (the Intel kernel's leftover columns, every column of MKL's AVX2 kernel: n8 = 0).
void gm_f32_torch_row8_avx512(const float *a, const float *B, int ldb, int K, int ncols, int n8, float alpha,
                              const float *bias, float *C);
// MKL's AVX2 one-row kernel against B^T (gm_f32_torch_gemv8), columns j0..j1: C = fma(alpha, r, bias).
void gm_f32_torch_gemv8_avx2(const float *a, const float *B, int ldb, const float *bias, float alpha, float *C, int j0,
                             int j1, int K);
// matmul_torch_f32_avx2.c: the strip kernel, and one row against B^T in place.
void gm_f32_torch_strip_avx2(const float *A, int lda, const float *B, int ldb, int M, int ncols, int K,
                             const float *bias, float *C, int ldc, gm_f32_blocks blocks, float post);
// One row of C against B [K, ncols] in MKL's Intel AVX2 pair kernels' order (fma: their FMA form),
// K blocks by `blocks` (GM_F32_BLOCKS_AVX2_256, or _96 with op(A) = A^T).
void gm_f32_torch_pairs_avx2(const float *a, const float *B, int ldb, int ncols, int K, const float *bias, float *C,
                             float post, bool fma, gm_f32_blocks blocks);
void gm_f32_torch_row_trans_avx2(const float *a, const float *B, int ldb, int ncols, int K, float alpha,
                                 const float *bias, float *C, gm_f32_blocks blocks, float post);

// MKL's Intel dot kernel (GM_F32_BLOCKS_INTEL_DOT16): C[i][j] = fma(alpha, gm_f32_torch_dot16(row i
// of A, row j of B), bias[j]) (alpha * dot without bias), rows 0..M-1, columns j0..j1 of B^T [N, K].
// MKL's Intel one-row kernel against B^T (gm_f32_torch_gemv16), columns j0..j1 of N:
// C = fma(alpha, r, bias) (alpha * r without bias).
void gm_f32_torch_gemv_avx512(const float *a, const float *B, int ldb, const float *bias, float alpha, float *C, int N,
                              int j0, int j1, int K);
void gm_f32_torch_dot16_avx512(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha, float *C,
                               int ldc, int M, int j0, int j1, int K);
void gm_f32_torch_dot16_avx2(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha, float *C,
                             int ldc, int M, int j0, int j1, int K);

// matmul_peak_avx512.c / matmul_peak_avx2.c: twelve independent FMA chains over iters steps (the
// peak gm_f32_fma_peak_gflops measures); returns their sum so the work is kept.
float gm_fma_chains_avx512(long iters);
float gm_fma_chains_avx2(long iters);

// ---- f16 values, PyTorch's reduced-type orders (matmul_torch_f16.c) -----------------------------
// matmul_torch_f16_avx512.c: B as stored, a strip for M rows and one row (B f32 or f16 bits);
// B transposed, a block of rows [i0, i1) by columns [j0, j1) (B f32 or f16 bits).
void gm_dot4_strip_avx512(const float *A, int lda, const float *B, int ldb, int M, int K, int ncols, float alpha,
                          const float *bias, float *C, int ldc);
void gm_dot4_row_avx512(const float *a, const float *B, int ldb, int K, int ncols, float alpha, const float *bias, float *C);
// The same one-row kernels with one sum over all of K (ncols <= 1024): oneDNN's one-row chain.
void gm_chain_row_avx512(const float *a, const float *B, int ldb, int K, int ncols, float alpha, const float *bias, float *C);
void gm_chain_row_f16_avx512(const float *a, const uint16_t *B, int ldb, int K, int ncols, float alpha, const float *bias,
                             float *C);
void gm_dot4_row_f16_avx512(const float *a, const uint16_t *B, int ldb, int K, int ncols, float alpha, const float *bias,
                            float *C);
void gm_matmul_trans_block_avx512(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha,
                                  float *C, int ldc, int i0, int i1, int j0, int j1, int K);
void gm_trans_block_f16_avx512(const float *A, int lda, const uint16_t *B, int ldb, const float *bias, float alpha, float *C,
                               int ldc, int i0, int i1, int j0, int j1, int K);
// n f16 bits widened to f32 (exact), VCVTPH2PS.
void gm_f16_widen_avx512(const uint16_t *h, float *out, size_t n);
// matmul_torch_f16_avx2.c: one B-transposed dot product, ATen's fp16_dot_with_fp32_arith order.
float gm_dot_f32arith_avx2(const float *x, const float *y, int K);
// matmul_torch_f16.c (scalar, shared with the AVX-512 file): that order's part after the 64-element
// blocks, main_sum the blocks' folded sum.
float gm_dot_f32arith_tail(const float *x, const float *y, int K, float main_sum);

// ---- bf16, oneDNN's order (matmul_bf16.c) ---------------------------------------------------------
// matmul_bf16_plan.c: the AMX order's plan for one product under intel-amx, in pairs of K, from
// oneDNN 3.13's blocking (onednn_amx.h): K segments start[0] = 0 < ... < start[n_seg] =
// ceil(K/2), each summed on its own from zero in chunks of `chunk` pairs from its start (0: one
// chunk); the segments are oneDNN's threads' parts of K, added in order ((S0 + S1) + S2) ...,
// except that with `tail` the last segment is the K tail's own call (the partial 32-element tile)
// and joins the segment before it (that part's sum is S + T) instead of being a part of its own.
// Segment t's tiles hold tile[t] pairs each (16, or fewer where oneDNN's tiles divide its calls:
// onednn_amx.h, tile and last_tile; the last call then is a tail segment of its own when its tiles
// differ from the other calls'). with_sum: a bias (torch's addmm and linear give oneDNN a sum
// post-op); batch: slices of a 3-D product (1 for 2-D). Returns false where the model does not
// reach (oneDNN's GEMV path for N = 1, dimensions past 2^21): then one
// chunk, no split, tiles of 16 pairs.
enum { GM_BF16_AMX_MAX_SEGS = 65 };
// not_amx: oneDNN declines AMX for this shape (the small shapes of onednn_amx.h, GM_AMX_NOT_AMX)
// and its AVX512_CORE_BF16 brgemm runs it: one VDPBF16PS chain per output (matmul_bf16.c, ORDER_VDP).
typedef struct {
  int chunk, n_seg;
  bool tail, not_amx;
  int start[GM_BF16_AMX_MAX_SEGS + 1];
  int tile[GM_BF16_AMX_MAX_SEGS];
} gm_bf16_amx_plan;
bool gm_bf16_amx_plan_for(int M, int N, int K, bool trans_a, bool trans_b, bool with_sum, int threads, int batch,
                          gm_bf16_amx_plan *out);
// matmul_bf16_avx512.c (AVX512-BF16): a strip of pre-paired B for M rows of pre-paired A.
void gm_bf16_strip_avx512bf16(const uint32_t *Ap, int P, int Pb, const uint32_t *Bs, int ldbs, int M, int ncols,
                              float alpha, const float *bias, float *C, int ldc);// The intel-amx one-row order (one f32 chain over k), same arguments less the block size.
void gm_bf16_seq_strip_avx512(const uint32_t *Ap, int P, const uint32_t *Bs, int ldbs, int M, int ncols, float alpha,
                              const float *bias, float *C, int ldc);
// The intel-amx one-row B-transposed order (16 lane chains of VDPBF16PS steps, then a fixed
// reduction: matmul_bf16.c, ORDER_ROW16), same arguments (AVX512-BF16).
void gm_bf16_row16_strip_avx512(const uint32_t *Ap, int P, const uint32_t *Bs, int ldbs, int M, int ncols, float alpha,
                                const float *bias, float *C, int ldc);

// matmul_bf16_pack_avx512.c: matmul_bf16.c's pair packing (the same words): op(B) [K, N] into rows
// of stride ldp (only p < ceil(K/2), j < N written), and A [M, K] into rows of ceil(K/2) pairs at
// a row stride of ldp pairs (only p < ceil(K/2) written).
void gm_bf16_pack_cols_avx512(const float *B, int ldb, bool trans_b, int K, int N, uint32_t *Bp, int ldp);
void gm_bf16_pack_rows_avx512(const float *A, int lda, int M, int K, uint32_t *Ap, int ldp);
// The same rows for op(A) = A^T (A [K, M], row stride lda).
void gm_bf16_pack_rows_t_avx512(const float *A, int lda, int M, int K, uint32_t *Ap, int ldp);
// Output strip t (32 columns, every row) of gm_bf16_pack_transposed: Bp the pairs of op(B) [K, N].
void gm_bf16_transpose_strip_avx512(const uint32_t *Bp, int K, int N, int t, uint32_t *dst);
// matmul_bf16_amx.c (AMX-BF16 tiles, the intel-amx order): a strip of pre-paired B (row stride
// ldbs pairs, 32 columns, ncols of them kept) for M rows of pre-paired A (P pairs a row, rows lda >=
// P pairs apart: a padded stride keeps a tile's 16 rows off one L1 set, matmul_bf16.c); K chunks
// of Pc pairs (a multiple of Pt; 0: one chunk), each in tiles of Pt pairs (1..16) from its start,
// the last one partial. gm_bf16_amx_ready asks Linux for the tile state once per process (false
// when refused: then the scalar twin runs).
bool gm_bf16_amx_ready(void);
void gm_bf16_strip_amx(const uint32_t *Ap, int P, int lda, int Pc, int Pt, const uint32_t *Bs, int ldbs, int M, int ncols,
                       float alpha, const float *bias, float *C, int ldc);
// matmul_bf16_amxemu_avx512.c (AVX-512F): the same order and arguments, without tiles (a host
// with the AVX-512 level whose AMX tiles are absent or off).
void gm_bf16_strip_amxemu_avx512(const uint32_t *Ap, int P, int lda, int Pc, int Pt, const uint32_t *Bs, int ldbs, int M,
                                 int ncols, float alpha, const float *bias, float *C, int ldc);
// matmul_bf16_amxemu_avx2.c (AVX2): the same order and arguments on the AVX2 level.
void gm_bf16_strip_amxemu_avx2(const uint32_t *Ap, int P, int lda, int Pc, int Pt, const uint32_t *Bs, int ldbs, int M, int ncols,
                               float alpha, const float *bias, float *C, int ldc);

#endif
