// oneDNN's AMX K chunks for B as stored (GPT-2's Conv1D addmm, W [K, N]) under the intel-amx
// target (issue 23): tests/golden/targets/intel-amx/bf16_amx_chunk/addmm.safetensors
// (tools/ref/gen_bf16_amx_chunk_goldens.py: the real torch 2.15 on an Intel Xeon with AMX, bf16
// addmm on 1 and 2 threads, operands from the generator's value() formula and cancel(), a sample of rows and
// columns stored). For every golden product (GPT-2's four Conv1D shapes and the lm_head backward's
// dX, mm(dlogits, wte) with K 50257, N 768, and with B transposed, F.linear: the Conv1D backward's
// dX = dY @ W^T; M on both sides of each
// change of the chunk measured with tools/ref/probe_bf16_amx_blocks.py):
//   - gm_matmul_bf16 and gm_matmul_bf16_packed with threads = 1 give torch's 1-thread bits (out1)
//     and with threads = 2 torch's 2-thread bits (out2), rounded to bf16, bit for bit, on the AMX
//     kernel and (gm_matmul_bf16) under GPTMEG_SIMD=scalar (the scalar twin; skipped for the
//     lm_head's K 50257, slow, and under GPTMEG_QUICK for products above 64 x 768 x 768);
//     gm_matmul_bf16_unpacked (the reference, one thread's chunks) gives out1 (the same limits);
//   - a scalar AMX-order reference written here, with the chunk the probe measured (chunk1/2, and
//     on 2 threads the K split between the threads, split2), gives the same bits; where the chunk
//     is not one chunk the old one-chunk order differs from torch in at least one sampled output
//     (so the chunk matters for the shape), and where there is a split, the chunks added in order
//     differ too.
#include "harness.h"

#include "gptmeg/core.h"
#include "gptmeg/kernels.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_ADDMM, OP_MM, OP_LINEAR, OP_MMTA };
typedef struct {
  int M, K, N;
  int chunk1, chunk2; // K chunk in elements measured on 1 and 2 threads (0: one chunk)
  int split2;         // on 2 threads, the chunk where the second partial sum starts (0: none)
  int op;             // OP_ADDMM: addmm(bias, A, W); OP_MM: mm(A, W); OP_LINEAR: linear(A, W^T, bias);
                      // OP_MMTA: mm(A, W) with A transposed in memory (the linears' dW; gm_matmul_bf16_ta)
} product;

