// bf16 matmul in PyTorch 2.15's CPU order for bf16 on AVX512-BF16 machines (oneDNN's matmul, as
// measured: tools/ref/gen_matmul_goldens.py, contract in nn.h). A and B hold bf16 values in f32
// buffers. K is cut into blocks of 512 elements (K <= 1024) or 1024 (K > 1024; one block when
// K <= 512). Within a block each output accumulates the products in pairs, as one VDPBF16PS lane
// does: acc = (acc + a[2p+1] * b[2p+1]) + a[2p] * b[2p] for p = 0, 1, ..., both additions rounded
// to f32 (RNE), bf16 subnormal inputs read as zero and f32 subnormal results flushed to zero; an
// odd K's last pair has a zero second element. The blocks' sums are added in order (f32), then the
// result is alpha * sum, plus bias when given. The scalar code here and the AVX512-BF16 kernel give
// the same bits (tests/test_matmul_bf16.c), on any thread count. (torch's one-row products take
// other kernels; gptmeg keeps this order for one row too, so a decode step equals its row of a
// longer product.)
//
// Under a torch CPU target whose oneDNN ISA is AMX (intel-amx), torch 2.15 runs oneDNN's brgemm on
// AMX tiles, another order (found with tools/ref/probe_bf16_amx_order.py, _blocks.py, _live.py on
// the goldens of tests/golden/targets/intel-amx/ and live): for M >= 2, K is cut into tiles of 16
// pairs (32 elements; the last tile holds the P % 16 pairs left); within a tile the products of the
// even elements (2p) and of the odd elements (2p + 1) each run in one f32 chain from zero in order
// of p, and the tile adds E + O to the accumulator: acc = acc + (E + O), bf16 subnormal inputs read
// as zero and every product and sum flushed to zero when subnormal (TDPBF16PS, measured on the
// hardware). The accumulator runs over the tiles of a K chunk; the chunks' sums are added in order
// (f32), then alpha * sum (+ bias). oneDNN picks the chunk from M, N, K, the operands' layouts and
// the thread count (its blocking heuristics: cost models over candidate blockings), may split K
// between threads (each part sums its own chunks, the parts added in order) and gives the partial
// last tile of a transposed A's K its own call; gptmeg follows the model of those heuristics in
// onednn_amx.h (validated against torch's probes on every shape and thread count tried, and the
// measured tables it replaced) through the plan of matmul_bf16_plan.c; the thread count given is
// torch's. Where the model says torch runs oneDNN's AVX512_CORE_BF16 brgemm instead (N = 1 or a
// tiny K) the AMX order with one chunk runs: not torch's. For
// M = 1 torch runs other kernels. B as stored: one f32 chain over k in order (k = 0, 1, ..., no
// flushing; measured for addmm and matmul). B transposed (linear, the lm_head of a decode step;
// oneDNN's brgemm on AVX512_CORE_BF16 when N * K > 4096, tools/ref/probe_bf16_onerow_t.py): pair p
// goes to lane p % 16 of 16 lane chains, each a VDPBF16PS chain from zero over its pairs in order
// (acc = (acc + odd product) + even product, DAZ/FTZ as for ORDER_VDP), then the lanes are reduced
// in plain f32 as t[l] = c[l] + c[l + 8], u[l] = t[l] + t[l + 4], (u0 + u1) + (u2 + u3), then
// alpha * sum (+ bias); with N * K <= 4096 torch takes ATen's dot instead (the avx2 target's
// B-transposed order below). Every product of at most 16^3 multiply-adds stays in ATen's cpublas
// gemm: the avx2 target's two orders for A as stored, one chain over k for A transposed (but not for
// one slice of a batched product: torch's rule looks at the whole batch). With AMX tiles on the
// host (and the AVX-512 level) the tile kernel matmul_bf16_amx.c runs; with the AVX-512 or AVX2
// level only, its emulations matmul_bf16_amxemu_avx512.c / _avx2.c; else the scalar twin here; all
// the same bits.
//
// Under intel-avx512 (oneDNN's AVX512_CORE gemm) and avx2 (ATen's cpublas gemm, two orders by
// B's orientation) the orders below run, scalar only (see their comments).
#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/matmul/matmul_isa.h"

enum { STRIP = 32 }; // columns per work item

// Pairs per K block: 256 (512 elements) for K <= 1024, else 512 (1024 elements).
static int block_pairs(int P) { return P <= 512 ? 256 : 512; }

static float ftz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

// bf16 bits of an f32 holding a bf16 value, subnormals read as zero (DAZ).
static uint16_t bf16_daz(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
  return (uint16_t)(u >> 16);
}

// One VDPBF16PS lane step: acc + a[2p+1] * b[2p+1], then + a[2p] * b[2p] (pairs a, b as packed).
static float pair_step(float acc, uint32_t a, uint32_t b) {
  acc = ftz(acc + ftz(bf16_pair_hi(a) * bf16_pair_hi(b)));
  return ftz(acc + ftz(bf16_pair_lo(a) * bf16_pair_lo(b)));
}

// After pair p: at the end of a K block the block's chain joins the sum of the blocks before it
// (the first block is the sum) and the next chain starts from zero.
static void end_of_pair(int p, int P, int Pb, float *acc, float *sum) {
  if ((p + 1) % Pb != 0 && p + 1 != P) return;
  *sum = p < Pb ? *acc : *sum + *acc;
  *acc = 0.0f;
}

// C[:, strip] for ncols columns of pairs Bs (row p at Bs + p * ldbs).
static void strip_scalar(const uint32_t *Ap, int P, const uint32_t *Bs, int ldbs, int M, int ncols, float alpha,
                         const float *bias, float *C, int ldc) {
  const int Pb = block_pairs(P);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < ncols; j++) {
      float acc = 0.0f, sum = 0.0f;
      for (int p = 0; p < P; p++) {
        acc = pair_step(acc, Ap[(size_t)i * P + p], Bs[(size_t)p * ldbs + j]);
        end_of_pair(p, P, Pb, &acc, &sum);
      }
      float v = alpha * sum;
      C[(size_t)i * ldc + j] = bias ? bias[j] + v : v;
    }
}

// ---- the intel-amx orders ---------------------------------------------------------------------
// (ORDER_GEMM512 and after: scalar only, element by element)
typedef enum {
  ORDER_VDP = 0,
  ORDER_AMX,
  ORDER_SEQ,
  ORDER_ROW16,
  ORDER_GEMM512,
  ORDER_ATEN_NT,
  ORDER_ATEN_DOT,
  ORDER_CORE_ROW8, // one row under AVX512_CORE, B as stored
  ORDER_CORE_ROW16 // one row under AVX512_CORE, B transposed
} bf16_order;

