// Internal f32 kernels of the GPT-2 forward (matmul, layer norm, softmax, attention).
// Every kernel gives the same bits for any thread count: work is cut into a fixed set of
// independent pieces that does not depend on `threads`, and OpenBLAS runs single-threaded.
#ifndef GPTMEG_KERNELS_NN_H
#define GPTMEG_KERNELS_NN_H

#include <stdbool.h>

// C[M, N] (row stride ldc) = A[M, K] (stride lda) @ op(B) [+ bias[N]], f32 in, f32 out.
// op(B) = B [K, N] (stride ldb) or, with trans_b, B^T for B [N, K] (stride ldb).
// Accumulation is OpenBLAS cblas_sgemm's (f32, its own K blocking); with a bias, C is first set
// to the bias and sgemm runs with beta = 1, as torch.addmm(bias, x, w) does. alpha scales A@B.
// Pieces: tiles of 64 rows x (N, or 2048 columns when N > 4096), one sgemm each (sgemv for M = 1).
void gm_matmul_f32(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias, float alpha,
                   float *C, int ldc, int M, int N, int K, int threads);
// Single sgemm on the calling thread (for callers that parallelise themselves).
void gm_sgemm1(const float *A, int lda, const float *B, int ldb, bool trans_b, float alpha, float beta, float *C,
               int ldc, int M, int N, int K);
// Makes OpenBLAS single-threaded (idempotent).
void gm_blas_single_thread(void);

// y[R, D] = layer_norm(x[R, D]) * w + b, f32 in/out; per row: mean and biased variance
// accumulated in f64, rstd = 1/sqrt(var + eps) rounded to f32 once, y = (x - mean) * rstd * w + b
// in f32 (mean rounded to f32). Rows in parallel. x and y may alias.
void gm_layernorm_f32(const float *x, const float *w, const float *b, float *y, int R, int D, double eps, int threads);

// In place softmax of s[0..n) followed by n_masked entries holding mask_value (not stored):
// m = max, e = expf(s - m), sum in f64 rounded to f32, s = e * (1/sum) (f32). The masked entries
// count in m and sum, as the masked scores of a causal row do in torch.
void gm_softmax_row_f32(float *s, int n, int n_masked, float mask_value);

// Causal attention of one (batch, head): queries q [Tq, hd] (row stride ldq) at absolute positions
// t0 .. t0+Tq-1, keys/values k, v [t0+Tq, hd] (contiguous). out [Tq, hd] (stride ldo).
// scores = alpha * q@k^T (sgemm); if divide != 0 each score is divided by `divide`, then by
// `divide2` when non-zero (f32 divisions, rounded after each: torch's `w / x` ops); query i sees
// keys 0..t0+i, the t0+Tq-1-(t0+i) later keys are masked with mask_value; softmax per row;
// out = P @ v (sgemm, masked probabilities 0). scratch: Tq * (t0+Tq) floats.
typedef struct {
  float alpha;
  float divide, divide2;
  float mask_value;
} gm_attn_rule;
void gm_attention_head_f32(const float *q, int ldq, const float *k, const float *v, int hd, int t0, int Tq,
                           const gm_attn_rule *r, float *scratch, float *out, int ldo);

#endif
