// oneDNN's AMX K tiles for a K that is not a multiple of 32, and the blocking of batched products,
// under the intel-amx target (issue 23): tests/golden/targets/intel-amx/bf16_amx_tiles/
// products.safetensors (tools/ref/gen_bf16_amx_tiles_goldens.py: the real torch 2.15 on an Intel
// Xeon with AMX, 1 and 2 threads; operands from the generator's value() and triple() formulas,
// rebuilt here). For every golden product (the attention's P @ V and q @ k^T as torch.bmm of 12
// slices at 60 to 300 tokens, 2-D matmul / addmm / linear whose calls run tiles of 30 or of 32,
// and a linear's dW over an odd number of rows, A transposed, gm_matmul_bf16_ta):
//   - gm_matmul_bf16 (2-D) and gm_matmul_bf16_slice (each stored slice, batch 12, torch's thread
//     count passed) give torch's bits rounded to bf16, bit for bit, on this host's body, under
//     GPTMEG_SIMD=avx2 (the AVX2 emulation) and under GPTMEG_SIMD=scalar (the scalar twin);
//   - where the model's tiles are narrower than 32 elements (one call), the order with 32-element
//     tiles and a partial one misses at least one stored output, so the tile width is what the
//     golden tests;
//   - the blocking model says so: gm_onednn_amx_blocking gives the tile widths listed here;
//   - attention layers (the generator's ATTENTION: hf, bf16, 4 heads or 1 head of 128, 300 tokens,
//     4 threads, through gm_op_attention_fwd / _bwd) give torch's output rows and every row of
//     dqkv (FNV-1a 32 of its f32 bits): with 4 heads P @ V and dS @ k are 3-D products whose
//     batch keeps tiles of 32 (the attention handing the kernels a batch of 1 misses rows of dqkv);
//     with one head the 4 threads' blocking runs tiles of 30 (these operands do not tell it from
//     one thread's 32: the thread count's plumbing is held end to end, check_fidelity.py).
#include "harness.h"

#include "gptmeg/core.h"
#include "gptmeg/kernels.h"
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/target.h"
#include "kernels/matmul/onednn_amx.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_BMM, OP_MATMUL, OP_ADDMM, OP_LINEAR, OP_MMTA };
typedef struct {
  int M, K, N, op, batch;
  int tile[3], last_tile[3]; // the model's K tiles (elements) on 1, 2 (and 4) threads: every call but the last, the last
  int max_threads;           // torch's outputs on 1, 2 (and 4: 4) threads
} product;

