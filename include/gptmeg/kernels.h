// gptmeg kernels: the f32 kernels of the GPT-2 forward (matmul, layer norm, softmax, rounding).
// Every kernel gives the same bits for any thread count: each output has one fixed order of
// operations, whichever thread computes it.
#ifndef GPTMEG_KERNELS_H
#define GPTMEG_KERNELS_H

#include "gptmeg/core.h"
#include "gptmeg/target.h"

#include <stdbool.h>
#include <stddef.h>

// x[i] = round_to_dt(x[i]) in place (RNE; the identity for f32). dt is F32, F16 or BF16.
void gm_round_inplace(gm_dtype dt, float *x, size_t n);
// y[i] = round_to_dt(x[i]) (the bits of gm_round_inplace on a copy, in one pass where it can); y
// may be x. threads (from 2 up, for 65536 elements and more) share it in whole 64-byte lines.
void gm_round_copy(gm_dtype dt, const float *x, float *y, size_t n, int threads);
// x[i * ld + j] rounded to dt in place for i < rows, j < cols: gm_round_inplace row by row, the
// SIMD level chosen once.
void gm_round_rows(gm_dtype dt, float *x, size_t ld, int rows, int cols);
// y[i] = bits of x[i] rounded to dt (F16 or BF16, RNE); and back, exactly.
void gm_f32_to_dtype_buf(gm_dtype dt, const float *x, uint16_t *y, size_t n);
void gm_dtype_to_f32_buf(gm_dtype dt, const uint16_t *x, float *y, size_t n);

// Every kernel here runs the widest code gm_cpu_simd() allows (gptmeg/cpu.h: the CPU's level capped
// by GPTMEG_SIMD=scalar|avx2|avx512); every level gives the same bits.

// C[M, N] (row stride ldc) = A[M, K] (stride lda) @ op(B) [+ bias[N]], f32 in, f32 out.
// op(B) = B [K, N] (stride ldb) or, with trans_b, B^T for B [N, K] (stride ldb). alpha scales A@B.
// The same product in PyTorch 2.15's f32 CPU order on AVX-512 x86 (MKL's sgemm as torch calls it
// when A has 4 or more rows; matmul_torch_f32.c): K cut into blocks (gm_f32_torch_block_end), one
// FMA chain per output and block from zero over a[k] * R(alpha * b[k]) (MKL scales B as it packs
// it), the blocks added in order onto the bias. The forward's f32 products; bit for bit torch's
// addmm/linear/mm/bmm/baddbmm on this machine class when A has >= 4 rows and op(B) >= 12 columns
// (tests/test_ops.c). One row takes the same order (torch's one-row kernels differ), so a
// decoded row equals its row of a full forward. Any thread count and any choice of rows give
// the same bits; without AVX-512 the scalar definition runs (same bits, slower).
void gm_matmul_f32_torch(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                         float *C, int ldc, int M, int N, int K, int threads);
// On AVX-512 the packed products run one of two drivers with the same bits: the strip driver
// (each 64-column strip of B copied whole, every row of A against it: shaped on Zen 4) or, on Intel
// CPUs, the blocked one (per K block, four strips packed together, 192-row panels of A against
// them). GPTMEG_F32_GEMM=strip|blocked picks one (tests, `gptmeg bench gemm`), read on every call.
// The f32 FMA peak of `threads` cores at the kernels' SIMD level, GFLOP/s (2 per lane and FMA):
// independent FMA chains timed for about 0.25 s; 0 without SIMD. The ceiling of `gptmeg bench gemm`.
double gm_f32_fma_peak_gflops(int threads);
// The scalar definition of the same order, the active target's (the tests' reference).
void gm_matmul_f32_torch_scalar(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias,
                                float alpha, float *C, int ldc, int M, int N, int K);
