// Driver of the torch-cpu fast path (contract in gelu_torch_fast.h): blocks of BLOCK elements in
// parallel, each widened to f32, run through its variant's pre stage, transcendental(s) and post
// stage, and narrowed back. The transcendentals are where torch's bits depend on the position of
// an element (ATen's vector body vs scalar leftover), so they run here, on the block's global
// offsets, exactly as gelu_torch_ops.c's op set decides per element:
//  - f32 tanh/erf/exp: gm_gelu_torch_ops_f32_vml (MKL VML_HA, or double libm rounded), any position;
//  - f16/bf16 tanh/erf/exp and every sigmoid: the vector lambda (gelu_torch_ops_avx512.c), then
//    glibc's scalar lambda on the elements in a chunk's leftover (gm_gelu_torch_vec_split); the
//    post stage rounds to the dtype; f16 erf takes the vector lambda everywhere (measured, see there).
//    The arguments lie on the dtype's grid (the pre stages round them), so the vector lambda is
//    a function of 65536 inputs: tanh and erf run once per dtype into a table (vector_table), and
//    each call is one gather per 16 elements with the lambda's own bits (f16 gelu_new forward at
//    2^20 on one thread 462 -> 806 Melem/s; exp and the sigmoid stay direct: the gather into a
//    256 KiB table costs more than SLEEF's expf).
// The f16/bf16 forward of an element in the vector body is then a function of its 65536-valued
// input alone, so with AVX-512 the whole forward runs once per variant and dtype on every pattern
// (forward_table) and blocks that hold no element of a chunk's scalar leftover are looked up
// (gm_gelu_acc_fwd16_lookup); the others run the stages. The backward's transcendentals (what the
// post stage reads besides x and dy) are likewise functions of x in the vector body: they run once
// per variant and dtype on every pattern (saved_table), and such blocks run the post stage in one
// pass over the 16-bit x and dy with them gathered by x (gm_gelu_fast_bwd16_saved_avx512).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gptmeg/cpu.h"
#include "kernels/gelu/gelu_math.h"
#include "kernels/gelu/gelu_ops.h"
#include "kernels/gelu/torch/gelu_torch_fast.h"
#include "kernels/gelu/torch/gelu_torch_ops_simd.h"

enum { BLOCK = 1024 }; // elements per block: 7 f32 buffers of it stay in L1

typedef enum { FN_NONE, FN_TANH, FN_ERF, FN_EXP, FN_SIGMOID } transcend_fn;

// A variant in one direction: pre stage -> fn0 (and fn1) -> post stage (the forward's fwd, or the
// kernels' bwd of form).
typedef struct {
  gelu_fast_stage pre, fwd;
  transcend_fn fn0, fn1;
  gelu_fast_form form; // the backward's
} recipe;

typedef struct {
  gm_dtype dt;
  size_t numel;
  size_t chunk, step; // cpu_kernel_vec's split (gm_gelu_torch_vec_split)
} transcend_ctx;

static float scalar_lambda(transcend_fn fn, float a) {
  switch (fn) {
  case FN_TANH: return tanhf(a);
  case FN_ERF: return erff(a);
  case FN_EXP: return expf(a);
  default: return 1.0f / (1.0f + expf(-a)); // sigmoid
  }
}

static void vector_lambda(transcend_fn fn, const float *in, float *out, size_t m) {
  switch (fn) {
  case FN_TANH: gm_gelu_torch_vec_tanh_avx512(in, out, m); break;
  case FN_ERF: gm_gelu_torch_vec_erf_avx512(in, out, m); break;
  case FN_EXP: gm_gelu_torch_vec_exp_avx512(in, out, m); break;
  default: gm_gelu_torch_vec_sigmoid_avx512(in, out, m); break;
  }
}

// out[b] = the f32 value of f16 (bf16) bit pattern b, for all 65536 patterns.
static void all_patterns_f32(gm_dtype dt, float *out) {
  for (uint32_t b = 0; b < 65536; b++) out[b] = dt == GM_F16 ? gm_f16_to_f32((uint16_t)b) : gm_bf16_to_f32((uint16_t)b);
}

typedef struct {
  transcend_fn fn;
  bool half;
} vector_key;

