// GPT-2 causal forward over a KV cache, f32 (the `hf` profile's knobs; see gm_profile).
#include "kernels/nn.h"
#include "model/gpt2_internal.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

int gm_kv_init(gm_kv_cache *kv, const gm_gpt2 *m, int B, int max_t) {
  memset(kv, 0, sizeof *kv);
  if (B <= 0 || max_t <= 0) return gm_fail("KV cache needs B > 0 and max_t > 0 (got %d, %d)", B, max_t);
  if (max_t > m->cfg.n_positions) return gm_fail("KV cache length %d exceeds n_positions %d", max_t, m->cfg.n_positions);
  kv->n_layer = m->cfg.n_layer;
  kv->B = B;
  kv->H = m->cfg.n_head;
  kv->hd = m->cfg.n_embd / m->cfg.n_head;
  kv->max_t = max_t;
  size_t n = (size_t)kv->n_layer * B * kv->H * max_t * kv->hd;
  kv->k = calloc(n, sizeof(float));
  kv->v = calloc(n, sizeof(float));
  if (!kv->k || !kv->v) { gm_kv_free(kv); return gm_fail("out of memory for the KV cache (%zu floats)", 2 * n); }
  return 0;
}

void gm_kv_reset(gm_kv_cache *kv) { kv->len = 0; }

void gm_kv_free(gm_kv_cache *kv) {
  free(kv->k);
  free(kv->v);
  memset(kv, 0, sizeof *kv);
}

// Scores rule of layer l (0-based) under profile p and the config's attention knobs.
static gm_attn_rule attn_rule(const gm_profile *p, const gm_gpt2_config *c, int l, int hd) {
  gm_attn_rule r = {1.0f, 0.0f, 0.0f, p->mask == GM_MASK_FINFO_MIN ? -FLT_MAX : -1e4f};
  gm_scores_rule rule = p->scores;
  if (p->honor_upcast_option && c->reorder_and_upcast_attn) rule = GM_SCORES_ALPHA_IN_GEMM;
  if (rule == GM_SCORES_ALPHA_IN_GEMM) { // baddbmm(alpha = scale_factor), scale_factor computed in double
    double s = 1.0;
    if (c->scale_attn_weights) s /= sqrt((double)hd);
    if (c->scale_attn_by_inverse_layer_idx) s /= (double)(l + 1);
    r.alpha = (float)s;
  } else { // w = q@k^T; w / full([], hd ** 0.5, f32); w / float(layer_idx + 1)
    if (c->scale_attn_weights) r.divide = (float)sqrt((double)hd);
    if (c->scale_attn_by_inverse_layer_idx) r.divide2 = (float)(l + 1);
  }
  return r;
}

static void add_inplace(float *h, const float *x, size_t n) {
  for (size_t i = 0; i < n; i++) h[i] = x[i] + h[i];
}

