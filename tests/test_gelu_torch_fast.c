// The torch-cpu fast path (src/kernels/gelu_torch_fast*.c) against its reference oracle, the op
// graph evaluated op by op in doubles (gm_gelu_torch_ops_graph_fwd/bwd): every graph variant, f32 /
// f16 / bf16, forward and backward, scalar and AVX-512 stages, 1, 2 and 3 threads, on lengths
// around every boundary that changes torch's code path (vector steps 16/32/64, the fast path's
// 1024-element blocks, the 32768 grain where chunks start), with special values mixed in (NaN,
// +-inf, +-0, subnormals of each dtype, the largest finites, values where tanh/erf/exp saturate),
// and, for f16/bf16, every one of the 65536 bit patterns as x.
//
// Equal means the same bits; where both results are NaN they count as equal and a different
// payload/sign is only reported (the graph's NaN bits follow the compiler's operand order).
// GPTMEG_QUICK=1 drops the lengths above 40000 (except the all-patterns case).
#include "gptmeg/core.h"
#include "gptmeg/gelu.h"
#include "gptmeg/inputs.h"
#include "harness.h"
#include "kernels/gelu/gelu_ops.h"
#include "kernels/gelu/torch/gelu_torch_fast.h"
#include "kernels/gelu/torch/gelu_torch_ops_simd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const float kSpecialF32[] = {
    NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 0x1.fffffcp-127f,
    0x1p-126f, -0x1p-126f, 0x1p-24f, 0x1p-14f, 6.0e-8f, -6.0e-8f, 65504.0f, -65504.0f, 65520.0f,
    0x1.fffffep127f, -0x1.fffffep127f, 1e30f, -1e30f, 1e19f, -1e19f, 1e13f, 3.4e12f, -3.4e12f,
    9.0f, -9.0f, 10.0f, -10.0f, 5.06f, -5.06f, 88.7f, -88.7f, 104.0f, -104.0f, 1.0f, -1.0f,
    0.5f, -0.5f, 3.0f, -3.0f, 0.1f, -0.1f, 1e-3f, -1e-3f, 20.0f, -20.0f, 0x1p-63f, -0x1p-64f};

// An f32 value of a mixed distribution: mostly N(0,1)*3-like, some wide-magnitude, some special.
static float mixed_f32(uint64_t seed, size_t i) {
  uint64_t r = gm_stream_u64(seed, i);
  unsigned kind = (unsigned)(r & 15u);
  uint64_t s = r >> 4;
  size_t nspecial = sizeof kSpecialF32 / sizeof kSpecialF32[0];
  if (kind == 0) return kSpecialF32[s % nspecial];
  if (kind == 1) { // any bit pattern
    uint32_t u = (uint32_t)s;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  if (kind == 2) { // wide magnitudes 2^-40 .. 2^40
    double m = 1.0 + (double)(s & 0xfffff) * 0x1p-20;
    int e = (int)((s >> 20) % 81) - 40;
    return (float)(((s >> 40) & 1 ? -m : m) * ldexp(1.0, e));
  }
  // a sum of uniforms, roughly normal, times 4
  double acc = 0.0;
  for (int k = 0; k < 4; k++) acc += (double)((s >> (k * 15)) & 0x7fff) * 0x1p-15;
  return (float)((acc - 2.0) * 4.0 * 1.7);
}

static void fill(gm_dtype dt, uint64_t seed, size_t n, bool all_patterns, void *buf) {
  for (size_t i = 0; i < n; i++) {
    if (dt == GM_F32) {
      ((float *)buf)[i] = mixed_f32(seed, i);
    } else if (all_patterns) {
      ((uint16_t *)buf)[i] = (uint16_t)(i * 40503u); // odd multiplier: a permutation of 2^16
    } else {
      float f = mixed_f32(seed, i);
      ((uint16_t *)buf)[i] = dt == GM_F16 ? gm_f32_to_f16(f) : gm_f32_to_bf16(f);
    }
  }
}

static bool is_nan_bits(gm_dtype dt, const void *p, size_t i) {
  if (dt == GM_F32) return isnan(((const float *)p)[i]);
  uint16_t h = ((const uint16_t *)p)[i];
  return dt == GM_F16 ? (h & 0x7fff) > 0x7c00 : (h & 0x7fff) > 0x7f80;
}

static bool same_bits(gm_dtype dt, const void *a, const void *b, size_t i) {
  size_t es = gm_dtype_size(dt);
  return memcmp((const char *)a + i * es, (const char *)b + i * es, es) == 0;
}

typedef struct {
  long cases, elements, nan_payload_diffs;
} tally;

static const char *isa_name(gelu_fast_isa isa) { return isa == GELU_FAST_ISA_AVX512 ? "avx512" : "scalar"; }

// One case: graph vs fast (both ISAs) for variant v, dtype dt, direction, length n, threads.
static void run_case(gm_gelu_variant v, gm_dtype dt, bool bwd, size_t n, int threads, bool all_patterns,
                     tally *t) {
  size_t es = gm_dtype_size(dt);
  void *x = malloc(n * es), *dy = malloc(n * es), *want = malloc(n * es), *got = malloc(n * es);
  fill(dt, 11 + n, n, all_patterns, x);
  fill(dt, 23 + n, n, false, dy);
  const char *name = gm_gelu_variant_info(v)->name, *dts = gm_dtype_name(dt), *dir = bwd ? "bwd" : "fwd";
  int rc = bwd ? gm_gelu_torch_ops_graph_bwd(v, dt, x, dy, want, n, threads)
               : gm_gelu_torch_ops_graph_fwd(v, dt, x, want, n, threads);
  CHECK(rc == 0, "graph %s %s %s n=%zu: %s", name, dts, dir, n, gm_errmsg());
  gelu_fast_isa isas[] = {GELU_FAST_ISA_SCALAR, GELU_FAST_ISA_AVX512};
  for (int k = 0; k < 2 && rc == 0; k++) {
    memset(got, 0xa5, n * es);
    int frc = gm_gelu_torch_fast_run(v, dt, x, bwd ? dy : NULL, got, n, threads, isas[k]);
    CHECK(frc == 0, "fast %s %s %s n=%zu: %s", name, dts, dir, n, gm_errmsg());
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < n; i++) {
      bool wn = is_nan_bits(dt, want, i), gn = is_nan_bits(dt, got, i);
      if (wn && gn) {
        t->nan_payload_diffs += !same_bits(dt, want, got, i);
        continue;
      }
      if (wn != gn || !same_bits(dt, want, got, i)) {
        if (!bad) first_bad = i;
        bad++;
      }
    }
    if (bad) {
      double xv = gm_load_f64(dt, x, first_bad), wv = gm_load_f64(dt, want, first_bad),
             gv = gm_load_f64(dt, got, first_bad);
      CHECK(bad == 0, "%s %s %s %s n=%zu threads=%d: %zu of %zu differ; first at %zu: x=%a graph %a fast %a",
            isa_name(isas[k]), name, dts, dir, n, threads, bad, n, first_bad, xv, wv, gv);
    }
    t->cases++;
    t->elements += (long)n;
  }
  free(x);
  free(dy);
  free(want);
  free(got);
}

