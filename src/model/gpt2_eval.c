// Perplexity of a token sequence by transformers' sliding-window recipe (contract in
// include/gptmeg/model.h, gm_gpt2_perplexity).
#include "gptmeg/model.h"

#include <math.h>
#include <stdlib.h>

int gm_gpt2_perplexity(const gm_gpt2 *m, const gm_profile *p, const int32_t *tokens, int64_t n, int ctx, int stride,
                       int threads, gm_progress_fn progress, void *progress_ctx, gm_ppl_result *out) {
  const int P = m->cfg.n_positions, V = m->cfg.vocab_size;
  if (n < 2) return gm_fail("perplexity needs at least 2 tokens (got %lld)", (long long)n);
  if (ctx < 2 || ctx > P) return gm_fail("context length %d is outside [2, n_positions %d]", ctx, P);
  if (stride < 1 || stride > ctx) return gm_fail("stride %d is outside [1, context length %d]", stride, ctx);
  for (int64_t i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= V)
      return gm_fail("token id %d at index %lld is outside the vocabulary [0, %d)", tokens[i], (long long)i, V);
  float *logits = malloc((size_t)ctx * V * sizeof(float));
  double *nll = malloc((size_t)ctx * sizeof(double));
  int32_t *labels = malloc((size_t)ctx * sizeof(int32_t));
  if (!logits || !nll || !labels) {
    free(logits); free(nll); free(labels);
    return gm_fail("out of memory for logits [%d, %d]", ctx, V);
  }
  gm_op_ctx oc;
  gm_op_ctx_init(&oc, p, threads, NULL, NULL);
  double nll_sum = 0;
  int64_t n_tokens = 0, n_scored = 0, prev_end = 0;
  int n_windows = 0, rc = 0;
  for (int64_t begin = 0; begin < n; begin += stride) {
    int64_t end = begin + ctx < n ? begin + ctx : n;
    int len = (int)(end - begin), trg = (int)(end - prev_end);
    const int32_t *w = tokens + begin;
    if ((rc = gm_gpt2_run(m, &(gm_gpt2_run_opts){.profile = p, .tokens = w, .B = 1, .T = len, .logits = logits,
                                                 .threads = threads})))
      break;
    // Labels are the window's tokens with all but the last trg set to -100; the loss shifts them
    // left by one, so logits row j-1 predicts token j for j >= max(1, len - trg).
    int first = len - trg > 1 ? len - trg : 1;
    for (int j = 0; j < len; j++) labels[j] = j >= first ? w[j] : GM_IGNORE_INDEX;
    double mean;
    if ((rc = gm_op_crossentropy_fwd(&oc, &mean, NULL, nll, logits, labels, 1, len, V))) break;
    int scored = len - first, counted = trg - 1; // the recipe's count: valid labels minus one
    nll_sum += mean * counted;
    n_tokens += counted;
    n_scored += scored;
    n_windows++;
    prev_end = end;
    if (progress) progress(progress_ctx, end, n);
    if (end == n) break;
  }
  free(logits);
  free(nll);
  free(labels);
  if (rc) return rc;
  out->nll = nll_sum / (double)n_tokens;
  out->ppl = exp(out->nll);
  out->n_tokens = n_tokens;
  out->n_scored = n_scored;
  out->n_windows = n_windows;
  out->ctx = ctx;
  out->stride = stride;
  return 0;
}
