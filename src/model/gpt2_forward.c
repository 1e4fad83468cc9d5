// GPT-2 causal forward over a KV cache in f32, f16 or bf16, under a numerics profile: a list of
// ops (include/gptmeg/ops.h), each owning its rounding to the dtype and its kernel choice.
//
// Storage: every activation is f32 holding values of the profile's dtype (widened exactly); R(.)
// is "round to the dtype" (the identity in f32). Each op computes in f32 (opmath) from dtype
// values and rounds once where eager PyTorch writes its result to a dtype tensor:
//   embed      h = R(wte[tok] + wpe[pos])                gm_op_embedding_fwd
//   ln         R(layer_norm_f32(h))                       gm_op_layernorm_fwd (ATen's order)
//   linear     R(x @ W + b)                                gm_op_linear_fwd (torch's order, bias first)
//   attention  scores, mask, softmax, probs @ v            gm_op_attention_fwd
//   residual   h = R(mlp/attn output + h)                  gm_op_residual_fwd
//   mlp act    act(x), or Megatron's fused bias + act      gm_op_act_fwd
//   lm_head    R(ln_f(h) @ lm_head^T) of the kept rows     gm_op_linear_fwd
// The bits do not depend on the thread count (every op's output is defined element by element).
// Autocast (gm_gpt2_run_opts.autocast, torch.autocast('cpu', bfloat16) over f32 weights): two
// contexts, `cs` f32 for the stream's ops (embed, the layer norms on m's f32 weights, residual
// f32 + bf16 -> f32) and `c` bf16 for the rest (linears on the bf16 working copy's weights and
// biases, attention, activation); each layer norm's f32 output is rounded to bf16 in place (the
// cast autocast puts before addmm/mm: the linear and its backward read that bf16 copy; the layer
// norm's backward reads its input and statistics, not its output). Under hf's attention rules the
// bf16 profile's softmax runs in f32 (GM_SOFTMAX_F32: transformers adds the f32 mask to the bf16
// scores, promoting them; gm_gpt2_autocast_profiles).
// Without autocast cs == c.
#include "model/gpt2_internal.h"

#include <stdlib.h>
#include <string.h>

