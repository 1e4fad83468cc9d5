// The softmax family's per-ISA bodies, declared once for softmax.c (the dispatcher) and the files
// that define them; each gives the bits of the scalar code in softmax.c.
#ifndef GPTMEG_KERNELS_SOFTMAX_ISA_H
#define GPTMEG_KERNELS_SOFTMAX_ISA_H

// s[j] = expf_u10(s[j] - m) for j < n, SLEEF's builds for the ISA (softmax_exp_avx512.c, softmax_avx2.c).
void gm_exp_shift_avx512(float *s, int n, float m);
void gm_exp_shift_avx2(float *s, int n, float m);
// x[j] = x[j] / d for j < n (softmax_avx2.c; the AVX-512 level runs it too).
void gm_div_row_avx2(float *x, int n, float d);
// softmax.c's row pieces (softmax_avx2.c; the AVX-512 level runs them too): the maximum, the lane
// sums (lane j % w of w = 8 or 16 takes e[j] below n, rest from there, up to end, from j0), and
// s[j] = s[j] * inv.
float gm_row_max_avx2(const float *s, int n);
void gm_lane_acc_avx2(float *lane, const float *e, int w, int j0, int n, int end, float rest);
void gm_scale_row_avx2(float *s, int n, float inv);
// y[j] = (x[j] - m) - l (log_softmax's output).
void gm_log_out_avx2(const float *x, float *y, int n, float m, float l);
// d[j] = fma(-e[j], s, j == t ? g : 0) (the loss's log-softmax backward).
void gm_nll_grad_row_avx2(float *d, const float *e, int n, float s, int t, float g);

#endif
