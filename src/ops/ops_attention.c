// Causal self-attention of one layer: scores, mask, softmax, probs @ v.
// Numerics contract (layer l, 0-based; s = 1/sqrt(hd) if scale_attn_weights, / (l+1) if
// scale_by_inverse_layer; R = round to the dtype):
//   matmul-div  S = R(q@k^T); S = R(S / R(sqrt(hd))); S = R(S / (l+1))   (transformers' eager path)
//   baddbmm     S = R(alpha * q@k^T), alpha = f32(s / c), c = l+1 with qk-layer-scaling else 1
//   upcast      S = q@(f32(s)*k)^T in f32 (FMA per l), no rounding (reorder_and_upcast_attn, hf)
// Softmax input X: S, or with qk-layer-scaling S * c (in f32 when softmax is fp32, else rounded).
// Masked keys (j > query position) take the mask value; P = R(softmax_f32(X)); out = R(P @ v).
// q@k^T and P@v accumulate in f32 in torch's order for the dtype (gm_op_matmul). Work is split by
// (batch, head) and every product is defined element by element: any thread count, the same bits.
#include "gptmeg/kernels.h"
#include "ops/ops_internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

typedef struct {
  bool upcast;          // transformers' _upcast_and_reordered_attn
  float alpha;          // scale inside the gemm
  float div1, div2;     // matmul-div divisors (0: none)
  float coeff;          // qk-layer-scaling multiplier before softmax (0: none)
  bool x_f32;           // softmax input kept in f32 (not rounded after the coeff multiply)
  float mask;           // masked score value
} score_rule;

// One (batch, head)'s view: T query rows after t0 cached positions, len keys.
typedef struct {
  const gm_op_ctx *c;
  int T, t0, len;
} head_view;

static float finfo_min(gm_dtype dt) {
  if (dt == GM_F16) return -65504.0f;
  if (dt == GM_BF16) return gm_bf16_to_f32(0xff7f);
  return -FLT_MAX;
}

static score_rule rule_of(const gm_op_ctx *c, const gm_op_attn *a) {
  const gm_profile *p = c->profile;
  const int hd = a->C / a->NH, l = a->layer;
  score_rule s = {false, 1.0f, 0.0f, 0.0f, 0.0f, false, 0.0f};
  double scale = 1.0;
  if (a->scale_attn_weights) scale /= sqrt((double)hd);
  if (a->scale_by_inverse_layer) scale /= (double)(l + 1);
  s.upcast = p->honor_upcast_option && a->reorder_and_upcast;
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
    if (a->scale_attn_weights) { // torch.full([], hd ** 0.5, dtype): the divisor itself is in the dtype
      unsigned char one[4];      // one element of the dtype, rounded once from the double
      gm_store_f64(c->dtype, one, 0, sqrt((double)hd));
      s.div1 = (float)gm_load_f64(c->dtype, one, 0);
    }
    if (a->scale_by_inverse_layer) s.div2 = (float)(l + 1);
  }
  if (p->qk_layer_scaling) s.coeff = (float)coeff;
  s.x_f32 = p->softmax == GM_SOFTMAX_F32;
  switch (p->mask) {
  case GM_MASK_FINFO: s.mask = s.x_f32 ? -FLT_MAX : finfo_min(c->dtype); break;
  case GM_MASK_NEG_1E4: s.mask = s.x_f32 ? -1e4f : gm_round_f32(c->dtype, -1e4f); break;
  case GM_MASK_NEG_INF: s.mask = -INFINITY; break;
  }
  return s;
}

// Rounds n values to the dtype unless keep_f32.
static void round_unless(const gm_op_ctx *c, bool keep_f32, float *x, int n) {
  if (!keep_f32) gm_op_round(c, x, (size_t)n);
}

// X[T, len] = q @ (alpha * k)^T in f32 as torch's f32 baddbmm computes it here: k scaled by alpha
// first (rounded), then one FMA per l in order (transformers' upcast path; q, k hold f16 values).
static void upcast_scores(const head_view *h, float alpha, const float *q, int ldq, const float *k, int hd, float *X) {
  for (int i = 0; i < h->T; i++)
    for (int j = 0; j < h->len; j++) {
      float acc = 0.0f;
      for (int l = 0; l < hd; l++) acc = fmaf(q[(size_t)i * ldq + l], alpha * k[(size_t)j * hd + l], acc);
      X[(size_t)i * h->len + j] = acc;
    }
}

// X[i, j] = alpha * q_i . k_j (f32 accumulation, gm_op_matmul) for at least the keys row i sees
// (j <= t0 + i), in blocks of 64 query rows, each computing keys [0, t0 + its last row]: about half
// the products of the full [T, len] square for a prefill. Entries past a block's keys are left as
// they were. Every dtype's product is defined element by element, so any block gives the bits of
// the full square. One thread: the caller runs heads in parallel.
static void causal_scores(const head_view *h, float alpha, const float *q, int ldq, const float *k, int hd, float *X) {
  const int T = h->T, len = h->len, t0 = h->t0, rb = 64;
  gm_op_ctx one = *h->c;
  one.threads = 1;
  for (int i0 = 0; i0 < T; i0 += rb) {
    int i1 = T - i0 < rb ? T : i0 + rb;
    gm_op_matmul(&one, q + (size_t)i0 * ldq, ldq, k, hd, true, NULL, alpha, X + (size_t)i0 * len, len, i1 - i0, t0 + i1, hd);
  }
}

