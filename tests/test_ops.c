// Table-driven op tests (after the shape of ggml's test-backend-ops): an op is a row of OPS, its
// name, dtype, entry points, the implementations (paths: an entry point under a GPTMEG_SIMD cap and
// a thread count) and its budget against a reference (0: bit for bit; else ULPs of the dtype), plus
// a backward that is NULL until training lands ("no backward yet": the gradient pass skips it).
// Every case runs every path; each path is held to the reference within the budget, and all paths
// must give the same bits (ISA, thread count, packed or 16-bit B, rows computed alone).
//
// Two kinds of case per op: golden (the shapes of tests/golden/matmul/<dtype>.safetensors, written
// by tools/ref/gen_matmul_goldens.py from PyTorch 2.15: addmm, linear, matmul, bmm, baddbmm, with
// alpha, K across MKL's and oneDNN's blocks; the reference is torch's result, rounded to the
// dtype) and definition (random data on a table of shapes, both B layouts; the reference is the
// scalar definition of the kernel's order, and for bf16 also the f64 product within OP.f64_atol).
// Layer norm and softmax fit the same rows (in[] x, w, b; dims rows, N; golden mean/rstd/y).
#include "gptmeg/core.h"
#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"
#include "gptmeg/safetensors.h"
#include "harness.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALPHA 0.35355339059327373f // the goldens' alpha (1/sqrt(8))

// One case: the op's arguments (matmul: M, K, N; B read as [N, K] when trans).
typedef struct {
  int M, K, N;
  bool trans, bias;
  float alpha;
  int golden;             // shape index in the op's golden file; -1: random data
  const char *golden_out; // the golden tensor holding torch's result
} op_case;

// Entry points of the matmul ops.
enum { E_F32, E_F32_SCALAR, E_F32_ROWS, E_F16, E_F16_H, E_BF16, E_BF16_PACKED, E_BF16_UNPACKED, E_BF16_UNPACKED_BP };

// One implementation: an entry point under GPTMEG_SIMD = simd (NULL: the CPU's own ISA), threads.
typedef struct {
  const char *name;
  int entry;
  const char *simd;
  int threads;
} op_path;

// The golden products of each shape of a golden file: tensor name, B layout, bias, alpha.
typedef struct {
  const char *name;
  bool trans, bias;
  float alpha;
} golden_out;

// Data of the definition cases: bias/alpha variants crossed with shapes and both B layouts.
typedef struct {
  bool bias;
  float alpha;
} mm_variant;

#define N_OF(a) (int)(sizeof(a) / sizeof *(a))
#define MAX_PATHS 8

typedef struct {
  const char *name;
  gm_dtype dtype;      // torch's results are rounded to it before the comparison
  uint64_t budget;     // ULPs (of dtype) from the reference: 0 = bit for bit
  const char *backward; // NULL: no backward yet
  // golden cases
  const char *golden;
  int golden_min_shapes;
  golden_out outs[8];
  int n_outs;
  op_path golden_paths[MAX_PATHS];
  int n_golden_paths;
  // definition cases
  const int (*shapes)[3];
  int n_shapes;
  mm_variant variants[3];
  int n_variants;
  op_path ref;         // the definition of the order
  op_path paths[MAX_PATHS];
  int n_paths;
  uint64_t seed;
  int fill;            // 0: normal; 1: multiples of 1/64 (exact products); 2: bf16 values, one subnormal in A
  double scale_a, scale_b;
  double f64_atol;     // > 0: the reference also within this of the f64 product (subnormal A read as 0)
} op_def;

static const int F32_SHAPES[][3] = {{1, 1, 1},     {5, 8, 7},    {9, 37, 20},  {4, 768, 50},  {7, 193, 33},
                                    {13, 64, 100}, {1, 768, 1500}, {21, 383, 65}, {9, 1000, 40}, {3, 1025, 33},
                                    {10, 2600, 20}, {1, 300, 70},  {2, 17, 129},  {1, 0, 5},     {3, 0, 70}};
// The AVX-512 f16 blocking's edges: row blocks of 6 with every remainder, 64-column strips with
// partial vectors, the one-row kernel's 1024-column blocks, K tails mod 4 and 64 (filled below).
static int F16_SHAPES[6 * 6 * 6][3];
static const int BF16_SHAPES[][3] = {{1, 1, 1},    {5, 8, 7},    {9, 37, 20},  {4, 768, 50},  {7, 129, 33}, {13, 64, 100},
                                     {1, 768, 40}, {21, 33, 65}, {9, 1000, 40}, {3, 1025, 33}, {10, 2600, 20}};

