// Matmul in PyTorch's CPU order for f16 (torch 2.15, this machine class; contract in nn.h).
// A and B hold f16 values in f32 buffers, so every product is exact in f32 and a fused
// multiply-add equals the separate multiply and add: the vector kernels use FMA and give the same
// bits as the scalar code here. Each output's summation order is fixed by its definition, so any
// thread count and work split give the same bits.
//
// B not transposed (x @ W, P @ V; ATen's gemm for reduced types): the dot product over K runs in
// four f32 partial sums (l = 0, 1, 2, 3 mod 4, each in order of l), the K % 4 tail goes into the
// first, then ((p0 + p1) + p2) + p3.
// B transposed (q @ k^T, h @ wte^T; ATen's fp16_dot_with_fp32_arith on AVX2): a row of A and a row
// of B are dotted in 8 registers of 8 lanes, register r taking elements j + 8r + lane of each block
// of 64; the registers fold as r += r+4, r += r+2, r += r+1, then the lanes as lane += lane+4,
// lane += lane+2, lane0 + lane1. The K % 64 rest runs through one 8-lane register in steps of 16
// (two FMAs per step), folded the same way and added; the last K % 16 elements add one by one.
// The result is alpha * dot, plus bias when given (torch's beta * c + alpha * dot, c = bias).
// Under a target whose oneDNN ISA is AMX (intel-amx: AVX512-FP16 there), torch runs B transposed
// through oneDNN instead: one f32 chain over k in order, acc = acc + x[k] * y[k] (products exact),
// then alpha * acc (+ bias) (tools/ref/probe_f16_amx_order.py on tests/golden/targets/intel-amx/:
// every output of the 7 shapes), the chain cut into oneDNN's K blocks (512 for K <= 1024, else
// 1024; gm_matmul_f16_onednn; measured on the linear backward's mm: K = 768, 2304, 3000, 3072).
// B as stored: ATen's cpublas gemm hands f16 to oneDNN there too (mkldnn_fp16_gemm: AVX512-FP16 or
// AMX-FP16, alpha != 0, m * n * k > 16^3), so above 16^3 multiply-adds gm_matmul_f16_onednn's
// order runs (the forward's addmm and P @ V: every point of a dumped base-config and 768-wide f16
// forward identical, 1 and 2 threads); 16^3 and below keep ATen's four partial sums. One row (M = 1)
// against B transposed is ATen's gemv there too (fp16_dot_with_fp32_arith: the f32-arithmetic dot
// above, measured live at K 768, 2304, 3072), in gm_matmul_f16_onednn as well.
// Those chains are the f32 kernels' (one chain from zero per output and K block, blocks added in
// order): with more than one row they run on gm_matmul_f32_chains (the f32 kernels and drivers of
// whatever SIMD level runs, GM_F32_BLOCKS_ONEDNN_F16, or _TA for A transposed), then alpha and the
// bias; the loop below keeps one row (and is the fallback when a transposed block cannot be allocated).
#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/matmul/matmul_isa.h"

enum { STRIP = 32 };   // columns per work item of the transposed order
enum { STRIP_NT = 64 }; // columns per work item of the as-stored order (the AVX-512 strip kernel's width)

enum { ROW_BLOCK = 1024 }; // columns per work item of the one-row (decode) AVX-512 kernel

// C[:, strip] for the ncols (<= STRIP) columns at B (row stride ldb).
static void dot4_strip_scalar(const float *A, int lda, const float *B, int ldb, int M, int K, int ncols, float alpha,
                              const float *bias, float *C, int ldc) {
  for (int i = 0; i < M; i++) {
    const float *a = A + (size_t)i * lda;
    for (int j = 0; j < ncols; j++) {
      float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      int l = 0;
      for (; l + 4 <= K; l += 4)
        for (int k = 0; k < 4; k++) p[k] = p[k] + a[l + k] * B[(size_t)(l + k) * ldb + j];
      for (; l < K; l++) p[0] = p[0] + a[l] * B[(size_t)l * ldb + j];
      float dot = ((p[0] + p[1]) + p[2]) + p[3];
      float v = alpha * dot;
      C[(size_t)i * ldc + j] = bias ? bias[j] + v : v;
    }
  }
}

// lane += lane+4, lane += lane+2, lane0 + lane1 over 8 lanes.
static float fold8(float *v) {
  for (int h = 4; h >= 1; h /= 2)
    for (int i = 0; i < h; i++) v[i] = v[i] + v[i + h];
  return v[0];
}

