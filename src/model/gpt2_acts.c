// The forward's activation table (gm_acts, include/gptmeg/model.h): one slice a point, or one a
// point and layer when the caller keeps them.
#include "model/gpt2_internal.h"

#include <stdlib.h>
#include <string.h>

static bool per_layer_point(gm_point pt) { return pt != GM_PT_EMBED && pt != GM_PT_LNF && pt != GM_PT_LOGITS; }

float *gm_acts_at(const gm_acts *a, int layer, gm_point pt) {
  if ((unsigned)pt >= GM_N_POINTS || !a->pt[pt]) return NULL;
  return per_layer_point(pt) && layer > 0 ? a->pt[pt] + (size_t)layer * a->stride[pt] : a->pt[pt];
}

static float *ln_stat(float *const *tab, const gm_acts *a, int layer, gm_point ln) {
  if (ln != GM_PT_LN1 && ln != GM_PT_LN2 && ln != GM_PT_LNF) return NULL;
  if (!tab[ln]) return NULL;
  return ln == GM_PT_LNF || layer <= 0 ? tab[ln] : tab[ln] + (size_t)layer * a->B * a->T;
}
float *gm_acts_mean(const gm_acts *a, int layer, gm_point ln) { return ln_stat(a->mean, a, layer, ln); }
float *gm_acts_rstd(const gm_acts *a, int layer, gm_point ln) { return ln_stat(a->rstd, a, layer, ln); }

void gm_acts_free(gm_acts *a) {
  free(a->storage);
  for (int i = 0; i < 7; i++) free(a->shared[i]);
  memset(a, 0, sizeof *a);
}

// A kept table of this shape is reused as it is (a training loop's steps): its pages stay mapped.
static bool fits(const gm_acts *a, const gm_gpt2_config *c, int B, int T, int len, int keep) {
  const size_t N = (size_t)B * T;
  return a->storage && a->per_layer && a->n_layer == c->n_layer && a->B == B && a->T == T && a->len == len &&
         a->keep_rows == keep && a->numel[GM_PT_LN1] == N * (size_t)c->n_embd &&
         a->numel[GM_PT_FC] == N * (size_t)c->n_inner && a->numel[GM_PT_SCORES] == (size_t)B * c->n_head * T * len &&
         a->numel[GM_PT_LOGITS] == (size_t)B * keep * c->vocab_size;
}

int gm_gpt2_acts_alloc(gm_acts *a, const gm_gpt2_config *c, int B, int T, int len, int keep, bool per_layer,
                       float *logits) {
  if (per_layer && fits(a, c, B, T, len, keep)) {
    a->pt[GM_PT_LOGITS] = logits;
    return 0;
  }
  gm_acts_free(a);
  const size_t N = (size_t)B * T, D = (size_t)c->n_embd, I = (size_t)c->n_inner, L = (size_t)c->n_layer;
  const size_t nd = N * D, ni = N * I, ns = (size_t)B * c->n_head * T * len;
  a->n_layer = c->n_layer;
  a->B = B;
  a->T = T;
  a->len = len;
  a->keep_rows = keep;
  a->per_layer = per_layer;
  static const gm_point widths_d[] = {GM_PT_EMBED, GM_PT_LN1,   GM_PT_ATTN, GM_PT_ATTN_OUT, GM_PT_RESID_ATTN,
                                      GM_PT_LN2,   GM_PT_MLP,   GM_PT_RESID, GM_PT_LNF};
  for (size_t i = 0; i < sizeof widths_d / sizeof *widths_d; i++) a->numel[widths_d[i]] = nd;
  a->numel[GM_PT_QKV] = 3 * nd;
  a->numel[GM_PT_SCORES] = a->numel[GM_PT_PROBS] = ns;
  a->numel[GM_PT_FC] = a->numel[GM_PT_ACT] = ni;
  a->numel[GM_PT_LOGITS] = (size_t)B * keep * c->vocab_size;
  if (per_layer) { // every point its own slices; the statistics after them
    size_t total = 0;
    for (int p = 0; p < GM_PT_LOGITS; p++) total += per_layer_point(p) ? L * a->numel[p] : a->numel[p];
    total += 2 * (2 * L * N + N);
    if (!(a->storage = malloc(total * sizeof(float))))
      return gm_fail("out of memory for the kept activations (%zu MiB)", total * sizeof(float) >> 20);
    float *at = a->storage;
    for (int p = 0; p < GM_PT_LOGITS; p++) {
      a->pt[p] = at;
      a->stride[p] = per_layer_point(p) ? a->numel[p] : 0;
      at += per_layer_point(p) ? L * a->numel[p] : a->numel[p];
    }
    float **tabs[2] = {a->mean, a->rstd};
    for (int k = 0; k < 2; k++) {
      tabs[k][GM_PT_LN1] = at; at += L * N;
      tabs[k][GM_PT_LN2] = at; at += L * N;
      tabs[k][GM_PT_LNF] = at; at += N;
    }
  } else { // the buffers of a forward that keeps nothing, shared as the points follow each other
    // (seven allocations, not one: glibc serves the smaller ones from the heap it keeps, so a
    // forward's peak memory stays what it was before the table existed)
    const size_t sizes[7] = {nd, nd, nd, 3 * nd, ns, ni, ni};
    for (int i = 0; i < 7; i++)
      if (!(a->shared[i] = malloc(sizes[i] * sizeof(float)))) {
        gm_acts_free(a);
        return gm_fail("out of memory for activations (B=%d, T=%d)", B, T);
      }
    float *h = a->shared[0], *xn = a->shared[1], *att = a->shared[2], *qkv = a->shared[3], *scores = a->shared[4],
          *fc = a->shared[5], *ac = a->shared[6];
    a->pt[GM_PT_EMBED] = a->pt[GM_PT_RESID_ATTN] = a->pt[GM_PT_RESID] = h; // the residual stream, in place
    a->pt[GM_PT_LN1] = a->pt[GM_PT_ATTN_OUT] = a->pt[GM_PT_LN2] = a->pt[GM_PT_MLP] = a->pt[GM_PT_LNF] = xn;
    a->pt[GM_PT_QKV] = qkv;
    a->pt[GM_PT_SCORES] = a->pt[GM_PT_PROBS] = scores; // softmax in place
    a->pt[GM_PT_ATTN] = att;
    a->pt[GM_PT_FC] = fc;
    a->pt[GM_PT_ACT] = ac;
  }
  a->pt[GM_PT_LOGITS] = logits;
  return 0;
}