static const op_def OPS[] = {
    {.name = "matmul_f32", .dtype = GM_F32, .budget = 0,
     .golden = GPTMEG_SOURCE_DIR "/tests/golden/matmul/f32.safetensors", .golden_min_shapes = 10,
     .outs = {{"addmm", false, true, 1.0f}, {"addmm_alpha", false, true, ALPHA}, {"linear", true, true, 1.0f},
              {"matmul", false, false, 1.0f}, {"matmul_t", true, false, 1.0f}, {"bmm_t", true, false, 1.0f},
              {"baddbmm_t", true, false, ALPHA}},
     .n_outs = 7,
     .golden_paths = {{"1 thread", E_F32, NULL, 1}, {"2 threads", E_F32, NULL, 2}}, .n_golden_paths = 2,
     .shapes = F32_SHAPES, .n_shapes = N_OF(F32_SHAPES),
     .variants = {{true, 1.0f}, {false, 1.0f}, {true, 0.375f}}, .n_variants = 3,
     .ref = {"scalar definition", E_F32_SCALAR, NULL, 1},
     .paths = {{"1 thread", E_F32, NULL, 1}, {"2 threads", E_F32, NULL, 2}, {"AVX2 cap, 2 threads", E_F32, "avx2", 2},
               {"each row alone", E_F32_ROWS, NULL, 2}},
     .n_paths = 4, .seed = 21, .fill = 0, .scale_a = 1.0, .scale_b = 0.5},
    {.name = "matmul_f16", .dtype = GM_F16, .budget = 0,
     .golden = GPTMEG_SOURCE_DIR "/tests/golden/matmul/f16.safetensors", .golden_min_shapes = 7,
     .outs = {{"addmm", false, true, 1.0f}, {"matmul", false, false, 1.0f}, {"matmul_t", true, false, 1.0f},
              {"linear", true, true, 1.0f}, {"baddbmm_t", true, false, ALPHA}},
     .n_outs = 5,
     .golden_paths = {{"AVX-512 cap, 1 thread", E_F16, "avx512", 1}, {"AVX-512 cap, 2 threads", E_F16, "avx512", 2},
                      {"AVX2 cap, 1 thread", E_F16, "avx2", 1}, {"AVX2 cap, 2 threads", E_F16, "avx2", 2},
                      {"scalar, 1 thread", E_F16, "scalar", 1}, {"scalar, 2 threads", E_F16, "scalar", 2}},
     .n_golden_paths = 6,
     .shapes = (const int (*)[3])F16_SHAPES, .n_shapes = N_OF(F16_SHAPES),
     .variants = {{true, 0.125f}}, .n_variants = 1,
     .ref = {"scalar order", E_F16, "scalar", 1},
     .paths = {{"default ISA, 2 threads", E_F16, NULL, 2}, {"B as f16 bits, 2 threads", E_F16_H, NULL, 2},
               {"B as f16 bits, scalar", E_F16_H, "scalar", 2}},
     .n_paths = 3, .seed = 3, .fill = 1, .scale_a = 1.0, .scale_b = 1.0},
    {.name = "matmul_bf16", .dtype = GM_BF16, .budget = 0,
     .golden = GPTMEG_SOURCE_DIR "/tests/golden/matmul/bf16.safetensors", .golden_min_shapes = 8,
     .outs = {{"addmm", false, true, 1.0f}, {"linear", true, true, 1.0f}, {"matmul", false, false, 1.0f}}, .n_outs = 3,
     .golden_paths = {{"1 thread", E_BF16, NULL, 1}, {"2 threads", E_BF16, NULL, 2}}, .n_golden_paths = 2,
     .shapes = BF16_SHAPES, .n_shapes = N_OF(BF16_SHAPES),
     .variants = {{true, 0.25f}}, .n_variants = 1,
     .ref = {"scalar order", E_BF16, "scalar", 1},
     .paths = {{"1 thread", E_BF16, NULL, 1}, {"2 threads", E_BF16, NULL, 2}, {"pre-packed B", E_BF16_PACKED, NULL, 2},
               {"unpacked fallback", E_BF16_UNPACKED, NULL, 1}, {"unpacked fallback on packed B", E_BF16_UNPACKED_BP, NULL, 1}},
     .n_paths = 5, .seed = 9, .fill = 2, .scale_a = 2.0, .scale_b = 0.5, .f64_atol = 1e-3},
};