// The part after the 64-element blocks: main_sum is the folded sum of the blocks.
float gm_dot_f32arith_tail(const float *x, const float *y, int K, float main_sum) {
  int main_end = K & ~63, vec_end = K & ~15;
  float sum = main_sum;
  float tail[8] = {0};
  for (int j = main_end; j < vec_end; j += 16)
    for (int half = 0; half < 2; half++)
      for (int k = 0; k < 8; k++) tail[k] = tail[k] + x[j + 8 * half + k] * y[j + 8 * half + k];
  sum = sum + fold8(tail);
  for (int j = vec_end; j < K; j++) sum = sum + x[j] * y[j];
  return sum;
}

static float dot_f32arith_scalar(const float *x, const float *y, int K) {
  float reg[8][8];
  memset(reg, 0, sizeof reg);
  int main_end = K & ~63;
  for (int j = 0; j < main_end; j += 64)
    for (int r = 0; r < 8; r++)
      for (int k = 0; k < 8; k++) reg[r][k] = reg[r][k] + x[j + 8 * r + k] * y[j + 8 * r + k];
  for (int h = 4; h >= 1; h /= 2)
    for (int r = 0; r < h; r++)
      for (int k = 0; k < 8; k++) reg[r][k] = reg[r][k] + reg[r + h][k];
  return gm_dot_f32arith_tail(x, y, K, fold8(reg[0]));
}

// The intel-amx order for B transposed: one chain over k.
static bool trans_is_chain(void) {
  const gm_torch_target_info *ti = gm_torch_target_get_info(gm_torch_target_active());
  return ti && ti->onednn >= GM_ONEDNN_AVX512_CORE_FP16;
}

// oneDNN's K blocks (gm_matmul_f16_onednn): one block for K <= 512, blocks of 512 for K <= 1024,
// else blocks of 1024; the last block holds the rest.
static int onednn_block(int K) { return K <= 1024 ? 512 : 1024; }

// x . y with y read at stride sy: one chain per K block from zero, the blocks added in order.
static float dot_chain_strided(const float *x, const float *y, size_t sy, int K, int bs) {
  float tot = 0.0f;
  for (int k0 = 0; k0 < K; k0 += bs) {
    float acc = 0.0f;
    for (int k = k0; k < K && k < k0 + bs; k++) acc = acc + x[k] * y[(size_t)k * sy];
    tot = k0 ? tot + acc : acc;
  }
  return tot;
}

static float dot_chain(const float *x, const float *y, int K) { return dot_chain_strided(x, y, 1, K, onednn_block(K)); }

static float dot_chain_f16(const float *x, const uint16_t *y, int K) {
  float tot = 0.0f;
  const int bs = onednn_block(K);
  for (int k0 = 0; k0 < K; k0 += bs) {
    float acc = 0.0f;
    for (int k = k0; k < K && k < k0 + bs; k++) acc = acc + x[k] * gm_f16_to_f32(y[k]);
    tot = k0 ? tot + acc : acc;
  }
  return tot;
}

static void matmul_rows_trans(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha, float *C,
                              int ldc, int M, int N, int K, int threads, bool chain);

// One row of A against B as stored (f32 Bf or f16 bits Bh, the other NULL): C[0, :N] as one chain
// over K a column, ROW_BLOCK columns a work item (gm_chain_row_avx512 / _f16_avx512).
static void chain_row_blocks(const float *A, const float *Bf, const uint16_t *Bh, int ldb, int K, int N, float alpha,
                             const float *bias, float *C, int threads) {
  const int n_blocks = (N + ROW_BLOCK - 1) / ROW_BLOCK;
  if (threads > n_blocks) threads = n_blocks;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int s = 0; s < n_blocks; s++) {
    const int j0 = s * ROW_BLOCK, nc = N - j0 < ROW_BLOCK ? N - j0 : ROW_BLOCK;
    const float *bj = bias ? bias + j0 : NULL;
    if (Bh) gm_chain_row_f16_avx512(A, Bh + j0, ldb, K, nc, alpha, bj, C + j0);
    else gm_chain_row_avx512(A, Bf + j0, ldb, K, nc, alpha, bj, C + j0);
  }
}