static void *build_vector_table(const void *ctx) {
  const vector_key *k = ctx;
  float *in = malloc(65536 * sizeof(float)), *out = malloc(65536 * sizeof(float));
  if (in && out) {
    all_patterns_f32(k->half ? GM_F16 : GM_BF16, in);
    vector_lambda(k->fn, in, out, 65536);
  } else {
    free(out);
    out = NULL;
  }
  free(in);
  return out;
}

// The vector lambda of fn on every f16 (half) or bf16 bit pattern, built on first use; NULL if
// out of memory (the caller then runs the lambda).
static const float *vector_table(transcend_fn fn, bool half) {
  static _Atomic(void *) tables[5][2];
  vector_key k = {fn, half};
  return gm_gelu_table_once(&tables[fn][half], build_vector_table, &k);
}

// [lo, hi): the part of chunk ci's scalar leftover inside [off, end); false if empty.
static bool leftover_in(const transcend_ctx *c, size_t ci, size_t off, size_t end, size_t *lo, size_t *hi) {
  size_t begin = ci * c->chunk;
  size_t len = c->numel - begin < c->chunk ? c->numel - begin : c->chunk;
  *lo = begin + len / c->step * c->step;
  *hi = begin + len;
  if (*lo < off) *lo = off;
  if (*hi > end) *hi = end;
  return *lo < *hi;
}

// out[j] = fn(in[j]) for the tensor elements off .. off+m-1, as torch computes each in f32 (the
// post stage rounds it to dt as it reads it).
static void transcend(const transcend_ctx *c, transcend_fn fn, size_t off, const float *in,
                      float *out, size_t m) {
  if (c->dt == GM_F32 && fn != FN_SIGMOID) {
    gelu_vml_op op = fn == FN_TANH ? GELU_VML_TANH : fn == FN_ERF ? GELU_VML_ERF : GELU_VML_EXP;
    gm_gelu_torch_ops_f32_vml(op, in, out, m);
    return;
  }
  // tanh and erf by table; exp and the sigmoid (SLEEF's expf alone) are cheaper than the gather
  const float *table = c->dt == GM_F32 || fn == FN_EXP || fn == FN_SIGMOID ? NULL : vector_table(fn, c->dt == GM_F16);
  if (table) gm_gelu_torch_vec_lookup16_avx512(table, c->dt == GM_F16, in, out, m);
  else vector_lambda(fn, in, out, m);
  if (!(c->dt == GM_F16 && fn == FN_ERF)) {
    // The scalar leftover of every chunk that meets [off, off+m).
    size_t lo, hi;
    for (size_t ci = off / c->chunk; ci * c->chunk < off + m; ci++)
      if (leftover_in(c, ci, off, off + m, &lo, &hi))
        for (size_t i = lo; i < hi; i++) out[i - off] = scalar_lambda(fn, in[i - off]);
  }
}

static recipe recipe_of(const gelu_fast_kernels *k, gm_gelu_variant v, bool backward) {
  switch (v) {
  case GM_GELU_NEW:
  case GM_GELU_ACCURATE: return (recipe){k->pow_arg, k->half_x_one_plus_fwd, FN_TANH, FN_NONE, GELU_FAST_POW};
  case GM_GELU_FAST:
  case GM_OPENAI_GELU: return (recipe){k->product_arg, k->product_fwd, FN_TANH, FN_NONE, GELU_FAST_PRODUCT};
  case GM_GELU_MEGATRON: return (recipe){k->product_arg, k->product_fwd, FN_TANH, FN_NONE, GELU_FAST_MEGATRON};
  case GM_GELU_PYTHON:
    return (recipe){k->python_arg, k->half_x_one_plus_fwd, FN_ERF, backward ? FN_EXP : FN_NONE, GELU_FAST_PYTHON};
  default: return (recipe){k->quick_arg, k->quick_fwd, FN_SIGMOID, FN_NONE, GELU_FAST_QUICK};
  }
}

