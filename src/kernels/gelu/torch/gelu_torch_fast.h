// Fast path of the torch-cpu mode for the GELU variants written as separate tensor ops
// (gelu_python, gelu_new, gelu_accurate, gelu_fast, gelu_megatron, openai_gelu, quick_gelu).
//
// Numerics contract: the same bits as the op graph evaluated by gelu_torch_ops.c (the reference
// oracle, gelu_ops_graph.c), for every dtype (f32/f16/bf16), direction, length and thread count;
// NaN outputs are NaN at the same positions (their payload/sign bits are not promised, as for the
// graph path itself, whose NaN bits follow the compiler's operand order). tests/test_gelu_torch_fast.c
// checks it.
//
// How: each block of elements is widened to f32 once, and every torch op of the graph runs in f32
// in its order with the graph's rounding to the dtype after each op (R below), fused in registers.
// A variant is three stages: `pre` (the ops before the transcendental: its argument, or two),
// the transcendental (shared, gelu_torch_fast.c: MKL VML or its fallback for f32 tanh/erf/exp,
// SLEEF / ATen lane functions for the vector body of cpu_kernel_vec and libm for its leftover), and
// `post` (the ops after it, recomputing the cheap ones from x). Stages have a scalar version
// (gelu_torch_fast_scalar.c) and an AVX-512 one (gelu_torch_fast_avx512.c) with the same bits.
#ifndef GPTMEG_GELU_TORCH_FAST_H
#define GPTMEG_GELU_TORCH_FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gptmeg/core.h"
#include "gptmeg/gelu.h"

// Constants of one call: the dtype, and the Python float literals the stages need, read as torch
// reads them (a factor/divisor as f32; an addend rounded to the dtype).
typedef struct {
  gm_dtype dt;          // F32, F16 or BF16
  float c;              // product form: the tanh argument's factor (gelu_fast, openai_gelu, megatron)
  bool zero_add;        // gelu_megatron: x = 0 + x first (bias_gelu with bias 0)
  float megatron_addend; // dt(0.79788456), the addend in Megatron's bias_gelu_back
} gelu_fast_params;

// One stage over n elements (any n). x, dy: the inputs widened to f32 (dy NULL in the forward);
// in0, in1: the transcendental's results (post stages); out0, out1: what the stage writes
// (pre: the transcendental's arguments; post: the output in out0). Every written value is on the
// dtype's grid; in0/in1 are f32 results that post stages round to the dtype as they read them.
typedef void (*gelu_fast_stage)(const gelu_fast_params *p, const float *x, const float *dy,
                                const float *in0, const float *in1, float *out0, float *out1,
                                size_t n);

// The backward's forms (which post stage a variant's backward runs).
typedef enum { GELU_FAST_POW, GELU_FAST_PRODUCT, GELU_FAST_MEGATRON, GELU_FAST_PYTHON, GELU_FAST_QUICK } gelu_fast_form;

// The backward's post stage of form f over n elements: x and dy widened to f32, in0 (and in1,
// gelu_python's exp) the transcendental's results, rounded to the dtype as they are read; dx in out,
// on the dtype's grid.
typedef void (*gelu_fast_bwd_stage)(gelu_fast_form f, const gelu_fast_params *p, const float *x, const float *dy,
                                    const float *in0, const float *in1, float *out, size_t n);

// The stages of every form, in one ISA.
typedef struct {
  // pre stages
  gelu_fast_stage pow_arg;      // u = c*(x + k*pow(x, 3))                (gelu_new, gelu_accurate)
  gelu_fast_stage product_arg;  // f = (c*x)*(1 + (k*x)*x)                (fast, openai, megatron)
  gelu_fast_stage python_arg;   // v = x/sqrt(2); with out1: -(v*v)      (gelu_python)
  gelu_fast_stage quick_arg;    // a = 1.702*x                            (quick_gelu)
  // forward post stages (in0 = the tanh/erf/sigmoid result t)
  gelu_fast_stage half_x_one_plus_fwd; // (x*0.5)*(t + 1)                (gelu_new, gelu_accurate, gelu_python)
  gelu_fast_stage product_fwd;         // the same, megatron first x = 0 + x (fast, openai, megatron)
  gelu_fast_stage quick_fwd;           // x*t                             (quick_gelu)
  // backward post stage of every form
  gelu_fast_bwd_stage bwd;
  // storage: widen n elements of dtype dt to f32 (exact); narrow values already on dt's grid
  void (*widen)(gm_dtype dt, const void *src, float *dst, size_t n);
  void (*narrow)(gm_dtype dt, const float *src, void *dst, size_t n);
} gelu_fast_kernels;

extern const gelu_fast_kernels gm_gelu_fast_scalar_kernels;
extern const gelu_fast_kernels gm_gelu_fast_avx512_kernels;

// Scalar helpers shared with the scalar stages: f rounded to dt's grid (RNE; NaN stays quiet NaN).
float gm_gelu_fast_round(gm_dtype dt, float f);

typedef enum { GELU_FAST_ISA_SCALAR, GELU_FAST_ISA_AVX512 } gelu_fast_isa;

// The backward of form f on f16/bf16 (p->dt) in one pass over the 16-bit x and dy, its
// transcendental results, rounded to the dtype, read from saved by x's pattern (65536 floats;
// gelu_python's exp result at saved + 65536) instead of computed: the same bits as the stages wherever saved holds what
// the vector body computes. AVX-512 only.
void gm_gelu_fast_bwd16_saved_avx512(gelu_fast_form f, const gelu_fast_params *p, const float *saved, const uint16_t *x,
                                  const uint16_t *dy, uint16_t *dx, size_t n);

// The stages gm_cpu_simd() selects: AVX-512 at that level; below it (GPTMEG_SIMD=scalar or avx2,
// or a CPU without AVX-512) the scalar stages (there is no AVX2 version).
gelu_fast_isa gm_gelu_fast_pick_isa(void);

// Runs variant v (a graph variant) over n elements of dt on `threads` (torch's thread count, which
// also decides cpu_kernel_vec's vector/scalar split) in the given ISA. dy == NULL: forward y = f(x);
// else the backward dx. Returns 0 or gm_fail.
int gm_gelu_torch_fast_run(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *out,
                        size_t n, int threads, gelu_fast_isa isa);

#endif