void gm_matmul_f16_onednn(const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b, const float *bias,
                          float alpha, float *C, int ldc, int M, int N, int K, int threads) {
  if (M <= 0 || N <= 0) return;
  if (threads <= 0) threads = omp_get_max_threads();
  if (M == 1 && trans_b && !trans_a) { // torch's gemm takes ATen's gemv here, not oneDNN
    matmul_rows_trans(A, lda, B, ldb, bias, alpha, C, ldc, M, N, K, threads, false);
    return;
  }
  if (M == 1 && !trans_b && !trans_a && K > 0 && gm_cpu_simd() == GM_SIMD_AVX512) { // one chain, B streamed by rows
    chain_row_blocks(A, B, NULL, ldb, K, N, alpha, bias, C, threads);
    return;
  }
  // the f32 kernels (each ISA's, the scalar definition included) run the same chains; A transposed:
  // blocks of 512 at any K, op(A) made contiguous in row blocks (the loop below on out of memory)
  if (M > 1 && K > 0 &&
      gm_matmul_f32_chains(A, lda, trans_a, B, ldb, trans_b, C, ldc, M, N, K, threads,
                           trans_a ? GM_F32_BLOCKS_ONEDNN_F16_TA : GM_F32_BLOCKS_ONEDNN_F16) == 0) {
    if (bias || alpha != 1.0f) // v = alpha * tot, then bias + v, as below
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
          float v = alpha * C[(size_t)i * ldc + j];
          C[(size_t)i * ldc + j] = bias ? bias[j] + v : v;
        }
    return;
  }
  // one row against B as stored: one chain; A transposed: blocks of 512 at any K
  const int bs = M == 1 && !trans_b && !trans_a ? (K > 0 ? K : 1) : trans_a ? 512 : onednn_block(K);
  const size_t sa_i = trans_a ? 1 : (size_t)lda, sa_k = trans_a ? (size_t)lda : 1; // a(i, k) = A[i * sa_i + k * sa_k]
  const int n_strips = (N + STRIP_NT - 1) / STRIP_NT;
  if (threads > n_strips) threads = n_strips;
  // Each strip of op(B) is copied [K, 64] so the 64 outputs of a row run as independent chains
  // side by side (the compiler vectorises across them; each chain keeps its order).
#pragma omp parallel num_threads(threads) if (threads > 1 && (double)M * N * K > 1e5)
  {
    float *Bs = malloc((size_t)(K > 0 ? K : 1) * STRIP_NT * sizeof(float));
#pragma omp for schedule(dynamic, 1)
    for (int s = 0; s < n_strips; s++) {
      const int j0 = s * STRIP_NT, nc = N - j0 < STRIP_NT ? N - j0 : STRIP_NT;
      if (!Bs) { // no memory for the copy: element by element
        for (int i = 0; i < M; i++)
          for (int j = j0; j < j0 + nc; j++) {
            const float *b = trans_b ? B + (size_t)j * ldb : B + j;
            float tot = 0.0f;
            for (int k0 = 0; k0 < K; k0 += bs) {
              float acc = 0.0f;
              for (int k = k0; k < K && k < k0 + bs; k++)
                acc = acc + A[i * sa_i + k * sa_k] * b[(size_t)k * (trans_b ? 1 : (size_t)ldb)];
              tot = k0 ? tot + acc : acc;
            }
            float v = alpha * tot;
            C[(size_t)i * ldc + j] = bias ? bias[j] + v : v;
          }
        continue;
      }
      for (int k = 0; k < K; k++)
        for (int j = 0; j < STRIP_NT; j++)
          Bs[(size_t)k * STRIP_NT + j] = j >= nc ? 0.0f : trans_b ? B[(size_t)(j0 + j) * ldb + k] : B[(size_t)k * ldb + j0 + j];
      for (int i = 0; i < M; i++) {
        const float *a = A + (size_t)i * sa_i;
        float tot[STRIP_NT], acc[STRIP_NT];
        for (int k0 = 0; k0 < K; k0 += bs) {
          for (int j = 0; j < STRIP_NT; j++) acc[j] = 0.0f;
          for (int k = k0; k < K && k < k0 + bs; k++) {
            const float ak = a[k * sa_k], *bk = Bs + (size_t)k * STRIP_NT;
            for (int j = 0; j < STRIP_NT; j++) acc[j] = acc[j] + ak * bk[j];
          }
          for (int j = 0; j < STRIP_NT; j++) tot[j] = k0 ? tot[j] + acc[j] : acc[j];
        }
        if (K <= 0)
          for (int j = 0; j < STRIP_NT; j++) tot[j] = 0.0f;
        for (int j = 0; j < nc; j++) {
          float v = alpha * tot[j];
          C[(size_t)i * ldc + j0 + j] = bias ? bias[j0 + j] + v : v;
        }
      }
    }
    free(Bs);
  }
}