// End of the K block that starts at k0: K <= 192 one block; K below 384 two halves (odd K: halves
// of K - 1, then the last element alone); from 384 on blocks of 192, then the rest.
int gm_f32_torch_block_end(int K, int k0);
// The torch CPU target decides the order (gm_torch_target_active(), its mkl row). Under MKL's Intel
// AVX-512 sgemm (intel-amx, intel-avx512-bf16, intel-avx512 targets; tools/ref/probe_f32_intel.py):
// K in blocks of 384: a rest of at most 384 is one block; a rest below 768 two blocks, the first
// ceil(rest / 2) long, and alpha multiplies each block's sum (MKL's small-matrix path,
// GM_F32_BLOCKS_INTEL_HALVES): one FMA chain from zero per block over a[k] * b[k]; C = bias
// (beta * C), then C = C + R(alpha * block) block by block (no bias: C starts as the first
// R(alpha * block)). Its packed path (B as stored: M >= 192 and N >= 192; B transposed: M >= 16 and
// N >= 192, or K <= 64 and N >= 64) cuts a K below 768 in two halves (the first ceil(K / 2) long)
// and a longer K into blocks of 384 then the remainder, and folds alpha into B as on zen4
// (GM_F32_BLOCKS_INTEL_384; the halves measured 2026-12-06, before which K 385..767 was wrong). Exact against torch (one thread) for every M >= 2 with B
// as stored and for B transposed from 2 rows on (N >= 4; see the dot kernel below); one row
// against B^T runs MKL's one-row kernel (GM_F32_BLOCKS_INTEL_GEMV; C = fma(alpha, r, bias), alpha *
// r without bias: a decode step's baddbmm scores), one row against B as stored its other one-row
// kernel (GM_F32_BLOCKS_INTEL_ROW8, any alpha); B transposed with N <= 3 below the dot kernel's K
// sums in other orders not reproduced here (the same schedule runs there). The schedule depends on M and N: under Intel targets the rows of a big
// product computed alone may differ from the product's rows (never for K a multiple of 384 or
// K <= 768, GPT-2's shapes). MKL's Intel AVX2 kernels (avx2 target; GM_F32_BLOCKS_AVX2_256) are
// reproduced only in part: K in blocks of 256 (a rest of at most 256 one block, a rest below 512
// two blocks, the first ceil(rest / 2) long), one FMA chain from zero per block, C = bias, then
// C = C + R(alpha * block) block by block; that is its kernel for groups of 4 to 6 rows (M = 4, 5, 6,
// 1 thread, any K, B as stored or transposed). Its 2-row kernel (the last 2 rows of M = 8, M = 2)
// sums even and odd k in two chains without FMA (R(a*b) then add), its 8-row and leftover-column
// paths differ again: not reproduced. B transposed with 2..15 rows, N >= 2 and K >= 24 * M runs MKL's dot kernel
// (GM_F32_BLOCKS_INTEL_DOT16, no K blocks; tools/ref/probe_f32_tree.py): each output is a dot
// product of a row of A and a row of B in 16 lanes (lane l: the FMA chain from zero over k = l,
// l + 16, ...), reduced as 4 groups of 4 lanes added in order (g = ((l0-3 + l4-7) + l8-11) +
// l12-15, lane by lane), then (g0 + g1) + (g2 + g3); C = fma(alpha, dot, bias) (alpha * dot
// without bias).
typedef enum {
  GM_F32_BLOCKS_ZEN4 = 0,
  GM_F32_BLOCKS_INTEL_HALVES,
  GM_F32_BLOCKS_INTEL_384,
  GM_F32_BLOCKS_INTEL_DOT16,
  GM_F32_BLOCKS_AVX2_256,
  GM_F32_BLOCKS_INTEL_GEMV, // MKL's Intel AVX-512 one-row kernel against B^T (gm_f32_torch_gemv16)
  GM_F32_BLOCKS_INTEL_SPLIT, // each part of MKL's Intel AVX-512 K cut (gm_matmul_f32_torch_mt): INTEL_384's schedule
  GM_F32_BLOCKS_ONEDNN_F16,  // oneDNN's f16 chains under intel-amx (gm_matmul_f16_onednn): 512 for K <= 1024, else 1024
  GM_F32_BLOCKS_ONEDNN_F16_TA, // the same with A transposed: 512 at any K
  GM_F32_BLOCKS_AVX2_BIG,      // MKL's Intel AVX2 kernels for big products: K >= 384 in blocks of 192 (the rest one
                               // block), else AVX2_256's; every row alike; columns in panels of 24 (matmul_torch_f32.c)
  GM_F32_BLOCKS_AVX2_96,       // AVX2_256's kernels with op(A) = A^T: blocks of 96 (a rest of at most 96 one block,
                               // below 192 two halves, the first ceil(rest / 2) long)
  GM_F32_BLOCKS_INTEL_ROW8,    // MKL's Intel AVX-512 one-row kernel with B as stored (gm_f32_torch_row8)
  GM_F32_BLOCKS_AVX2_ROW,      // MKL's AVX2 one-row kernel with B as stored: one FMA chain over K from the bias
                               // (gm_f32_torch_row8 with row8 false for every column)
  GM_F32_BLOCKS_AVX2_GEMV8     // MKL's AVX2 one-row kernel against B^T (gm_f32_torch_gemv8)
} gm_f32_blocks;
// MKL's AVX2 one-row kernel against B^T (avx2 target; measured on live torch 2.15 under
// MKL_ENABLE_INSTRUCTIONS=AVX2, 1 and 2 threads, K 13..50257, N 20..50257, tools/ref/probe_f32_row8.py
// --avx2): one output a . b over K in 8 lanes, lane l the FMA chain from zero over k = l, l + 8, ...;
// h = (c0 + c1, c2 + c3, c4 + c5, c6 + c7), r = (h0 + h2) + (h1 + h3). C = fma(alpha, r, bias)
// (alpha * r without bias); threads never change it.
float gm_f32_torch_gemv8(const float *a, const float *b, int K);
// MKL's Intel AVX-512 one-row kernel with B as stored (M = 1: a decode step's Conv1D; measured on
// live torch 2.15, tools/ref/probe_f32_row8.py): one output of a [K] against column b (stride
// apart), from s (the bias, zero without). Columns in whole groups of 16 of N (row8 true) take K in
// steps of 8, with x_i = R(alpha * a[k0 + i]) and b_i = b[k0 + i]: s = fma(x6, b6, s);
// s = fma(x4, b4, s); s = s + fma(x5, b5, R(x7 b7)); s = s + (fma(x0, b0, R(x2 b2)) +
// fma(x1, b1, R(x3 b3))); then the last K % 8 products one FMA each onto s. The N % 16 leftover
// columns (row8 false): one FMA chain over all k from s.
float gm_f32_torch_row8(const float *a, const float *b, size_t stride, int K, float alpha, bool row8, float s);
// The three column kinds of that kernel (matmul_torch_f32.c), and one output in its order (before
// the bias).
typedef enum { GM_F32_GEMV_MAIN = 0, GM_F32_GEMV_ONE, GM_F32_GEMV_TWO } gm_f32_gemv;
float gm_f32_torch_gemv16(const float *a, const float *b, int K, gm_f32_gemv kind);
int gm_f32_torch_block_end_for(gm_f32_blocks blocks, int K, int k0);
// The schedule gm_matmul_f32_torch runs for this shape under mkl.
gm_f32_blocks gm_f32_torch_blocks(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b);
// MKL's Intel dot kernel's order for one output (GM_F32_BLOCKS_INTEL_DOT16), before alpha and bias.
float gm_f32_torch_dot16(const float *a, const float *b, int K);
// MKL's Intel kernel for a chunk of 1..3 columns of B^T its threads leave over, one output before
// the bias: 16 lanes, two sets over steps of 32 for an even row (two), one for an odd row, halved.
float gm_f32_torch_narrow_dot(const float *a, const float *b, int K, bool two);
// gm_matmul_f32_torch as torch computes it on torch_threads threads (the work still runs on
// `threads`): MKL's Intel AVX-512 sgemm (intel-amx, intel-avx512[-bf16|-fp16] targets) on an even
// thread count cuts K of a tall-K product into parts (gm_f32_torch_kparts; 1: no cut): on 2 threads
// in two for K > 768, K >= 8 M, N >= 16, M N K > 192000 (tools/ref/probe_f32_mt.py: 2 x 1000 x 96
// runs one thread, 2 x 1001 x 96 splits), not its dot or one-row kernels (found with
// tools/ref/probe_linear_bwd.py; one row against B as stored has its own cut, below; few rows
// (B as stored up to 15 or 16, and the dot kernel's shapes of 4..15 rows, B^T, neither K nor N a
// multiple of 256) cut into the parts below where K > 768, K >= 378 t, and N >= 378 t or N <= 378,
// on odd thread counts too where N <= 378 and M >= 8); on 4, 6, ...
// threads, where also N >= 256, M >= 17 (B as stored) or M >= 65 (B^T), min(M, N) <= K / 8 (and <= 384 on 4 threads, 768 on 8),
// and, when neither K nor N is a multiple of 256, M > 28 t or K, N >= 378 t, into the largest
// divisor of the thread count (of half of it from N = 2048 on 8 or more threads) that is at most
// ceil(K / 384) (probe_f32_mt.py --kparts, 4..16 threads). Part p is K / P long, one longer for the
// first K % P; each is summed alone (GM_F32_BLOCKS_INTEL_SPLIT: a part below 768 in two halves, the
// first ceil(len / 2) long, else blocks of 384 then the rest; one FMA chain from zero per block,
// blocks added in order), the first onto the bias, the others added in order, then
// C = first + rest. With alpha != 1 (not measured), on other targets, on odd thread counts (torch
// gave the 1-thread bits on 3, 5, ... 15 threads where these rules cut), or outside the measured
// region (fewer rows or columns on 4 or more threads: torch runs the 1-thread order or others
// there) it is gm_matmul_f32_torch. 0, or -1 when op(A)'s copy (trans_a) cannot be allocated
// (without trans_a it cannot fail: without memory for the parts' scratch the split runs element by
// element).
int gm_f32_torch_kparts(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, int torch_threads);
// Few rows (2..16 against B as stored; 2..128 against B^T, outside MKL's dot kernel or in its
// shapes that leave it) against N <= 64 t columns on t >= 8 threads, where gm_f32_torch_kparts
// does not cut: MKL cuts K into kg parts, kg the largest divisor of t with 4 kg <= t and 192 kg <=
// K (12 threads: 3 parts of 768; 16..64 threads: 4; 48 threads: 12 of 3072). Part q is K [q L,
// min((q + 1) L, K)), L = ceil(K / kg) rounded up to a multiple of 4, summed in
// GM_F32_BLOCKS_INTEL_HALVES's blocks, part 0 onto the bias; the rows fall in kg balanced groups
// (the first M % kg one longer) and group g adds part g next, then the others in order; B^T of
// 65..128 rows in row blocks, each with its own groups, where t / kg is 4 or 5 (up to 128
// columns). Only where measured: the t / kg column chunks at least 16 columns wide (B^T of 16..64
// rows from 33 or 16 (t / kg - 2) + 1 columns, of 65..128 from 33, 48 or 64 t / kg), M N K >=
// 40000 t or >= 2^20 (two parts from M N K > 292500, or > 320320 where t / kg is odd), and with
// B^T no last chunk of 3 columns for three parts or more (elsewhere MKL also splits the rows or
// runs other cuts: not modelled; a last chunk of 1 or 2 columns: gm_f32_torch_narrow). The number
// of parts (> 1), or 0 where this does not apply; gm_matmul_f32_torch_mt runs it (alpha = 1, no
// trans_a: others not measured). Measured on
// 8..64 threads (tools/ref/probe_f32_mt.py --orders with tools/ref/probe_f32_orders.c's grouped
// candidates; 1500 random shapes in that region bit-identical).
int gm_f32_torch_kgroups(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, int torch_threads);
// The schedule torch runs on torch_threads threads where it does not cut K (gm_f32_torch_kparts
// gives 1), when it differs from the 1-thread one (gm_f32_torch_blocks), under MKL's Intel AVX-512
// sgemm (where it cuts K: gm_f32_torch_blocks; the cut's parts run GM_F32_BLOCKS_INTEL_SPLIT):
//   - the packed order GM_F32_BLOCKS_INTEL_384 for B as stored below 192 rows (one thread packs only
//     from 192) where MKL shares the product out: K 769..1535, K < 8 M, N >= 384 on even thread
//     counts (any size a multiple of 256 in K or N; else M > 28 t, or K and N >= 378 t); on odd
//     ones from K 769, few rows where K >= 378 t and N >= 378 t or N <= 378, more with N >= 384;
//   - the unpacked order GM_F32_BLOCKS_INTEL_HALVES for B^T of 16..64 rows, K > 768, on 3 or more
//     threads with N > 64 t, except on odd ones where K and N >= 378 t (GPT-2 medium's lm_head at
//     up to 64 tokens); and for the packed products (B^T from 65 rows, B as stored from 192) where
//     MKL does not share them out (XL's lm_head at 65..191 tokens on 5 to 8 threads);
//   - MKL's dot kernel's shapes (B^T, 4..15 rows, neither K nor N a multiple of 256, M N K above
//     an edge by thread count: 192000 on 2, 144000 on 3, 128000 on 4, 256000 on even t from 6,
//     260000 on odd t from 5): GM_F32_BLOCKS_INTEL_384 on odd thread counts where K >= 378 t and
//     N >= 378 t or N <= 378, else GM_F32_BLOCKS_INTEL_HALVES (GPT-2 XL's lm_head at 4..15 tokens;
//     on 8 or more threads where gm_f32_torch_kgroups does not cut K too).
// alpha != 1: only the packed order (the others are not measured). docs/numerics.md, "Torch CPU
// targets", has the measurements.
gm_f32_blocks gm_f32_torch_blocks_mt(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, float alpha,
                                     int torch_threads);
