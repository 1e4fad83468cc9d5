// torch-cpu mode for PyTorch's one-kernel GELU ops: F.gelu(x) (gelu), F.gelu(x, approximate='tanh')
// (gelu_pytorch_tanh) and clip(F.gelu(x), -10, 10) (gelu_10), forward and input gradient, bit for
// bit what the pinned torch 2.15.0 (CPU capability AVX512, oneDNN 3.13) returns on this CPU, for a
// contiguous 1-D tensor of n elements and `threads` = torch.get_num_threads(). NaN results are
// NaN where torch's are; their payload/sign bits are not promised (measured: equal for the oneDNN
// paths and most others; differ for some tanh NaNs and for bf16 gelu_10, whose clamp re-rounds).
//
// Which code runs (measured against torch, see tools/ref/gen_gelu_aten_goldens.py):
//  - approximate='none' with n >= 2 on f32, on bf16 where the torch CPU target's oneDNN ISA is
//    avx512_core or above, and on f16 where it is avx512_core_fp16 or above (measured: an AMD EPYC
//    without AVX512-FP16 runs f16 through ATen's kernel below; per target: gelu_plan below):
//    oneDNN's JIT gelu_erf (forward and backward). Independent of threads. f32 in/out; f16 via vcvtph2ps/vcvtps2ph (RNE); bf16 by
//    widening and vcvtneps2bf16 (RNE, flushes results below 2^-126 to zero, NaN keeps payload).
//  - everything else (tanh; erf with n == 1): ATen's GELU kernel. TensorIterator splits [0, n) into
//    per-thread chunks (forward: when n > 16384 with grain n/threads; backward: when n > 32768 with
//    grain 32768; chunk = ceil(n / used threads)). In each chunk the first floor(len/V)*V elements
//    take the Vectorized lambda (V = 32 for f32, 64 for f16/bf16; half under ATen's AVX2
//    capability), the rest the scalar lambda with
//    glibc tanhf/erff/expf. f16/bf16 are widened to f32, computed in f32 and rounded once
//    (RNE; bf16 NaN becomes 0xffff on the vector path, 0x7fc0 on the scalar path).
//  - f16/bf16 through ATen's vector lambda or oneDNN's bf16 kernel: looked up in tables of that
//    kernel's results over all 65536 patterns (forward) and of its factor of dy (backward), the
//    same bits as computing them (gelu16_table below).
//  - gelu_10: the forward above, then clamp to [-10, 10] in the dtype. Backward: autograd of clip
//    keeps dy where -10 < y < 10 (exactly +-10 and NaN give 0), then the gelu backward.
//  - f64, approximate='tanh': ATen's double kernel (8 lanes, vector step 16, SLEEF tanhd8_u10,
//    glibc tanh in the scalar tail). f64 with approximate='none' (gelu, gelu_10) is refused: its
//    vector lambda calls torch's bundled SLEEF erfd8_u10, which differs from Debian's libsleef
//    3.5.1 in about 2% of elements (measured), so the bits cannot be promised.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gptmeg/core.h"
#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"
#include "kernels/gelu/gelu_impl.h"
#include "kernels/gelu/gelu_math.h"
#include "kernels/gelu/torch/gelu_torch_aten_isa.h"

#define BLOCK 4096 // elements widened at a time (a multiple of every vector step)

static const float kBetaF = (float)(M_SQRT2 * M_2_SQRTPI * 0.5);
static const float kKappaF = 0.044715f;
static const float kAlphaF = (float)M_SQRT1_2;
static const float kPdfF = (float)(M_2_SQRTPI * M_SQRT1_2 * 0.5);