typedef void (*strip_fn)(const float *, int, const float *, int, int, int, int, float, const float *, float *, int);
typedef float (*dot_fn)(const float *, const float *, int);

// chain: oneDNN's K-blocked chains (intel-amx), else ATen's f32-arithmetic dot.
static void matmul_rows_trans(const float *A, int lda, const float *B, int ldb, const float *bias, float alpha, float *C,
                              int ldc, int M, int N, int K, int threads, bool chain) {
  if (chain && M > 1) { // the same K-blocked chains, side by side over strips of 64 columns (faster)
    gm_matmul_f16_onednn(A, lda, false, B, ldb, true, bias, alpha, C, ldc, M, N, K, threads);
    return;
  }
  gm_simd_level isa = gm_cpu_simd();
  dot_fn dot = chain ? dot_chain : isa >= GM_SIMD_AVX2 ? gm_dot_f32arith_avx2 : dot_f32arith_scalar;
  bool avx512 = isa == GM_SIMD_AVX512 && !chain;
  int n_strips = (N + STRIP - 1) / STRIP;
  if (threads > n_strips) threads = n_strips;
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads) if (threads > 1)
  for (int s = 0; s < n_strips; s++) {
    int j1 = (s + 1) * STRIP < N ? (s + 1) * STRIP : N;
    if (avx512) { // rows in blocks of 64 so the strip of B stays in L1
      for (int i = 0; i < M; i += 64)
        gm_matmul_trans_block_avx512(A, lda, B, ldb, bias, alpha, C, ldc, i, i + 64 < M ? i + 64 : M, s * STRIP, j1, K);
      continue;
    }
    for (int i = 0; i < M; i++)
      for (int j = s * STRIP; j < j1; j++) {
        float v = alpha * dot(A + (size_t)i * lda, B + (size_t)j * ldb, K);
        C[(size_t)i * ldc + j] = bias ? bias[j] + v : v;
      }
  }
}

// intel-amx, B as stored: ATen's cpublas gemm hands f16 to oneDNN (mkldnn_fp16_gemm) when the CPU has
// AVX512-FP16 or AMX-FP16, alpha != 0 and m * n * k > 16^3; smaller products keep ATen's order.
static bool notrans_is_onednn(int M, int N, int K, float alpha) {
  return trans_is_chain() && alpha != 0.0f && (double)M * N * K > 4096.0;
}

void gm_matmul_f16_row16(const float *a, const float *B, int ldb, const float *bias, float alpha, float *C, int N, int K) {
  for (int j = 0; j < N; j++) {
    const float *b = B + (size_t)j * ldb;
    float c[16] = {0};
    for (int k = 0; k < K; k++) c[k % 16] = c[k % 16] + a[k] * b[k];
    const float r = alpha * onednn_fold16(c);
    C[j] = bias ? bias[j] + r : r;
  }
}

static bool fast_chain_row(int N, int K, float alpha) {
  return notrans_is_onednn(1, N, K, alpha) && gm_cpu_simd() == GM_SIMD_AVX512;
}