// The K split holds with a bias too (alpha = 1; tools/ref/probe_f32_mt.py: GPT-2's MLP c_proj, addmm
// 3072 -> 768, M 2..384): C = (bias + first part) + rest, the first part's blocks added onto
// the bias; one row with B as stored (GM_F32_BLOCKS_INTEL_ROW8) cuts K into torch_threads parts
// where K >= 128 t and N < 501 t (41 <= N <= 69: from K = 1000), on any thread count t, and adds the
// bias last: C = bias + (((part 0 + part 1) + part 2) + ...). MKL's one-row kernel against B^T
// (GM_F32_BLOCKS_INTEL_GEMV: the lm_head of a decode step) on 2 threads splits the columns at
// ns = ceil(N / 2) once N reaches a minimum that falls with K (matmul_torch_f32.c's table, measured
// on N = 8 q + 1; 41 at K = 768): columns [0, ns) and [ns, N) run as two products, each with its
// own N % 4 leftover columns, alpha or not. gm_f32_torch_nsplit gives ns, or 0 (other targets,
// thread counts, kernels). Both depend only on torch_threads, never on `threads`. The K split's
// rule is exact on GPT-2's products; B as stored with M <= 16 and 379 <= N <= 755 does not split
// (MKL shares the columns out); elsewhere torch's region differs (17..56 rows in that band of N do
// not split at some K; with K < 8 M and small N it does):
// docs/numerics.md, "f32 on 2 threads".
// MKL's one-row B^T kernel (GM_F32_BLOCKS_INTEL_GEMV) on 3 or more threads: the columns in
// torch_threads balanced chunks (the first N % t one longer), each chunk's leftover columns its own
// (measured on 3, 4, 6 and 8 threads, K 768 and 1024, N 4097..50257; below N = 8192 on 3..8 threads
// from the N where the 2-thread split starts, measured at K 256..3072, N 16..5000). The number of
// chunks, or 0 where it does not apply (other kernels, 2 threads: gm_f32_torch_nsplit, K < 256, or
// below N = 8192 below that start; on 9..32 threads below 8192 where a thread would get fewer
// than 2280 multiply-adds (9..12 threads) or 4700 or 3 columns (13..32), MKL runs one chunk; on
// more than 32 threads below 8192: not measured, one chunk runs).
int gm_f32_torch_nchunks(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, int torch_threads);
// The last 1..3 columns of B^T that MKL's threads run in gm_f32_torch_narrow_dot's order on
// torch_threads threads (the dot kernel's shapes where they run the unpacked order, and the
// row-grouped cut's measured rows), or 0; gm_matmul_f32_torch_mt runs them (not with trans_a).
int gm_f32_torch_narrow(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, float alpha, int torch_threads);
int gm_f32_torch_nsplit(gm_mkl_sgemm mkl, int M, int N, int K, bool trans_b, float alpha, int torch_threads);
// With trans_a, op(A) = A^T for A stored [K, M] (stride lda; MKL's transb = T, the backward's dW):
// op(A) is copied contiguous (scratch M x K floats) and the same order runs (the packed schedule,
// GM_F32_BLOCKS_INTEL_384, cuts K below 768 in two halves as GM_F32_BLOCKS_INTEL_SPLIT does;
// measured with A transposed at 768 x 768 x 512..640, and without since 2026-12-06).
int gm_matmul_f32_torch_mt(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b,
                           const float *bias, float alpha, float *C, int ldc, int M, int N, int K, int threads,
                           int torch_threads);