// Runs path p of a matmul case into C: A [M, K], B [K, N] (or [N, K] when c->trans), bias [N].
static void mm_run(const op_path *p, const op_case *c, const float *A, const float *B, const float *bias, float *C) {
  int M = c->M, K = c->K, N = c->N, ldb = c->trans ? K : N;
  const float *bs = c->bias ? bias : NULL;
  if (p->simd) test_set_simd(p->simd);
  switch (p->entry) {
  case E_F32: gm_matmul_f32_torch(A, K, B, ldb, c->trans, bs, c->alpha, C, N, M, N, K, p->threads); break;
  case E_F32_SCALAR: gm_matmul_f32_torch_scalar(A, K, B, ldb, c->trans, bs, c->alpha, C, N, M, N, K); break;
  case E_F32_ROWS:
    for (int i = 0; i < M; i++)
      gm_matmul_f32_torch(A + (size_t)i * K, K, B, ldb, c->trans, bs, c->alpha, C + (size_t)i * N, N, 1, N, K, p->threads);
    break;
  case E_F16: gm_matmul_f16_torch(A, K, B, ldb, c->trans, bs, c->alpha, C, N, M, N, K, p->threads); break;
  case E_F16_H: {
    uint16_t *Bh = malloc(sizeof(uint16_t) * ((size_t)K * N + 1));
    gm_f32_to_dtype_buf(GM_F16, B, Bh, (size_t)K * N);
    gm_matmul_f16_torch_h(A, K, Bh, ldb, c->trans, bs, c->alpha, C, N, M, N, K, p->threads);
    free(Bh);
    break;
  }
  case E_BF16: gm_matmul_bf16(A, K, B, ldb, c->trans, bs, c->alpha, C, N, M, N, K, p->threads); break;
  case E_BF16_UNPACKED: gm_matmul_bf16_unpacked(A, K, B, ldb, c->trans, NULL, bs, c->alpha, C, N, M, N, K); break;
  case E_BF16_PACKED:
  case E_BF16_UNPACKED_BP: {
    uint32_t *Bp = malloc(gm_bf16_packed_size(K, N) * sizeof(uint32_t));
    gm_bf16_pack(B, ldb, c->trans, K, N, Bp);
    if (p->entry == E_BF16_PACKED) gm_matmul_bf16_packed(A, K, Bp, bs, c->alpha, C, N, M, N, K, p->threads);
    else gm_matmul_bf16_unpacked(A, K, NULL, 0, false, Bp, bs, c->alpha, C, N, M, N, K);
    free(Bp);
    break;
  }
  }
  test_set_simd(NULL);
}