// layers: the model's layer count (a cache kept across calls), or 1 for the fresh cache of one call,
// whose layers each write their keys and values at 0 .. T-1 before reading them (forward: a
// one-layer cache is shared by every layer).
static int kv_alloc(gm_kv_cache *kv, const gm_gpt2 *m, int B, int max_t, int layers) {
  memset(kv, 0, sizeof *kv);
  if (B <= 0 || max_t <= 0) return gm_fail("KV cache needs B > 0 and max_t > 0 (got %d, %d)", B, max_t);
  if (max_t > m->cfg.n_positions) return gm_fail("KV cache length %d exceeds n_positions %d", max_t, m->cfg.n_positions);
  kv->n_layer = layers;
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

int gm_kv_init(gm_kv_cache *kv, const gm_gpt2 *m, int B, int max_t) { return kv_alloc(kv, m, B, max_t, m->cfg.n_layer); }

void gm_kv_reset(gm_kv_cache *kv) { kv->len = 0; }

void gm_kv_free(gm_kv_cache *kv) {
  free(kv->k);
  free(kv->v);
  memset(kv, 0, sizeof *kv);
}

int gm_gpt2_autocast_check(const gm_gpt2 *m, const gm_gpt2 *ac, const gm_profile *p) {
  if (m->dtype != GM_F32 || ac->dtype != GM_BF16 || p->dtype != GM_BF16)
    return gm_fail("autocast needs f32 weights, their bf16 working copy and a bf16 profile (got %s, %s, profile %s '%s')",
                   gm_dtype_name(m->dtype), gm_dtype_name(ac->dtype), gm_dtype_name(p->dtype), p->name);
  if (ac == m || ac->storage == m->storage || ac->n_params != m->n_params || ac->tied != m->tied ||
      ac->cfg.n_layer != m->cfg.n_layer || ac->cfg.n_embd != m->cfg.n_embd || ac->cfg.vocab_size != m->cfg.vocab_size)
    return gm_fail("the autocast working copy is not a separate model of the f32 weights' config and tying");
  return 0;
}

void gm_gpt2_autocast_profiles(const gm_profile *p, gm_profile *lo, gm_profile *hi) {
  *lo = *p;
  // transformers' eager attention (hf: matmul-div scores, finfo mask) adds the model's f32 mask to the bf16
  // scores: promoted to f32, the softmax runs in f32, then .type(bf16); the other profiles' attention
  // (tools/ref/gm_profiles.py) masks in the scores' dtype and its softmax stays bf16
  if (p->scores == GM_SCORES_MATMUL_DIV && p->mask == GM_MASK_FINFO && !p->qk_layer_scaling) lo->softmax = GM_SOFTMAX_F32;
  *hi = *p;
  hi->dtype = GM_F32;
}

static int check_args(const gm_gpt2 *m, const gm_gpt2_run_opts *o, const gm_kv_cache *kv) {
  const gm_gpt2_config *c = &m->cfg;
  const gm_profile *p = o->profile;
  const int B = o->B, T = o->T;
  if (o->autocast) {
    if (gm_gpt2_autocast_check(m, o->autocast, p)) return -1;
  } else if (p->dtype != m->dtype)
    return gm_fail("profile '%s' runs in %s but the weights are %s (gm_gpt2_to_dtype converts them)", p->name,
                   gm_dtype_name(p->dtype), gm_dtype_name(m->dtype));
  if (B != kv->B) return gm_fail("batch %d does not match the KV cache's batch %d", B, kv->B);
  if (T <= 0) return gm_fail("no tokens to run (T = %d)", T);
  int len = kv->len + T;
  if (len > c->n_positions) return gm_fail("sequence length %d exceeds n_positions %d", len, c->n_positions);
  if (len > kv->max_t) return gm_fail("sequence length %d exceeds the KV cache length %d", len, kv->max_t);
  for (int i = 0; i < B * T; i++)
    if (o->tokens[i] < 0 || o->tokens[i] >= c->vocab_size)
      return gm_fail("token id %d at [%d, %d] is outside the vocabulary [0, %d)", o->tokens[i], i / T, i % T,
                     c->vocab_size);
  if (o->logits_to_keep < 0) return gm_fail("logits_to_keep must be >= 0 (got %d; 0 keeps all)", o->logits_to_keep);
  return 0;
}

// Probes point pt of `layer` as a 2-D tensor: [N, cols], the logits [B * keep, V].
static int emit(const gm_op_ctx *c, const gm_acts *a, int layer, gm_point pt) {
  int64_t rows = pt == GM_PT_LOGITS ? (int64_t)a->B * a->keep_rows : (int64_t)a->B * a->T;
  int64_t shape[2] = {rows, (int64_t)(a->numel[pt] / (size_t)rows)};
  return gm_op_probe(c, layer, pt, gm_acts_at(a, layer, pt), 2, shape);
}

// logits [B, keep, V] = R(xn @ lm_head^T) for the last `keep` rows of each sequence of xn [B*T, D].
// Every dtype's order is per element, so the kept rows equal the same rows of the all-logits
// forward; one row (decode) streams the packed or f16 copy through the one-row kernels.
static int lm_head(const gm_op_ctx *c, const gm_gpt2 *m, const float *xn, int B, int T, int keep, float *logits) {
  const int D = m->cfg.n_embd, V = m->cfg.vocab_size;
  const gm_op_weight w = {m->lm_head, true, m->lm_head_p, m->lm_head_h};
  if (keep == T) return gm_op_linear_fwd(c, logits, xn, &w, NULL, B * T, D, V);
  for (int b = 0; b < B; b++)
    if (gm_op_linear_fwd(c, logits + (size_t)b * keep * V, xn + ((size_t)b * T + (T - keep)) * D, &w, NULL, keep, D, V))
      return -1;
  return 0;
}

// The forward proper over a checked cache: the list of ops, each output probed as it is made.
// A layer norm of the stream (ctx cs), its output then rounded to c's dtype under autocast.
static int ln_fwd(const gm_op_ctx *c, const gm_op_ctx *cs, float *out, float *mean, float *rstd, const float *inp,
                  const float *w, const float *b, int N, int D, double eps) {
  if (gm_op_layernorm_fwd(cs, out, mean, rstd, inp, w, b, N, D, eps)) return -1;
  if (cs->dtype != c->dtype) gm_op_round(c, out, (size_t)N * D);
  return 0;
}

static int forward(const gm_gpt2 *m, const gm_gpt2_run_opts *o, gm_kv_cache *kv, gm_acts *a) {
  const gm_gpt2_config *cf = &m->cfg;
  const int B = o->B, T = o->T, N = B * T, D = cf->n_embd, I = cf->n_inner, t0 = kv->len;
  const double eps = cf->layer_norm_epsilon;
  const bool fused = o->profile->act_bias_fused;
  const gm_gpt2 *wm = o->autocast ? o->autocast : m; // the linears' weights
  gm_profile lo, hi;
  gm_op_ctx c, cs; // c: the linears, attention, activation; cs: the stream (embed, layer norms, residuals)
  if (o->autocast) {
    gm_gpt2_autocast_profiles(o->profile, &lo, &hi);
    gm_op_ctx_init(&c, &lo, o->threads, o->probe, o->probe_ctx);
    gm_op_ctx_init(&cs, &hi, o->threads, o->probe, o->probe_ctx);
  } else {
    gm_op_ctx_init(&c, o->profile, o->threads, o->probe, o->probe_ctx);
    cs = c;
  }
#define AT(l, pt) gm_acts_at(a, l, pt)
#define STEP(l, pt, call) \
  if ((call) || emit(&c, a, l, pt)) return -1
  STEP(-1, GM_PT_EMBED, gm_op_embedding_fwd(&cs, AT(-1, GM_PT_EMBED), o->tokens, m->wte, m->wte_bf16, m->wpe, B, T, t0, D));
  const float *h = AT(-1, GM_PT_EMBED); // the residual stream: the last block's output
  for (int l = 0; l < cf->n_layer; l++) {
    const gm_gpt2_layer *w = &wm->layers[l], *wn = &m->layers[l];
    const gm_op_weight attn_w = {w->attn_w, false, w->attn_wp, w->attn_wh}, aproj_w = {w->aproj_w, false, w->aproj_wp, w->aproj_wh},
                       fc_w = {w->fc_w, false, w->fc_wp, w->fc_wh}, mproj_w = {w->mproj_w, false, w->mproj_wp, w->mproj_wh};
    const size_t kv_at = (size_t)(kv->n_layer > 1 ? l : 0) * B * kv->H * kv->max_t * kv->hd;
    const gm_op_attn at = {B, T, t0, D, cf->n_head, l, cf->scale_attn_weights, cf->scale_attn_by_inverse_layer_idx,
                           cf->reorder_and_upcast_attn, kv->k + kv_at, kv->v + kv_at, kv->max_t};
    STEP(l, GM_PT_LN1, ln_fwd(&c, &cs, AT(l, GM_PT_LN1), gm_acts_mean(a, l, GM_PT_LN1), gm_acts_rstd(a, l, GM_PT_LN1), h,
                              wn->ln1_w, wn->ln1_b, N, D, eps));
    STEP(l, GM_PT_QKV, gm_op_linear_fwd(&c, AT(l, GM_PT_QKV), AT(l, GM_PT_LN1), &attn_w, w->attn_b, N, D, 3 * D));
    STEP(l, GM_PT_ATTN, gm_op_attention_fwd(&c, &at, AT(l, GM_PT_ATTN), AT(l, GM_PT_SCORES), AT(l, GM_PT_PROBS), AT(l, GM_PT_QKV)));
    STEP(l, GM_PT_ATTN_OUT, gm_op_linear_fwd(&c, AT(l, GM_PT_ATTN_OUT), AT(l, GM_PT_ATTN), &aproj_w, w->aproj_b, N, D, D));
    STEP(l, GM_PT_RESID_ATTN, gm_op_residual_fwd(&cs, AT(l, GM_PT_RESID_ATTN), h, AT(l, GM_PT_ATTN_OUT), (size_t)N * D));
    STEP(l, GM_PT_LN2, ln_fwd(&c, &cs, AT(l, GM_PT_LN2), gm_acts_mean(a, l, GM_PT_LN2), gm_acts_rstd(a, l, GM_PT_LN2),
                              AT(l, GM_PT_RESID_ATTN), wn->ln2_w, wn->ln2_b, N, D, eps));
    STEP(l, GM_PT_FC, gm_op_linear_fwd(&c, AT(l, GM_PT_FC), AT(l, GM_PT_LN2), &fc_w, fused ? NULL : w->fc_b, N, D, I));
    STEP(l, GM_PT_ACT, gm_op_act_fwd(&c, cf->act, AT(l, GM_PT_ACT), AT(l, GM_PT_FC), fused ? w->fc_b : NULL, N, I));
    STEP(l, GM_PT_MLP, gm_op_linear_fwd(&c, AT(l, GM_PT_MLP), AT(l, GM_PT_ACT), &mproj_w, w->mproj_b, N, I, D));
    STEP(l, GM_PT_RESID, gm_op_residual_fwd(&cs, AT(l, GM_PT_RESID), AT(l, GM_PT_RESID_ATTN), AT(l, GM_PT_MLP), (size_t)N * D));
    h = AT(l, GM_PT_RESID);
  }
  STEP(-1, GM_PT_LNF, ln_fwd(&c, &cs, AT(-1, GM_PT_LNF), gm_acts_mean(a, -1, GM_PT_LNF), gm_acts_rstd(a, -1, GM_PT_LNF), h,
                             m->lnf_w, m->lnf_b, N, D, eps));
  STEP(-1, GM_PT_LOGITS, lm_head(&c, wm, AT(-1, GM_PT_LNF), B, T, a->keep_rows, o->logits));
#undef STEP
#undef AT
  return 0;
}

int gm_gpt2_run(const gm_gpt2 *m, const gm_gpt2_run_opts *o) {
  if (!o->profile || !o->tokens || !o->logits) return gm_fail("gm_gpt2_run needs a profile, tokens and logits");
  gm_kv_cache own, *kv = o->kv;
  if (!kv) { // a fresh cache of length T
    if (o->T > m->cfg.n_positions) return gm_fail("sequence length %d exceeds n_positions %d", o->T, m->cfg.n_positions);
    if (kv_alloc(&own, m, o->B, o->T, 1)) return -1;
    kv = &own;
  }
  gm_acts local = {0}, *a = o->acts ? o->acts : &local;
  int rc = check_args(m, o, kv);
  if (!rc && o->kv && o->kv->n_layer != m->cfg.n_layer)
    rc = gm_fail("the KV cache holds %d layers, the model %d (gm_kv_init)", o->kv->n_layer, m->cfg.n_layer);
  if (!rc) {
    const int keep = o->logits_to_keep == 0 || o->logits_to_keep > o->T ? o->T : o->logits_to_keep;
    rc = gm_gpt2_acts_alloc(a, &m->cfg, o->B, o->T, kv->len + o->T, keep, o->acts != NULL, o->logits);
    if (!rc && !(rc = forward(m, o, kv, a))) kv->len += o->T;
    if (!o->acts) gm_acts_free(a);
  }
  if (kv == &own) gm_kv_free(&own);
  return rc;
}