// Same product in PyTorch 2.15's CPU order for f16 (matmul_torch_f16.c gives both orders: one for
// B as stored, one for B transposed). A and B hold f16 values (products exact in f32). Any thread
// count gives the same bits. Under intel-amx (oneDNN's ISA AMX) B transposed is oneDNN's chain, and
// B as stored with alpha != 0 and M * N * K > 16^3 is gm_matmul_f16_onednn (torch's cpublas gemm
// hands those to oneDNN); one row (M = 1) against B transposed is ATen's dot on every target
// (torch's gemv); gm_matmul_f16_torch_h likewise. Verified against torch's addmm, linear, matmul, bmm and baddbmm
// through the model goldens (tests/test_profile.c).
void gm_matmul_f16_torch(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                         float *C, int ldc, int M, int N, int K, int threads);
// f16 product in oneDNN's order on the intel-amx target (torch 2.15's mm of f16 tensors there, any
// strides: the linear backward's products, tools/ref/probe_linear_bwd.py): C[M, N] = alpha *
// op(A) @ op(B) (+ bias), op(A) = A [M, K] or, with trans_a, A^T for A [K, M] (stride lda); op(B)
// as for gm_matmul_f16_torch. K in blocks (one block for K <= 512, blocks of 512 for K <= 1024,
// else of 1024; with trans_a blocks of 512 at any K; the last block holds the rest), each output
// one f32 chain from zero per block, acc = acc + a[k] * b[k] (products exact), the blocks added in
// order, then alpha * sum (+ bias: unverified). One row (M = 1) against B as stored: one chain
// over all of K (measured live to K = 50257, 1 and 2 threads). One row against B
// transposed (without trans_a) is ATen's gemv in torch, not oneDNN: gm_matmul_f16_torch's
// B-transposed f32-arithmetic dot runs (measured K 768, 2304, 3072). Measured K: 768, 1536,
// 2048, 2304, 3000, 3072, 50257. Same bits for any thread count.
void gm_matmul_f16_onednn(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b, const float *bias,
                          float alpha, float *C, int ldc, int M, int N, int K, int threads);