// The generator's PRODUCTS, in its order (p<index>), with the probe's chunks.
static const product PRODUCTS[] = {
    {24, 768, 768, 384, 0, 0, OP_ADDMM},     {25, 768, 768, 0, 0, 0, OP_ADDMM},       {40, 768, 768, 384, 0, 0, OP_ADDMM},
    {46, 768, 768, 384, 384, 0, OP_ADDMM},   {86, 768, 768, 0, 0, 0, OP_ADDMM},       {40, 768, 2304, 384, 384, 0, OP_ADDMM},
    {200, 768, 2304, 384, 0, 0, OP_ADDMM},   {64, 768, 3072, 384, 384, 0, OP_ADDMM},  {230, 768, 3072, 384, 0, 0, OP_ADDMM},
    {8, 3072, 768, 1536, 1536, 0, OP_ADDMM}, {20, 3072, 768, 768, 768, 2, OP_ADDMM},  {31, 3072, 768, 448, 768, 0, OP_ADDMM},
    {100, 3072, 768, 640, 768, 2, OP_ADDMM}, {160, 3072, 768, 512, 768, 2, OP_ADDMM}, {256, 3072, 768, 448, 448, 0, OP_ADDMM},
    {300, 3072, 768, 768, 1536, 0, OP_ADDMM},
    // the lm_head backward's dX (dlogits @ wte as stored)
    {40, 50257, 768, 864, 864, 0, OP_MM},    {100, 50257, 768, 704, 1600, 16, OP_MM}, {128, 50257, 768, 640, 768, 33, OP_MM},
    // B transposed (the Conv1D backward's dX = dY @ W^T)
    {400, 768, 768, 384, 0, 0, OP_LINEAR},      {64, 768, 3072, 384, 384, 0, OP_LINEAR},
    {100, 2304, 768, 480, 384, 3, OP_LINEAR},   {300, 2304, 768, 768, 1152, 0, OP_LINEAR},
    {34, 3072, 768, 512, 512, 3, OP_LINEAR},    {128, 3072, 768, 448, 384, 4, OP_LINEAR},
    {200, 3072, 768, 512, 768, 2, OP_LINEAR},
    // past 520 rows
    {600, 3072, 768, 768, 1536, 0, OP_ADDMM},  {700, 3072, 768, 768, 768, 0, OP_ADDMM},
    {767, 768, 768, 384, 0, 0, OP_LINEAR},      {768, 768, 768, 0, 0, 0, OP_LINEAR},
    {704, 768, 3072, 384, 384, 0, OP_LINEAR},   {705, 768, 3072, 0, 0, 0, OP_LINEAR},
    {640, 2304, 768, 480, 1152, 0, OP_LINEAR},  {641, 2304, 768, 768, 768, 0, OP_LINEAR},
    {700, 2304, 768, 480, 1152, 0, OP_LINEAR},  {768, 2304, 768, 768, 768, 0, OP_LINEAR},
    {640, 3072, 768, 768, 1536, 0, OP_LINEAR},  {641, 3072, 768, 768, 768, 0, OP_LINEAR},
    {704, 50257, 768, 768, 1536, 0, OP_MM},     {705, 50257, 768, 768, 768, 0, OP_MM},
    // the linears' dW, K = the batch's rows (chunk by K tiles; on 2 threads by shape too)
    {768, 864, 768, 0, 0, 0, OP_MMTA},          {768, 1024, 768, 512, 512, 0, OP_MMTA},
    {768, 896, 3072, 448, 448, 0, OP_MMTA},     {3072, 1568, 768, 544, 544, 0, OP_MMTA},
    {768, 4096, 2304, 704, 704, 0, OP_MMTA},
    {768, 768, 768, 0, 384, 0, OP_MMTA},        {768, 2464, 2304, 832, 640, 0, OP_MMTA},
    {3072, 2720, 768, 704, 928, 0, OP_MMTA},    {768, 3424, 3072, 704, 864, 0, OP_MMTA},
};
// The scalar twin and the unpacked reference only below this many multiply-adds (slow), and under
// GPTMEG_QUICK below the second.
#define SCALAR_MAX ((size_t)400 * 768 * 3072)
#define QUICK_MAX ((size_t)64 * 768 * 768)
enum { COLS = 32 };

static int sample_col(int N, int c) { return c < COLS ? c : N - 2 * COLS + c; }

static float ftz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

// The AMX order written out for one output: tiles of 32 elements, E (even k) and O (odd k) chains
// from zero, acc += E + O per tile, a new acc per chunk of `chunk` elements (0: one), chunks added
// in order (with `split`, chunks [0, split) and [split, ...) summed apart, then the two added: the
// 2-thread K split), then + bias. Operands are bf16-exact normal numbers (no DAZ needed).
static float amx_ref(const float *A, const float *W, const float *bias, int i, int j, int K, int N, int chunk, int split) {
  if (chunk <= 0) chunk = K;
  float sum = 0.0f, first = 0.0f;
  for (int c0 = 0; c0 < K; c0 += chunk) {
    if (split && c0 == split * chunk) { first = sum; sum = 0.0f; }
    int c1 = c0 + chunk < K ? c0 + chunk : K;
    float acc = 0.0f;
    for (int t0 = c0; t0 < c1; t0 += 32) {
      int t1 = t0 + 32 < c1 ? t0 + 32 : c1;
      float e = 0.0f, o = 0.0f;
      for (int k = t0; k < t1; k++) {
        float p = ftz(A[(size_t)i * K + k] * W[(size_t)k * N + j]);
        if (k % 2 == 0) e = ftz(e + p);
        else o = ftz(o + p);
      }
      acc = ftz(acc + ftz(e + o));
    }
    sum = c0 == 0 || (split && c0 == split * chunk) ? acc : sum + acc;
  }
  if (split) sum = first + sum;
  return bias ? bias[j] + sum : sum;
}

