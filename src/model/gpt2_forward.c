// GPT-2 causal forward over a KV cache in f32, f16 or bf16, under a numerics profile.
//
// Storage: every activation buffer is f32 holding values of the profile's dtype (widened exactly);
// R(.) below is "round to the dtype" (the identity in f32). Each op computes in f32 (opmath) from
// dtype values and rounds once where eager PyTorch writes its result to a dtype tensor:
//   embed      h = R(wte[tok] + wpe[pos])
//   ln         R(layer_norm_f32(h))                 ATen's order; native on f16/bf16 steps by 16, fp32 by 8
//   linear     R(x @ W + b)                          f32 accumulation in torch's order, bias first (gm_gpt2_matmul)
//   scores     gm_gpt2_attention.c
//   residual   h = R(h + y)
//   mlp act    gpt2_act.c
// The bits do not depend on the thread count (every product is defined element by element).
#include "gptmeg/kernels.h"
#include "model/gpt2_internal.h"

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

const char *gm_point_name(gm_point pt) {
  static const char *names[GM_N_POINTS] = {"embed", "ln_1", "qkv",  "scores", "probs", "attn",   "attn_out", "resid_attn",
                                           "ln_2",  "fc",   "act",  "mlp",    "resid", "ln_f",   "logits"};
  return (unsigned)pt < GM_N_POINTS ? names[pt] : "?";
}

// Calls the probe (if any) on a 2-D [rows, cols] tensor.
int gm_gpt2_probe2(const gpt2_run *r, int layer, gm_point pt, float *data, int64_t rows, int64_t cols) {
  if (!r->probe) return 0;
  gm_probe_tensor t = {layer, pt, data, 2, {rows, cols, 0, 0}, (size_t)(rows * cols)};
  if (r->probe(r->probe_ctx, &t)) return gm_fail("%s (layer %d, %s)", gm_errmsg(), layer, gm_point_name(pt));
  return 0;
}

void gm_gpt2_matmul(gm_dtype dt, const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias,
                 float alpha, float *C, int ldc, int M, int N, int K, int threads) {
  if (dt == GM_F16) gm_matmul_f16_torch(A, lda, B, ldb, trans_b, bias, alpha, C, ldc, M, N, K, threads);
  else if (dt == GM_BF16) gm_matmul_bf16(A, lda, B, ldb, trans_b, bias, alpha, C, ldc, M, N, K, threads);
  else gm_matmul_f32_torch(A, lda, B, ldb, trans_b, bias, alpha, C, ldc, M, N, K, threads);
}

// h[n] = R(h + y)
static void residual_add(gm_dtype dt, float *h, const float *y, size_t n) {
  for (size_t i = 0; i < n; i++) h[i] = y[i] + h[i];
  gm_round_inplace(dt, h, n);
}

// out[N, cols] = R(x[N, K] @ W[K, cols] + b): one rounding, bias included. Wp: W as bf16 pairs
// (bf16 runs), used instead of W by the AVX512-BF16 kernel; Wh: W as f16 bits (f16 runs), read
// instead of W by the one-row kernel (decode). Same bits either way.
static void linear(const gpt2_run *r, const float *x, int K, const float *W, const uint32_t *Wp, const uint16_t *Wh,
                   const float *b, float *out, int cols) {
  if (r->dt == GM_BF16 && Wp) gm_matmul_bf16_packed(x, K, Wp, b, 1.0f, out, cols, r->N, cols, K, r->threads);
  else if (r->dt == GM_F16 && Wh && r->N == 1) gm_matmul_f16_torch_h(x, K, Wh, cols, false, b, 1.0f, out, cols, 1, cols, K, r->threads);
  else gm_gpt2_matmul(r->dt, x, K, W, cols, false, b, 1.0f, out, cols, r->N, cols, K, r->threads);
  gm_round_inplace(r->dt, out, (size_t)r->N * cols);
}

static void layer_norm(const gpt2_run *r, const float *h, const float *w, const float *b, float *out) {
  // the native rule on f16/bf16 rows runs ATen's reduced-type kernel; f32 rows (and `fp32`) its f32 one
  gm_ln_kernel kernel = GM_LN_KERNEL_F32;
  if (r->p->layer_norm == GM_LN_NATIVE && r->dt == GM_F16) kernel = GM_LN_KERNEL_F16;
  if (r->p->layer_norm == GM_LN_NATIVE && r->dt == GM_BF16) kernel = GM_LN_KERNEL_BF16;
  gm_layernorm_f32(h, w, b, out, r->N, r->m->cfg.n_embd, r->m->cfg.layer_norm_epsilon, kernel, r->threads);
  gm_round_inplace(r->dt, out, (size_t)r->N * r->m->cfg.n_embd);
}