// One row a [K] against B^T (B [N, K], row stride ldb) as a slice of torch's batched f16 product on
// the targets whose f16 is oneDNN's (intel-amx, intel-avx512-fp16: a decode step's q @ k^T, whose
// whole batch passes torch's 16^3 rule): oneDNN's one-row brgemm, measured live on an Emerald
// Rapids host (tools/ref/check_fidelity.py --decode; cancellation probes over K = 64): 16 lane
// chains from zero, lane l over k = l, l + 16, ... in order (products exact), then t[l] = c[l] +
// c[l + 8], u[l] = t[l] + t[l + 4], r = (u0 + u1) + (u2 + u3); C[j] = alpha * r (+ bias[j]).
void gm_matmul_f16_row16(const float *a, const float *B, int ldb, const float *bias, float alpha, float *C, int N, int K);
// gm_matmul_f16_torch with B given as f16 bits (an f16 run's weights; B [K, N] as stored or, with
// trans_b, [N, K], row stride ldb): the same bits as on B widened to f32. The AVX-512 kernels read
// the f16 bits (half the bytes: decode streams the weights, the lm_head's strips take half the
// cache); gm_matmul_f16_row_fast says whether they run here (else scalar code, same bits). Fast
// for one row (decode) and for B transposed (lm_head); other shapes run row by row.
void gm_matmul_f16_torch_h(const float *A, int lda, const uint16_t *B, int ldb, bool trans_b, const float *bias,
                           float alpha, float *C, int ldc, int M, int N, int K, int threads);