int main(void) {
  double t0 = gm_now_s();
  tally t = {0, 0, 0};
  const gm_gelu_variant variants[] = {GM_GELU_PYTHON, GM_GELU_NEW, GM_GELU_ACCURATE, GM_GELU_FAST,
                                      GM_GELU_MEGATRON, GM_OPENAI_GELU, GM_QUICK_GELU};
  const gm_dtype dtypes[] = {GM_F32, GM_F16, GM_BF16};
  // Around the vector steps (16 lanes, 32/64-element steps), the 1024-element blocks and the
  // 32768 grain (one chunk below it, two or three above on 2 and 3 threads). 38401 on 2 threads:
  // chunks of 19201 and 19200, so the last block (513 elements, no scalar leftover) runs the
  // one-pass f16/bf16 backward with a one-element partial step.
  const size_t small[] = {1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 129, 1023, 1024, 1025, 2047, 3001};
  const size_t large[] = {32767, 32768, 32769, 38401, 65537, 98369, 100003};
  for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; vi++) {
    for (size_t di = 0; di < 3; di++) {
      for (int bwd = 0; bwd < 2; bwd++) {
        for (int threads = 1; threads <= 3; threads++) {
          for (size_t li = 0; li < sizeof small / sizeof small[0]; li++)
            run_case(variants[vi], dtypes[di], bwd, small[li], threads, false, &t);
          for (size_t li = 0; li < sizeof large / sizeof large[0]; li++) {
            if (test_quick() && large[li] > 40000) continue;
            if (threads == 3 && large[li] < 65537) continue; // same split as 2 threads
            run_case(variants[vi], dtypes[di], bwd, large[li], threads, false, &t);
          }
        }
        if (dtypes[di] != GM_F32) run_case(variants[vi], dtypes[di], bwd, 65536, 2, true, &t);
      }
    }
  }
  // The f16/bf16 tanh and erf run by table lookup: every grid value's lookup equals the lambda.
  if (gm_gelu_fast_pick_isa() == GELU_FAST_ISA_AVX512) {
    float *in = malloc(65536 * sizeof(float)), *want = malloc(65536 * sizeof(float)), *got = malloc(65536 * sizeof(float));
    for (int half = 0; half < 2; half++) {
      for (uint32_t b = 0; b < 65536; b++) in[b] = half ? gm_f16_to_f32((uint16_t)b) : gm_bf16_to_f32((uint16_t)b);
      gm_gelu_torch_vec_tanh_avx512(in, want, 65536);
      gm_gelu_torch_vec_lookup16_avx512(want, half, in, got, 65536);
      int bad = 0;
      for (uint32_t b = 0; b < 65536; b++) bad += memcmp(&want[b], &got[b], 4) != 0 && !(isnan(want[b]) && isnan(got[b]));
      CHECK(bad == 0, "%s lookup: %d of 65536 grid values read another entry", half ? "f16" : "bf16", bad);
    }
    free(in); free(want); free(got);
  }
  // GPTMEG_SIMD caps the fast path's ISA.
  const char *old = getenv("GPTMEG_SIMD");
  char *saved = old ? strdup(old) : NULL;
  test_set_simd("scalar");
  CHECK(gm_gelu_fast_pick_isa() == GELU_FAST_ISA_SCALAR, "GPTMEG_SIMD=scalar does not select the scalar stages");
  test_set_simd("avx2");
  CHECK(gm_gelu_fast_pick_isa() == GELU_FAST_ISA_SCALAR, "GPTMEG_SIMD=avx2 does not select the scalar stages");
  if (saved) test_set_simd(saved);
  else test_set_simd(NULL);
  free(saved);
  printf("torch-cpu fast path vs op graph: %ld cases, %ld elements compared (MKL VML %s), %ld NaN outputs with "
         "another payload (%.1f s)\n",
         t.cases, t.elements, gm_gelu_torch_ops_have_mkl() ? "loaded" : "not loaded: f32 tanh/erf/exp in double",
         t.nan_payload_diffs, gm_now_s() - t0);
  return test_done("test_gelu_torch_fast");
}