// ---- ATen scalar lambdas (the leftover of each chunk) ---------------------------------------
// GCC fused `x + kKappa*x_cube` (forward and backward), `1 - t*t` and `1 + 3kKappa*x_sq`; the
// erf backward's final `cdf + x*pdf` is not fused (scalar lambda, and the f16 vector lambda).
static float scalar_tanh_fwd(float x) {
  float inner = kBetaF * fmaf(kKappaF, x * x * x, x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

static float scalar_erf_fwd(float x) { return x * 0.5f * (1.0f + erff(x * kAlphaF)); }

static float scalar_tanh_bwd(float x, float dy) {
  float x_sq = x * x;
  float inner = kBetaF * fmaf(kKappaF, x_sq * x, x);
  float t = tanhf(inner);
  float left = 0.5f * x;
  float left_d = 0.5f * (1.0f + t);
  float tanh_d = fmaf(-t, t, 1.0f);
  float inner_d = kBetaF * fmaf(3.0f * kKappaF, x_sq, 1.0f);
  float right_d = left * tanh_d * inner_d;
  return dy * (left_d + right_d);
}

static float scalar_erf_bwd(float x, float dy) {
  float cdf = 0.5f * (1.0f + erff(x * kAlphaF));
  float pdf = kPdfF * expf(x * x * -0.5f);
  return dy * (cdf + x * pdf);
}

// The double lambdas: same expressions and fused sites, glibc tanh/erf/exp.
static double scalar_f64(bool tanh_variant, bool backward, double x, double dy) {
  const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
  if (tanh_variant) {
    double x_sq = x * x;
    double t = tanh(beta * fma(kappa, x_sq * x, x));
    if (!backward) return 0.5 * x * (1.0 + t);
    double left_d = 0.5 * (1.0 + t);
    double right_d = 0.5 * x * fma(-t, t, 1.0) * (beta * fma(3.0 * kappa, x_sq, 1.0));
    return dy * (left_d + right_d);
  }
  if (!backward) return x * 0.5 * (1.0 + erf(x * M_SQRT1_2));
  double cdf = 0.5 * (1.0 + erf(x * M_SQRT1_2));
  double pdf = M_2_SQRTPI * M_SQRT1_2 * 0.5 * exp(x * x * -0.5);
  return dy * (cdf + x * pdf);
}

// ---- storage conversions --------------------------------------------------------------------
// ROUND_ONEDNN: vcvtneps2bf16 (avx512_core_bf16 and up); ROUND_ONEDNN_EMU: oneDNN's emulation of it
// on avx512_core, which does not flush tiny results.
typedef enum { ROUND_ATEN_VEC, ROUND_ATEN_SCALAR, ROUND_ONEDNN, ROUND_ONEDNN_EMU } round_kind;

static float widen(gm_dtype dt, const void *p, size_t i) {
  if (dt == GM_F32) return ((const float *)p)[i];
  uint16_t h = ((const uint16_t *)p)[i];
  return dt == GM_F16 ? gm_f16_to_f32(h) : gm_bf16_to_f32(h);
}

static uint16_t bf16_round(float f, round_kind k) {
  if (isnan(f)) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if (k == ROUND_ATEN_VEC) return 0xffff;
    if (k == ROUND_ATEN_SCALAR) return 0x7fc0;
    return (uint16_t)((u >> 16) | 0x40);
  }
  if (k == ROUND_ONEDNN && fabsf(f) < 0x1p-126f) return signbit(f) ? 0x8000 : 0x0000;
  if (k == ROUND_ONEDNN_EMU) return gm_f32_to_bf16(f);
  return gm_f32_to_bf16(f);
}

static void store(gm_dtype dt, void *p, size_t i, float f, round_kind k) {
  if (dt == GM_F32) ((float *)p)[i] = f;
  else if (dt == GM_F16) ((uint16_t *)p)[i] = gm_f32_to_f16(f);
  else ((uint16_t *)p)[i] = bf16_round(f, k);
}

// f16/bf16 block conversions: exact widening in AVX-512 lanes (this mode requires AVX-512); f16
// stores through F16C (RNE with gm_f32_to_f16's bits, NaN included); bf16 stores in AVX-512
// integer lanes with each path's NaN and flush rules (the same bits as store()).
static void widen_block(gm_dtype dt, const void *p, size_t s, float *dst, size_t m) {
  gm_aten_widen(dt == GM_F16, (const uint16_t *)p + s, dst, m);
}

static void store_block(gm_dtype dt, void *p, size_t s, const float *src, size_t m, round_kind k) {
  if (dt == GM_F16) gm_f32_to_dtype_buf(GM_F16, src, (uint16_t *)p + s, m);
  else if (k != ROUND_ATEN_SCALAR) gm_aten_store_bf16(src, (uint16_t *)p + s, m, k == ROUND_ONEDNN ? 1 : k == ROUND_ONEDNN_EMU ? 2 : 0);
  else for (size_t i = 0; i < m; i++) store(dt, p, s + i, src[i], k);
}

// ---- one chunk of the ATen kernel -------------------------------------------------------------
typedef struct {
  bool tanh;     // approximate='tanh' (else 'none')
  bool backward;
  gm_dtype dt;
  const void *x, *dy;
  void *out;
  const struct gelu_plan *plan; // the torch CPU target's kernels (gelu_plan_now)
} aten_job;

// What the active torch CPU target (gptmeg/target.h) runs, measured with torch under each target's
// dispatch caps (tests/golden/targets/, tests/test_target_aten.c):
//  - ATen's capability sets the vector step of cpu_kernel_vec (two Vectorized per step): AVX512
//    32 f32 / 64 f16,bf16 / 16 f64 elements, AVX2 16 / 32 / 8. The vector lambdas give the same
//    bits per element under both (SLEEF's AVX2 and AVX-512 builds agree), so only the
//    vector-body / scalar-tail split moves.
//  - oneDNN takes F.gelu(approximate='none') (n >= 2) in f32 always, in bf16 where its ISA is
//    avx512_core or above (ideep's bf16 support check), in f16 where it is avx512_core_fp16 or
//    above; elsewhere ATen's kernel runs. Its f32 forward is the minimax pieces from avx512_core up,
//    Abramowitz-Stegun below (the AVX2 JIT); its bf16 store is vcvtneps2bf16 (tiny results
//    flushed) from avx512_core_bf16 up, an integer emulation that does not flush on avx512_core.
typedef struct gelu_plan {
  size_t step_f32, step_16, step_f64;
  bool dnn_f16, dnn_bf16;
  bool dnn_minimax;    // else the Abramowitz-Stegun forward
  round_kind dnn_bf16_round;
} gelu_plan;

static gelu_plan gelu_plan_now(void) {
  const gm_torch_target_info *ti = gm_torch_target_get_info(gm_torch_target_active());
  bool avx2 = ti->aten != GM_ATEN_AVX512;
  gelu_plan p = {avx2 ? 16 : 32, avx2 ? 32 : 64, avx2 ? 8 : 16,
                 ti->onednn >= GM_ONEDNN_AVX512_CORE_FP16, ti->onednn >= GM_ONEDNN_AVX512_CORE,
                 ti->onednn >= GM_ONEDNN_AVX512_CORE,
                 ti->onednn >= GM_ONEDNN_AVX512_CORE_BF16 ? ROUND_ONEDNN : ROUND_ONEDNN_EMU};
  return p;
}

// ---- f16/bf16 by table ------------------------------------------------------------------------
// A 16-bit input has 65536 patterns, so a vector kernel (ATen's lambda for one form, or oneDNN's
// bf16 gelu_erf) runs once on all of them, the first call for a kernel and dtype, and its results
// are kept: the forward's rounded outputs, and the backward's f32 factor of dy (computed with
// dy = 1, exact). Lookups give the block evaluation's bits (tests/test_gelu_torch_aten.c against
// torch's goldens).
typedef struct {
  uint16_t fwd[65536];
  float factor[65536];
} gelu16_table;

typedef enum { TABLE_ATEN_ERF, TABLE_ATEN_TANH, TABLE_ONEDNN_ERF, TABLE_ONEDNN_ERF_EMU, N_TABLE_KERNELS } table_kernel;
static _Atomic(void *) gelu16_tables[N_TABLE_KERNELS][2]; // [kernel][bf16]

static void store_block(gm_dtype dt, void *p, size_t s, const float *src, size_t m, round_kind k);

typedef struct {
  table_kernel kern;
  gm_dtype dt;
} table_key;

static void *gelu16_build(const void *ctx) {
  const table_key *key = ctx;
  enum { N = 65536 };
  gelu16_table *t = malloc(sizeof *t);
  uint16_t *pat = malloc(N * sizeof *pat);
  float *x = malloc(N * sizeof *x), *one = malloc(N * sizeof *one), *y = malloc(N * sizeof *y);
  if (t && pat && x && one && y) {
    for (int i = 0; i < N; i++) {
      pat[i] = (uint16_t)i;
      one[i] = 1.0f;
    }
    gm_aten_widen(key->dt == GM_F16, pat, x, N);
    if (key->kern == TABLE_ONEDNN_ERF || key->kern == TABLE_ONEDNN_ERF_EMU) { // bf16 only: oneDNN's one-pass kernel, its own rounding
      gm_onednn_gelu_erf_bf16(pat, NULL, t->fwd, N, key->kern == TABLE_ONEDNN_ERF_EMU ? 2 : 0);
      gm_onednn_gelu_erf_bwd(x, one, t->factor, N);
    } else {
      bool tanh = key->kern == TABLE_ATEN_TANH;
      if (tanh) gm_aten_vec_tanh_fwd(x, y, N);
      else gm_aten_vec_erf_fwd(x, y, N);
      store_block(key->dt, t->fwd, 0, y, N, ROUND_ATEN_VEC);
      if (tanh) gm_aten_vec_tanh_bwd(x, one, t->factor, N);
      else gm_aten_vec_erf_bwd(x, one, t->factor, N);
    }
  } else {
    free(t);
    t = NULL;
  }
  free(pat);
  free(x);
  free(one);
  free(y);
  return t;
}

// NULL only when out of memory: the caller then evaluates block by block.
static const gelu16_table *gelu16_get(table_kernel kern, gm_dtype dt) {
  table_key key = {kern, dt};
  return gm_gelu_table_once(&gelu16_tables[kern][dt == GM_BF16], gelu16_build, &key);
}

// out[0, n) of a job on 16-bit storage from table T.
static void gelu16_lookup(const gelu16_table *T, const aten_job *j, int onednn, size_t b, size_t n) {
  const uint16_t *x = (const uint16_t *)j->x + b;
  uint16_t *out = (uint16_t *)j->out + b;
  if (j->backward) gm_gelu16_bwd_by_factor(j->dt == GM_F16, onednn, T->factor, x, (const uint16_t *)j->dy + b, out, n);
  else gm_gelu_acc_fwd16_lookup(T->fwd, x, out, n);
}

// Elements [b, e) as one thread of at::parallel_for sees them.
static void aten_chunk(const aten_job *j, size_t b, size_t e, float *xb, float *db, float *ob) {
  if (j->dt == GM_F64) { // no widening: the vector lambda works on the arrays in place
    const double *x = j->x, *dy = j->dy;
    double *out = j->out;
    size_t vec_end = b + (e - b) / j->plan->step_f64 * j->plan->step_f64;
    gm_aten_vec_f64(j->tanh, j->backward, x + b, dy ? dy + b : NULL, out + b, vec_end - b);
    for (size_t i = vec_end; i < e; i++) out[i] = scalar_f64(j->tanh, j->backward, x[i], dy ? dy[i] : 0.0);
    return;
  }
  size_t step = j->dt == GM_F32 ? j->plan->step_f32 : j->plan->step_16;
  size_t vec_end = b + (e - b) / step * step;
  if (j->dt == GM_F32) { // the vector lambda on the arrays in place
    const float *x = (const float *)j->x + b, *dy = j->backward ? (const float *)j->dy + b : NULL;
    float *o = (float *)j->out + b;
    size_t m = vec_end - b;
    if (j->backward) {
      if (j->tanh) gm_aten_vec_tanh_bwd(x, dy, o, m);
      else gm_aten_vec_erf_bwd(x, dy, o, m);
    } else {
      if (j->tanh) gm_aten_vec_tanh_fwd(x, o, m);
      else gm_aten_vec_erf_fwd(x, o, m);
    }
  }
  const gelu16_table *T =
      j->dt != GM_F32 && vec_end > b ? gelu16_get(j->tanh ? TABLE_ATEN_TANH : TABLE_ATEN_ERF, j->dt) : NULL;
  if (T) gelu16_lookup(T, j, 0, b, vec_end - b);
  for (size_t s = b; s < vec_end && j->dt != GM_F32 && !T; s += BLOCK) {
    size_t m = vec_end - s < BLOCK ? vec_end - s : BLOCK;
    widen_block(j->dt, j->x, s, xb, m);
    if (j->backward) {
      widen_block(j->dt, j->dy, s, db, m);
      if (j->tanh) gm_aten_vec_tanh_bwd(xb, db, ob, m);
      else gm_aten_vec_erf_bwd(xb, db, ob, m);
    } else {
      if (j->tanh) gm_aten_vec_tanh_fwd(xb, ob, m);
      else gm_aten_vec_erf_fwd(xb, ob, m);
    }
    store_block(j->dt, j->out, s, ob, m, ROUND_ATEN_VEC);
  }
  for (size_t i = vec_end; i < e; i++) {
    float xv = widen(j->dt, j->x, i), r;
    if (j->backward) {
      float d = widen(j->dt, j->dy, i);
      r = j->tanh ? scalar_tanh_bwd(xv, d) : scalar_erf_bwd(xv, d);
    } else {
      r = j->tanh ? scalar_tanh_fwd(xv) : scalar_erf_fwd(xv);
    }
    store(j->dt, j->out, i, r, ROUND_ATEN_SCALAR);
  }
}

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

// How at::parallel_for cuts [0, n) for the GELU kernels: returns the chunk length (n if serial).
static size_t aten_chunk_len(size_t n, int threads, bool backward) {
  if (threads <= 1) return n;
  size_t grain;
  if (backward) grain = 32768; // at::internal::GRAIN_SIZE
  else if (n > 16384) grain = n / (size_t)threads; // GeluKernelImpl's own grain
  else grain = 32768;
  if (n <= grain || grain == 0) return n;
  size_t used = div_up(n, grain);
  if (used > (size_t)threads) used = (size_t)threads;
  return div_up(n, used);
}

static int run_aten(const aten_job *j, size_t n, int threads) {
  size_t chunk = aten_chunk_len(n, threads, j->backward);
  size_t nchunks = div_up(n, chunk);
  int failed = 0;
#pragma omp parallel for schedule(static) if (nchunks > 1) reduction(| : failed)
  for (size_t c = 0; c < nchunks; c++) {
    float *buf = malloc(3 * BLOCK * sizeof(float));
    if (!buf) {
      failed = 1;
      continue;
    }
    size_t b = c * chunk, e = b + chunk < n ? b + chunk : n;
    aten_chunk(j, b, e, buf, buf + BLOCK, buf + 2 * BLOCK);
    free(buf);
  }
  return failed ? gm_fail("torch-cpu gelu: out of memory for %zu-element work buffers", (size_t)BLOCK) : 0;
}

// ---- oneDNN (approximate='none', n >= 2) ------------------------------------------------------
// Lanes are independent, so blocks run on any number of threads with the same bits; f32 is read
// and written in place, f16/bf16 are widened per block and stored with oneDNN's rounding.
static int run_onednn(const aten_job *j, size_t n, int threads) {
  size_t nblocks = (n + BLOCK - 1) / BLOCK;
  if (j->dt == GM_BF16) { // by table; lanes are independent, so any split gives the same bits
    bool emu = j->plan->dnn_bf16_round == ROUND_ONEDNN_EMU;
    const gelu16_table *T = gelu16_get(emu ? TABLE_ONEDNN_ERF_EMU : TABLE_ONEDNN_ERF, GM_BF16);
    if (T) {
      // Guided, as the accurate mode's blocks (gelu_accurate.c): a late-waking thread takes fewer.
#pragma omp parallel for schedule(guided, 2) num_threads(gelu_threads_for(n, threads))
      for (size_t b = 0; b < nblocks; b++) {
        size_t s = b * BLOCK;
        gelu16_lookup(T, j, emu ? 2 : 1, s, n - s < BLOCK ? n - s : BLOCK);
      }
      return 0;
    }
  }
  // Without the table: GPTMEG_SIMD below avx512 takes the integer rounding (same bits; for tests).
  int have_bf16_insn = j->plan->dnn_bf16_round == ROUND_ONEDNN_EMU ? 2
                       : gm_cpu_simd() == GM_SIMD_AVX512 && gm_cpu_has(GM_CPU_AVX512_BF16);
  int failed = 0;
#pragma omp parallel num_threads(gelu_threads_for(n, threads)) reduction(| : failed)
  {
    float *buf = j->dt == GM_F32 ? NULL : malloc(3 * BLOCK * sizeof(float));
    if (j->dt != GM_F32 && !buf) failed = 1;
#pragma omp for schedule(guided, 2) // lanes are independent: as the table path above
    for (size_t b = 0; b < nblocks; b++) {
      if (j->dt != GM_F32 && !buf) continue;
      size_t s = b * BLOCK, m = n - s < BLOCK ? n - s : BLOCK;
      if (j->dt == GM_F32) {
        const float *x = (const float *)j->x + s;
        float *o = (float *)j->out + s;
        if (j->backward) gm_onednn_gelu_erf_bwd(x, (const float *)j->dy + s, o, m);
        else if (j->plan->dnn_minimax) gm_onednn_gelu_erf_fwd(x, o, m);
        else gm_onednn_gelu_erf_fwd_as(x, o, m);
        continue;
      }
      if (j->dt == GM_BF16) { // one pass: widen, kernel, round and store per vector
        gm_onednn_gelu_erf_bf16((const uint16_t *)j->x + s, j->backward ? (const uint16_t *)j->dy + s : NULL,
                                (uint16_t *)j->out + s, m, have_bf16_insn);
        continue;
      }
      float *xb = buf, *db = buf + BLOCK, *ob = buf + 2 * BLOCK;
      widen_block(j->dt, j->x, s, xb, m);
      if (j->backward) {
        widen_block(j->dt, j->dy, s, db, m);
        gm_onednn_gelu_erf_bwd(xb, db, ob, m);
      } else {
        gm_onednn_gelu_erf_fwd(xb, ob, m); // f16 runs here only from avx512_core_fp16 up
      }
      store_block(j->dt, j->out, s, ob, m, ROUND_ONEDNN);
    }
    free(buf);
  }
  return failed ? gm_fail("torch-cpu gelu: out of memory for %zu-element work buffers", (size_t)BLOCK) : 0;
}

// ---- entry points -----------------------------------------------------------------------------
static int check_args(gm_gelu_variant v, gm_dtype dt, const char *dir) {
  if (v != GM_GELU_ERF && v != GM_GELU_PYTORCH_TANH && v != GM_GELU_10)
    return gm_fail("torch-cpu gelu %s: variant %d is not one of PyTorch's one-kernel GELU ops", dir, (int)v);
  if (dt == GM_F64 && v != GM_GELU_PYTORCH_TANH)
    return gm_fail("torch-cpu gelu %s: f64 with approximate='none' is not reproduced (torch's bundled SLEEF erf "
                   "differs from libsleef 3.5.1); f64 works for gelu_pytorch_tanh", dir);
  if (dt != GM_F64 && dt != GM_F32 && dt != GM_F16 && dt != GM_BF16)
    return gm_fail("torch-cpu gelu %s: dtype %s is not a float type", dir, gm_dtype_name(dt));
  // What torch ran, not a choice of ours: GPTMEG_SIMD does not apply.
  if (!gm_cpu_has(GM_CPU_AVX512F | GM_CPU_AVX512DQ))
    return gm_fail("torch-cpu gelu %s: this CPU lacks AVX-512 (the pinned torch ran its AVX512 kernels)", dir);
  return 0;
}

static int gelu_kernel(gm_gelu_variant v, const aten_job *j, size_t n, int threads) {
  if (n == 0) return 0;
  bool tanh = v == GM_GELU_PYTORCH_TANH;
  gelu_plan plan = gelu_plan_now();
  aten_job k = *j;
  k.tanh = tanh;
  k.plan = &plan;
  // use_mkldnn: f32 always; bf16 and f16 by the target's oneDNN ISA (ideep's bf16/fp16 support
  // checks, which follow ONEDNN_MAX_CPU_ISA), otherwise they take ATen's kernel like the tanh form.
  // A fact of the torch CPU target (gelu_plan_now), so neither the host nor GPTMEG_SIMD decides it.
  bool dnn_dtype = k.dt == GM_F32 || (k.dt == GM_BF16 && plan.dnn_bf16) || (k.dt == GM_F16 && plan.dnn_f16);
  if (!tanh && n >= 2 && dnn_dtype) return run_onednn(&k, n, threads);
  return run_aten(&k, n, threads);
}

static int torch_threads(int threads) { return threads <= 0 ? gm_threads_default() : threads; }

static void clip10(gm_dtype dt, void *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double f = gm_load_f64(dt, y, i);
    if (f < -10.0) gm_store_f64(dt, y, i, -10.0); // +-10 are exact in every dtype
    else if (f > 10.0) gm_store_f64(dt, y, i, 10.0);
  }
}