// The order of an M-row product, B as given (trans_b: B^T stored, as linear's weight), under the
// active torch CPU target.
static bf16_order order_for(int M, int N, int K, bool trans_a, bool trans_b, bool slice) {
  const gm_torch_target_info *ti = gm_torch_target_get_info(gm_torch_target_active());
  if (ti && ti->onednn == GM_ONEDNN_AVX2) return trans_b ? ORDER_ATEN_DOT : ORDER_ATEN_NT;
  if (ti && ti->onednn == GM_ONEDNN_AVX512_CORE) { // one row: its one-row kernels (below), ATen's below 16^3
    if (M != 1 || trans_a) return ORDER_GEMM512;
    if ((long)N * K <= 4096 && !slice) return trans_b ? ORDER_ATEN_DOT : ORDER_ATEN_NT;
    return trans_b ? ORDER_CORE_ROW16 : ORDER_CORE_ROW8;
  }
  // AVX512_CORE_BF16 and _FP16 on Intel (intel-avx512-bf16, intel-avx512-fp16): oneDNN's brgemm
  // for two rows or more; one row takes the same kernels as under AMX (those are AVX512_CORE_BF16's
  // there too: ONEDNN_VERBOSE, tools/ref/probe_bf16_onerow_t.py; measured with check_fidelity.py
  // --decode on an Emerald Rapids host). zen4 keeps ORDER_VDP for one row (not measured on AMD).
  const bool intel = ti && ti->mkl == GM_MKL_SGEMM_INTEL_AVX512;
  if (!ti || (ti->onednn != GM_ONEDNN_AMX && !(intel && M == 1))) return ORDER_VDP;
  // at most 16^3 multiply-adds: torch keeps the product in ATen's cpublas gemm: the avx2 target's
  // two orders for A as stored, one f32 chain over k for a transposed A (tools/ref probes, 100%);
  // not for one slice of a batched product (the attention's bmm: torch checks the whole batch)
  if ((long)M * N * K <= 4096 && !slice) return trans_a ? ORDER_SEQ : trans_b ? ORDER_ATEN_DOT : ORDER_ATEN_NT;
  // one column (oneDNN's GEMV path, not AMX): each row against it as the one-row B^T kernel sums a
  // row, whatever B's layout; with A transposed one f32 chain over k (cancelling-triple probes,
  // every row, K 64-1300, 1 and 2 threads, 2026-12-06)
  if (N == 1 && M != 1) return trans_a ? ORDER_SEQ : ORDER_ROW16;
  if (M != 1) return ORDER_AMX;
  if (!trans_b) return ORDER_SEQ;
  return (long)N * K > 4096 || slice ? ORDER_ROW16 : ORDER_ATEN_DOT; // a slice: the batch passed 16^3
}

// ---- the AVX512_CORE order (intel-avx512) ---------------------------------------------------
// oneDNN's jit gemm for bf16 on AVX512_CORE (no bf16 instructions; ONEDNN_MAX_CPU_ISA=AVX512_CORE),
// found with tools/ref/probe_bf16_gemm_order.py on the goldens of tests/golden/targets/intel-avx512/
// (every product identical). K is cut into blocks of Kb elements: one block for K <= 384, two
// blocks of (K + 1) / 2 (the second holds the rest) for K < 1536, else blocks of 768 (the last holds
// what is left); this is the gemm driver's k_padd with bk 768, bk_traditional 384, uk 1. Within a
// block each output runs one f32 chain from zero over pairs counted from the block's start
// (elements s, s + 1, then s + 2, s + 3, ...), the odd element of a pair first (the emulated
// VDPBF16PS): acc = (acc + a[s+2j+1] * b[s+2j+1]) + a[s+2j] * b[s+2j]; an odd-length block's last
// pair has only its even element. Products are exact in f32; nothing is flushed. The blocks' sums
// are added in order (f32), then alpha * sum (+ bias), as for the other orders.
static int gemm512_block(int K) { return K <= 384 ? K : K < 1536 ? (K + 1) / 2 : 768; }

// A row or column of K bf16 values for the scalar-only orders: pairs (k = 2p in the low half of
// p[p * stride], 2p + 1 in the high half), or floats f[k * stride] read as bf16 (DAZ, as packed).
typedef struct {
  const uint32_t *p;
  const float *f;
  size_t stride;
} vec_src;

static float elem(const vec_src *v, int k) {
  if (!v->p) return bf16_pair_lo(bf16_daz(v->f[(size_t)k * v->stride]));
  uint32_t u = v->p[(size_t)(k / 2) * v->stride];
  return k & 1 ? bf16_pair_hi(u) : bf16_pair_lo(u);
}

// The sum of row a and column b over K in the AVX512_CORE order, K in blocks of Kb.
static float gemm512_dot(const vec_src *a, const vec_src *b, int K, int Kb) {
  float sum = 0.0f;
  for (int s0 = 0; s0 < K; s0 += Kb) {
    int s1 = K - s0 < Kb ? K : s0 + Kb;
    float acc = 0.0f;
    for (int k = s0; k < s1; k += 2) {
      if (k + 1 < s1) acc += elem(a, k + 1) * elem(b, k + 1);
      acc += elem(a, k) * elem(b, k);
    }
    sum = s0 == 0 ? acc : sum + acc;
  }
  return sum;
}

// One output's state in the AMX order.
typedef struct {
  float e, o, acc, sum;
} amx_state;

// Pair p of P (chunks of Pc pairs, tiles of Pt pairs from each chunk's start): the even product
// into E, the odd into O; at the end of a tile acc += E + O; at the end of a chunk the chunk's acc
// joins the sum.
static void amx_step(amx_state *s, uint32_t a, uint32_t b, int p, int P, int Pc, int Pt) {
  s->e = ftz(s->e + ftz(bf16_pair_lo(a) * bf16_pair_lo(b)));
  s->o = ftz(s->o + ftz(bf16_pair_hi(a) * bf16_pair_hi(b)));
  bool chunk_end = p + 1 == P || (p + 1) % Pc == 0;
  if (!chunk_end && (p % Pc + 1) % Pt != 0) return;
  s->acc = ftz(s->acc + ftz(s->e + s->o));
  s->e = s->o = 0.0f;
  if (!chunk_end) return;
  s->sum = p < Pc ? s->acc : s->sum + s->acc;
  s->acc = 0.0f;
}

// The one-row B-transposed order: pair p into lane p % 16 (a VDPBF16PS step), the lanes reduced
// 8, 4, then (0 + 1) + (2 + 3). a: P pairs; b: pair p at b[p * sb].
static float row16_dot(const uint32_t *a, const uint32_t *b, size_t sb, int P) {
  float c[16] = {0.0f};
  for (int p = 0; p < P; p++) c[p % 16] = pair_step(c[p % 16], a[p], b[(size_t)p * sb]);
  return onednn_fold16(c);
}

// One f32 chain over k (the M = 1 order): element 2p, then 2p + 1.
static float seq_step(float acc, uint32_t a, uint32_t b) {
  acc = acc + bf16_pair_lo(a) * bf16_pair_lo(b);
  return acc + bf16_pair_hi(a) * bf16_pair_hi(b);
}

