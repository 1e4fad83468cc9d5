// Next-token sampling (temperature, top-k, top-p in HF transformers' order; greedy at temperature
// 0) and KV-cache generation for GPT-2. Contracts in include/gptmeg/model.h.
#include "gptmeg/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int gm_sampler_init(gm_sampler *s, const gm_sample_params *p, int V) {
  memset(s, 0, sizeof *s);
  if (V <= 0) return gm_fail("sampler: vocabulary size must be > 0 (got %d)", V);
  if (!(p->temperature >= 0) || !isfinite(p->temperature))
    return gm_fail("temperature must be a finite number >= 0 (got %g)", p->temperature);
  if (p->top_k < 0) return gm_fail("top-k must be >= 0 (got %d; 0 turns it off)", p->top_k);
  if (!(p->top_p > 0 && p->top_p <= 1)) return gm_fail("top-p must be in (0, 1] (got %g; 1 turns it off)", p->top_p);
  s->p = *p;
  s->V = V;
  gm_rng_seed(&s->rng, p->seed);
  s->prob = malloc(2 * (size_t)V * sizeof(double));
  s->idx = malloc((size_t)V * sizeof(int32_t));
  if (!s->prob || !s->idx) { gm_sampler_free(s); return gm_fail("sampler: out of memory for vocabulary %d", V); }
  return 0;
}

void gm_sampler_free(gm_sampler *s) {
  free(s->prob);
  free(s->idx);
  s->prob = NULL;
  s->idx = NULL;
}

// True if token a ranks before token b: larger z, then lower id.
static inline bool ranks_before(const double *z, int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); }

// Restores the heap property below node i of h[0..n), a heap whose root is the token ranked last.
static void sift_down(const double *z, int32_t *h, int n, int i) {
  for (;;) {
    int l = 2 * i + 1, r = l + 1, w = i;
    if (l < n && ranks_before(z, h[w], h[l])) w = l;
    if (r < n && ranks_before(z, h[w], h[r])) w = r;
    if (w == i) return;
    int32_t t = h[i]; h[i] = h[w]; h[w] = t;
    i = w;
  }
}

// Puts the k best-ranked of the V token ids into idx[0..k), best first (a total order, so the
// result does not depend on the algorithm). 1 <= k <= V.
static void select_top(const double *z, int32_t *idx, int V, int k) {
  for (int i = 0; i < k; i++) idx[i] = i;
  for (int i = k / 2 - 1; i >= 0; i--) sift_down(z, idx, k, i);
  for (int32_t t = k; t < V; t++)
    if (ranks_before(z, t, idx[0])) { idx[0] = t; sift_down(z, idx, k, 0); }
  for (int n = k - 1; n > 0; n--) { // heap sort: the last-ranked goes to the end
    int32_t t = idx[0]; idx[0] = idx[n]; idx[n] = t;
    sift_down(z, idx, n, 0);
  }
}