// Softmax input X [T, len] of one (batch, head): masked entries (j > t0 + i) set to 0.
static void head_scores(const head_view *h, const score_rule *s, const float *q, int ldq, const float *k, int hd,
                        float *X) {
  const gm_op_ctx *c = h->c;
  const int T = h->T, len = h->len;
  if (s->upcast && c->dtype != GM_F32) upcast_scores(h, s->alpha, q, ldq, k, hd, X);
  else causal_scores(h, s->alpha, q, ldq, k, hd, X);
  for (int i = 0; i < T; i++) {
    float *x = X + (size_t)i * len;
    int vis = h->t0 + i + 1;
    round_unless(c, s->upcast, x, vis);
    if (s->div1 != 0.0f) {
      gm_div_row_f32(x, vis, s->div1);
      round_unless(c, false, x, vis);
    }
    if (s->div2 != 0.0f) {
      gm_div_row_f32(x, vis, s->div2);
      round_unless(c, false, x, vis);
    }
    if (s->coeff != 0.0f) {
      for (int j = 0; j < vis; j++) x[j] = x[j] * s->coeff;
      round_unless(c, s->x_f32, x, vis);
    }
    if (vis < len) memset(x + vis, 0, (size_t)(len - vis) * sizeof(float));
  }
}

// P = R(softmax(X)) row by row in place, masked entries stay 0.
static void head_softmax(const head_view *h, const score_rule *s, float *X) {
  for (int i = 0; i < h->T; i++) {
    float *x = X + (size_t)i * h->len;
    int vis = h->t0 + i + 1;
    gm_softmax_row_f32(x, vis, h->len - vis, s->mask, h->c->dtype != GM_F32 && !s->x_f32);
    gm_op_round(h->c, x, (size_t)vis);
  }
}

int gm_op_attention_fwd(const gm_op_ctx *c, const gm_op_attn *a, float *out, float *scores, float *probs,
                        const float *qkv) {
  const int D = a->C, H = a->NH, hd = D / H, B = a->B, T = a->T, len = a->t0 + a->T, l = a->layer;
  const size_t N = (size_t)B * T, per_head = (size_t)T * len;
  float *kl = a->k_cache, *vl = a->v_cache;
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      for (int hh = 0; hh < H; hh++) {
        const float *row = qkv + ((size_t)b * T + t) * 3 * D;
        size_t at = (((size_t)b * H + hh) * a->max_t + a->t0 + t) * hd;
        memcpy(kl + at, row + D + hh * hd, (size_t)hd * sizeof(float));
        memcpy(vl + at, row + 2 * D + hh * hd, (size_t)hd * sizeof(float));
      }
  const score_rule s = rule_of(c, a);
  const head_view hv = {c, T, a->t0, len};
#pragma omp parallel for schedule(dynamic, 1) num_threads(c->threads)
  for (int bh = 0; bh < B * H; bh++) {
    int b = bh / H, hh = bh % H;
    head_scores(&hv, &s, qkv + (size_t)b * T * 3 * D + hh * hd, 3 * D, kl + (size_t)bh * a->max_t * hd, hd,
                scores + bh * per_head);
  }
  const int64_t shape[4] = {B, H, T, len};
  if (gm_op_probe(c, l, GM_PT_SCORES, scores, 4, shape)) return -1;
  if (probs != scores) memcpy(probs, scores, (size_t)B * H * per_head * sizeof(float));
#pragma omp parallel for schedule(dynamic, 1) num_threads(c->threads)
  for (int bh = 0; bh < B * H; bh++) head_softmax(&hv, &s, probs + bh * per_head);
  if (gm_op_probe(c, l, GM_PT_PROBS, probs, 4, shape)) return -1;
  gm_op_ctx one = *c;
  one.threads = 1;
#pragma omp parallel for schedule(dynamic, 1) num_threads(c->threads)
  for (int bh = 0; bh < B * H; bh++) {
    int b = bh / H, hh = bh % H;
    gm_op_matmul(&one, probs + bh * per_head, len, vl + (size_t)bh * a->max_t * hd, hd, false, NULL, 1.0f,
                 out + (size_t)b * T * D + hh * hd, D, T, hd, len);
  }
  gm_op_round(c, out, N * D);
  return 0;
}

int gm_op_attention_bwd(const gm_op_ctx *c, const gm_op_attn *a, float *dqkv, float *dscores, const float *dout,
                        const float *qkv, const float *probs) {
  (void)c, (void)a, (void)dqkv, (void)dscores, (void)dout, (void)qkv, (void)probs;
  return gm_op_not_yet("attention");
}