// ---- the avx2 orders ------------------------------------------------------------------------
// Under avx2 oneDNN takes no bf16 matmul and ATen's cpublas gemm runs (found with
// tools/ref/probe_bf16_aten_order.py on tests/golden/targets/avx2/: every product identical).
// Products are exact in f32, nothing is flushed; then alpha * sum (+ bias).
// B as stored [K, N] (addmm, matmul: gemm_notrans_): four partial sums, element k into sum k % 4
// for k < K - K % 4 in order of k, the last K % 4 elements into sum 0, then ((s0 + s1) + s2) + s3.
static float aten_nt_dot(const vec_src *a, const vec_src *b, int K) {
  float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  int K4 = K & ~3, k = 0;
  for (; k < K4; k++) s[k & 3] += elem(a, k) * elem(b, k);
  for (; k < K; k++) s[0] += elem(a, k) * elem(b, k);
  return ((s[0] + s[1]) + s[2]) + s[3];
}

// Pairwise sums over n = 2^j values in place: v[i] += v[i + n/2], halving n, down to v[0].
static float tree_sum(float *v, int n) {
  for (int h = n / 2; h >= 1; h /= 2)
    for (int i = 0; i < h; i++) v[i] += v[i + h];
  return v[0];
}

// B^T stored [N, K] (linear: gemm_transa_, ATen's dot with f32 arithmetic in 8-lane AVX2 vectors):
// 64 chains, element k into chain k % 64 for k < K - K % 64; the 64 reduced as a binary tree (chain
// c with c + 32, then + 16, + 8, + 4, + 2, + 1: eight registers halved, then the lanes). Then a tail
// vector of 8 lanes over the next 16-element groups (element k into lane k % 8, the low 8 of a group
// before the high 8), tree-reduced the same way (+ 4, + 2, + 1) and added (always, even when empty:
// -0 + 0 is +0); then the last K % 16 elements one by one.
static float aten_dot(const vec_src *a, const vec_src *b, int K) {
  float v[64] = {0.0f}, t[8] = {0.0f};
  int K64 = K & ~63, K16 = K & ~15, k = 0;
  for (; k < K64; k++) v[k & 63] += elem(a, k) * elem(b, k);
  float sum = tree_sum(v, 64);
  for (; k < K16; k++) t[k & 7] += elem(a, k) * elem(b, k);
  sum += tree_sum(t, 8);
  for (; k < K; k++) sum += elem(a, k) * elem(b, k);
  return sum;
}

// One row under AVX512_CORE (intel-avx512: a decode step; measured 2026-12-05 on live torch under
// ONEDNN_MAX_CPU_ISA=AVX512_CORE with +-2^40 summation trees, K 20..3072, N 50..50257, linear,
// addmm and the attention's bmm slices): B as stored runs gemm512's pair chains in blocks of 8
// elements (ORDER_CORE_ROW8: gemm512_dot with Kb = 8); B transposed puts pair p into lane p % 16,
// each lane one chain from zero, acc = (acc + odd product) + even product (nothing flushed), then
// t[l] = c[l] + c[l + 8], v[m] = t[2m] + t[2m + 1], (v0 + v1) + (v2 + v3).
static float core_row16_dot(const vec_src *a, const vec_src *b, int K) {
  float c[16] = {0.0f};
  for (int k = 0; k < K; k += 2) {
    float acc = c[(k / 2) % 16];
    if (k + 1 < K) acc = acc + elem(a, k + 1) * elem(b, k + 1);
    c[(k / 2) % 16] = acc + elem(a, k) * elem(b, k);
  }
  float t[8], v[4];
  for (int l = 0; l < 8; l++) t[l] = c[l] + c[l + 8];
  for (int m = 0; m < 4; m++) v[m] = t[2 * m] + t[2 * m + 1];
  return (v[0] + v[1]) + (v[2] + v[3]);
}

// The sum of row a and column b over K in a scalar-only order.
static float scalar_dot(bf16_order ord, const vec_src *a, const vec_src *b, int K) {
  switch (ord) {
  case ORDER_GEMM512: return gemm512_dot(a, b, K, gemm512_block(K));
  case ORDER_CORE_ROW8: return gemm512_dot(a, b, K, 8);
  case ORDER_CORE_ROW16: return core_row16_dot(a, b, K);
  case ORDER_ATEN_NT: return aten_nt_dot(a, b, K);
  default: return aten_dot(a, b, K);
  }
}

static void strip_scalar_order(bf16_order ord, const uint32_t *Ap, int P, int K, int Pc, int Pt, const uint32_t *Bs, int ldbs,
                               int M, int ncols, float alpha, const float *bias, float *C, int ldc) {
  if (Pc <= 0) Pc = P > 0 ? P : 1;
  if (ord >= ORDER_GEMM512) {
    for (int i = 0; i < M; i++)
      for (int j = 0; j < ncols; j++) {
        vec_src a = {Ap + (size_t)i * P, NULL, 1}, b = {Bs + j, NULL, (size_t)ldbs};
        float v = alpha * scalar_dot(ord, &a, &b, K);
        C[(size_t)i * ldc + j] = bias ? bias[j] + v : v;
      }
    return;
  }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < ncols; j++) {
      amx_state st = {0.0f, 0.0f, 0.0f, 0.0f};
      float acc = 0.0f;
      if (ord == ORDER_ROW16) acc = row16_dot(Ap + (size_t)i * P, Bs + j, (size_t)ldbs, P);
      else
        for (int p = 0; p < P; p++) {
          uint32_t a = Ap[(size_t)i * P + p], b = Bs[(size_t)p * ldbs + j];
          if (ord == ORDER_SEQ) acc = seq_step(acc, a, b);
          else amx_step(&st, a, b, p, P, Pc, Pt);
        }
      float v = alpha * (ord == ORDER_AMX ? st.sum : acc);
      C[(size_t)i * ldc + j] = bias ? bias[j] + v : v;
    }
}

static bool have_amx(void) {
  return gm_cpu_simd() == GM_SIMD_AVX512 && gm_cpu_has(GM_CPU_AMX_TILE) && gm_cpu_has(GM_CPU_AMX_BF16) &&
         gm_bf16_amx_ready();
}

// The AVX512-BF16 kernel: the AVX-512 level and the BF16 extension.
static bool have_avx512bf16(void) { return gm_cpu_simd() == GM_SIMD_AVX512 && gm_cpu_has(GM_CPU_AVX512_BF16); }

// One bf16 pair (element k = 2p in the low half, 2p + 1 in the high half; zero past K).
static uint32_t pair(float lo, float hi) { return (uint32_t)bf16_daz(lo) | (uint32_t)bf16_daz(hi) << 16; }

