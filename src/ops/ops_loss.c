// Cross-entropy of a causal LM over shifted labels: the mean of -log_softmax(logits[t])[label[t+1]].
// Two of them: gm_op_crossentropy_fwd (eval's, in double: this contract) and the training loss
// gm_op_lmloss_fwd/bwd (transformers' f32 loss as torch computes it: its contract further down).
// Numerics contract: each scored row's log-softmax in double over the f32 logits (max, then
// log(sum exp(x - max)) with the sum in index order), rows in parallel, the losses summed in
// (batch, position) order in double and divided by their count: the same bits for any thread
// count. (transformers computes this loss in the logits' dtype; gm_gpt2_perplexity's recipe, and
// this op, compute it in double.)
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"
#include "ops/ops_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// -log_softmax(x)[target] in double over the f32 row x[V]: lse = max + log(sum exp(x - max)).
static double row_nll(const float *x, int V, int32_t target) {
  double mx = -INFINITY;
  for (int i = 0; i < V; i++)
    if (x[i] > mx) mx = x[i];
  double s = 0;
  for (int i = 0; i < V; i++) s += exp((double)x[i] - mx);
  return mx + log(s) - (double)x[target];
}

int gm_op_crossentropy_fwd(const gm_op_ctx *c, double *loss, int64_t *n_scored, double *losses, const float *logits,
                           const int32_t *labels, int B, int T, int V) {
  const long n = (long)B * T;
  for (long i = 0; i < n; i++)
    if (labels[i] != GM_IGNORE_INDEX && (labels[i] < 0 || labels[i] >= V))
      return gm_fail("label %d at [%ld, %ld] is outside the vocabulary [0, %d) and not the ignore index %d", labels[i],
                     i / T, i % T, V, GM_IGNORE_INDEX);
  // one value a position: position t (t >= 1) holds the loss of its label, predicted by row t - 1
  double *l = losses;
  const bool own = !l;
  if (own && !(l = malloc((size_t)n * sizeof(double)))) return gm_fail("out of memory for the losses [%ld]", n);
#pragma omp parallel for schedule(static) num_threads(c->threads)
  for (long i = 0; i < n; i++) {
    long t = i % T;
    l[i] = t > 0 && labels[i] != GM_IGNORE_INDEX ? row_nll(logits + (size_t)(i - 1) * V, V, labels[i]) : 0.0;
  }
  double s = 0;
  int64_t k = 0;
  for (long i = 0; i < n; i++)
    if (i % T > 0 && labels[i] != GM_IGNORE_INDEX) { s += l[i]; k++; }
  if (own) free(l);
  *loss = k ? s / (double)k : NAN;
  if (n_scored) *n_scored = k;
  return 0;
}


// ---- the training loss: transformers' ForCausalLMLoss in f32 ------------------------------------
// Numerics contract (gm_op_lmloss_fwd/bwd; tests/test_lmloss.c against tools/ref/gen_lmloss_goldens.py):
// transformers 4.57.3 GPT2LMHeadModel's loss as torch 2.15 CPU computes it, bit for bit:
// logits.float() (exact), labels shifted (row (b, t) scored against labels[b, t+1], the last
// position of each sequence ignored), F.cross_entropy(ignore_index=-100, reduction='mean') over
// all B*T rows = log_softmax (ATen's _vec_log_softmax_lastdim, f32) + nll_loss. Per row: m = max;
// s = sum of SLEEF expf_u10(x - m) in W lanes (W = 16 under ATen's AVX512 capability, 8 under
// AVX2: lane j % W gathers x[j], a partial last step into its first lanes, then folded W/2, ..., 1;
// rows shorter than W one by one), l = SLEEF logf_u10(s), logp = (x - m) - l. nll_loss: the picked
// -logp summed in row order in ATen's 8-level cascade (runs of 16 rows), / (float)count. Backward:
// g = -(dloss / count) at each scored row's label, then log_softmax_backward d = g - exp(logp) * sum(g)
// (sum(g) is g or 0; GCC contracts it to one FMA), then .float()'s backward rounds d to the dtype.
// Rows in parallel, the nll sum serial: the bits do not depend on c->threads (as torch's do not).

// ATen's lane count for the active torch target's capability (Vectorized<float>::size()).
static int aten_lanes(void) {
  return gm_torch_target_get_info(gm_torch_target_active())->aten == GM_ATEN_AVX2 ? 8 : 16;
}

// The label row i is scored against, or GM_IGNORE_INDEX (the shift: the last position of a sequence).
static int32_t shifted_label(const int32_t *labels, long i, int T) { return i % T == T - 1 ? GM_IGNORE_INDEX : labels[i + 1]; }

