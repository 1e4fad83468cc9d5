// The AVX-512 half of torch-cpu's one-kernel GELU (gelu_torch_aten_avx512.c), declared once for it
// and for gelu_torch_aten.c, the only caller. The pinned torch ran its AVX512 kernels, so these
// are the only bodies: gelu_torch_aten.c refuses a CPU without AVX-512 F/DQ, whatever GPTMEG_SIMD says.
#ifndef GPTMEG_KERNELS_GELU_TORCH_ATEN_ISA_H
#define GPTMEG_KERNELS_GELU_TORCH_ATEN_ISA_H

#include <stddef.h>
#include <stdint.h>

// ATen's Vectorized<float> lambdas, forward and backward; n a multiple of 16.
void gm_aten_vec_tanh_fwd(const float *x, float *y, size_t n);
void gm_aten_vec_erf_fwd(const float *x, float *y, size_t n);
void gm_aten_vec_tanh_bwd(const float *x, const float *dy, float *dx, size_t n);
void gm_aten_vec_erf_bwd(const float *x, const float *dy, float *dx, size_t n);
// oneDNN's JIT gelu_erf, any n: the avx512_core forward (minimax pieces) and the one below it
// (_as: Abramowitz-Stegun, oneDNN's AVX2 JIT); one backward for both.
void gm_onednn_gelu_erf_fwd(const float *x, float *y, size_t n);
void gm_onednn_gelu_erf_fwd_as(const float *x, float *y, size_t n);
void gm_onednn_gelu_erf_bwd(const float *x, const float *dy, float *dx, size_t n);
// ATen's Vectorized<double> lambdas (tanh != 0: the tanh form); n a multiple of 8.
void gm_aten_vec_f64(int tanh, int backward, const double *x, const double *dy, double *out, size_t n);
// f32 -> bf16 by ATen's vector rules (onednn = 0) or oneDNN's: 1 vcvtneps2bf16 (tiny results
// flushed), 2 its avx512_core emulation (not flushed); f16/bf16 -> f32 (exact).
void gm_aten_store_bf16(const float *x, uint16_t *y, size_t n, int onednn);
void gm_aten_widen(int is_f16, const uint16_t *x, float *y, size_t n);
// oneDNN's bf16 gelu_erf in one pass (dy NULL: forward); have_avx512bf16 picks the rounding:
// 1 vcvtneps2bf16, 0 the integer rounding with the instruction's bits, 2 oneDNN's avx512_core
// emulation (tiny results not flushed).
void gm_onednn_gelu_erf_bf16(const uint16_t *x, const uint16_t *dy, uint16_t *out, size_t n, int have_avx512bf16);
// dx = dy * d[x] on f16/bf16 storage, rounded by the path's rules (onednn as gm_aten_store_bf16).
void gm_gelu16_bwd_by_factor(int is_f16, int onednn, const float *d, const uint16_t *x, const uint16_t *dy, uint16_t *dx,
                             size_t n);

#endif