// Pairs of op(B) [K, N] into rows of stride ldp (AVX-512: matmul_bf16_pack_avx512.c, the same words).
static void pack_cols(const float *B, int ldb, bool trans_b, int K, int N, uint32_t *Bp, int ldp) {
  if (gm_cpu_simd() == GM_SIMD_AVX512) {
    gm_bf16_pack_cols_avx512(B, ldb, trans_b, K, N, Bp, ldp);
    return;
  }
  int P = (K + 1) / 2;
  for (int p = 0; p < P; p++)
    for (int j = 0; j < N; j++) {
      float lo = trans_b ? B[(size_t)j * ldb + 2 * p] : B[(size_t)(2 * p) * ldb + j];
      float hi = 2 * p + 1 >= K ? 0.0f : trans_b ? B[(size_t)j * ldb + 2 * p + 1] : B[(size_t)(2 * p + 1) * ldb + j];
      Bp[(size_t)p * ldp + j] = pair(lo, hi);
    }
}

// Strip s of op(B) [K, N] (columns s * STRIP ..) as [ceil(K/2), STRIP] pairs at dst, the columns
// past N zero.
static void pack_strip(const float *B, int ldb, bool trans_b, int K, int N, int s, uint32_t *dst) {
  const int j0 = s * STRIP, nc = N - j0 < STRIP ? N - j0 : STRIP;
  if (nc < STRIP) memset(dst, 0, (size_t)((K + 1) / 2) * STRIP * sizeof(uint32_t)); // else every word is written
  pack_cols(trans_b ? B + (size_t)j0 * ldb : B + j0, ldb, trans_b, K, nc, dst, STRIP);
}

// B as stored (B [K, N]) packed along its rows, RC pairs (2 RC rows) at a time into every strip
// (strip s at Bp + s * P * STRIP), each strip's RC pair rows written as one run: a strip at a time
// read 128 bytes of every row, rows 8 KB or more apart (N 2,048 and up), a new page each (14% of a
// 2048^3 product from f32 on one thread, perf, 2026-12-07). The same words as pack_strip.
enum { RC = 8 };

// Pair rows p0 .. (kc rows of B, odd only at K's end) of every strip, from `rows` (row stride ld).
static void pack_rows_of_strips(const float *rows, int ld, int kc, int N, int P, int p0, uint32_t *Bp) {
  for (int j0 = 0; j0 < N; j0 += STRIP)
    pack_cols(rows + j0, ld, false, kc, N - j0 < STRIP ? N - j0 : STRIP, Bp + ((size_t)(j0 / STRIP) * P + (size_t)p0) * STRIP,
              STRIP);
}

// Pair rows p0 .. p0 + RC of every strip, from B itself.
static void pack_rc_of_strips(const float *B, int ldb, int K, int N, int p0, uint32_t *Bp) {
  const int kc = K - 2 * p0 < 2 * RC ? K - 2 * p0 : 2 * RC;
  pack_rows_of_strips(B + (size_t)(2 * p0) * ldb, ldb, kc, N, (K + 1) / 2, p0, Bp);
}

// The padding columns of a last partial strip, zeroed (pack_rows_of_strips writes only N's columns).
static void zero_last_strip(uint32_t *Bp, int P, int N) {
  const int n_strips = (N + STRIP - 1) / STRIP;
  if (N % STRIP) memset(Bp + (size_t)(n_strips - 1) * P * STRIP, 0, (size_t)P * STRIP * sizeof(uint32_t));
}

// The strips, then STRIP words (alignment kept) whose first says whether B came transposed.
static size_t strips_size(int K, int N) { return (size_t)((K + 1) / 2) * ((N + STRIP - 1) / STRIP) * STRIP; }
size_t gm_bf16_packed_size(int K, int N) { return strips_size(K, N) + STRIP; }

void gm_bf16_pack(const float *B, int ldb, bool trans_b, int K, int N, uint32_t *Bp) {
  const int P = (K + 1) / 2, n_strips = (N + STRIP - 1) / STRIP;
  if (trans_b) // a strip is 32 whole rows of B
    for (int s = 0; s < n_strips; s++) pack_strip(B, ldb, trans_b, K, N, s, Bp + (size_t)s * P * STRIP); // each [P, STRIP]
  else { // along B's rows
    zero_last_strip(Bp, P, N);
    for (int p0 = 0; p0 < P; p0 += RC) pack_rc_of_strips(B, ldb, K, N, p0, Bp);
  }
  uint32_t *tail = Bp + strips_size(K, N);
  memset(tail, 0, STRIP * sizeof(uint32_t));
  tail[0] = trans_b ? 1u : 0u;
}

// gm_bf16_pack of B rounded to bf16 (RNE, gm_round_copy), without a rounded copy of all of B: rows
// of B as stored are rounded 2 RC at a time into a small buffer and packed into every strip; B^T's
// strips (rows of B) are rounded and packed one strip at a time. Returns -1 when the buffer cannot
// be allocated.
int gm_bf16_pack_rounded(const float *B, int ldb, bool trans_b, int K, int N, uint32_t *Bp) {
  const int P = (K + 1) / 2, n_strips = (N + STRIP - 1) / STRIP, KC = 2 * RC; // rows of B as stored rounded at a time
  float *tmp = malloc(sizeof(float) * (trans_b ? (size_t)STRIP * (K > 0 ? K : 1) : (size_t)KC * (N > 0 ? N : 1)));
  if (!tmp) return -1;
  zero_last_strip(Bp, P, N);
  if (trans_b) {
    for (int s = 0; s < n_strips; s++) { // op(B)'s columns j0.. are rows of B [N, K]
      const int j0 = s * STRIP, nc = N - j0 < STRIP ? N - j0 : STRIP;
      for (int r = 0; r < nc; r++) gm_round_copy(GM_BF16, B + (size_t)(j0 + r) * ldb, tmp + (size_t)r * K, (size_t)K, 1);
      pack_cols(tmp, K, true, K, nc, Bp + (size_t)s * P * STRIP, STRIP);
    }
  } else {
    for (int k0 = 0; k0 < K; k0 += KC) {
      const int kc = K - k0 < KC ? K - k0 : KC;
      for (int r = 0; r < kc; r++) gm_round_copy(GM_BF16, B + (size_t)(k0 + r) * ldb, tmp + (size_t)r * N, (size_t)N, 1);
      pack_rows_of_strips(tmp, N, kc, N, P, k0 / 2, Bp);
    }
  }
  free(tmp);
  uint32_t *tail = Bp + strips_size(K, N);
  memset(tail, 0, STRIP * sizeof(uint32_t));
  tail[0] = trans_b ? 1u : 0u;
  return 0;
}

// Output strip t (columns j = 32t .. of op(B)^T [N, K], i.e. rows k of op(B)) of the transposition
// of pairs: word (p', j) = (op(B)[j][2p'], op(B)[j][2p' + 1]), the halves j & 1 of Bp's words
// (j / 2, 2p') and (j / 2, 2p' + 1); zero past K (and, from Bp's padding, past N).
static void transpose_strip(const uint32_t *Bp, int K, int N, int t, uint32_t *dst) {
  if (gm_cpu_simd() == GM_SIMD_AVX512) {
    gm_bf16_transpose_strip_avx512(Bp, K, N, t, dst);
    return;
  }
  const int P = (K + 1) / 2, Pt = (N + 1) / 2;
  for (int pt = 0; pt < Pt; pt++)
    for (int c = 0; c < STRIP; c++) {
      const int j = t * STRIP + c, n = 2 * pt; // n + 1 <= N is inside Bp's (zero) padding
      uint32_t w = 0;
      if (j < K) {
        const uint32_t *src = Bp + ((size_t)(n / STRIP) * P + (size_t)j / 2) * STRIP + n % STRIP;
        const int sh = (j & 1) * 16;
        w = (src[0] >> sh & 0xffffu) | (src[1] >> sh & 0xffffu) << 16;
      }
      dst[(size_t)pt * STRIP + c] = w;
    }
}

