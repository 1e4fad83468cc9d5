// Vector-body lane functions of PyTorch's CPU kernels (gelu_torch_ops_avx512.c). Call only on a
// CPU with AVX-512F/DQ (gelu_torch_ops.c checks). in[i] -> out[i] for i < n, any n; f32.
#ifndef GPTMEG_GELU_TORCH_OPS_SIMD_H
#define GPTMEG_GELU_TORCH_OPS_SIMD_H

#include <stddef.h>

void gm_gelu_torch_vec_tanh_avx512(const float *in, float *out, size_t n);    // Sleef_tanhf16_u10
void gm_gelu_torch_vec_exp_avx512(const float *in, float *out, size_t n);     // Sleef_expf16_u10
void gm_gelu_torch_vec_erf_avx512(const float *in, float *out, size_t n);     // A&S 7.1.26 + Sleef exp
void gm_gelu_torch_vec_sigmoid_avx512(const float *in, float *out, size_t n); // 1/(1+Sleef_expf(0-x))

// out[i] = table[the f16 (half) or bf16 bits of in[i]] for i < n: the inputs must lie on that
// dtype's grid (so the bits are exact); table has 65536 entries. One gather per 16 lanes.
void gm_gelu_torch_vec_lookup16_avx512(const float *table, int half, const float *in, float *out, size_t n);

// out[i] = (float)f((double)in[i]) with f glibc's double tanh/erf/exp (op: gelu_vml_op of
// gelu_ops.h), the same bits, 8 lanes at a time (gelu_torch_libm_avx512.c).
void gm_gelu_torch_double_rounded_avx512(int op, const float *in, float *out, size_t n);

#endif