bool gm_matmul_f16_row_fast(void);
// Whether B transposed with more than one row of A takes oneDNN's f32 chains under the active
// target (then gm_matmul_f16_torch_h widens the f16 bits first: a caller holding B as f32 values
// too does better to pass those to gm_matmul_f16_torch).
bool gm_matmul_f16_trans_widens(void);
// bf16 product in torch 2.15's oneDNN order (matmul_bf16.c): K in blocks of 512 (K <= 1024) or 1024
// elements, each an AVX512-BF16 dot-product chain (pairs of K, odd element first, DAZ/FTZ), the
// blocks added in order in f32, then alpha * sum (+ bias); A and B hold bf16 values. The same bits
// with or without the instructions, for any thread count.
void gm_matmul_bf16(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                    float *C, int ldc, int M, int N, int K, int threads);
// The same product of op(A) = A^T (A [K, M], row stride lda), the same bits as gm_matmul_bf16 on A^T
// made contiguous, without that copy: A^T is packed straight into pairs.
void gm_matmul_bf16_ta(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                       float *C, int ldc, int M, int N, int K, int threads);
// One slice of a batched product of `batch` slices (torch's bmm: the attention's per-head products
// over batch x heads), op(A) = A^T with trans_a: the same orders, except that torch's rule for
// products of at most 16^3 multiply-adds (ATen's gemm instead of oneDNN) looks at the whole batch,
// so a slice never takes it, and that oneDNN's blocking under intel-amx sees the batch (3-D
// products have no K split, and its K tiles follow the blocking: onednn_amx.h). torch_threads:
// torch's thread count over the whole batched product, which that blocking depends on (0: threads).
void gm_matmul_bf16_slice(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b, const float *bias,
                          float alpha, float *C, int ldc, int M, int N, int K, int threads, int batch, int torch_threads);