int gm_gelu_torch_aten_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads) {
  if (check_args(v, dt, "forward")) return 1;
  aten_job j = {.backward = false, .dt = dt, .x = x, .dy = NULL, .out = y};
  if (gelu_kernel(v, &j, n, torch_threads(threads))) return 1;
  if (v == GM_GELU_10) clip10(dt, y, n);
  return 0;
}

int gm_gelu_torch_aten_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n,
                        int threads) {
  if (check_args(v, dt, "backward")) return 1;
  int t = torch_threads(threads);
  const void *grad = dy;
  void *masked = NULL;
  if (v == GM_GELU_10 && n > 0) {
    // clip's backward: dy where its input (F.gelu's output) lies strictly inside (-10, 10), else 0
    // (measured: torch 2.15 gives 0 at exactly +-10 and for NaN).
    size_t es = gm_dtype_size(dt);
    masked = malloc(n * es * 2);
    if (!masked) return gm_fail("torch-cpu gelu_10 backward: out of memory for %zu elements", n);
    void *yfwd = (char *)masked + n * es;
    aten_job f = {.backward = false, .dt = dt, .x = x, .dy = NULL, .out = yfwd};
    if (gelu_kernel(v, &f, n, t)) { // the unclipped F.gelu output: clip's input
      free(masked);
      return 1;
    }
    memcpy(masked, dy, n * es);
    for (size_t i = 0; i < n; i++) {
      double f = gm_load_f64(dt, yfwd, i);
      if (!(f > -10.0 && f < 10.0)) memset((char *)masked + i * es, 0, es);
    }
    grad = masked;
  }
  aten_job j = {.backward = true, .dt = dt, .x = x, .dy = grad, .out = dx};
  int rc = gelu_kernel(v, &j, n, t);
  free(masked);
  return rc;
}