void gm_bf16_pack_transposed(const uint32_t *Bp, int K, int N, uint32_t *Bt, int threads) {
  const int n_strips = (K + STRIP - 1) / STRIP, Pt = (N + 1) / 2;
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) schedule(dynamic, 2) if (threads > 1)
  for (int t = 0; t < n_strips; t++) transpose_strip(Bp, K, N, t, Bt + (size_t)t * Pt * STRIP);
  uint32_t *tail = Bt + strips_size(N, K);
  memset(tail, 0, STRIP * sizeof(uint32_t));
  tail[0] = Bp[strips_size(K, N)] != 0 ? 0u : 1u;
}

// Scratch for one call: the thread's kept buffer of a slot (matmul_scratch.c) up to keep_max bytes,
// past it a buffer of its own (*owned; one product that large amortises its page faults, and the
// thread does not keep the largest ones).
#define KEEP_MAX ((size_t)8 << 20)    // A's pairs and the K split's parts
#define KEEP_MAX_B ((size_t)64 << 20) // all of B's pairs (row-blocked products of B given as floats)
static void *scratch(gm_scratch_slot slot, size_t bytes, size_t keep_max, bool *owned) {
  *owned = bytes > keep_max;
  if (*owned) return aligned_alloc(64, (bytes + 63) / 64 * 64);
  return gm_matmul_scratch(slot, bytes);
}

static void scratch_done(void *p, bool owned) {
  if (owned) free(p);
}

// op(A) [M, K] as rows of P = ceil(K/2) pairs into Ap (64-byte aligned, so the AMX kernel's tile rows
// start on cache lines when P is a multiple of 16): A [M, K] as stored, or with trans_a A [K, M]
// (row stride lda either way).
static void pack_rows(const float *A, int lda, bool trans_a, int M, int K, uint32_t *Ap, int ldp) {
  int P = (K + 1) / 2;
  if (gm_cpu_simd() == GM_SIMD_AVX512) {
    if (trans_a) gm_bf16_pack_rows_t_avx512(A, lda, M, K, Ap, ldp);
    else gm_bf16_pack_rows_avx512(A, lda, M, K, Ap, ldp);
    return;
  }
  for (int i = 0; i < M; i++)
    for (int p = 0; p < P; p++) {
      float lo = trans_a ? A[(size_t)(2 * p) * lda + i] : A[(size_t)i * lda + 2 * p];
      float hi = 2 * p + 1 >= K ? 0.0f : trans_a ? A[(size_t)(2 * p + 1) * lda + i] : A[(size_t)i * lda + 2 * p + 1];
      Ap[(size_t)i * ldp + p] = pair(lo, hi);
    }
}

// The product from its segments' sums v[0 .. n) under plan: the parts in order, the K tail's own
// call (plan->tail) joining the part before it.
static float join_segments(const gm_bf16_amx_plan *plan, const float *v, size_t stride) {
  const int n = plan->n_seg, parts = plan->tail ? n - 1 : n;
  float last = v[(size_t)(parts - 1) * stride];
  if (plan->tail) last = last + v[(size_t)(n - 1) * stride];
  if (parts == 1) return last;
  float sum = v[0];
  for (int t = 1; t < parts - 1; t++) sum = sum + v[(size_t)t * stride];
  return sum + last;
}

static uint32_t pair_a(const float *A, size_t ra, size_t ka, int i, int p, int K) {
  const float *a = A + (size_t)i * ra + (size_t)(2 * p) * ka;
  return pair(a[0], 2 * p + 1 < K ? a[ka] : 0.0f);
}

static uint32_t pair_b(const float *B, int ldb, bool trans_b, const uint32_t *Bp, int P, int j, int p, int K) {
  if (Bp) return Bp[((size_t)(j / STRIP) * P + p) * STRIP + j % STRIP];
  float lo = trans_b ? B[(size_t)j * ldb + 2 * p] : B[(size_t)(2 * p) * ldb + j];
  float hi = 2 * p + 1 >= K ? 0.0f : trans_b ? B[(size_t)j * ldb + 2 * p + 1] : B[(size_t)(2 * p + 1) * ldb + j];
  return pair(lo, hi);
}

// The same order without any scratch memory (the fallback when the packing buffers cannot be
// allocated, and the tests' reference): pairs are formed element by element from A and B or Bp.
// plan: the AMX order's chunk and K segments (NULL for the other orders). With trans_a, op(A) = A^T
// for A [K, M].
static void unpacked(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b, const uint32_t *Bp, const float *bias,
                     float alpha, float *C, int ldc, int M, int N, int K, const gm_bf16_amx_plan *plan, bool slice) {
  int P = (K + 1) / 2, Pb = block_pairs(P);
  bf16_order ord = order_for(M, N, K, trans_a, Bp ? Bp[strips_size(K, N)] != 0 : trans_b, slice);
  if (ord == ORDER_AMX && (!plan || plan->not_amx)) ord = ORDER_VDP; // a shape AMX declines (run: no plan then)
  const size_t ra = trans_a ? 1 : (size_t)lda, ka = trans_a ? (size_t)lda : 1; // op(A)[i][k] = A[i * ra + k * ka]
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0.0f, sum = 0.0f;
      if (ord >= ORDER_GEMM512) { // element by element from A and B (or Bp)
        vec_src a = {NULL, A + (size_t)i * ra, ka}, b = {NULL, trans_b ? B + (size_t)j * ldb : B + j, trans_b ? 1 : (size_t)ldb};
        if (Bp) b = (vec_src){Bp + (size_t)(j / STRIP) * P * STRIP + j % STRIP, NULL, STRIP};
        float v = alpha * scalar_dot(ord, &a, &b, K);
        C[(size_t)i * ldc + j] = bias ? bias[j] + v : v;
        continue;
      }
      if (ord == ORDER_AMX) { // each segment's chunks from its start, then the segments joined
        float v[GM_BF16_AMX_MAX_SEGS];
        for (int t = 0; t < plan->n_seg; t++) {
          const int p0 = plan->start[t], len = plan->start[t + 1] - p0;
          amx_state st = {0.0f, 0.0f, 0.0f, 0.0f};
          for (int p = p0; p < p0 + len; p++)
            amx_step(&st, pair_a(A, ra, ka, i, p, K), pair_b(B, ldb, trans_b, Bp, P, j, p, K), p - p0, len,
                     plan->chunk > 0 ? plan->chunk : len, plan->tile[t]);
          v[t] = st.sum;
        }
        sum = join_segments(plan, v, 1);
      } else if (ord == ORDER_ROW16) {
        float c[16] = {0.0f};
        for (int p = 0; p < P; p++) c[p % 16] = pair_step(c[p % 16], pair_a(A, ra, ka, i, p, K), pair_b(B, ldb, trans_b, Bp, P, j, p, K));
        for (int l = 0; l < 8; l++) c[l] = c[l] + c[l + 8];
        for (int l = 0; l < 4; l++) c[l] = c[l] + c[l + 4];
        acc = (c[0] + c[1]) + (c[2] + c[3]);
      } else
        for (int p = 0; p < P; p++) {
          uint32_t ap = pair_a(A, ra, ka, i, p, K), bp = pair_b(B, ldb, trans_b, Bp, P, j, p, K);
          if (ord == ORDER_SEQ) acc = seq_step(acc, ap, bp);
          else {
            acc = pair_step(acc, ap, bp);
            end_of_pair(p, P, Pb, &acc, &sum);
          }
        }
      float v = alpha * (ord == ORDER_SEQ || ord == ORDER_ROW16 ? acc : sum);
      C[(size_t)i * ldc + j] = bias ? bias[j] + v : v;
    }
}