// op(B) [K, N] (B as stored [K, N] or, with trans_b, [N, K]) as bf16 pairs: element k = 2p in the
// low 16 bits, 2p + 1 in the high (zero past K), in strips of 32 columns, each [ceil(K/2), 32]
// (zero-padded), then 32 words whose first records B's orientation (1: B was given transposed;
// the avx2 target's order depends on it): gm_bf16_packed_size(K, N) words. The same product from
// pre-packed B.
size_t gm_bf16_packed_size(int K, int N);
// The same order computed element by element with no scratch memory (Bp, when not NULL, in the
// packed layout; else B as for gm_matmul_bf16). Slow: the fallback on allocation failure and the
// tests' reference.
void gm_matmul_bf16_unpacked(const float *A, int lda, const float *B, int ldb, bool trans_b, const uint32_t *Bp,
                             const float *bias, float alpha, float *C, int ldc, int M, int N, int K);
void gm_bf16_pack(const float *B, int ldb, bool trans_b, int K, int N, uint32_t *Bp);
void gm_matmul_bf16_packed(const float *A, int lda, const uint32_t *Bp, const float *bias, float alpha, float *C, int ldc,
                           int M, int N, int K, int threads);
// The same product with C rounded to bf16 (the bits of gm_round_inplace(GM_BF16, C) after it), each
// strip of C as soon as it is complete, while it is in cache.
void gm_matmul_bf16_packed_rounded(const float *A, int lda, const uint32_t *Bp, const float *bias, float alpha, float *C,
                                   int ldc, int M, int N, int K, int threads);
// gm_bf16_pack of op(B) rounded to bf16 first (RNE): the pairs gm_bf16_pack makes from
// gm_round_copy(GM_BF16) of B, without that copy (f32 main weights straight to a bf16 working copy's
// pairs). -1 when out of memory.
int gm_bf16_pack_rounded(const float *B, int ldb, bool trans_b, int K, int N, uint32_t *Bp);
// Bt (gm_bf16_packed_size(N, K) words) = the pairs of op(B)^T [N, K] from Bp, the pairs of op(B)
// [K, N]: the words gm_bf16_pack makes from op(B)^T as floats (its orientation word the opposite of
// Bp's: op(B)^T given as stored is B given transposed). Moves bits only; threads share the strips.
void gm_bf16_pack_transposed(const uint32_t *Bp, int K, int N, uint32_t *Bt, int threads);
// C [M, N] = R(A [M, K] @ X^T) where Xp holds the pairs of X [N, K] (gm_bf16_pack layout): the bits
// of gm_matmul_bf16 on B = X given transposed, then gm_round_inplace(GM_BF16) (a linear's dX from
// the forward's pairs of its weight). -1 when out of memory.
int gm_matmul_bf16_packed_t_rounded(const float *A, int lda, const uint32_t *Xp, float *C, int ldc, int M, int N, int K,
                                    int threads);
// Which of ATen's CPU layer-norm kernels to reproduce: the f32 one (8-element steps), or the
// reduced-type one for f16 or bf16 rows (16-element steps as two 8-lane halves; the two differ only
// in one rounding of the scalar tail).
typedef enum { GM_LN_KERNEL_F32, GM_LN_KERNEL_F16, GM_LN_KERNEL_BF16 } gm_ln_kernel;

// y[R, D] = layer_norm(x[R, D]) * w + b, f32 in/out, in ATen's CPU order (layernorm.c): Welford
// moments in 8 lanes over steps of 8 (GM_LN_KERNEL_F32) or 16 elements, rstd = 1/sqrt(var +
// (float)eps), y = fma((x - mean) * rstd, w, b) (f32) or fma(fma(x, rstd, -rstd * mean), w, b).
// Rows in parallel; x and y may alias.
void gm_layernorm_f32(const float *x, const float *w, const float *b, float *y, int R, int D, double eps,
                      gm_ln_kernel kernel, int threads);
