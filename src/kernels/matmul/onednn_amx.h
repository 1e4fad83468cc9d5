// oneDNN 3.13's K blocking for torch 2.15's bf16 products on AMX (the intel-amx target), a port of
// tools/ref/onednn_amx_blocking.py (validated against torch probes; see that file for the rules in
// words). No numerics here: it only says where oneDNN starts a fresh f32 accumulation along K.
//
// Contract. For C[M,N] = op(A)[M,K] @ op(B)[K,N] run by torch on nthr threads (torch.addmm: sum
// post-op; torch.mm / torch.matmul / F.linear without bias: none; F.linear with bias: trans_b and
// sum; A^T given: trans_a), oneDNN's brgemm matmul sums every output as follows:
//   * K is cut into calls of `chunk` elements from 0 (0: one call for all of K). A call sums its
//     32-element tiles in AMX tiles from zero (per tile C += (E + O), E and O the even- and
//     odd-index product chains in f32) and its result is added in f32 to the running sum.
//   * tail == 1: the last partial 32-element tile, starting at K - K % 32 (not a multiple of
//     chunk), is a call of its own from zero, added in f32 after the last chunk's full tiles. Its
//     missing elements act as zeros. (When chunk is a multiple of 32 and K % chunk != 0 the last
//     call simply has K % chunk elements, tiles then partial tile; tail is 0 then.)
//   * n_parts > 1: the calls are shared between n_parts threads; part i starts at element
//     part_start[i] (a multiple of chunk) and sums its own calls in order into its own f32 partial
//     sum; the partial sums are then added in part order, ((P0 + P1) + P2) + ...
//   * tile, last_tile: the K elements of one TDPBF16PS (an even number, at most 32) in every call
//     but the last, and in the last call (K % chunk elements, or all of K for one call). 32 unless
//     K % 32 != 0 under the macro heuristic where oneDNN skips its "extendable K" (every call
//     splits into equal even tiles: skip_extendable_k) and does not copy A inside the kernel
//     (use_fused_copy_a): a call of r elements then runs tiles of the largest even i <= 32 dividing
//     r (brgemm's rd_block), none partial (K 300 in one call: ten tiles of 30). With 32, a call's
//     tiles start at its start and its last tile may be partial (zero-padded).
// The float arithmetic of oneDNN's cost models is done in binary32 in oneDNN's order so that ties
// resolve the same way. Cache sizes: GM_AMX_L1D, GM_AMX_L2 (Sapphire / Emerald / Granite Rapids).
#ifndef GPTMEG_KERNELS_MATMUL_ONEDNN_AMX_H
#define GPTMEG_KERNELS_MATMUL_ONEDNN_AMX_H

#include <stdbool.h>

enum { GM_AMX_MAX_PARTS = 64 };

typedef struct {
  int chunk;   // K elements one brgemm call accumulates in tiles from zero; 0: all of K in one call
  int tile;    // K elements of one tile in every call but the last (even, <= 32)
  int last_tile; // K elements of one tile in the last call
  int tail;    // 1 when the last partial tile (from K - K % 32) is its own call from zero, else 0
  int n_parts; // threads K is split between (1: no split)
  int part_start[GM_AMX_MAX_PARTS]; // element where part i starts; part_start[0] = 0; parts added in order
} gm_amx_blocking;

// oneDNN 3.13's choice for C[M,N] = op(A)[M,K] @ op(B)[K,N] on nthr threads (torch 2.15's bf16 products
// on AMX), one of `batch` slices of a 3-D product (torch.bmm: the attention's products over batch x
// heads; 1 for a 2-D product): 0 (*out set), or
//   GM_AMX_NOT_ONEDNN (-2): batch * M * N * K <= 4096: torch does not call oneDNN at all (ATen's
//       mkldnn_gemm / checksize bound 16 * 16 * 16), ATen's own bf16 gemm sums it;
//   GM_AMX_NOT_AMX (-3): oneDNN runs it without AMX (brg_matmul:avx512_core_bf16): M == 1 or N == 1
//       (its GEMV path), or the "small shape" AMX declines (2 bytes * M_blk * LDA <= 126 for the AMX
//       blocking it would use, e.g. M 2 K 31, M 3 K 16 with N large enough to pass the 4096 bound);
//   -1 when not modelled (an odd K > 32 where the micro heuristic decides for A as stored; more parts
//       than GM_AMX_MAX_PARTS; a dimension over 2^21).
// In the negative cases *out is not the order torch uses. An odd K under the macro heuristic (the
// lm_head's dX, K 50257) is modelled and validated.
enum { GM_AMX_NOT_ONEDNN = -2, GM_AMX_NOT_AMX = -3 };
int gm_onednn_amx_blocking(int M, int N, int K, bool trans_a, bool trans_b, bool with_sum, int nthr, int batch,
                           gm_amx_blocking *out);

// ---- shared by onednn_amx.c (entry, micro heuristic) and onednn_amx_macro.c -----------------------
// The machine as oneDNN reads it (CPUID leaf 4, per core): the intel-amx target's cores.
enum {
  GM_AMX_L1D = 48 * 1024,      // L1 data cache per core
  GM_AMX_L2 = 2048 * 1024,     // L2 per core
  GM_AMX_L2_WAYS = 16,         // L2 associativity
  GM_AMX_L2_SETS = 2048,       // L2 sets
  GM_AMX_CACHE_LINE = 64,      // bytes
  GM_AMX_WEI_K_BLK = 32,       // K elements of one bf16 tile (16 VNNI pairs)
  GM_AMX_BLK_CANDIDATES = 3000 // bound on a dimension's block candidates (dimensions <= 2^21: at most 2897)
};

// The K blocking a heuristic settles on: calls of k_blk * bs elements (bs: brgemm batch size),
// threads' shares in chunks of k_blk * k_chunk_size * bs elements, nthr_k threads along K; m_blk
// (rows of A per brgemm call) and lda (A's row length as the kernel reads it: K for a plain A, the
// copied A's otherwise) decide whether AMX declines the product as a "small shape"; macro says the
// macro heuristic chose it and fused_copy_a that it copies A inside the kernel (both decide the
// K tiles of a K that is not a multiple of 32).
typedef struct {
  int k_blk, k_chunk_size, bs, nthr_k, m_blk, lda;
  bool macro, fused_copy_a;
} gm_amx_kconf;

// The macro heuristic (matmul_amx_blocking_params_macro_t) for A as stored, one of `batch` slices: 1
// with *out set, 0 when it does not apply (its best score is 0: the micro heuristic decides), -1
// beyond the bounds.
int gm_onednn_amx_macro(int M, int N, int K, bool trans_b, int nthr, int batch, gm_amx_kconf *out);

#endif