void gm_matmul_f16_torch(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                         float *C, int ldc, int M, int N, int K, int threads) {
  if (M <= 0 || N <= 0) return;
  if (threads <= 0) threads = omp_get_max_threads();
  if (trans_b) { // one row: ATen's gemv (fp16_dot_with_fp32_arith) on every target
    matmul_rows_trans(A, lda, B, ldb, bias, alpha, C, ldc, M, N, K, threads, M > 1 && trans_is_chain());
    return;
  }
  if (notrans_is_onednn(M, N, K, alpha)) {
    gm_matmul_f16_onednn(A, lda, false, B, ldb, false, bias, alpha, C, ldc, M, N, K, threads);
    return;
  }
  if (M == 1 && gm_cpu_simd() == GM_SIMD_AVX512) { // decode: stream B row by row
    int n_blocks = (N + ROW_BLOCK - 1) / ROW_BLOCK;
    if (threads > n_blocks) threads = n_blocks;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (int s = 0; s < n_blocks; s++) {
      int j0 = s * ROW_BLOCK, nc = N - j0 < ROW_BLOCK ? N - j0 : ROW_BLOCK;
      gm_dot4_row_avx512(A, B + j0, ldb, K, nc, alpha, bias ? bias + j0 : NULL, C + j0);
    }
    return;
  }
  bool avx512 = gm_cpu_simd() == GM_SIMD_AVX512;
  strip_fn fn = avx512 ? gm_dot4_strip_avx512 : dot4_strip_scalar;
  int n_strips = (N + STRIP_NT - 1) / STRIP_NT;
  if (threads > n_strips) threads = n_strips;
  // With more than one block of rows, each strip of B is copied once into a contiguous [K, 64]
  // buffer per thread: read in place, a strip of a long K spans K rows of B (one page each for
  // N >= 1024), and every block of six rows walks them again (TLB misses and no prefetch: 58-69
  // instead of 97-100 GFLOP/s at K >= 2048 on one thread). Same values, same order, same bits.
  bool pack = avx512 && M > 6 && N > STRIP_NT;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    float *Bs = pack ? malloc((size_t)K * STRIP_NT * sizeof(float)) : NULL;
#pragma omp for schedule(dynamic, 2)
    for (int s = 0; s < n_strips; s++) {
      int j0 = s * STRIP_NT, nc = N - j0 < STRIP_NT ? N - j0 : STRIP_NT;
      if (Bs) {
        for (int l = 0; l < K; l++) memcpy(Bs + (size_t)l * STRIP_NT, B + (size_t)l * ldb + j0, (size_t)nc * sizeof(float));
        fn(A, lda, Bs, STRIP_NT, M, K, nc, alpha, bias ? bias + j0 : NULL, C + j0, ldc);
      } else
        fn(A, lda, B + j0, ldb, M, K, nc, alpha, bias ? bias + j0 : NULL, C + j0, ldc);
    }
    free(Bs);
  }
}

// ---- B held as f16 bits (an f16 run's weights) ------------------------------------------------
// The same orders as above with each element of B widened exactly, so the bits equal
// gm_matmul_f16_torch's on the widened B; the AVX-512 kernels read the f16 bits directly (half the
// bytes of the f32 copy), the scalar code widens as it goes.

// The AVX-512 level includes BW (the kernels' f16 loads).
bool gm_matmul_f16_row_fast(void) { return gm_cpu_simd() == GM_SIMD_AVX512; }

// c[j] for one column j, the as-stored order of dot4_strip_scalar.
static float dot4_col_f16_scalar(const float *a, const uint16_t *B, int ldb, int K, int j) {
  float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  int l = 0;
  for (; l + 4 <= K; l += 4)
    for (int k = 0; k < 4; k++) p[k] = p[k] + a[l + k] * gm_f16_to_f32(B[(size_t)(l + k) * ldb + j]);
  for (; l < K; l++) p[0] = p[0] + a[l] * gm_f16_to_f32(B[(size_t)l * ldb + j]);
  return ((p[0] + p[1]) + p[2]) + p[3];
}

// dot_f32arith_scalar with y given as f16 bits: each 64-element block widened, then the same sums.
static float dot_f32arith_f16_scalar(const float *x, const uint16_t *y, int K) {
  float reg[8][8], yb[64];
  memset(reg, 0, sizeof reg);
  int main_end = K & ~63;
  for (int j = 0; j < main_end; j += 64) {
    for (int k = 0; k < 64; k++) yb[k] = gm_f16_to_f32(y[j + k]);
    for (int r = 0; r < 8; r++)
      for (int k = 0; k < 8; k++) reg[r][k] = reg[r][k] + x[j + 8 * r + k] * yb[8 * r + k];
  }
  for (int h = 4; h >= 1; h /= 2)
    for (int r = 0; r < h; r++)
      for (int k = 0; k < 8; k++) reg[r][k] = reg[r][k] + reg[r + h][k];
  for (int k = 0; k < K - main_end; k++) yb[k] = gm_f16_to_f32(y[main_end + k]);
  return gm_dot_f32arith_tail(x + main_end, yb, K - main_end, fold8(reg[0]));
}

