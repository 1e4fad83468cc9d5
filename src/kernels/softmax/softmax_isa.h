// The softmax family's per-ISA bodies, declared once for softmax.c (the dispatcher) and the files
// that define them; each gives the bits of the scalar code in softmax.c.
#ifndef GPTMEG_KERNELS_SOFTMAX_ISA_H
#define GPTMEG_KERNELS_SOFTMAX_ISA_H

// s[j] = expf_u10(s[j] - m) for j < n, SLEEF's builds for the ISA (softmax_exp_avx512.c, softmax_avx2.c).
void gm_exp_shift_avx512(float *s, int n, float m);
void gm_exp_shift_avx2(float *s, int n, float m);
// x[j] = x[j] / d for j < n (softmax_avx2.c; the AVX-512 level runs it too).
void gm_div_row_avx2(float *x, int n, float d);

#endif