// The generator's PRODUCTS, in its order (p<index>), with the tiles tools/ref/onednn_amx_blocking.py
// gives (validated against torch with probe_bf16_amx_blocks.py --triples).
static const product PRODUCTS[] = {
    {300, 300, 64, OP_BMM, 12, {30, 30}, {30, 30}, 2},     {60, 60, 64, OP_BMM, 12, {30, 30}, {30, 30}, 2},
    {150, 150, 64, OP_BMM, 12, {30, 30}, {30, 30}, 2},     {100, 100, 64, OP_BMM, 12, {32, 32}, {32, 32}, 2},
    {300, 64, 300, OP_BMM, 12, {32, 32}, {32, 32}, 2},     {300, 300, 64, OP_MATMUL, 1, {30, 30}, {30, 30}, 2},
    {300, 300, 128, OP_MATMUL, 1, {32, 32}, {32, 32}, 2},  {300, 300, 1024, OP_MATMUL, 1, {30, 30}, {30, 30}, 2},
    {7, 300, 96, OP_LINEAR, 1, {30, 30}, {30, 30}, 2},     {7, 150, 768, OP_ADDMM, 1, {32, 32}, {32, 32}, 2},
    {60, 2000, 768, OP_LINEAR, 1, {32, 32}, {32, 30}, 2},
    // head size 128 on 4 threads: the 3-D blocking keeps tiles of 32 where a 2-D product of the
    // same shape runs tiles of 30 (held below: the slice computed as 2-D misses outputs)
    {300, 300, 128, OP_BMM, 12, {32, 32, 32}, {32, 32, 32}, 4},
    // an odd K with A transposed (a linear's dW over an odd number of rows): the even K's order
    {371, 1127, 221, OP_MMTA, 1, {32, 32}, {32, 32}, 2},   {768, 301, 256, OP_MMTA, 1, {32, 32}, {32, 32}, 2},
    // one column: oneDNN's GEMV path (no AMX blocking: tiles 0 in this table, the model's
    // GM_AMX_NOT_AMX)
    {249, 623, 1, OP_MATMUL, 1, {0, 0}, {0, 0}, 2},        {300, 1000, 1, OP_LINEAR, 1, {0, 0}, {0, 0}, 2},
    {300, 1000, 1, OP_MMTA, 1, {0, 0}, {0, 0}, 2},
    // tiny K: AMX declines the shape, oneDNN's AVX512_CORE_BF16 brgemm (one VDPBF16PS chain)
    {2, 31, 256, OP_MATMUL, 1, {0, 0}, {0, 0}, 2},         {4, 15, 512, OP_ADDMM, 1, {0, 0}, {0, 0}, 2},
    {3, 20, 256, OP_LINEAR, 1, {0, 0}, {0, 0}, 2},
    // one slice of 128 on 4 threads: tiles of 30 where 1 and 2 threads give 32 (the slice runs on
    // one thread: its blocking must take torch's thread count)
    {300, 300, 128, OP_BMM, 1, {32, 32, 30}, {32, 32, 30}, 4},
};

// The generator's triple(j, s, K): three distinct K positions (0 when two coincide).
static bool triple(int j, int s, int K, int q[3]) {
  uint32_t u = (uint32_t)(j + 131 * s) * 2654435761u + 7u * 40503u;
  q[0] = (int)(u % (uint32_t)K), q[1] = (int)((u >> 11) % (uint32_t)K), q[2] = (int)((u >> 21) % (uint32_t)K);
  return q[0] != q[1] && q[0] != q[2] && q[1] != q[2];
}

// The generator's operands of slice s: A [M, K] (rows 0, 1 ones), W [K, N] (columns j < N / 2 a
// cancelling triple where its three positions differ); one column: A's rows from 2 the triples, W ones.
static void operands(const product *p, int s, float *A, float *W) {
  const int M = p->M, K = p->K, N = p->N;
  test_amx_fill_from(A, (size_t)M * K, 1, (size_t)s * M * K);
  for (int k = 0; k < 2 * K; k++) A[k] = 1.0f;
  if (N == 1) {
    for (int i = 2; i < M; i++) {
      int q[3];
      if (!triple(i, s, K, q)) continue;
      for (int k = 0; k < K; k++) A[(size_t)i * K + k] = 0.0f;
      A[(size_t)i * K + q[0]] = 16777216.0f;
      A[(size_t)i * K + q[1]] = 1.0f;
      A[(size_t)i * K + q[2]] = -16777216.0f;
    }
    for (int k = 0; k < K; k++) W[k] = 1.0f;
    return;
  }
  test_amx_fill_from(W, (size_t)K * N, 2, (size_t)s * K * N);
  for (int j = 0; j < N / 2; j++) {
    int q[3];
    if (!triple(j, s, K, q)) continue;
    for (int k = 0; k < K; k++) W[(size_t)k * N + j] = 0.0f;
    W[(size_t)q[0] * N + j] = 16777216.0f;
    W[(size_t)q[1] * N + j] = 1.0f;
    W[(size_t)q[2] * N + j] = -16777216.0f;
  }
}