// Columns j0..j1 of rows 0..M-1 (one work item).
static void f16h_piece(bool fast, const float *A, int lda, const uint16_t *B, int ldb, bool trans_b, const float *bias,
                       float alpha, float *C, int ldc, int M, int j0, int j1, int K) {
  if (trans_b && M > 1 && trans_is_chain()) { // intel-amx: one chain over k per output (one row: ATen's dot)
    for (int i = 0; i < M; i++)
      for (int j = j0; j < j1; j++) {
        float v = alpha * dot_chain_f16(A + (size_t)i * lda, B + (size_t)j * ldb, K);
        C[(size_t)i * ldc + j] = bias ? bias[j] + v : v;
      }
    return;
  }
  if (fast && trans_b) { // rows in blocks of 64 so the strip of B stays in L1
    for (int i = 0; i < M; i += 64)
      gm_trans_block_f16_avx512(A, lda, B, ldb, bias, alpha, C, ldc, i, i + 64 < M ? i + 64 : M, j0, j1, K);
    return;
  }
  for (int i = 0; i < M; i++) {
    const float *a = A + (size_t)i * lda;
    float *c = C + (size_t)i * ldc;
    if (fast) gm_dot4_row_f16_avx512(a, B + j0, ldb, K, j1 - j0, alpha, bias ? bias + j0 : NULL, c + j0);
    else
      for (int j = j0; j < j1; j++) {
        float v = alpha * (trans_b ? dot_f32arith_f16_scalar(a, B + (size_t)j * ldb, K) : dot4_col_f16_scalar(a, B, ldb, K, j));
        c[j] = bias ? bias[j] + v : v;
      }
  }
}

bool gm_matmul_f16_trans_widens(void) { return trans_is_chain(); }

void gm_matmul_f16_torch_h(const float *A, int lda, const uint16_t *B, int ldb, bool trans_b, const float *bias,
                           float alpha, float *C, int ldc, int M, int N, int K, int threads) {
  if (M <= 0 || N <= 0) return;
  if (threads <= 0) threads = omp_get_max_threads();
  if (trans_b && M > 1 && trans_is_chain()) { // oneDNN's chains on B widened (exact), 1024 rows of B at a time
    enum { CHUNK = 1024 };
    float *Bw = malloc((size_t)CHUNK * (K > 0 ? K : 1) * sizeof(float));
    if (Bw) {
      const bool avx512 = gm_cpu_simd() == GM_SIMD_AVX512;
      for (int j0 = 0; j0 < N; j0 += CHUNK) {
        const int nc = N - j0 < CHUNK ? N - j0 : CHUNK;
        // widened on every thread (a serial scalar loop here was a quarter of an all-logits prefill)
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
        for (int j = 0; j < nc; j++) {
          const uint16_t *src = B + (size_t)(j0 + j) * ldb;
          if (avx512) gm_f16_widen_avx512(src, Bw + (size_t)j * K, (size_t)K);
          else
            for (int k = 0; k < K; k++) Bw[(size_t)j * K + k] = gm_f16_to_f32(src[k]);
        }
        gm_matmul_f16_onednn(A, lda, false, Bw, K, true, bias ? bias + j0 : NULL, alpha, C + j0, ldc, M, nc, K, threads);
      }
      free(Bw);
      return;
    }
  }
  if (!trans_b && M == 1 && K > 0 && fast_chain_row(N, K, alpha)) { // oneDNN's one-row chain, read as f16
    chain_row_blocks(A, NULL, B, ldb, K, N, alpha, bias, C, threads);
    return;
  }
  if (!trans_b && notrans_is_onednn(M, N, K, alpha)) { // oneDNN's order on B widened (exact)
    float *Bw = malloc((size_t)(K > 0 ? K : 1) * N * sizeof(float));
    if (Bw) {
      for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) Bw[(size_t)k * N + j] = gm_f16_to_f32(B[(size_t)k * ldb + j]);
      gm_matmul_f16_onednn(A, lda, false, Bw, N, false, bias, alpha, C, ldc, M, N, K, threads);
      free(Bw);
      return;
    }
  }
  bool fast = gm_matmul_f16_row_fast();
  int width = trans_b ? STRIP : ROW_BLOCK;
  int n_blocks = (N + width - 1) / width;
  if (threads > n_blocks) threads = n_blocks;
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads) if (threads > 1)
  for (int s = 0; s < n_blocks; s++) {
    int j0 = s * width, j1 = N - j0 < width ? N : j0 + width;
    f16h_piece(fast, A, lda, B, ldb, trans_b, bias, alpha, C, ldc, M, j0, j1, K);
  }
}