// The public reference: the plan of one thread (gm_matmul_bf16 with threads = 1).
void gm_matmul_bf16_unpacked(const float *A, int lda, const float *B, int ldb, bool trans_b, const uint32_t *Bp,
                             const float *bias, float alpha, float *C, int ldc, int M, int N, int K) {
  gm_bf16_amx_plan plan;
  (void)gm_bf16_amx_plan_for(M, N, K, false, Bp ? Bp[strips_size(K, N)] != 0 : trans_b, bias != NULL, 1, 1, &plan);
  unpacked(A, lda, false, B, ldb, trans_b, Bp, bias, alpha, C, ldc, M, N, K, &plan, false);
}

// The AMX order's bodies (matmul_isa.h), by what the host has.
typedef void (*amx_body)(const uint32_t *, int, int, int, int, const uint32_t *, int, int, int, float, const float *, float *,
                         int);

// One product's operands and choices, shared by its threads (run below).
typedef struct {
  const float *A, *B, *bias;
  int lda, ldb, ldc, M, N, K, P, Pc;
  const gm_bf16_amx_plan *plan; // the AMX order's (NULL for the others)
  bool trans_a, trans_b, simd, round_c, slice;
  amx_body amx; // ORDER_AMX with simd: its body (tiles, or an emulation: same bits)
  bf16_order ord;
  float alpha;
  float *C;
  int ldp; // the row stride of A's pairs: P, or a_stride's for the AMX tiles
} product;

static int n_segs(const product *q) { return q->plan ? q->plan->n_seg : 1; }

// Rows [r0, r0 + mr) of strip s (columns j0 .. j0 + nc) from pairs `strip` (NULL: no scratch, the
// unpacked order). Ap: the pairs of row r0 (and on); with K segments, all of A's pairs, segment t
// (pairs start[t] .. start[t + 1]) at Ap + M * start[t] in rows of its own length, and part: this
// thread's [n_seg, mr, STRIP] segment sums.
static void strip_rows(const product *q, int s, const uint32_t *strip, float *part, int r0, int mr, const uint32_t *Ap) {
  const int P = q->P, j0 = s * STRIP, nc = q->N - j0 < STRIP ? q->N - j0 : STRIP, np = n_segs(q);
  float *C = q->C + (size_t)r0 * q->ldc + j0;
  const float *bj = q->bias ? q->bias + j0 : NULL;
  if (!strip) { // no scratch for this thread: the same order, unpacked
    const float *Ar = q->A + (q->trans_a ? (size_t)r0 : (size_t)r0 * q->lda);
    unpacked(Ar, q->lda, q->trans_a, q->B + (q->trans_b ? (size_t)j0 * q->ldb : (size_t)j0), q->ldb, q->trans_b, NULL, bj,
             q->alpha, C, q->ldc, mr, nc, q->K, q->plan, q->slice);
  } else if (np > 1) { // each segment's sum, then alpha * the segments joined (+ bias)
    for (int t = 0; t < np; t++) {
      const int p0 = q->plan->start[t], len = q->plan->start[t + 1] - p0, kt = (t + 1 < np ? 2 * len : q->K - 2 * p0);
      const uint32_t *at = Ap + (size_t)q->M * p0 + (size_t)r0 * len, *bt = strip + (size_t)p0 * STRIP;
      float *st = part + (size_t)t * mr * STRIP;
      if (q->simd) q->amx(at, len, len, q->Pc, q->plan->tile[t], bt, STRIP, mr, nc, 1.0f, NULL, st, STRIP);
      else strip_scalar_order(q->ord, at, len, kt, q->Pc, q->plan->tile[t], bt, STRIP, mr, nc, 1.0f, NULL, st, STRIP);
    }
    for (int i = 0; i < mr; i++)
      for (int j = 0; j < nc; j++) {
        float v = q->alpha * join_segments(q->plan, part + (size_t)i * STRIP + j, (size_t)mr * STRIP);
        C[(size_t)i * q->ldc + j] = bj ? bj[j] + v : v;
      }
  } else if (q->ord == ORDER_VDP) {
    if (q->simd) gm_bf16_strip_avx512bf16(Ap, P, block_pairs(P), strip, STRIP, mr, nc, q->alpha, bj, C, q->ldc);
    else strip_scalar(Ap, P, strip, STRIP, mr, nc, q->alpha, bj, C, q->ldc);
  } else if (q->simd && q->ord == ORDER_AMX)
    q->amx(Ap, P, q->ldp, q->Pc, q->plan->tile[0], strip, STRIP, mr, nc, q->alpha, bj, C, q->ldc);
  else if (q->simd && q->ord == ORDER_ROW16) gm_bf16_row16_strip_avx512(Ap, P, strip, STRIP, mr, nc, q->alpha, bj, C, q->ldc);
  else if (q->simd) gm_bf16_seq_strip_avx512(Ap, P, strip, STRIP, mr, nc, q->alpha, bj, C, q->ldc);
  else strip_scalar_order(q->ord, Ap, P, q->K, q->Pc, q->plan ? q->plan->tile[0] : 16, strip, STRIP, mr, nc, q->alpha, bj, C,
                          q->ldc);
  if (q->round_c) gm_round_rows(GM_BF16, C, (size_t)q->ldc, mr, nc); // the block is complete: rounded while in cache
}