static float bf16r(float x) {
  uint32_t u = (uint32_t)gm_f32_to_bf16(x) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// The rows a golden holds: every row (bmm up to 19200 outputs, one column), or the generator's
// rows(M) (nr of them in r).
static int stored_rows(const product *p, int *r) {
  if ((p->op == OP_BMM && p->M * p->N <= 19200) || p->N == 1) {
    for (int i = 0; i < p->M; i++) r[i] = i;
    return p->M;
  }
  int c[5] = {0, 1, 2, p->M / 2, p->M - 1}, n = 0;
  for (int i = 0; i < 5; i++) {
    bool dup = c[i] >= p->M; // (rows past M: none)
    for (int j = 0; j < n; j++) dup |= r[j] == c[i];
    if (!dup) r[n++] = c[i];
  }
  for (int i = 1; i < n; i++) // sorted, as the generator stores them
    for (int j = i; j > 0 && r[j - 1] > r[j]; j--) {
      int t = r[j];
      r[j] = r[j - 1];
      r[j - 1] = t;
    }
  return n;
}

// One output in one call with 32-element tiles from 0 and a partial last one (the order before the
// divisor tiles): E / O chains per tile, acc += E + O. Operands are normal bf16 values (no flush).
static float tiles32(const float *A, const float *W, int i, int j, int K, int N) {
  float acc = 0.0f;
  for (int t0 = 0; t0 < K; t0 += 32) {
    float e = 0.0f, o = 0.0f;
    for (int k = t0; k < K && k < t0 + 32; k++) {
      float x = A[(size_t)i * K + k] * W[(size_t)k * N + j];
      if ((k - t0) % 2 == 0) e = e + x;
      else o = o + x;
    }
    acc = acc + (e + o);
  }
  return acc;
}

// The generator's ATTENTION case a<ai>: hf, bf16, B 1, NH heads of 128, T 300, layer 0, 4 threads.
static void check_attention(const gm_safetensors *st, int ai, int NH) {
  enum { B = 1, HD = 128, T = 300, LAYER = 0, THREADS = 4 };
  const int C = NH * HD;
  gm_profile p;
  if (gm_profile_get("hf", GM_BF16, &p)) {
    CHECK(0, "no hf profile: %s", gm_errmsg());
    return;
  }
  gm_op_ctx c;
  gm_op_ctx_init(&c, &p, THREADS, NULL, NULL);
  const size_t N = (size_t)B * T, S = (size_t)B * NH * T * T;
  float *qkv = malloc(N * 3 * C * sizeof(float)), *dout = malloc(N * C * sizeof(float));
  float *out = malloc(N * C * sizeof(float)), *scores = malloc(S * sizeof(float)), *probs = malloc(S * sizeof(float));
  float *dsc = malloc(S * sizeof(float)), *dqkv = malloc(N * 3 * C * sizeof(float));
  float *kc = malloc(N * C * sizeof(float)), *vc = malloc(N * C * sizeof(float));
  char name_out[32], name_fnv[32];
  snprintf(name_out, sizeof name_out, "a%d.out", ai);
  snprintf(name_fnv, sizeof name_fnv, "a%d.dqkv_fnv", ai);
  const gm_st_tensor *to = gm_st_find(st, name_out), *th = gm_st_find(st, name_fnv);
  int r[5], nr = 0;
  for (int i = 0, cand[5] = {0, 1, 2, T / 2, T - 1}; i < 5; i++) r[nr++] = cand[i];
  CHECK(to && th && to->numel == (uint64_t)nr * C && th->numel == 2 * N, "a%d: the golden's tensors are missing or misshaped", ai);
  float *gout = to ? malloc(to->numel * sizeof(float)) : NULL, *gh = th ? malloc(th->numel * sizeof(float)) : NULL;
  if (qkv && dout && out && scores && probs && dsc && dqkv && kc && vc && gout && gh && th->numel == 2 * N) {
    const uint64_t seed = (uint64_t)(((B * 131 + NH) * 131 + HD) * 131 + T);
    test_lcg_values(seed, qkv, N * 3 * C, GM_BF16);
    test_lcg_values(seed + 7, dout, N * C, GM_BF16);
    gm_op_attn a = {B, T, 0, C, NH, LAYER, true, false, false, kc, vc, T};
    int rc = gm_op_attention_fwd(&c, &a, out, scores, probs, qkv);
    if (!rc) rc = gm_op_attention_bwd(&c, &a, dqkv, dsc, dout, qkv, probs, scores);
    CHECK(rc == 0, "a%d: the attention failed: %s", ai, gm_errmsg());
    gm_st_read_f32(to, gout);
    int bad_out = 0, bad_rows = 0;
    for (int a_ = 0; a_ < nr; a_++)
      for (int j = 0; j < C; j++) bad_out += out[(size_t)r[a_] * C + j] != gout[(size_t)a_ * C + j];
    gm_st_read_f32(th, gh); // each row's hash as its high and low 16 bits
    for (size_t i = 0; i < N; i++)
      bad_rows += test_fnv_row(dqkv + i * 3 * C, 3 * C) != ((uint32_t)gh[2 * i] << 16 | (uint32_t)gh[2 * i + 1]);
    CHECK(bad_out == 0, "a%d: %d of %d stored outputs differ from torch's", ai, bad_out, nr * C);
    CHECK(bad_rows == 0, "a%d: %d of %zu rows of dqkv differ from torch's", ai, bad_rows, N);
  }
  free(qkv), free(dout), free(out), free(scores), free(probs), free(dsc), free(dqkv), free(kc), free(vc), free(gout), free(gh);
}

int main(void) {
  char buf[1024];
  const char *file = test_golden_for(GM_TT_INTEL_AMX, "bf16_amx_tiles/products.safetensors", buf, sizeof buf);
  gm_safetensors st;
  if (gm_st_open(&st, file)) {
    CHECK(0, "%s", gm_errmsg());
    return test_done("test_bf16_amx_tiles");
  }
  gm_torch_target_set(GM_TT_INTEL_AMX);
  int narrow = 0, batch_one = 0;
  bool batch_checked = false;
  for (size_t q = 0; q < sizeof PRODUCTS / sizeof PRODUCTS[0]; q++) {
    const product *p = &PRODUCTS[q];
    const int M = p->M, K = p->K, N = p->N;
    const bool bias_op = p->op == OP_ADDMM || p->op == OP_LINEAR;
    float *A = malloc(sizeof(float) * (size_t)M * K), *W = malloc(sizeof(float) * (size_t)K * N);
    float *Wt = malloc(sizeof(float) * (size_t)K * N), *C = malloc(sizeof(float) * (size_t)M * N), *bias = malloc(sizeof(float) * N);
    float *At = malloc(sizeof(float) * (size_t)M * K);
    int *r = malloc(sizeof(int) * (size_t)M);
    if (!A || !W || !Wt || !At || !C || !bias || !r) {
      CHECK(0, "out of memory");
      return test_done("test_bf16_amx_tiles");
    }
    test_amx_fill(bias, (size_t)N, 3);
    const int nr = stored_rows(p, r);
    const int n_slices = p->op == OP_BMM ? 2 : 1;
    for (int th = 1; th <= p->max_threads; th += th == 2 ? 2 : 1) {
      const int ti = th == 4 ? 2 : th - 1;
      gm_amx_blocking b;
      int rc = gm_onednn_amx_blocking(M, N, K, p->op == OP_MMTA, p->op == OP_LINEAR, bias_op, th, p->batch, &b);
      if (p->tile[ti] == 0) CHECK(rc == GM_AMX_NOT_AMX, "p%zu %dx%dx%d: the model gives %d, not a shape AMX declines", q, M, K, N, rc);
      else CHECK(rc == 0 && b.tile == p->tile[ti] && b.last_tile == p->last_tile[ti],
            "p%zu %dx%dx%d batch %d t%d: the model gives tiles %d / %d (rc %d), the table %d / %d", q, M, K, N, p->batch, th,
            b.tile, b.last_tile, rc, p->tile[ti], p->last_tile[ti]);
      char name[64];
      snprintf(name, sizeof name, "p%zu.out%d", q, th);
      const gm_st_tensor *t = gm_st_find(&st, name);
      CHECK(t && t->numel == (uint64_t)n_slices * nr * N, "%s: missing or not %d x %d x %d", name, n_slices, nr, N);
      if (!t || t->numel != (uint64_t)n_slices * nr * N) continue;
      float *g = malloc(sizeof(float) * (size_t)t->numel);
      if (!g) { CHECK(0, "out of memory"); continue; }
      gm_st_read_f32(t, g);
      // one call in tiles narrower than 32: the old order (32-element tiles) must miss some output
      const bool one_call_narrow = p->tile[ti] != 32 && p->last_tile[ti] == p->tile[ti] && !bias_op;
      int old = 0;
      for (int sl = 0; sl < n_slices; sl++) {
        const int s = sl ? p->batch - 1 : 0;
        operands(p, s, A, W);
        for (int k = 0; k < K; k++)
          for (int j = 0; j < N; j++) Wt[(size_t)j * K + k] = W[(size_t)k * N + j];
        for (int i = 0; i < M; i++) // A^T [K, M], as a dW's x^T
          for (int k = 0; k < K; k++) At[(size_t)k * M + i] = A[(size_t)i * K + k];
        const float *gs = g + (size_t)sl * nr * N;
        for (int cap = 0; cap < 3; cap++) {
          static const char *caps[3] = {NULL, "avx2", "scalar"};
          if (cap) test_set_simd(caps[cap]);
          memset(C, 0, sizeof(float) * (size_t)M * N);
          if (p->op == OP_BMM) gm_matmul_bf16_slice(A, K, false, W, N, false, NULL, 1.0f, C, N, M, N, K, 1, p->batch, th);
          else if (p->op == OP_LINEAR) gm_matmul_bf16(A, K, Wt, K, true, bias, 1.0f, C, N, M, N, K, th);
          else if (p->op == OP_MMTA) gm_matmul_bf16_ta(At, M, W, N, false, NULL, 1.0f, C, N, M, N, K, th);
          else gm_matmul_bf16(A, K, W, N, false, p->op == OP_ADDMM ? bias : NULL, 1.0f, C, N, M, N, K, th);
          if (cap) test_set_simd(NULL);
          int bad = 0;
          for (int a = 0; a < nr; a++)
            for (int j = 0; j < N; j++) bad += bf16r(C[(size_t)r[a] * N + j]) != gs[(size_t)a * N + j];
          CHECK(bad == 0, "p%zu %dx%dx%d batch %d slice %d t%d%s%s: %d of %d stored outputs differ from torch", q, M, K, N,
                p->batch, s, th, cap ? " simd " : "", cap ? caps[cap] : "", bad, nr * N);
        }
        if (p->op == OP_BMM && th == 4) { // the same slice blocked as a 2-D product (batch 1): not torch's
          memset(C, 0, sizeof(float) * (size_t)M * N);
          gm_matmul_bf16_slice(A, K, false, W, N, false, NULL, 1.0f, C, N, M, N, K, 1, 1, th);
          for (int a = 0; a < nr; a++)
            for (int j = 0; j < N; j++) batch_one += bf16r(C[(size_t)r[a] * N + j]) != gs[(size_t)a * N + j];
          batch_checked = true;
        }
        if (one_call_narrow)
          for (int a = 0; a < nr; a++)
            for (int j = 0; j < N; j++) old += bf16r(tiles32(A, W, r[a], j, K, N)) != gs[(size_t)a * N + j];
      }
      if (one_call_narrow) {
        CHECK(old > 0, "p%zu t%d: 32-element tiles also give torch's bits (the tiles of %d are not tested)", q, th, p->tile[ti]);
        narrow++;
      }
      free(g);
    }
    free(A); free(W); free(Wt); free(At); free(C); free(bias); free(r);
  }
  CHECK(narrow >= 8, "only %d products x threads test narrower tiles", narrow);
  CHECK(batch_checked && batch_one > 0, "the batch's blocking is not tested (a slice blocked as 2-D gives torch's bits)");
  check_attention(&st, 0, 4);
  check_attention(&st, 1, 1);
  gm_st_close(&st);
  return test_done("test_bf16_amx_tiles");
}