static int check_args(const gm_gpt2 *m, const gm_profile *p, const gm_kv_cache *kv, const int32_t *tokens, int B, int T) {
  const gm_gpt2_config *c = &m->cfg;
  if (p->dtype != m->dtype)
    return gm_fail("profile '%s' runs in %s but the weights are %s (gm_gpt2_to_dtype converts them)", p->name,
                   gm_dtype_name(p->dtype), gm_dtype_name(m->dtype));
  if (B != kv->B) return gm_fail("batch %d does not match the KV cache's batch %d", B, kv->B);
  if (T <= 0) return gm_fail("no tokens to run (T = %d)", T);
  int len = kv->len + T;
  if (len > c->n_positions) return gm_fail("sequence length %d exceeds n_positions %d", len, c->n_positions);
  if (len > kv->max_t) return gm_fail("sequence length %d exceeds the KV cache length %d", len, kv->max_t);
  for (int i = 0; i < B * T; i++)
    if (tokens[i] < 0 || tokens[i] >= c->vocab_size)
      return gm_fail("token id %d at [%d, %d] is outside the vocabulary [0, %d)", tokens[i], i / T, i % T, c->vocab_size);
  return 0;
}

// logits [B, keep, V] = R(ln_f(h) @ lm_head^T) for the last `keep` rows of each sequence of xn [N, D].
// Every dtype's order is per element, so the kept rows equal the same rows of the all-logits
// forward; one row (decode) streams the weights through the one-row kernels.
static void lm_head(const gpt2_run *r, const float *xn, int keep, float *logits) {
  const gm_gpt2 *m = r->m;
  const int D = m->cfg.n_embd, V = m->cfg.vocab_size;
  const bool bf16p = r->dt == GM_BF16 && m->lm_head_p, f16h = r->dt == GM_F16 && m->lm_head_h;
  if (keep == r->T && !bf16p && !f16h) { // every row: one product over all sequences
    gm_gpt2_matmul(r->dt, xn, D, m->lm_head, D, true, NULL, 1.0f, logits, V, r->N, V, D, r->threads);
  } else {
    for (int b = 0; b < r->B; b++) {
      const float *x = xn + ((size_t)b * r->T + (r->T - keep)) * D;
      float *o = logits + (size_t)b * keep * V;
      if (bf16p) gm_matmul_bf16_packed(x, D, m->lm_head_p, NULL, 1.0f, o, V, keep, V, D, r->threads);
      else if (f16h) gm_matmul_f16_torch_h(x, D, m->lm_head_h, D, true, NULL, 1.0f, o, V, keep, V, D, r->threads);
      else gm_gpt2_matmul(r->dt, x, D, m->lm_head, D, true, NULL, 1.0f, o, V, keep, V, D, r->threads);
    }
  }
  gm_round_inplace(r->dt, logits, (size_t)r->B * keep * V);
}

int gm_gpt2_forward_probed(const gm_gpt2 *m, const gm_profile *p, gm_kv_cache *kv, const int32_t *tokens, int B,
                           int T, float *logits, int threads, gm_probe_fn probe, void *probe_ctx) {
  return gm_gpt2_forward_keep_probed(m, p, kv, tokens, B, T, 0, logits, threads, probe, probe_ctx);
}

int gm_gpt2_forward_keep(const gm_gpt2 *m, const gm_profile *p, gm_kv_cache *kv, const int32_t *tokens, int B, int T,
                         int logits_to_keep, float *logits, int threads) {
  return gm_gpt2_forward_keep_probed(m, p, kv, tokens, B, T, logits_to_keep, logits, threads, NULL, NULL);
}

