// Causal self-attention of one layer under a numerics profile (contract in gpt2_internal.h).
//
// Scores rule (layer l, 0-based; s = 1/sqrt(hd) if scale_attn_weights, / (l+1) if
// scale_attn_by_inverse_layer_idx; R = round to the run's dtype):
//   matmul-div  S = R(q@k^T); S = R(S / R(sqrt(hd))); S = R(S / (l+1))   (transformers' eager path)
//   baddbmm     S = R(alpha * q@k^T), alpha = f32(s / c), c = l+1 with qk-layer-scaling else 1
//   upcast      S = q@(f32(s)*k)^T in f32 (FMA per l), no rounding (config.reorder_and_upcast_attn, hf)
// Softmax input X: S, or with qk-layer-scaling S * c (in f32 when softmax is fp32, else rounded).
// Masked keys (j > query position) take the mask value; P = R(softmax_f32(X)); out = R(P @ v).
// q@k^T and P@v accumulate in f32 (gm_gpt2_matmul: torch's order in every dtype).
#include "gptmeg/kernels.h"
#include "model/gpt2_internal.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <string.h>

typedef struct {
  bool upcast;          // transformers' _upcast_and_reordered_attn
  float alpha;          // scale inside the gemm
  float div1, div2;     // matmul-div divisors (0: none)
  float coeff;          // qk-layer-scaling multiplier before softmax (0: none)
  bool x_f32;           // softmax input kept in f32 (not rounded after the coeff multiply)
  float mask;           // masked score value
} score_rule;

static float finfo_min(gm_dtype dt) {
  if (dt == GM_F16) return -65504.0f;
  if (dt == GM_BF16) return gm_bf16_to_f32(0xff7f);
  return -FLT_MAX;
}

static score_rule rule_of(const gpt2_run *r, int l) {
  const gm_profile *p = r->p;
  const gm_gpt2_config *c = &r->m->cfg;
  int hd = c->n_embd / c->n_head;
  score_rule s = {false, 1.0f, 0.0f, 0.0f, 0.0f, false, 0.0f};
  double scale = 1.0;
  if (c->scale_attn_weights) scale /= sqrt((double)hd);
  if (c->scale_attn_by_inverse_layer_idx) scale /= (double)(l + 1);
  s.upcast = p->honor_upcast_option && c->reorder_and_upcast_attn;
  if (s.upcast) {
    s.alpha = (float)scale;
    s.x_f32 = true;
    s.mask = -FLT_MAX;
    return s;
  }
  double coeff = p->qk_layer_scaling ? (double)(l + 1) : 1.0;
  if (p->scores == GM_SCORES_BADDBMM) {
    s.alpha = (float)(scale / coeff);
  } else {
    if (c->scale_attn_weights) { // torch.full([], hd ** 0.5, dtype): the divisor itself is in the dtype
      unsigned char one[4];      // one element of the dtype, rounded once from the double
      gm_store_f64(r->dt, one, 0, sqrt((double)hd));
      s.div1 = (float)gm_load_f64(r->dt, one, 0);
    }
    if (c->scale_attn_by_inverse_layer_idx) s.div2 = (float)(l + 1);
  }
  if (p->qk_layer_scaling) s.coeff = (float)coeff;
  s.x_f32 = p->softmax == GM_SOFTMAX_F32;
  switch (p->mask) {
  case GM_MASK_FINFO: s.mask = s.x_f32 ? -FLT_MAX : finfo_min(r->dt); break;
  case GM_MASK_NEG_1E4: s.mask = s.x_f32 ? -1e4f : gm_round_f32(r->dt, -1e4f); break;
  case GM_MASK_NEG_INF: s.mask = -INFINITY; break;
  }
  return s;
}

// Rounds n values to dt unless keep_f32.
static void round_unless(gm_dtype dt, bool keep_f32, float *x, int n) {
  if (!keep_f32) gm_round_inplace(dt, x, (size_t)n);
}

// X[T, len] = q @ (alpha * k)^T in f32 as torch's f32 baddbmm computes it here: k scaled by alpha
// first (rounded), then one FMA per l in order (transformers' upcast path; q, k hold f16 values).
static void upcast_scores(const gpt2_run *r, float alpha, const float *q, int ldq, const float *k, int hd, float *X) {
  for (int i = 0; i < r->T; i++)
    for (int j = 0; j < r->len; j++) {
      float acc = 0.0f;
      for (int l = 0; l < hd; l++) acc = fmaf(q[(size_t)i * ldq + l], alpha * k[(size_t)j * hd + l], acc);
      X[(size_t)i * r->len + j] = acc;
    }
}