// The row stride of A's pairs for the AMX tiles. A tile's 16 rows lie 4 * P bytes apart, and L1
// has 64 sets of 64-byte lines (4 KB a way): for P a multiple of 256 (K 512, 1,024, 2,048, 3,072 ..)
// they fall on 4 sets or fewer (one at P 1,024), so the two A tiles' 32 rows crowd 12 ways that
// the B segment also needs. One more cache line a row spreads them over 16 sets. Strip bench,
// 2026-12-07 (docs/performance.md): 256 rows x 1,024 pairs 1,189-1,324 -> 1,322-1,460 GFLOP/s, 160 x
// 1,536 1,387-1,393 -> 1,461-1,477; P 384 (8 sets) gained nothing and stays. Layout only: no bit
// changes.
static int a_stride(int P, bool tiles) { return tiles && P % 256 == 0 ? P + 16 : P; }

// Rows of A a block for the AMX kernel: A's pairs for one block in half of SPR's 2 MiB L2 (the
// kernel then keeps a K segment of the strip in L1 while the block's row groups pass over it), a
// multiple of 32 rows; every strip meets one block before the next, so A is read from memory once
// where a strip-major order streamed all of it again for every 32 columns. Rows are independent in
// every kernel, so the blocking changes no bit.
static int row_block(const product *q) {
  if (!(q->simd && q->amx == gm_bf16_strip_amx && q->ord == ORDER_AMX) || n_segs(q) > 1) return q->M;
  long rows = ((long)1 << 20) / ((long)(q->ldp > 0 ? q->ldp : 1) * 4) / 32 * 32;
  if (rows < 32) rows = 32;
  return rows >= q->M ? q->M : (int)rows;
}

// Thread t of T's rows of a row-blocked product: a contiguous share of M (multiples of 32 rows), a
// block of MB rows at a time packed into the thread's own buffer `mine` and run over every strip of
// Bpairs. Against the blocks shared by all threads (each block packed by all, then its strips dealt
// out) there is no barrier per block and no thread reads pairs another core packed; B is read as
// often when there are at least T blocks (run's condition). 2048^3 on 2 threads, B pre-packed:
// 1,578-1,870 -> 2,183-2,251 GFLOP/s (2026-12-07, docs/performance.md). Rows are independent, so
// no bit changes.
static int row_share(int M, int t, int T) { return t >= T ? M : (int)((long)M * t / T) / 32 * 32; }

// Rows [r, r + n) of op(A) as pairs at dst, rows q->ldp apart (one K segment: no K split).
static void pack_a(const product *q, int r, int n, uint32_t *dst) {
  pack_rows(q->A + (q->trans_a ? (size_t)r : (size_t)r * q->lda), q->lda, q->trans_a, n, q->K, dst, q->ldp);
}

static void thread_rows(const product *q, const uint32_t *Bpairs, uint32_t *mine, int MB, int t, int T) {
  const int hi = row_share(q->M, t + 1, T), n_strips = (q->N + STRIP - 1) / STRIP;
  for (int r0 = row_share(q->M, t, T); r0 < hi; r0 += MB) {
    const int mr = hi - r0 < MB ? hi - r0 : MB;
    for (int x = 0; x < mr; x += 32) pack_a(q, r0 + x, mr - x < 32 ? mr - x : 32, mine + (size_t)x * q->ldp);
    for (int s = 0; s < n_strips; s++) strip_rows(q, s, Bpairs + (size_t)s * q->P * STRIP, NULL, r0, mr, mine);
  }
}