// Positions of got outside the budget from want: bits differ (budget 0) or more than budget ULPs.
static size_t outside(const float *got, const float *want, size_t n, uint64_t budget) {
  if (budget == 0) return (size_t)test_count_diff(got, want, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += gm_ulp_dist_f32(got[i], want[i]) > budget;
  return bad;
}

// Runs every path of a case and holds it to ref (budget) and to the first path's bits.
static void run_case(const op_def *op, const char *kind, const op_path *paths, int n_paths, const op_case *c,
                     const float *A, const float *B, const float *bias, const float *ref, bool round) {
  size_t n = (size_t)c->M * c->N;
  float *out = malloc((n + 1) * sizeof(float)), *first = malloc((n + 1) * sizeof(float));
  for (int p = 0; p < n_paths; p++) {
    memset(out, 0xff, (n + 1) * sizeof(float));
    mm_run(&paths[p], c, A, B, bias, out);
    if (round) gm_round_inplace(op->dtype, out, n);
    size_t bad = outside(out, ref, n, op->budget);
    CHECK(bad == 0, "%s %s %s (M %d K %d N %d, trans %d, bias %d, alpha %g) %s: %zu of %zu outside %llu ULP", op->name, kind,
          c->golden_out ? c->golden_out : "", c->M, c->K, c->N, c->trans, c->bias, (double)c->alpha, paths[p].name, bad, n,
          (unsigned long long)op->budget);
    if (p == 0) memcpy(first, out, n * sizeof(float));
    else
      CHECK(test_count_diff(out, first, n) == 0, "%s %s %s (M %d K %d N %d, trans %d) %s: other bits than %s", op->name, kind,
            c->golden_out ? c->golden_out : "", c->M, c->K, c->N, c->trans, paths[p].name, paths[0].name);
  }
  free(out); free(first);
}

static int run_golden(const op_def *op) {
  gm_safetensors st;
  if (gm_st_open(&st, op->golden)) { CHECK(0, "%s", gm_errmsg()); return 0; }
  int shapes = 0, cases = 0;
  for (int s = 0;; s++) {
    int64_t M, K, N, k2;
    float *A = test_matmul_golden_f32(&st, s, "A", &M, &K);
    if (!A) break;
    shapes++;
    float *B = test_matmul_golden_f32(&st, s, "B", &k2, &N), *Bt = test_matmul_golden_f32(&st, s, "Bt", NULL, NULL);
    float *bias = test_matmul_golden_f32(&st, s, "bias", NULL, NULL);
    for (int o = 0; o < op->n_outs; o++) {
      const golden_out *g = &op->outs[o];
      op_case c = {(int)M, (int)K, (int)N, g->trans, g->bias, g->alpha, s, g->name};
      float *ref = test_matmul_golden_f32(&st, s, g->name, NULL, NULL);
      CHECK(ref != NULL, "%s: shape %d lacks %s", op->golden, s, g->name);
      if (ref) run_case(op, "torch", op->golden_paths, op->n_golden_paths, &c, A, g->trans ? Bt : B, bias, ref, op->dtype != GM_F32);
      free(ref);
      cases++;
    }
    free(A); free(B); free(Bt); free(bias);
  }
  CHECK(shapes >= op->golden_min_shapes, "only %d shapes in %s", shapes, op->golden);
  gm_st_close(&st);
  printf("  %s: %d golden shapes, %d products x %d paths against torch\n", op->name, shapes, cases, op->n_golden_paths);
  return cases;
}

static float draw(gm_rng *r, int fill, double scale) {
  double v = scale * gm_rng_normal(r);
  if (fill == 1) return (float)(int)(v * 64) / 64;
  if (fill == 2) return gm_round_f32(GM_BF16, (float)v);
  return (float)v;
}

// max |C - (bias + alpha * A.B)| with the product in f64 (A's subnormals read as zero, as the kernel does).
static double f64_dist(const op_case *c, const float *A, const float *B, const float *bias, const float *C) {
  double worst = 0;
  for (int i = 0; i < c->M; i++)
    for (int j = 0; j < c->N; j++) {
      double acc = 0;
      for (int k = 0; k < c->K; k++) {
        float a = A[(size_t)i * c->K + k];
        if (fabsf(a) < FLT_MIN) a = 0;
        acc += (double)a * (c->trans ? B[(size_t)j * c->K + k] : B[(size_t)k * c->N + j]);
      }
      double d = fabs(C[(size_t)i * c->N + j] - ((c->bias ? bias[j] : 0) + c->alpha * acc));
      if (d > worst) worst = d;
    }
  return worst;
}

static int run_definition(const op_def *op) {
  gm_rng r;
  gm_rng_seed(&r, op->seed);
  int cases = 0;
  for (int s = 0; s < op->n_shapes; s++) {
    int M = op->shapes[s][0], K = op->shapes[s][1], N = op->shapes[s][2];
    float *A = malloc(((size_t)M * K + 1) * 4), *B = malloc(((size_t)K * N + 1) * 4), *bias = malloc((size_t)N * 4);
    float *ref = malloc(((size_t)M * N + 1) * 4);
    for (size_t i = 0; i < (size_t)M * K; i++) A[i] = draw(&r, op->fill, op->scale_a);
    for (size_t i = 0; i < (size_t)K * N; i++) B[i] = draw(&r, op->fill, op->scale_b);
    for (int i = 0; i < N; i++) bias[i] = draw(&r, op->fill, 0.1);
    if (op->fill == 2 && M * K > 3) A[3] = 1e-39f; // a subnormal input: read as zero
    for (int trans = 0; trans < 2; trans++)
      for (int v = 0; v < op->n_variants; v++) {
        op_case c = {M, K, N, trans, op->variants[v].bias, op->variants[v].alpha, -1, NULL};
        mm_run(&op->ref, &c, A, B, bias, ref);
        if (op->f64_atol > 0) {
          double d = f64_dist(&c, A, B, bias, ref);
          CHECK(d < op->f64_atol, "%s (M %d K %d N %d, trans %d): %s %.3g from the f64 product", op->name, M, K, N, trans,
                op->ref.name, d);
        }
        run_case(op, op->ref.name, op->paths, op->n_paths, &c, A, B, bias, ref, false);
        cases++;
      }
    free(A); free(B); free(bias); free(ref);
  }
  printf("  %s: %d cases x %d paths against the %s\n", op->name, cases, op->n_paths, op->ref.name);
  return cases;
}

int main(void) {
  static const int Ms[] = {1, 2, 5, 6, 7, 13}, Ns[] = {1, 17, 64, 65, 130, 1100}, Ks[] = {1, 3, 4, 67, 130, 211};
  int k = 0;
  for (int a = 0; a < 6; a++)
    for (int b = 0; b < 6; b++)
      for (int c = 0; c < 6; c++) { F16_SHAPES[k][0] = Ms[a]; F16_SHAPES[k][1] = Ks[c]; F16_SHAPES[k][2] = Ns[b]; k++; }
  for (int o = 0; o < N_OF(OPS); o++) {
    run_golden(&OPS[o]);
    run_definition(&OPS[o]);
  }
  // The gradient pass: every op's backward against its reference, once there is one.
  for (int o = 0; o < N_OF(OPS); o++) {
    char what[64];
    snprintf(what, sizeof what, "%s backward", OPS[o].name);
    if (!OPS[o].backward) test_skip(what, "no backward yet");
  }
  printf("  AVX512-BF16 %s; kernel level %s\n", gm_cpu_has(GM_CPU_AVX512_BF16) ? "present" : "absent (bf16: scalar path only)",
         gm_simd_level_name(gm_cpu_simd()));
  return test_done("test_ops");
}
