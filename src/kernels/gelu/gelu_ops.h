// The GELU variants that are written as separate tensor ops, described once as op graphs
// (gelu_ops_graph.c) and evaluated by an op set: `eager` (gelu_eager.c: every op correctly
// rounded in opmath, then rounded to the dtype) or `torch-cpu` (gelu_torch_ops.c: every op as the
// pinned PyTorch's CPU kernel computes it). The op set is the only difference between the modes.
//
// Values travel between ops as doubles holding numbers of the tensor's dtype exactly (every f16,
// bf16 and f32 value is a double), so one graph serves f16/bf16/f32/f64. Each op reads its inputs,
// computes in opmath (f32 for f16/bf16/f32, f64 for f64) and returns the result rounded to the
// dtype. Ops get the global index `off` of their first element: torch's ops choose a vector or a
// scalar code path by an element's position in the tensor (and in its thread's chunk).
#ifndef GPTMEG_GELU_OPS_H
#define GPTMEG_GELU_OPS_H

#include "kernels/gelu/gelu_impl.h"

typedef struct gelu_op_set gelu_op_set;

// out[i] = op(a[i]) for i < n; the elements are tensor elements off .. off+n-1.
typedef void (*gelu_unary_op)(const gelu_op_set *o, size_t off, size_t n, const double *a, double *out);
// out[i] = op(a[i], b[i]).
typedef void (*gelu_binary_op)(const gelu_op_set *o, size_t off, size_t n, const double *a,
                               const double *b, double *out);
// out[i] = op(a[i], s) with s a Python float (or int) scalar.
typedef void (*gelu_scalar_op)(const gelu_op_set *o, size_t off, size_t n, const double *a, double s,
                               double *out);

struct gelu_op_set {
  gm_dtype dt;     // the tensor dtype (F32, F16, BF16, F64)
  size_t numel;    // length of the whole tensor (torch's code paths depend on it)
  int threads;     // torch's thread count (torch-cpu) / compute threads (eager)
  gelu_binary_op mul;              // a * b
  gelu_binary_op add;              // a + b
  gelu_scalar_op mul_scalar;       // a * s
  gelu_scalar_op add_scalar;       // a + s
  gelu_scalar_op rsub_scalar;      // s - a
  gelu_scalar_op div_scalar;       // a / s
  gelu_scalar_op pow_scalar;       // torch.pow(a, s), s in {2, 3}
  gelu_unary_op neg;               // -a
  gelu_unary_op tanh;              // torch.tanh
  gelu_unary_op erf;               // torch.erf
  gelu_unary_op exp;               // torch.exp
  gelu_unary_op sigmoid;           // torch.sigmoid
  gelu_binary_op tanh_backward;    // aten::tanh_backward(grad a, result b) = a * (1 - b*b)
  gelu_binary_op sigmoid_backward; // aten::sigmoid_backward(grad a, result b) = a * (1 - b) * b
};

// True for the variants gelu_ops_graph.c describes (all but gelu, gelu_pytorch_tanh, gelu_10).
bool gm_gelu_ops_has_graph(gm_gelu_variant v);

// Runs the forward graph of variant v on the elements off .. off+n-1 of x (given as doubles),
// writing y. Needs gm_gelu_ops_scratch_len(n) doubles of scratch.
void gm_gelu_ops_graph_fwd(gm_gelu_variant v, const gelu_op_set *o, size_t off, size_t n,
                        const double *x, double *y, double *scratch);
// Backward: autograd of the written ops (gelu_megatron: Megatron's custom bias_gelu_back formula,
// bias = 0), dx = x.grad for upstream gradient dy.
void gm_gelu_ops_graph_bwd(gm_gelu_variant v, const gelu_op_set *o, size_t off, size_t n,
                        const double *x, const double *dy, double *dx, double *scratch);
size_t gm_gelu_ops_scratch_len(size_t n);

// Drives a graph over a whole tensor of o->numel elements of dtype o->dt: converts blocks of x
// (and dy, for the backward; dy == NULL runs the forward) to doubles, runs the graph on each block
// (blocks in parallel on compute_threads; the bits never depend on that) and stores the result
// (the ops already rounded it to the dtype, so the store is exact). Returns 0 or gm_fail.
int gm_gelu_ops_run(gm_gelu_variant v, const gelu_op_set *o, const void *x, const void *dy, void *out,
                 int compute_threads);

// Storage round trip helper shared by the op sets: f (already an opmath f32 result) rounded to dt.
double gm_gelu_ops_round_f32(gm_dtype dt, float f);

// torch-cpu: true when MKL's VML (GPTMEG_TORCH_MKL) is loaded, so that f32 tanh/erf/exp are
// bit exact; false: they are computed in double and rounded (gelu_torch_ops.c).
bool gm_gelu_torch_ops_have_mkl(void);
// True when the loaded MKL was capped to AVX2 (the avx2 torch CPU target was active at its load).
bool gm_gelu_torch_ops_mkl_avx2(void);

// torch-cpu f32 torch.tanh / torch.erf / torch.exp on a contiguous array (the fast path's):
// out[i] = f(in[i]) through MKL VML_HA when loaded (lane-independent: the same bits for any n and
// any split), else (float)f((double)in[i]) with glibc's double function's bits
// (gm_gelu_torch_double_rounded_avx512). The graph path computes the same without this function.
typedef enum { GELU_VML_TANH, GELU_VML_ERF, GELU_VML_EXP } gelu_vml_op;
void gm_gelu_torch_ops_f32_vml(gelu_vml_op op, const float *in, float *out, size_t n);

// torch-cpu through the op graph, op by op in doubles (the reference oracle of the fast path that
// gm_gelu_torch_ops_fwd/bwd run); same arguments and contract as those.
int gm_gelu_torch_ops_graph_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n,
                             int threads);
int gm_gelu_torch_ops_graph_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy,
                             void *dx, size_t n, int threads);

// How ATen's cpu_kernel_vec cuts a tensor of numel elements on `threads` threads (at::parallel_for,
// grain 32768): chunks of *chunk elements (the last one shorter); in each chunk the first
// floor(len / *step) * *step elements take the vector lambda, the rest the scalar lambda.
void gm_gelu_torch_vec_split(gm_dtype dt, size_t numel, int threads, size_t *chunk, size_t *step);

#endif