// B given as floats (packed here, a strip at a time, or whole when A is taken in row blocks) or as
// pairs Bp [P, N] (packed once). With trans_a, op(A) = A^T is packed straight from A [K, M]; with
// round_c, each block of C is rounded to bf16 once it is complete.
static void run(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b, const uint32_t *Bp, const float *bias,
                float alpha, float *C, int ldc, int M, int N, int K, int threads, bool round_c, int batch, int plan_threads) {
  const bool slice = batch > 0; // one slice of a batched product of `batch` slices (0: a 2-D product)
  if (M <= 0 || N <= 0) return;
  if (threads <= 0) threads = omp_get_max_threads();
  int P = (K + 1) / 2, n_strips = (N + STRIP - 1) / STRIP;
  const bool b_trans = Bp ? Bp[strips_size(K, N)] != 0 : trans_b;
  bf16_order ord = order_for(M, N, K, trans_a, b_trans, slice);
  // torch's thread count (the chunk and the K split depend on it)
  gm_bf16_amx_plan plan;
  if (ord == ORDER_AMX)
    (void)gm_bf16_amx_plan_for(M, N, K, trans_a, b_trans, bias != NULL, plan_threads > 0 ? plan_threads : threads,
                               slice ? batch : 1, &plan);
  // a small shape AMX declines (tiny K): oneDNN's AVX512_CORE_BF16 brgemm, one VDPBF16PS chain over
  // the pairs, odd element first (cancelling triples: 45,568 of 45,568 columns, M 2-4, K 6-63)
  if (ord == ORDER_AMX && plan.not_amx) ord = ORDER_VDP;
  const int np = ord == ORDER_AMX ? plan.n_seg : 1;
  const gm_simd_level isa = gm_cpu_simd();
  const amx_body amx = ord != ORDER_AMX          ? NULL
                       : have_amx()              ? gm_bf16_strip_amx
                       : isa == GM_SIMD_AVX512   ? gm_bf16_strip_amxemu_avx512
                       : isa >= GM_SIMD_AVX2     ? gm_bf16_strip_amxemu_avx2
                                                 : NULL;
  const bool simd = ord == ORDER_VDP || ord == ORDER_ROW16 ? have_avx512bf16()
                    : ord == ORDER_AMX                     ? amx != NULL
                    : ord == ORDER_SEQ                     ? isa == GM_SIMD_AVX512
                                                           : false;
  product q = {A, B, bias, lda, ldb, ldc, M, N, K, P, ord == ORDER_AMX ? plan.chunk : 0, ord == ORDER_AMX ? &plan : NULL,
               trans_a, trans_b, simd, round_c, slice, amx, ord, alpha, C, 0};
  q.ldp = a_stride(P, amx == gm_bf16_strip_amx && np == 1);
  const int ldp = q.ldp;
  int MB = row_block(&q);
  bool own_a = false, own_parts = false, own_ball = false;
  // Row blocks: B given as floats packed whole first (kept up to KEEP_MAX_B), then A packed one
  // block at a time just before the strips meet it (so its pairs stay in L2 and the buffer is one
  // block's, where the tied lm_head's dW would pack V x B*T / 2 words at once).
  uint32_t *Ball = NULL;
  if (!Bp && MB < M) {
    Ball = scratch(GM_SCRATCH_BF16_BALL, (size_t)n_strips * (P > 0 ? P : 1) * STRIP * sizeof(uint32_t), KEEP_MAX_B, &own_ball);
    if (!Ball) MB = M; // strip-major, each strip packed as it comes
  }
  const bool blocks = MB < M;
  // A's pairs: a block's, or all of them (under a K split part by part, each in rows of its length)
  uint32_t *Ap = scratch(GM_SCRATCH_BF16_A, (size_t)MB * (ldp > 0 ? ldp : 1) * sizeof(uint32_t), KEEP_MAX, &own_a);
  if (threads > n_strips) threads = n_strips;
  // each thread its own rows when there are at least as many blocks as threads (thread_rows)
  const bool per_thread = blocks && threads > 1 && (M + MB - 1) / MB >= threads;
  int no_buf = 0; // a thread's buffer for per_thread could not be had: all take the shared blocks
  float *parts = np > 1 ? scratch(GM_SCRATCH_BF16_PART, sizeof(float) * np * (size_t)M * STRIP * threads, KEEP_MAX, &own_parts) : NULL;
  if (!Ap || (np > 1 && !parts)) {
    scratch_done(Ap, own_a);
    scratch_done(parts, own_parts);
    scratch_done(Ball, own_ball);
    unpacked(A, lda, trans_a, B, ldb, trans_b, Bp, bias, alpha, C, ldc, M, N, K, q.plan, slice);
    if (round_c) gm_round_rows(GM_BF16, C, (size_t)ldc, M, N);
    return;
  }
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    if (!blocks) { // all of A's pairs, 64 rows of op(A) a piece, shared among the threads
#pragma omp for schedule(static)
      for (int r0 = 0; r0 < M; r0 += 64) {
        const int mr = M - r0 < 64 ? M - r0 : 64;
        const size_t at = trans_a ? (size_t)r0 : (size_t)r0 * lda; // row r0 of op(A)
        if (np == 1) pack_a(&q, r0, mr, Ap + (size_t)r0 * ldp);
        for (int t = 0; np > 1 && t < np; t++) { // part t: elements 2 * p0 .. of each row
          const int p0 = plan.start[t], len = plan.start[t + 1] - p0;
          const size_t k0 = trans_a ? 2 * (size_t)p0 * lda : 2 * (size_t)p0;
          pack_rows(A + at + k0, lda, trans_a, mr, t + 1 < np ? 2 * len : K - 2 * p0, Ap + (size_t)M * p0 + (size_t)r0 * len, len);
        }
      }
    }
    if (Ball && trans_b) { // a strip is 32 whole rows of B
#pragma omp for schedule(dynamic, 4)
      for (int s = 0; s < n_strips; s++) pack_strip(B, ldb, trans_b, K, N, s, Ball + (size_t)s * P * STRIP);
    } else if (Ball) { // B as stored: along its rows, every strip at once
#pragma omp single
      zero_last_strip(Ball, P, N);
#pragma omp for schedule(static)
      for (int p0 = 0; p0 < P; p0 += RC) pack_rc_of_strips(B, ldb, K, N, p0, Ball);
    }
    const uint32_t *Bpairs = Bp ? Bp : Ball; // every strip's pairs, or NULL: packed per strip into Bs
    uint32_t *Bs = Bpairs ? NULL : gm_matmul_scratch(GM_SCRATCH_BF16_B, (size_t)(P > 0 ? P : 1) * STRIP * sizeof(uint32_t));
    // with a K split: this thread's partial sums of a strip, [np, M, STRIP]
    float *part = parts ? parts + (size_t)omp_get_thread_num() * np * M * STRIP : NULL;
    int shared = 1;
    if (per_thread) { // (Bpairs is set: blocks need all of B's pairs)
      const int t = omp_get_thread_num();
      uint32_t *mine = t == 0 ? Ap : gm_matmul_scratch(GM_SCRATCH_BF16_A, (size_t)MB * ldp * sizeof(uint32_t));
      if (!mine) {
#pragma omp atomic write
        no_buf = 1;
      }
#pragma omp barrier
#pragma omp atomic read
      shared = no_buf;
      if (!shared) thread_rows(&q, Bpairs, mine, MB, t, omp_get_num_threads());
    }
    for (int r0 = 0; shared && r0 < M; r0 += MB) {
      const int mr = M - r0 < MB ? M - r0 : MB;
      if (blocks) { // this block's pairs (no K split here), 32 rows a piece
#pragma omp for schedule(static)
        for (int x = 0; x < mr; x += 32) pack_a(&q, r0 + x, mr - x < 32 ? mr - x : 32, Ap + (size_t)x * ldp);
      }
      const uint32_t *ab = np > 1 || blocks ? Ap : Ap + (size_t)r0 * ldp;
#pragma omp for schedule(dynamic, 4)
      for (int s = 0; s < n_strips; s++) {
        const uint32_t *strip = Bpairs ? Bpairs + (size_t)s * P * STRIP : Bs;
        if (!Bpairs && Bs) pack_strip(B, ldb, trans_b, K, N, s, Bs);
        strip_rows(&q, s, strip, part, r0, mr, ab);
      }
    }
  }
  scratch_done(parts, own_parts);
  scratch_done(Ap, own_a);
  scratch_done(Ball, own_ball);
}

void gm_matmul_bf16(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                    float *C, int ldc, int M, int N, int K, int threads) {
  run(A, lda, false, B, ldb, trans_b, NULL, bias, alpha, C, ldc, M, N, K, threads, false, 0, 0);
}

void gm_matmul_bf16_ta(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                      float *C, int ldc, int M, int N, int K, int threads) {
  run(A, lda, true, B, ldb, trans_b, NULL, bias, alpha, C, ldc, M, N, K, threads, false, 0, 0);
}

void gm_matmul_bf16_packed(const float *A, int lda, const uint32_t *Bp, const float *bias, float alpha, float *C, int ldc,
                           int M, int N, int K, int threads) {
  run(A, lda, false, NULL, 0, false, Bp, bias, alpha, C, ldc, M, N, K, threads, false, 0, 0);
}

int gm_matmul_bf16_packed_t_rounded(const float *A, int lda, const uint32_t *Xp, float *C, int ldc, int M, int N, int K,
                                    int threads) {
  if (M <= 0 || N <= 0) return 0;
  if (threads <= 0) threads = omp_get_max_threads();
  bool owned = false;
  uint32_t *Bt = scratch(GM_SCRATCH_BF16_BALL, gm_bf16_packed_size(K, N) * sizeof(uint32_t), KEEP_MAX_B, &owned);
  if (!Bt) return -1;
  gm_bf16_pack_transposed(Xp, N, K, Bt, threads); // the pairs of X^T [K, N]
  run(A, lda, false, NULL, 0, false, Bt, NULL, 1.0f, C, ldc, M, N, K, threads, true, 0, 0);
  scratch_done(Bt, owned);
  return 0;
}

void gm_matmul_bf16_packed_rounded(const float *A, int lda, const uint32_t *Bp, const float *bias, float alpha, float *C,
                                   int ldc, int M, int N, int K, int threads) {
  run(A, lda, false, NULL, 0, false, Bp, bias, alpha, C, ldc, M, N, K, threads, true, 0, 0);
}

void gm_matmul_bf16_slice(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b, const float *bias,
                          float alpha, float *C, int ldc, int M, int N, int K, int threads, int batch, int torch_threads) {
  run(A, lda, trans_a, B, ldb, trans_b, NULL, bias, alpha, C, ldc, M, N, K, threads, false, batch > 0 ? batch : 1, torch_threads);
}