static gelu_fast_params params_of(gm_gelu_variant v, gm_dtype dt) {
  gelu_fast_params p = {.dt = dt, .c = 0.0f, .zero_add = false};
  if (v == GM_GELU_FAST) p.c = (float)0.7978845608;
  else if (v == GM_OPENAI_GELU) p.c = (float)0.7978845608028654;
  else if (v == GM_GELU_MEGATRON) {
    p.c = (float)0.79788456;
    p.zero_add = true;
  }
  p.megatron_addend = gm_gelu_fast_round(dt, (float)0.79788456);
  return p;
}

gelu_fast_isa gm_gelu_fast_pick_isa(void) {
  return gm_cpu_simd() == GM_SIMD_AVX512 ? GELU_FAST_ISA_AVX512 : GELU_FAST_ISA_SCALAR;
}

// One block [off, off+m) of a call through the stages.
typedef struct {
  const gelu_fast_kernels *k;
  recipe r;
  gelu_fast_params p;
  transcend_ctx tc;
  const void *x, *dy;
  void *out;
} fast_call;

static void run_block(const fast_call *c, size_t off, size_t m) {
  float xb[BLOCK], gb[BLOCK], a0[BLOCK], a1[BLOCK], r0[BLOCK], r1[BLOCK], ob[BLOCK];
  gm_dtype dt = c->p.dt;
  size_t es = gm_dtype_size(dt);
  bool backward = c->dy != NULL;
  // f32 needs no widening: the stages read x and dy and write the output in place.
  const float *xs = xb, *gs = backward ? gb : NULL;
  float *os = ob;
  if (dt == GM_F32) {
    xs = (const float *)c->x + off;
    gs = backward ? (const float *)c->dy + off : NULL;
    os = (float *)c->out + off;
  } else {
    c->k->widen(dt, (const char *)c->x + off * es, xb, m);
    if (backward) c->k->widen(dt, (const char *)c->dy + off * es, gb, m);
  }
  c->r.pre(&c->p, xs, NULL, NULL, NULL, a0, c->r.fn1 != FN_NONE ? a1 : NULL, m);
  transcend(&c->tc, c->r.fn0, off, a0, r0, m);
  if (c->r.fn1 != FN_NONE) transcend(&c->tc, c->r.fn1, off, a1, r1, m);
  if (backward) c->k->bwd(c->r.form, &c->p, xs, gs, r0, r1, os, m);
  else c->r.fwd(&c->p, xs, NULL, r0, r1, os, NULL, m);
  if (dt != GM_F32) c->k->narrow(dt, ob, (char *)c->out + off * es, m);
}

static fast_call call_of(const gelu_fast_kernels *k, gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy,
                         void *out, size_t n, int threads) {
  fast_call c = {.k = k, .r = recipe_of(k, v, dy != NULL), .p = params_of(v, dt), .x = x, .dy = dy, .out = out};
  c.tc = (transcend_ctx){.dt = dt, .numel = n};
  gm_gelu_torch_vec_split(dt, n, threads, &c.tc.chunk, &c.tc.step);
  return c;
}

// Does [off, off+m) hold an element of some chunk's scalar leftover (where the transcendental's
// bits depend on the position)?
static bool meets_leftover(const transcend_ctx *tc, size_t off, size_t m) {
  size_t lo, hi;
  for (size_t ci = off / tc->chunk; ci * tc->chunk < off + m; ci++)
    if (leftover_in(tc, ci, off, off + m, &lo, &hi)) return true;
  return false;
}

// The AVX-512 stages on n patterns as the vector body runs them (one chunk, no leftover).
static void forward_stages(const void *ctx, const uint16_t *x, uint16_t *y, size_t n) {
  const gelu_variant_key *k = ctx;
  fast_call c = call_of(&gm_gelu_fast_avx512_kernels, k->v, k->dt, x, NULL, y, n, 1);
  for (size_t off = 0; off < n; off += BLOCK) run_block(&c, off, n - off < BLOCK ? n - off : BLOCK);
}

static void *build_forward_table(const void *ctx) { return gm_gelu_fwd16_table_build(forward_stages, ctx); }

// The AVX-512 forward of variant v on every f16 (bf16) pattern, as the vector body computes it,
// built on first use; NULL if out of memory.
static const uint16_t *forward_table(gm_gelu_variant v, gm_dtype dt) {
  static _Atomic(void *) tables[GM_GELU_N_VARIANTS][2];
  gelu_variant_key k = {v, dt};
  return gm_gelu_table_once(&tables[v][dt == GM_BF16], build_forward_table, &k);
}