int gm_gpt2_forward_cached(const gm_gpt2 *m, const gm_profile *p, gm_kv_cache *kv, const int32_t *tokens, int B,
                           int T, float *logits, int threads) {
  const gm_gpt2_config *c = &m->cfg;
  if (p->dtype != GM_F32) return gm_fail("forward in %s is not built yet (f32 only)", gm_dtype_name(p->dtype));
  // In f32 every layer-norm and softmax rule computes in f32 and rounds to f32: one kernel each
  // serves all of them. The reduced dtypes will ask p->layer_norm / p->softmax here.
  if (B != kv->B) return gm_fail("batch %d does not match the KV cache's batch %d", B, kv->B);
  if (T <= 0) return gm_fail("no tokens to run (T = %d)", T);
  int t0 = kv->len;
  if (t0 + T > kv->max_t || t0 + T > c->n_positions)
    return gm_fail("sequence length %d exceeds %s %d", t0 + T, t0 + T > c->n_positions ? "n_positions" : "the KV cache length",
                   t0 + T > c->n_positions ? c->n_positions : kv->max_t);
  for (int i = 0; i < B * T; i++)
    if (tokens[i] < 0 || tokens[i] >= c->vocab_size)
      return gm_fail("token id %d at [%d, %d] is outside the vocabulary [0, %d)", tokens[i], i / T, i % T, c->vocab_size);
  if (threads <= 0) threads = omp_get_max_threads();
  gm_activation act = p->act_from_config ? c->act : p->act_override;
  const int D = c->n_embd, I = c->n_inner, V = c->vocab_size, H = c->n_head, hd = D / H, L = c->n_layer;
  const int N = B * T, len = t0 + T;
  size_t nd = (size_t)N * D, ni = (size_t)N * I;
  float *h = malloc(nd * sizeof(float)), *xn = malloc(nd * sizeof(float)), *att = malloc(nd * sizeof(float));
  float *qkv = malloc(3 * nd * sizeof(float)), *fc = malloc(ni * sizeof(float)), *ac = malloc(ni * sizeof(float));
  float *scratch = malloc((size_t)threads * T * len * sizeof(float));
  int rc = 0;
  if (!h || !xn || !att || !qkv || !fc || !ac || !scratch) { rc = gm_fail("out of memory for activations (B=%d, T=%d)", B, T); goto done; }
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const float *e = m->wte + (size_t)tokens[b * T + t] * D, *pe = m->wpe + (size_t)(t0 + t) * D;
      float *o = h + ((size_t)b * T + t) * D;
      for (int i = 0; i < D; i++) o[i] = e[i] + pe[i];
    }
  for (int l = 0; l < L; l++) {
    const gm_gpt2_layer *y = &m->layers[l];
    gm_layernorm_f32(h, y->ln1_w, y->ln1_b, xn, N, D, c->layer_norm_epsilon, threads);
    gm_matmul_f32(xn, D, y->attn_w, 3 * D, false, y->attn_b, 1.0f, qkv, 3 * D, N, 3 * D, D, threads);
    float *kl = kv->k + (size_t)l * B * H * kv->max_t * hd, *vl = kv->v + (size_t)l * B * H * kv->max_t * hd;
    for (int b = 0; b < B; b++)
      for (int t = 0; t < T; t++)
        for (int hh = 0; hh < H; hh++) {
          const float *row = qkv + ((size_t)b * T + t) * 3 * D;
          size_t at = (((size_t)b * H + hh) * kv->max_t + t0 + t) * hd;
          memcpy(kl + at, row + D + hh * hd, (size_t)hd * sizeof(float));
          memcpy(vl + at, row + 2 * D + hh * hd, (size_t)hd * sizeof(float));
        }
    gm_attn_rule r = attn_rule(p, c, l, hd);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int bh = 0; bh < B * H; bh++) {
      int b = bh / H, hh = bh % H;
      size_t base = ((size_t)b * H + hh) * kv->max_t * hd;
      float *s = scratch + (size_t)omp_get_thread_num() * T * len;
      gm_attention_head_f32(qkv + (size_t)b * T * 3 * D + hh * hd, 3 * D, kl + base, vl + base, hd, t0, T, &r, s,
                            att + (size_t)b * T * D + hh * hd, D);
    }
    gm_matmul_f32(att, D, y->aproj_w, D, false, y->aproj_b, 1.0f, xn, D, N, D, D, threads);
    add_inplace(h, xn, nd);
    gm_layernorm_f32(h, y->ln2_w, y->ln2_b, xn, N, D, c->layer_norm_epsilon, threads);
    gm_matmul_f32(xn, D, y->fc_w, I, false, y->fc_b, 1.0f, fc, I, N, I, D, threads);
    if ((rc = gpt2_act_f32(p, act, fc, ac, ni, threads))) goto done;
    gm_matmul_f32(ac, I, y->mproj_w, D, false, y->mproj_b, 1.0f, xn, D, N, D, I, threads);
    add_inplace(h, xn, nd);
  }
  gm_layernorm_f32(h, m->lnf_w, m->lnf_b, xn, N, D, c->layer_norm_epsilon, threads);
  gm_matmul_f32(xn, D, m->lm_head, D, true, NULL, 1.0f, logits, V, N, V, D, threads);
  kv->len = len;
done:
  free(h); free(xn); free(att); free(qkv); free(fc); free(ac); free(scratch);
  return rc;
}

int gm_gpt2_forward(const gm_gpt2 *m, const gm_profile *p, const int32_t *tokens, int B, int T, float *logits,
                    int threads) {
  if (T > m->cfg.n_positions) return gm_fail("sequence length %d exceeds n_positions %d", T, m->cfg.n_positions);
  gm_kv_cache kv;
  if (gm_kv_init(&kv, m, B, T)) return -1;
  int rc = gm_gpt2_forward_cached(m, p, &kv, tokens, B, T, logits, threads);
  gm_kv_free(&kv);
  return rc;
}
