// Cross-entropy of a causal LM over shifted labels: the mean of -log_softmax(logits[t])[label[t+1]].
// Numerics contract: each scored row's log-softmax in double over the f32 logits (max, then
// log(sum exp(x - max)) with the sum in index order), rows in parallel, the losses summed in
// (batch, position) order in double and divided by their count: the same bits for any thread
// count. (transformers computes this loss in the logits' dtype; gm_gpt2_perplexity's recipe, and
// this op, compute it in double.)
#include "ops/ops_internal.h"

#include <math.h>
#include <stdlib.h>

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

int gm_op_crossentropy_bwd(const gm_op_ctx *c, float *dlogits, double dloss, const float *logits, const int32_t *labels,
                           int B, int T, int V) {
  (void)c, (void)dlogits, (void)dloss, (void)logits, (void)labels, (void)B, (void)T, (void)V;
  return gm_op_not_yet("cross-entropy");
}