// X[i, j] = alpha * q_i . k_j (f32 accumulation, gm_gpt2_matmul) for at least the keys row i sees
// (j <= t0 + i), in blocks of 64 query rows, each computing keys [0, t0 + its last row]: about half
// the products of the full [T, len] square for a prefill. X [T, len]; entries past a block's keys
// are left as they were. Every dtype's product is defined element by element, so any block gives
// the bits of the full square.
static void causal_scores(const gpt2_run *r, float alpha, const float *q, int ldq, const float *k, int hd, float *X) {
  const int T = r->T, len = r->len, t0 = r->t0, rb = 64;
  for (int i0 = 0; i0 < T; i0 += rb) {
    int i1 = T - i0 < rb ? T : i0 + rb;
    gm_gpt2_matmul(r->dt, q + (size_t)i0 * ldq, ldq, k, hd, true, NULL, alpha, X + (size_t)i0 * len, len, i1 - i0, t0 + i1,
                hd, 1);
  }
}

// Softmax input X [T, len] of one (batch, head): masked entries (j > t0 + i) set to 0.
static void head_scores(const gpt2_run *r, const score_rule *s, const float *q, int ldq, const float *k, int hd, float *X) {
  const int T = r->T, len = r->len;
  if (s->upcast && r->dt != GM_F32) upcast_scores(r, s->alpha, q, ldq, k, hd, X);
  else causal_scores(r, s->alpha, q, ldq, k, hd, X);
  for (int i = 0; i < T; i++) {
    float *x = X + (size_t)i * len;
    int vis = r->t0 + i + 1;
    round_unless(r->dt, s->upcast, x, vis);
    if (s->div1 != 0.0f) {
      gm_div_row_f32(x, vis, s->div1);
      round_unless(r->dt, false, x, vis);
    }
    if (s->div2 != 0.0f) {
      gm_div_row_f32(x, vis, s->div2);
      round_unless(r->dt, false, x, vis);
    }
    if (s->coeff != 0.0f) {
      for (int j = 0; j < vis; j++) x[j] = x[j] * s->coeff;
      round_unless(r->dt, s->x_f32, x, vis);
    }
    if (vis < len) memset(x + vis, 0, (size_t)(len - vis) * sizeof(float));
  }
}

// P = R(softmax(X)) row by row in place, masked entries stay 0.
static void head_softmax(const gpt2_run *r, const score_rule *s, float *X) {
  for (int i = 0; i < r->T; i++) {
    float *x = X + (size_t)i * r->len;
    int vis = r->t0 + i + 1;
    gm_softmax_row_f32(x, vis, r->len - vis, s->mask, r->dt != GM_F32 && !s->x_f32);
    gm_round_inplace(r->dt, x, (size_t)vis);
  }
}

int gm_gpt2_attention(const gpt2_run *r, int l, const float *qkv, float *scores, float *att) {
  const gm_gpt2_config *c = &r->m->cfg;
  const int D = c->n_embd, H = c->n_head, hd = D / H, B = r->B, T = r->T, len = r->len;
  gm_kv_cache *kv = r->kv;
  float *kl = kv->k + (size_t)l * B * H * kv->max_t * hd, *vl = kv->v + (size_t)l * B * H * kv->max_t * hd;
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      for (int hh = 0; hh < H; hh++) {
        const float *row = qkv + ((size_t)b * T + t) * 3 * D;
        size_t at = (((size_t)b * H + hh) * kv->max_t + r->t0 + t) * hd;
        memcpy(kl + at, row + D + hh * hd, (size_t)hd * sizeof(float));
        memcpy(vl + at, row + 2 * D + hh * hd, (size_t)hd * sizeof(float));
      }
  score_rule s = rule_of(r, l);
  const size_t per_head = (size_t)T * len;
#pragma omp parallel for schedule(dynamic, 1) num_threads(r->threads)
  for (int bh = 0; bh < B * H; bh++) {
    int b = bh / H, hh = bh % H;
    head_scores(r, &s, qkv + (size_t)b * T * 3 * D + hh * hd, 3 * D, kl + (size_t)bh * kv->max_t * hd, hd,
                scores + bh * per_head);
  }
  gm_probe_tensor pt = {l, GM_PT_SCORES, scores, 4, {B, H, T, len}, (size_t)B * H * per_head};
  if (r->probe && r->probe(r->probe_ctx, &pt)) return gm_fail("%s (layer %d, scores)", gm_errmsg(), l);
#pragma omp parallel for schedule(dynamic, 1) num_threads(r->threads)
  for (int bh = 0; bh < B * H; bh++) head_softmax(r, &s, scores + bh * per_head);
  pt.point = GM_PT_PROBS;
  if (r->probe && r->probe(r->probe_ctx, &pt)) return gm_fail("%s (layer %d, probs)", gm_errmsg(), l);
#pragma omp parallel for schedule(dynamic, 1) num_threads(r->threads)
  for (int bh = 0; bh < B * H; bh++) {
    int b = bh / H, hh = bh % H;
    gm_gpt2_matmul(r->dt, scores + bh * per_head, len, vl + (size_t)bh * kv->max_t * hd, hd, false, NULL, 1.0f,
                att + (size_t)b * T * D + hh * hd, D, T, hd, len, 1);
  }
  gm_round_inplace(r->dt, att, (size_t)r->N * D);
  return gm_gpt2_probe2(r, l, GM_PT_ATTN, att, r->N, D);
}