int gm_sampler_next(gm_sampler *s, const float *logits, int32_t *token) {
  const int V = s->V;
  for (int i = 0; i < V; i++)
    if (isnan(logits[i])) return gm_fail("logit of token %d is NaN", i);
  if (s->p.temperature == 0) { // greedy: first maximum
    int best = 0;
    for (int i = 1; i < V; i++)
      if (logits[i] > logits[best]) best = i;
    *token = best;
    return 0;
  }
  double *z = s->prob, *w = s->prob + V;
  double zmax = -INFINITY;
  for (int i = 0; i < V; i++) {
    z[i] = (double)logits[i] / s->p.temperature;
    if (z[i] > zmax) zmax = z[i];
  }
  if (isinf(zmax)) return gm_fail("logits are %s: nothing to sample", zmax > 0 ? "+inf" : "all -inf");
  // Candidates: all V ids (w indexed by id), or the top-k ids best first (w indexed by rank).
  int n = V;
  bool ranked = false, w_by_id = true;
  if (s->p.top_k > 0 && s->p.top_k < V) { n = s->p.top_k; select_top(z, s->idx, V, n); ranked = true; w_by_id = false; }
  double sum = 0;
  for (int j = 0; j < n; j++) {
    w[j] = exp(z[ranked ? s->idx[j] : j] - zmax);
    sum += w[j];
  }
#define W(j) (w_by_id ? w[s->idx[j]] : w[j])
  if (s->p.top_p < 1) { // smallest head whose probability reaches top_p; at least one token
    if (!ranked) {      // rank a prefix only: 256, 4096, ... ids, until it holds the nucleus
      for (int kk = V < 256 ? V : 256;; kk = kk * 16 < V ? kk * 16 : V) {
        select_top(z, s->idx, V, kk);
        double cum = 0;
        int j = 0;
        while (j < kk && (cum += W(j) / sum) < s->p.top_p) j++;
        n = kk;
        if (j < kk || kk == V) break;
      }
      ranked = true;
    }
    double cum = 0, head = 0;
    int keep = 0;
    while (keep < n) {
      cum += W(keep) / sum;
      head += W(keep);
      keep++;
      if (cum >= s->p.top_p) break;
    }
    n = keep;
    sum = head;
  }
  double u = gm_rng_uniform(&s->rng) * sum, acc = 0;
  int pick = n - 1;
  for (int j = 0; j < n; j++) {
    acc += ranked ? W(j) : w[j];
    if (u < acc) { pick = j; break; }
  }
#undef W
  *token = ranked ? s->idx[pick] : pick;
  return 0;
}

int gm_gpt2_generate(const gm_gpt2 *m, const gm_profile *p, const int32_t *prompt, int n_prompt, int max_new,
                     gm_sampler *s, int32_t eot_id, int threads, gm_token_fn on_token, void *ctx,
                     gm_generate_stats *stats) {
  const int P = m->cfg.n_positions, V = m->cfg.vocab_size;
  memset(stats, 0, sizeof *stats);
  stats->n_prompt = n_prompt;
  if (n_prompt <= 0) return gm_fail("the prompt is empty: generation needs at least one token");
  if (n_prompt > P) return gm_fail("the prompt has %d tokens, more than n_positions %d", n_prompt, P);
  if (max_new < 0) return gm_fail("max new tokens must be >= 0 (got %d)", max_new);
  if (s->V != V) return gm_fail("sampler built for vocabulary %d, model has %d", s->V, V);
  long want = (long)n_prompt + max_new;
  int max_t = want < P ? (int)want : P;
  gm_kv_cache kv;
  if (gm_kv_init(&kv, m, 1, max_t)) return -1;
  float *logits = malloc((size_t)V * sizeof(float)); // one row: the prefill keeps only the last position's
  int rc = 0;
  if (!logits) { rc = gm_fail("out of memory for the logits [%d]", V); goto done; }
  stats->stop = GM_STOP_MAX_NEW;
  if (max_new == 0) goto done;
  double t0 = gm_now_s();
  if ((rc = gm_gpt2_run(m, &(gm_gpt2_run_opts){.profile = p, .tokens = prompt, .B = 1, .T = n_prompt, .kv = &kv, .logits = logits,
                                                   .logits_to_keep = 1, .threads = threads}))) goto done;
  stats->prefill_s = gm_now_s() - t0;
  const float *last = logits;
  t0 = gm_now_s();
  for (;;) {
    if (n_prompt + stats->n_new >= P) { stats->stop = GM_STOP_POSITIONS; break; }
    int32_t tok;
    if ((rc = gm_sampler_next(s, last, &tok))) break;
    if (tok == eot_id) { stats->stop = GM_STOP_EOT; break; }
    stats->n_new++;
    if (on_token && on_token(ctx, tok, last)) { stats->stop = GM_STOP_CALLBACK; break; }
    if (stats->n_new == max_new) { stats->stop = GM_STOP_MAX_NEW; break; }
    if (n_prompt + stats->n_new >= P) { stats->stop = GM_STOP_POSITIONS; break; }
    if ((rc = gm_gpt2_run(m, &(gm_gpt2_run_opts){.profile = p, .tokens = &tok, .B = 1, .T = 1, .kv = &kv, .logits = logits,
                                                     .threads = threads}))) break;
    last = logits;
  }
  stats->decode_s = gm_now_s() - t0;
done:
  free(logits);
  gm_kv_free(&kv);
  return rc;
}
