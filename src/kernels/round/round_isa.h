// The rounding family's per-ISA bodies, declared once for round.c (the dispatcher) and the files
// that define them: round_avx2.c (F16C and AVX2, the AVX2 level), round_avx512.c (the AVX-512 level;
// the _copy bodies write y = round(x), y == x allowed). Each gives the bits of the scalar loops in
// round.c (gm_f32_to_f16 and friends).
#ifndef GPTMEG_KERNELS_ROUND_ISA_H
#define GPTMEG_KERNELS_ROUND_ISA_H

#include <stddef.h>
#include <stdint.h>

void gm_f32_to_f16_buf_f16c(const float *x, uint16_t *y, size_t n);
void gm_f16_to_f32_buf_f16c(const uint16_t *x, float *y, size_t n);
void gm_round_f16_buf_f16c(float *x, size_t n);
void gm_round_bf16_buf_avx2(float *x, size_t n);
void gm_bf16_to_f32_buf_avx2(const uint16_t *x, float *y, size_t n);
void gm_round_bf16_copy_avx512(const float *x, float *y, size_t n);
void gm_round_f16_copy_avx512(const float *x, float *y, size_t n);
void gm_f32_to_bf16_buf_avx512(const float *x, uint16_t *y, size_t n);

#endif