static float bf16r(float x) {
  uint32_t u = (uint32_t)gm_f32_to_bf16(x) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// Sampled outputs of C [M, N] (rounded to bf16) against the golden g [rows, 2 COLS]: mismatches.
static int diff_sampled(const float *C, const float *g, const product *p) {
  int r[4], nr = test_amx_rows(p->M, r), bad = 0;
  for (int a = 0; a < nr; a++)
    for (int c = 0; c < 2 * COLS; c++) bad += bf16r(C[(size_t)r[a] * p->N + sample_col(p->N, c)]) != g[a * 2 * COLS + c];
  return bad;
}

int main(void) {
  char buf[1024];
  const char *file = test_golden_for(GM_TT_INTEL_AMX, "bf16_amx_chunk/addmm.safetensors", buf, sizeof buf);
  gm_safetensors st;
  if (gm_st_open(&st, file)) {
    CHECK(0, "%s", gm_errmsg());
    return test_done("test_bf16_amx_chunk");
  }
  gm_torch_target_set(GM_TT_INTEL_AMX);
  int chunked = 0, thread_dep = 0, splits = 0;
  float *W = NULL;
  uint32_t *Wp = NULL;
  float *Wt = NULL; // W^T [N, K] for the linears
  int wK = 0, wN = 0;
  bool wlin = false;
  for (size_t q = 0; q < sizeof PRODUCTS / sizeof PRODUCTS[0]; q++) {
    const product *p = &PRODUCTS[q];
    const int M = p->M, K = p->K, N = p->N;
    const size_t work = (size_t)M * N * K;
    const bool lin = p->op == OP_LINEAR;
    const bool new_w = K != wK || N != wN || lin != wlin; // W (and its packing) shared by the products of one shape
    if (new_w) {
      free(W);
      free(Wp);
      W = malloc(sizeof(float) * (size_t)K * N);
      Wp = malloc(sizeof(uint32_t) * gm_bf16_packed_size(K, N));
      free(Wt);
      Wt = lin ? malloc(sizeof(float) * (size_t)K * N) : NULL;
      wK = K, wN = N, wlin = lin;
    }
    float *A = malloc(sizeof(float) * (size_t)M * K), *biasv = malloc(sizeof(float) * N), *C = malloc(sizeof(float) * (size_t)M * N);
    if (!A || !W || !biasv || !C || !Wp || (lin && !Wt)) { CHECK(0, "out of memory"); return test_done("test_bf16_amx_chunk"); }
    const bool ta = p->op == OP_MMTA;
    const float *bias = p->op == OP_MM || ta ? NULL : biasv;
    test_amx_fill(A, (size_t)M * K, 1);
    if (new_w) test_amx_fill(W, (size_t)K * N, 2);
    test_amx_fill(biasv, (size_t)N, 3);
    // the generator's cancel(): A[:, k] = 1 and W[k, :] = +-2^18, +-2^14 at four k
    const int ks[4] = {3, K - 5, K / 3, 2 * K / 3 + 1};
    const float vs[4] = {262144.0f, -262144.0f, 16384.0f, -16384.0f};
    for (int c = 0; c < 4; c++) {
      for (int i = 0; i < M; i++) A[(size_t)i * K + ks[c]] = 1.0f;
      if (new_w)
        for (int j = 0; j < N; j++) W[(size_t)ks[c] * N + j] = vs[c];
    }
    if (new_w && lin)
      for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) Wt[(size_t)j * K + k] = W[(size_t)k * N + j];
    if (new_w) gm_bf16_pack(lin ? Wt : W, lin ? K : N, lin, K, N, Wp);
    float *At = ta ? malloc(sizeof(float) * (size_t)M * K) : NULL; // A^T [K, M] as the dW products hold it
    if (ta && !At) { CHECK(0, "out of memory"); return test_done("test_bf16_amx_chunk"); }
    for (int i = 0; ta && i < M; i++)
      for (int k = 0; k < K; k++) At[(size_t)k * M + i] = A[(size_t)i * K + k];
    float *g[3] = {NULL, NULL, NULL};
    int r[4], nr = test_amx_rows(M, r);
    for (int th = 1; th <= 2; th++) {
      char name[64];
      snprintf(name, sizeof name, "p%zu.out%d", q, th);
      int64_t d0 = 0, d1 = 0;
      g[th] = test_st_f32(&st, name, &d0, &d1);
      CHECK(g[th] && d0 == nr && d1 == 2 * COLS, "%s: missing or shaped %lldx%lld", name, (long long)d0, (long long)d1);
      if (!g[th]) continue;
      const int chunk = th == 1 ? p->chunk1 : p->chunk2;
      // the reference order written here, with the measured chunk and with one chunk
      const int split = th == 2 ? p->split2 : 0;
      int ref_bad = 0, one_bad = 0, nosplit_bad = 0;
      for (int a = 0; a < nr; a++)
        for (int c = 0; c < 2 * COLS; c++) {
          int j = sample_col(N, c);
          float want = g[th][a * 2 * COLS + c];
          ref_bad += bf16r(amx_ref(A, W, bias, r[a], j, K, N, chunk, split)) != want;
          one_bad += bf16r(amx_ref(A, W, bias, r[a], j, K, N, 0, 0)) != want;
          if (split) nosplit_bad += bf16r(amx_ref(A, W, bias, r[a], j, K, N, chunk, 0)) != want;
        }
      if (split) {
        splits++;
        CHECK(nosplit_bad > 0, "%dx%dx%d t%d: the chunks added in order also give torch's bits (the split is not tested)", M, K,
              N, th);
      }
      CHECK(ref_bad == 0, "%dx%dx%d t%d: the written-out AMX order with chunk %d misses %d sampled outputs", M, K, N, th,
            chunk, ref_bad);
      if (chunk) {
        chunked++;
        CHECK(one_bad > 0, "%dx%dx%d t%d: one chunk also gives torch's bits (the chunk %d is not tested)", M, K, N, th, chunk);
      }
      // gptmeg: the AMX kernel (or what this host runs), then the scalar twin
      for (int cap = 0; cap < 2; cap++) {
        if (cap && (work > SCALAR_MAX || (test_quick() && work > QUICK_MAX))) continue;
        if (cap) test_set_simd("scalar");
        memset(C, 0, sizeof(float) * (size_t)M * N);
        if (ta) gm_matmul_bf16_ta(At, M, W, N, false, NULL, 1.0f, C, N, M, N, K, th);
        else gm_matmul_bf16(A, K, lin ? Wt : W, lin ? K : N, lin, bias, 1.0f, C, N, M, N, K, th);
        int bad = diff_sampled(C, g[th], p);
        CHECK(bad == 0, "%dx%dx%d t%d%s: gm_matmul_bf16 misses %d sampled outputs", M, K, N, th, cap ? " scalar" : "", bad);
        if (cap || ta) { test_set_simd(NULL); continue; } // (A as stored only below)
        memset(C, 0, sizeof(float) * (size_t)M * N);
        gm_matmul_bf16_packed(A, K, Wp, bias, 1.0f, C, N, M, N, K, th);
        bad = diff_sampled(C, g[th], p);
        CHECK(bad == 0, "%dx%dx%d t%d: gm_matmul_bf16_packed misses %d sampled outputs", M, K, N, th, bad);
      }
    }
    if (g[1] && g[2] && (p->chunk1 != p->chunk2 || p->split2)) {
      thread_dep++;
      CHECK(test_count_diff(g[1], g[2], (size_t)nr * 2 * COLS) > 0, "%dx%dx%d: torch's 1- and 2-thread samples agree", M, K,
            N);
    }
    if (g[1] && !ta && work <= SCALAR_MAX && (!test_quick() || work <= QUICK_MAX)) {
      memset(C, 0, sizeof(float) * (size_t)M * N);
      gm_matmul_bf16_unpacked(A, K, lin ? Wt : W, lin ? K : N, lin, NULL, bias, 1.0f, C, N, M, N, K);
      int bad = diff_sampled(C, g[1], p);
      CHECK(bad == 0, "%dx%dx%d: gm_matmul_bf16_unpacked misses %d sampled outputs of 1 thread", M, K, N, bad);
    }
    free(g[1]); free(g[2]);
    free(A); free(At); free(biasv); free(C);
  }
  free(W);
  free(Wt);
  free(Wp);
  CHECK(chunked >= 20, "only %d products in chunks", chunked);
  CHECK(splits == 9, "%d products with the 2-thread K split", splits);
  CHECK(thread_dep >= 6, "only %d products whose chunk depends on the thread count", thread_dep);
  printf("test_bf16_amx_chunk: %zu products, %d (product, threads) in chunks, %d thread-dependent\n",
         sizeof PRODUCTS / sizeof PRODUCTS[0], chunked, thread_dep);
  gm_st_close(&st);
  return test_done("test_bf16_amx_chunk");
}