// The backward's transcendental results for every f16 (bf16) pattern of x, as the vector body
// computes them (pre stage, then the lambda), rounded to the dtype as the post stage reads them:
// 65536 floats for fn0, then 65536 for fn1 if the variant has one (gelu_python's exp). Built on
// first use; NULL if out of memory.
static void *build_saved_table(const void *ctx) {
  const gelu_variant_key *k = ctx;
  recipe r = recipe_of(&gm_gelu_fast_avx512_kernels, k->v, true);
  gelu_fast_params p = params_of(k->v, k->dt);
  transcend_ctx tc = {.dt = k->dt, .numel = 65536, .chunk = 65536, .step = 16}; // no leftover
  size_t nfn = r.fn1 != FN_NONE ? 2 : 1;
  float *x = malloc(3 * 65536 * sizeof(float)), *out = malloc(nfn * 65536 * sizeof(float));
  if (x && out) {
    float *a0 = x + 65536, *a1 = x + 2 * 65536;
    all_patterns_f32(k->dt, x);
    r.pre(&p, x, NULL, NULL, NULL, a0, nfn == 2 ? a1 : NULL, 65536);
    transcend(&tc, r.fn0, 0, a0, out, 65536);
    if (nfn == 2) transcend(&tc, r.fn1, 0, a1, out + 65536, 65536);
    for (size_t i = 0; i < nfn * 65536; i++) out[i] = gm_gelu_fast_round(k->dt, out[i]);
  } else {
    free(out);
    out = NULL;
  }
  free(x);
  return out;
}

static const float *saved_table(gm_gelu_variant v, gm_dtype dt) {
  static _Atomic(void *) tables[GM_GELU_N_VARIANTS][2];
  gelu_variant_key k = {v, dt};
  return gm_gelu_table_once(&tables[v][dt == GM_BF16], build_saved_table, &k);
}

int gm_gelu_torch_fast_run(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *out,
                        size_t n, int threads, gelu_fast_isa isa) {
  if (!gm_gelu_ops_has_graph(v))
    return gm_fail("torch-cpu fast path: variant %d is not written as separate ops", (int)v);
  if (dt != GM_F32 && dt != GM_F16 && dt != GM_BF16)
    return gm_fail("torch-cpu fast path: dtype %s is not emulated (f32, f16, bf16)", gm_dtype_name(dt));
  if (n == 0) return 0;
  const gelu_fast_kernels *k =
      isa == GELU_FAST_ISA_AVX512 ? &gm_gelu_fast_avx512_kernels : &gm_gelu_fast_scalar_kernels;
  int nt = threads > 0 ? threads : 1;
  fast_call c = call_of(k, v, dt, x, dy, out, n, nt);
  bool tabled = isa == GELU_FAST_ISA_AVX512 && dt != GM_F32;
  const uint16_t *table = tabled && !dy ? forward_table(v, dt) : NULL;
  const float *saved = tabled && dy ? saved_table(v, dt) : NULL;
  size_t nblocks = (n + BLOCK - 1) / BLOCK;
  nt = gelu_threads_for(n, nt); // c keeps torch's own split (its leftovers); this is only ours
  // Guided, as the accurate mode's blocks (gelu_accurate.c): the block split is ours, not torch's.
#pragma omp parallel for num_threads(nt) schedule(guided, 2)
  for (size_t b = 0; b < nblocks; b++) {
    size_t off = b * BLOCK, m = n - off < BLOCK ? n - off : BLOCK;
    if (table && !meets_leftover(&c.tc, off, m))
      gm_gelu_acc_fwd16_lookup(table, (const uint16_t *)x + off, (uint16_t *)out + off, m);
    else if (saved && !meets_leftover(&c.tc, off, m))
      gm_gelu_fast_bwd16_saved_avx512(c.r.form, &c.p, saved, (const uint16_t *)x + off, (const uint16_t *)dy + off,
                                   (uint16_t *)out + off, m);
    else
      run_block(&c, off, m);
  }
  return 0;
}