int gm_gpt2_forward_keep_probed(const gm_gpt2 *m, const gm_profile *p, gm_kv_cache *kv, const int32_t *tokens, int B,
                                int T, int logits_to_keep, float *logits, int threads, gm_probe_fn probe,
                                void *probe_ctx) {
  if (check_args(m, p, kv, tokens, B, T)) return -1;
  if (logits_to_keep < 0) return gm_fail("logits_to_keep must be >= 0 (got %d; 0 keeps all)", logits_to_keep);
  const int keep = logits_to_keep == 0 || logits_to_keep > T ? T : logits_to_keep;
  const gm_gpt2_config *c = &m->cfg;
  const int D = c->n_embd, I = c->n_inner, L = c->n_layer, t0 = kv->len;
  gpt2_run r = {m, p, p->dtype, kv, B, T, B * T, t0, t0 + T, threads > 0 ? threads : omp_get_max_threads(), probe, probe_ctx};
  size_t nd = (size_t)r.N * D, ni = (size_t)r.N * I, ns = (size_t)B * c->n_head * T * r.len;
  float *h = malloc(nd * sizeof(float)), *xn = malloc(nd * sizeof(float)), *att = malloc(nd * sizeof(float));
  float *qkv = malloc(3 * nd * sizeof(float)), *fc = malloc(ni * sizeof(float)), *ac = malloc(ni * sizeof(float));
  float *scores = malloc(ns * sizeof(float));
  int rc = 0;
  if (!h || !xn || !att || !qkv || !fc || !ac || !scores) { rc = gm_fail("out of memory for activations (B=%d, T=%d)", B, T); goto done; }
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const float *e = m->wte + (size_t)tokens[b * T + t] * D, *pe = m->wpe + (size_t)(t0 + t) * D;
      float *o = h + ((size_t)b * T + t) * D;
      for (int i = 0; i < D; i++) o[i] = e[i] + pe[i];
    }
  gm_round_inplace(r.dt, h, nd);
  if ((rc = gm_gpt2_probe2(&r, -1, GM_PT_EMBED, h, r.N, D))) goto done;
  for (int l = 0; l < L; l++) {
    const gm_gpt2_layer *y = &m->layers[l];
    layer_norm(&r, h, y->ln1_w, y->ln1_b, xn);
    if ((rc = gm_gpt2_probe2(&r, l, GM_PT_LN1, xn, r.N, D))) goto done;
    linear(&r, xn, D, y->attn_w, y->attn_wp, y->attn_wh, y->attn_b, qkv, 3 * D);
    if ((rc = gm_gpt2_probe2(&r, l, GM_PT_QKV, qkv, r.N, 3 * D))) goto done;
    if ((rc = gm_gpt2_attention(&r, l, qkv, scores, att))) goto done;
    linear(&r, att, D, y->aproj_w, y->aproj_wp, y->aproj_wh, y->aproj_b, xn, D);
    if ((rc = gm_gpt2_probe2(&r, l, GM_PT_ATTN_OUT, xn, r.N, D))) goto done;
    residual_add(r.dt, h, xn, nd);
    if ((rc = gm_gpt2_probe2(&r, l, GM_PT_RESID_ATTN, h, r.N, D))) goto done;
    layer_norm(&r, h, y->ln2_w, y->ln2_b, xn);
    if ((rc = gm_gpt2_probe2(&r, l, GM_PT_LN2, xn, r.N, D))) goto done;
    linear(&r, xn, D, y->fc_w, y->fc_wp, y->fc_wh, p->act_bias_fused ? NULL : y->fc_b, fc, I);
    if ((rc = gm_gpt2_probe2(&r, l, GM_PT_FC, fc, r.N, I))) goto done;
    if ((rc = gm_gpt2_mlp_act(&r, fc, p->act_bias_fused ? y->fc_b : NULL, ac))) goto done;
    if ((rc = gm_gpt2_probe2(&r, l, GM_PT_ACT, ac, r.N, I))) goto done;
    linear(&r, ac, I, y->mproj_w, y->mproj_wp, y->mproj_wh, y->mproj_b, xn, D);
    if ((rc = gm_gpt2_probe2(&r, l, GM_PT_MLP, xn, r.N, D))) goto done;
    residual_add(r.dt, h, xn, nd);
    if ((rc = gm_gpt2_probe2(&r, l, GM_PT_RESID, h, r.N, D))) goto done;
  }
  layer_norm(&r, h, m->lnf_w, m->lnf_b, xn);
  if ((rc = gm_gpt2_probe2(&r, -1, GM_PT_LNF, xn, r.N, D))) goto done;
  lm_head(&r, xn, keep, logits);
  if ((rc = gm_gpt2_probe2(&r, -1, GM_PT_LOGITS, logits, (int64_t)B * keep, c->vocab_size))) goto done;
  kv->len = r.len;
done:
  free(h); free(xn); free(att); free(qkv); free(fc); free(ac); free(scores);
  return rc;
}

int gm_gpt2_forward_cached(const gm_gpt2 *m, const gm_profile *p, gm_kv_cache *kv, const int32_t *tokens, int B,
                           int T, float *logits, int threads) {
  return gm_gpt2_forward_probed(m, p, kv, tokens, B, T, logits, threads, NULL, NULL);
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