static int check_labels(const int32_t *labels, long n, int V) {
  for (long i = 0; i < n; i++)
    if (labels[i] != GM_IGNORE_INDEX && (labels[i] < 0 || labels[i] >= V))
      return gm_fail("label %d at %ld is outside the vocabulary [0, %d) and not the ignore index %d", labels[i], i, V,
                     GM_IGNORE_INDEX);
  if (!__builtin_cpu_supports("fma")) return gm_fail("the training loss needs FMA (SLEEF's FMA builds, as ATen's AVX kernels)");
  return 0;
}

int gm_op_lmloss_fwd(const gm_op_ctx *c, float *loss, int64_t *n_scored, float *logp, const float *logits,
                     const int32_t *labels, int B, int T, int V) {
  const long n = (long)B * T;
  if (check_labels(labels, n, V)) return -1;
  const int W = aten_lanes();
  if (n == 0 || V <= 0) { // no rows: torch's mean of nothing
    *loss = NAN;
    if (n_scored) *n_scored = 0;
    return 0;
  }
  // picked[i] = logp[i, label of row i] (0 where not scored); logp rows kept only when asked for
  float *picked = malloc(sizeof(float) * (size_t)n);
  if (!picked) return gm_fail("out of memory for the picked log-probabilities [%ld]", n);
  int oom = 0;
#pragma omp parallel num_threads(c->threads) reduction(| : oom)
  {
    float *e = malloc(sizeof(float) * (size_t)V * (logp ? 1 : 2));
    oom = !e;
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) {
      if (!e) continue;
      float *row = logp ? logp + (size_t)i * V : e + V;
      gm_log_softmax_row_f32(logits + (size_t)i * V, row, V, W, e);
      const int32_t t = shifted_label(labels, i, T);
      picked[i] = t == GM_IGNORE_INDEX ? 0.0f : row[t];
    }
    free(e);
  }
  if (oom) {
    free(picked);
    return gm_fail("out of memory for a log-softmax row [%d]", V);
  }
  // nll_loss, reduction 'mean': ATen's cascade over the rows in order (8 levels, runs of 2^p rows)
  int clog = 0;
  while (clog < 62 && (1L << clog) < n) clog++;
  const int p = clog / 8 > 4 ? clog / 8 : 4;
  const long mask = (1L << p) - 1;
  float part[8] = {0};
  long ignored = 0;
  for (long b = 0; b < n; b++) {
    const int32_t t = shifted_label(labels, b, T);
    if (t == GM_IGNORE_INDEX) { ignored++; continue; }
    part[0] -= picked[b];
    for (int j = 0; j + 1 < 8; j++) {
      if ((b & (mask << (j * p))) != 0) break;
      part[j + 1] += part[j];
      part[j] = 0.0f;
    }
  }
  float sum = 0.0f;
  for (int j = 0; j < 8; j++) sum += part[j];
  *loss = sum / (float)(n - ignored); // no label scored: 0/0 = NaN, as torch
  if (n_scored) *n_scored = n - ignored;
  free(picked);
  return 0;
}

int gm_op_lmloss_bwd(const gm_op_ctx *c, float *dlogits, float dloss, const float *logp, const float *logits,
                     const int32_t *labels, int B, int T, int V) {
  const long n = (long)B * T;
  if (check_labels(labels, n, V)) return -1;
  if (!logp && !logits) return gm_fail("the loss's backward needs the log-softmax or the logits");
  const int W = aten_lanes();
  long ignored = 0;
  for (long i = 0; i < n; i++) ignored += shifted_label(labels, i, T) == GM_IGNORE_INDEX;
  const float g = -(dloss / (float)(n - ignored));
  int oom = 0;
#pragma omp parallel num_threads(c->threads) reduction(| : oom)
  {
    float *e = malloc(sizeof(float) * (size_t)V);
    oom = !e;
#pragma omp for schedule(static)
    for (long i = 0; i < n; i++) {
      if (!e) continue;
      float *d = dlogits + (size_t)i * V;
      if (logp) {
        if (d != logp + (size_t)i * V) memcpy(d, logp + (size_t)i * V, sizeof(float) * (size_t)V);
      } else {
        gm_log_softmax_row_f32(logits + (size_t)i * V, d, V, W, e);
      }
      const int32_t t = shifted_label(labels, i, T);
      const float s = t == GM_IGNORE_INDEX ? 0.0f : g; // sum of the row's nll gradient (one entry)
      memcpy(e, d, sizeof(float) * (size_t)V);
      gm_exp_shift_row(e, V, 0.0f); // exp(logp)
      gm_nll_grad_row_f32(d, e, V, s, t == GM_IGNORE_INDEX ? -1 : t, g);
      gm_op_round(c, d, (size_t)V);
    }
    free(e);
  }
  if (oom) return gm_fail("out of memory for a log-softmax row [%d]", V);
  return 0;
}