// The row's mean and rstd = 1/sqrt(var + (float)eps) as that kernel computes them (f32, before
// anything is rounded to the dtype): what torch.native_layer_norm returns with f32 weights.
void gm_layernorm_row_stats(const float *x, int D, double eps, gm_ln_kernel kernel, float *mean, float *rstd);
// Layer-norm backward in ATen's CPU order (layernorm_bwd.c; capability AVX512, 16 lanes): dx [R, D]
// (or NULL), dw, db [D] (or NULL) from dy, x [R, D], w [D] (dtype values in f32), mean, rstd [R] (the
// forward's f32 statistics). GM_LN_KERNEL_F32: ATen's f32 kernel, nothing rounded. F16/BF16: its
// kernel for f16/bf16 x, w, b: mean and rstd read rounded to the dtype, per-thread dgamma/dbeta
// buffers rounded to the dtype at every row, dx, dw, db rounded. dw and db follow ATen's split of
// the rows into min(threads, R) chunks (their bits depend on `threads`); dx does not. No aliasing.
// 0, or -1 (gm_fail) when the buffers cannot be allocated.
int gm_layernorm_bwd_f32(float *dx, float *dw, float *db, const float *dy, const float *x, const float *w,
                          const float *mean, const float *rstd, int R, int D, gm_ln_kernel kernel, int threads);

// In place softmax of s[0..n) followed by n_masked entries holding mask_value (not stored), as
// PyTorch 2.15's CPU softmax computes it under the active torch CPU target (softmax.c): m = max
// (masked entries included), e = SLEEF's expf_u10(s - m), the sum in W lanes folded as a tree
// (W = 16 under ATen's AVX512 capability, 8 under AVX2), s = e * (1/sum), all in f32. reduced:
// the row is an f16/bf16 tensor's (ATen's reduced-type kernel: the last total % W elements take
// libm's expf and are added one by one after the fold).
void gm_softmax_row_f32(float *s, int n, int n_masked, float mask_value, bool reduced);
// logp[0..V) = log_softmax(x[0..V)) as ATen's f32 last-dimension kernel computes it with W lanes
// (16 AVX512, 8 AVX2): m the row's maximum (a NaN propagates), e = SLEEF expf_u10(x - m) (e: V
// floats of scratch), their sum in W lanes folded as vec_reduce_all (below W elements one by one),
// l = SLEEF logf_u10(sum), logp = (x - m) - l. logp may alias x.
void gm_log_softmax_row_f32(const float *x, float *logp, int V, int W, float *e);
// d[j] = fmaf(-e[j], s, j == t ? g : 0) for j < n (t < 0: no such j): the loss's log-softmax
// backward with e = exp(logp), one FMA per element as GCC contracts ATen's expression.
void gm_nll_grad_row_f32(float *d, const float *e, int n, float s, int t, float g);
// s[j] = expf_u10(s[j] - m) for j < n (SLEEF, the FMA builds: the same bits on AVX-512, AVX2 and scalar).
void gm_exp_shift_row(float *s, int n, float m);
// x[j] = x[j] / d for j < n (IEEE f32 division; vectorised where the CPU allows, same bits).
void gm_div_row_f32(float *x, int n, float d);


// ---- torch CPU targets (gptmeg/target.h) ------------------------------------------------------
// The ops whose PyTorch kernel depends on the target, and whether gptmeg reproduces it there.
typedef enum { GM_KOP_MATMUL = 0, GM_KOP_LAYERNORM, GM_KOP_SOFTMAX, GM_KOP_GELU_ATEN, GM_KOP_GELU_OPS, GM_KOP_N } gm_kernel_op;
const char *gm_kernel_op_name(gm_kernel_op op); // "matmul", "layer_norm", "softmax", "F.gelu", "gelu ops"
typedef struct {
  bool exact;         // gptmeg gives this target's bits (its goldens pass); else zen4's order runs
  bool partial;       // not exact, but the target's order runs and gives its bits on the goldens' shapes
  const char *family; // the PyTorch kernel behind the op on this target, in words
  const char *limits; // when partial: what is not reproduced
} gm_target_support;
gm_target_support gm_target_support_get(gm_torch_target t, gm_kernel_op op, gm_dtype dt);
// The ops not exact under t in the n_dts dtypes dts, comma-separated into buf, partial ones marked:
// "f32 matmul (in part), bf16 matmul" (the dtype named only when n_dts > 1); "" when none.
// Returns how many.
int gm_target_gaps(gm_torch_target t, const gm_dtype *dts, int n_dts, char *buf, size_t n);

#endif
