// Gradient clipping by the global L2 norm.
//
// Numerics contract (f32; checked bit for bit against torch 2.15 CPU, tests/test_optim.c):
//   one tensor's norm (torch.linalg.vector_norm(x, 2): ATen's norm-two reduction over the last dim,
//   which runs ATen's AVX2 build (8 lanes) under every torch CPU target, measured): 8 f32 lanes
//   acc[l] = acc[l] + x*x (product rounded, then the sum: no FMA) over the first n - n % 8 elements
//   in order; s = acc[0] + acc[1] + ... + acc[7] left to right; then the tail of t = n % 8 elements
//   in order, its first 4 (when t >= 4: GCC's 4-lane in-order vectorization of the tail loop)
//   s = s + x*x, the rest s = fma(x, x, s); norm = IEEE sqrt(s). Sequential: the reduction to one
//   value runs on one thread (1 and 2 torch threads agree).
//   the global norm (clip_grad_norm_ on CPU: the per-tensor norms, torch.stack, vector_norm again):
//   the same reduction over the k norms.
//   torch: coef = f32(1 / (total + f32(1e-6))) * f32(max_norm) (Python's max_norm / tensor is
//   tensor.reciprocal() * max_norm), clamped to <= 1, g = g * coef for every element (always).
//   Megatron (clip_grad_norm_fp32 + clip_grad_by_total_norm_fp32; its CPU l2 norm is the same
//   per-tensor-then-norm order): total = (double)(norm * norm) ** 0.5 (grad_norm ** 2 in f32, .item()
//   ** (1 / 2) in Python), coef = max_norm / (total + 1e-6) in double, g = g * f32(coef) when coef < 1.
#include "gptmeg/optim.h"

#include <math.h>
#include <stdlib.h>

float gm_l2_norm_f32(const float *x, size_t n) {
  float acc[8] = {0};
  size_t body = n - n % 8, i = 0;
  for (; i < body; i += 8)
    for (int l = 0; l < 8; l++) acc[l] = acc[l] + x[i + (size_t)l] * x[i + (size_t)l];
  float s = acc[0];
  for (int l = 1; l < 8; l++) s = s + acc[l];
  size_t quad = body + (n - body) / 4 * 4;
  for (; i < quad; i++) s = s + x[i] * x[i];
  for (; i < n; i++) s = fmaf(x[i], x[i], s);
  return sqrtf(s);
}

float gm_grad_global_norm(const float *const *grads, const size_t *ns, int k) {
  if (k <= 0) return 0.0f; // torch.tensor(0.0)
  float small[64];
  float *norms = k <= 64 ? small : malloc((size_t)k * sizeof(float));
  if (!norms) return NAN;
  for (int i = 0; i < k; i++) norms[i] = gm_l2_norm_f32(grads[i], ns[i]);
  float total = gm_l2_norm_f32(norms, (size_t)k);
  if (norms != small) free(norms);
  return total;
}

static void scale_all(float *const *grads, const size_t *ns, int k, float coef, int threads) {
  if (threads < 1) threads = 1;
  for (int i = 0; i < k; i++) {
    float *g = grads[i];
    long long n = (long long)ns[i];
#pragma omp parallel for schedule(static) num_threads(threads) if (n >= 65536)
    for (long long j = 0; j < n; j++) g[j] = g[j] * coef;
  }
}

float gm_clip_grad_norm_torch(float *const *grads, const size_t *ns, int k, double max_norm, int threads) {
  float total = gm_grad_global_norm((const float *const *)grads, ns, k);
  if (k <= 0) return total;
  float coef = (1.0f / (total + (float)1e-6)) * (float)max_norm;
  if (coef > 1.0f) coef = 1.0f; // torch.clamp(max=1.0); a NaN coefficient stays NaN
  // torch multiplies even by 1; g * 1.0f is g for every f32 (NaN, -0 and subnormals included), so
  // that pass over every gradient is skipped.
  if (coef != 1.0f) scale_all(grads, ns, k, coef, threads);
  return total;
}

double gm_clip_grad_norm_megatron(float *const *grads, const size_t *ns, int k, double max_norm,
                                  int threads, bool *clipped) {
  float norm = gm_grad_global_norm((const float *const *)grads, ns, k);
  double total = pow((double)(norm * norm), 1.0 / 2.0);
  double coef = max_norm / (total + 1.0e-6);
  bool clip = coef < 1.0;
  if (clip) scale_all(grads, ns, k, (float)coef, threads);
  if (clipped) *clipped = clip;
  return total;
}
