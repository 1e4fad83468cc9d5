// GPT-2 loss and gradients: the forward (gm_gpt2_run, activations kept), transformers' causal-LM
// loss, then the ops' backwards in reverse (include/gptmeg/ops.h), as autograd runs
// `model(tokens, labels=labels).loss.backward()`.
//
// Numerics contract: every gradient is the backward op's (each writes its result in the dtype,
// rounded where eager torch's backward writes a dtype tensor); where autograd adds two gradients
// of one tensor (the residual stream's input to each block, ln_2's input, wte shared by the
// embedding and the tied lm_head) they are added once in f32 and rounded to the dtype
// (gm_op_residual_bwd; for wte gm_op_embedding_bwd_tied, which needs no (V, D) scratch): two
// operands, so the order of arrival does not matter. The loss is f32.
// The bits depend on the thread count only where an op's do (ops.h: where torch's do).
//
// Order, with h_l the residual stream entering block l (h_0 = embed) and per layer:
//   dlogits = lmloss_bwd;  dlnf, dlm_head = linear_bwd(lm_head);  dh_L = ln_f_bwd(dlnf)
//   block l, L-1 .. 0:  (resid = resid_attn + mlp)
//     dact, dmproj = linear_bwd(c_proj, dh);  dfc = act_bwd(dact);  dln2, dfc_w = linear_bwd(c_fc, dfc)
//     dra = dh + ln_2_bwd(dln2)                         (resid_attn = h_l + attn_out)
//     dattn, daproj = linear_bwd(attn.c_proj, dra);  dqkv = attention_bwd(dattn)
//     dln1, dattn_w = linear_bwd(c_attn, dqkv);  dh_l = dra + ln_1_bwd(dln1)
//   dwte, dwpe = embedding_bwd(dh_0);  tied: dwte += dlm_head
// Autocast (gm_gpt2_grad_opts.autocast): the forward's two contexts (gpt2_forward.c); the stream's
// gradients dh, dra and the layer norms' are f32 (ctx cs), the rest bf16 (ctx c). Where a bf16
// tensor met the f32 stream, autograd casts the gradient to the input's dtype: dh (dra) is rounded
// to bf16 before c_proj's (attn.c_proj's) backward; the linears' input gradients (of the layer
// norms' bf16-cast outputs) and their weight/bias gradients are bf16 values, widened exactly (the
// casts' backward) into the f32 layer norm backward and into g; lm_head's weight gradient goes to
// g->wte (tied) and the embedding's f32 one is added to it in f32, as AccumulateGrad adds them.
#include "model/gpt2_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int check(const gm_gpt2 *m, const gm_gpt2_grad_opts *o, const gm_gpt2 *g) {
  if (!o->profile || !o->tokens) return gm_fail("gm_gpt2_grad needs a profile and tokens");
  if (o->autocast && gm_gpt2_autocast_check(m, o->autocast, o->profile)) return -1;
  if (o->B <= 0 || o->T <= 0) return gm_fail("a training batch needs B > 0 and T > 0 (got %d, %d)", o->B, o->T);
  if (o->T > m->cfg.n_positions) return gm_fail("sequence length %d exceeds n_positions %d", o->T, m->cfg.n_positions);
  if (!g->storage || g->n_params != m->n_params || g->tied != m->tied || g->cfg.n_layer != m->cfg.n_layer)
    return gm_fail("the gradient buffers do not have the model's layout (gm_gpt2_alloc_like)");
  return 0;
}

typedef struct { // the backward's working gradients of activations
  float *logits;                  // [N, V]: the logits, then log_softmax, then their gradient (in place)
  float *dh, *dra, *dx, *dtmp;    // [N, D]: the stream's gradient, resid_attn's, a layer norm's input, scratch
  float *dwide, *dwide2;          // [N, 3D] or [N, I], whichever is larger
  float *dscores;                 // [B, H, T, T]
  bool in_logits;                 // dra, dtmp, dwide, dwide2 and dscores are to be carved from logits
  size_t nd, nw, ns, n_logits;    // floats of an [N, D], an [N, wide], the [B, H, T, T] and the logits buffer
} scratch;

static void scratch_free(scratch *s) {
  float *all[] = {s->dh, s->dx, s->dra, s->dtmp, s->dwide, s->dwide2, s->dscores};
  const size_t n = s->in_logits ? 2 : sizeof all / sizeof *all; // the carved ones are the logits buffer's
  for (size_t i = 0; i < n; i++) free(all[i]);
  memset(s, 0, sizeof *s);
}

static size_t round16(size_t n) { return (n + 15) / 16 * 16; } // whole cache lines

// logits: the workspace's [N, V] buffer (not owned). dh and dx are allocated here; the other
// buffers too, unless they fit in the logits buffer: its values are dead once the lm_head's
// backward has read them, so the layers' backward works in memory the step has already touched
// (at GPT-2 124M, B 8, T 512: about 240 MB a step that was mapped and zeroed afresh).
static int scratch_alloc(scratch *s, const gm_gpt2_config *c, int B, int T, float *logits) {
  memset(s, 0, sizeof *s);
  const size_t N = (size_t)B * T, D = (size_t)c->n_embd, I = (size_t)c->n_inner;
  const size_t wide = 3 * D > I ? 3 * D : I;
  s->logits = logits;
  s->nd = N * D;
  s->nw = N * wide;
  s->ns = (size_t)B * c->n_head * T * T;
  s->n_logits = N * (size_t)c->vocab_size;
  s->in_logits = 2 * round16(s->nd) + 2 * round16(s->nw) + round16(s->ns) <= s->n_logits;
  s->dh = malloc(s->nd * sizeof(float));
  s->dx = malloc(s->nd * sizeof(float));
  if (!s->in_logits) {
    s->dra = malloc(s->nd * sizeof(float));
    s->dtmp = malloc(s->nd * sizeof(float));
    s->dwide = malloc(s->nw * sizeof(float));
    s->dwide2 = malloc(s->nw * sizeof(float));
    s->dscores = malloc(s->ns * sizeof(float));
  }
  if (!s->dh || !s->dx || (!s->in_logits && (!s->dra || !s->dtmp || !s->dwide || !s->dwide2 || !s->dscores))) {
    scratch_free(s);
    return gm_fail("out of memory for the backward's buffers (B=%d, T=%d)", B, T);
  }
  return 0;
}

// After the lm_head's backward: the buffers that live in the logits buffer; what is left of it is
// lent to the ops as scratch (c->ws) for the rest of the backward.
static void scratch_carve(scratch *s, gm_op_ctx *c, gm_op_ctx *cs) {
  if (!s->in_logits) return;
  float *p = s->logits;
  s->dra = p;
  s->dtmp = p += round16(s->nd);
  s->dwide = p += round16(s->nd);
  s->dwide2 = p += round16(s->nw);
  s->dscores = p += round16(s->nw);
  const size_t used = (size_t)(p - s->logits) + round16(s->ns);
  c->ws = cs->ws = s->logits + used;
  c->ws_bytes = cs->ws_bytes = (s->n_logits - used) * sizeof(float);
}

// One block's backward: dh holds the gradient of the block's output on entry, of its input on exit.
// The gradient of the f32 stream arriving at a bf16 tensor under autocast: R(src) into tmp (the cast
// autograd applies); without autocast src itself.
static const float *to_lo(const gm_op_ctx *c, const gm_op_ctx *cs, float *tmp, const float *src, size_t n) {
  if (cs->dtype == c->dtype) return src;
  memcpy(tmp, src, n * sizeof(float));
  gm_op_round(c, tmp, n);
  return tmp;
}

// wm: the linears' weights (the bf16 working copy under autocast, else m); m: the layer norms'.
static int block_bwd(const gm_op_ctx *c, const gm_op_ctx *cs, const gm_gpt2 *m, const gm_gpt2 *wm, const gm_acts *a, int l,
                     const float *h_in, gm_gpt2_layer *gl, scratch *s, int B, int T) {
  const gm_gpt2_config *cf = &m->cfg;
  const gm_gpt2_layer *w = &wm->layers[l], *wn = &m->layers[l];
  const int N = B * T, D = cf->n_embd, I = cf->n_inner;
  const bool fused = c->profile->act_bias_fused;
  const gm_op_weight attn_w = {w->attn_w, false, w->attn_wp, w->attn_wh}, aproj_w = {w->aproj_w, false, w->aproj_wp, w->aproj_wh},
                     fc_w = {w->fc_w, false, w->fc_wp, w->fc_wh}, mproj_w = {w->mproj_w, false, w->mproj_wp, w->mproj_wh};
  const gm_op_attn at = {B, T, 0, D, cf->n_head, l, cf->scale_attn_weights, cf->scale_attn_by_inverse_layer_idx,
                         cf->reorder_and_upcast_attn, NULL, NULL, T};
#define AT(pt) gm_acts_at(a, l, pt)
  float *dact = s->dwide, *dfc = s->dwide2;
  const float *dh_lo = to_lo(c, cs, s->dtmp, s->dh, (size_t)N * D); // dtmp is free until ln_2's backward
  if (gm_op_linear_bwd(c, dact, gl->mproj_w, gl->mproj_b, dh_lo, AT(GM_PT_ACT), &mproj_w, N, I, D)) return -1;
  if (gm_op_act_bwd(c, cf->act, dfc, fused ? gl->fc_b : NULL, dact, AT(GM_PT_FC), fused ? w->fc_b : NULL, N, I)) return -1;
  if (gm_op_linear_bwd(c, s->dx, gl->fc_w, fused ? NULL : gl->fc_b, dfc, AT(GM_PT_LN2), &fc_w, N, D, I)) return -1;
  if (gm_op_layernorm_bwd(cs, s->dtmp, gl->ln2_w, gl->ln2_b, s->dx, AT(GM_PT_RESID_ATTN), wn->ln2_w,
                          gm_acts_mean(a, l, GM_PT_LN2), gm_acts_rstd(a, l, GM_PT_LN2), N, D))
    return -1;
  memcpy(s->dra, s->dh, (size_t)N * D * sizeof(float)); // resid = resid_attn + mlp: the stream's gradient first
  if (gm_op_residual_bwd(cs, s->dra, s->dtmp, (size_t)N * D)) return -1;
  const float *dra_lo = to_lo(c, cs, s->dtmp, s->dra, (size_t)N * D);
  if (gm_op_linear_bwd(c, s->dx, gl->aproj_w, gl->aproj_b, dra_lo, AT(GM_PT_ATTN), &aproj_w, N, D, D)) return -1;
  float *dqkv = s->dwide;
  if (gm_op_attention_bwd(c, &at, dqkv, s->dscores, s->dx, AT(GM_PT_QKV), AT(GM_PT_PROBS), AT(GM_PT_SCORES))) return -1;
  if (gm_op_linear_bwd(c, s->dx, gl->attn_w, gl->attn_b, dqkv, AT(GM_PT_LN1), &attn_w, N, D, 3 * D)) return -1;
  if (gm_op_layernorm_bwd(cs, s->dtmp, gl->ln1_w, gl->ln1_b, s->dx, h_in, wn->ln1_w, gm_acts_mean(a, l, GM_PT_LN1),
                          gm_acts_rstd(a, l, GM_PT_LN1), N, D))
    return -1;
  memcpy(s->dh, s->dra, (size_t)N * D * sizeof(float)); // resid_attn = h_in + attn_out
  return gm_op_residual_bwd(cs, s->dh, s->dtmp, (size_t)N * D);
#undef AT
}

static int backward(const gm_gpt2 *m, const gm_gpt2_grad_opts *o, gm_gpt2 *g, float *loss, int64_t *n_scored, gm_acts *a,
                    scratch *s) {
  const gm_gpt2_config *cf = &m->cfg;
  const int B = o->B, T = o->T, N = B * T, D = cf->n_embd, V = cf->vocab_size, L = cf->n_layer;
  gm_gpt2_run_opts ro = {0};
  ro.profile = o->profile;
  ro.tokens = o->tokens;
  ro.B = B;
  ro.T = T;
  ro.logits = s->logits;
  ro.threads = o->threads;
  ro.acts = a;
  ro.autocast = o->autocast;
  if (gm_gpt2_run(m, &ro)) return -1;
  const gm_gpt2 *wm = o->autocast ? o->autocast : m; // the linears' weights
  gm_profile lo, hi;
  gm_op_ctx c, cs; // as the forward's: c the linears, attention, activation, loss; cs the f32 stream
  if (o->autocast) {
    gm_gpt2_autocast_profiles(o->profile, &lo, &hi);
    gm_op_ctx_init(&c, &lo, o->threads, NULL, NULL);
    gm_op_ctx_init(&cs, &hi, o->threads, NULL, NULL);
  } else {
    gm_op_ctx_init(&c, o->profile, o->threads, NULL, NULL);
    cs = c;
  }
  const int32_t *labels = o->labels ? o->labels : o->tokens;
  float *logits = s->logits; // in place: log_softmax over the logits, then its gradient over that
  if (gm_op_lmloss_fwd(&c, loss, n_scored, logits, logits, labels, B, T, V)) return -1;
  if (gm_op_lmloss_bwd(&c, logits, o->dloss != 0.0f ? o->dloss : 1.0f, logits, NULL, labels, B, T, V)) return -1;
  const gm_op_weight lm = {wm->lm_head, true, wm->lm_head_p, wm->lm_head_h};
  if (gm_op_linear_bwd(&c, s->dx, g->lm_head, NULL, logits, gm_acts_at(a, -1, GM_PT_LNF), &lm, N, D, V)) return -1;
  scratch_carve(s, &c, &cs); // the logits are dead from here on
  const float *h_last = L > 0 ? gm_acts_at(a, L - 1, GM_PT_RESID) : gm_acts_at(a, -1, GM_PT_EMBED);
  if (gm_op_layernorm_bwd(&cs, s->dh, g->lnf_w, g->lnf_b, s->dx, h_last, m->lnf_w, gm_acts_mean(a, -1, GM_PT_LNF),
                          gm_acts_rstd(a, -1, GM_PT_LNF), N, D))
    return -1;
  for (int l = L - 1; l >= 0; l--) {
    const float *h_in = l > 0 ? gm_acts_at(a, l - 1, GM_PT_RESID) : gm_acts_at(a, -1, GM_PT_EMBED);
    if (block_bwd(&c, &cs, m, wm, a, l, h_in, &g->layers[l], s, B, T)) return -1;
  }
  // tied: lm_head's gradient arrived in g->wte first; the embedding's is added to it
  if (gm_op_embedding_bwd(&cs, m->tied ? NULL : g->wte, g->wpe, s->dh, o->tokens, B, T, 0, D, V, cf->n_positions))
    return -1;
  if (m->tied && gm_op_embedding_bwd_tied(&cs, g->wte, s->dh, o->tokens, B, T, D, V)) return -1;
  return 0;
}

// Kept on the gradients between calls (gm_gpt2.grad_ws): the kept activations and the logits, the
// bulk of a step's buffers. The working gradients (about 3% of it at GPT-2 124M, B 4, T 64) are
// not kept, so they are not resident outside the backward (the forward's end is a training step's
// peak): two [N, D] buffers are allocated per call, the rest lives in the logits buffer when it
// fits (scratch_alloc).
struct gm_grad_ws {
  int B, T;
  float *logits; // [N, V]
  gm_acts a;
};

void gm_gpt2_grad_ws_free(gm_gpt2 *g) {
  if (!g->grad_ws) return;
  gm_acts_free(&g->grad_ws->a);
  free(g->grad_ws->logits);
  free(g->grad_ws);
  g->grad_ws = NULL;
}

int gm_gpt2_grad(const gm_gpt2 *m, const gm_gpt2_grad_opts *o, gm_gpt2 *g, float *loss, int64_t *n_scored) {
  if (check(m, o, g)) return -1;
  struct gm_grad_ws *w = g->grad_ws;
  if (w && (w->B != o->B || w->T != o->T)) { // another shape: new buffers
    gm_gpt2_grad_ws_free(g);
    w = NULL;
  }
  if (!w) {
    w = calloc(1, sizeof *w);
    if (w) w->logits = malloc((size_t)o->B * o->T * m->cfg.vocab_size * sizeof(float));
    if (!w || !w->logits) {
      free(w);
      return gm_fail("out of memory for the backward's buffers (B=%d, T=%d)", o->B, o->T);
    }
    w->B = o->B;
    w->T = o->T;
    g->grad_ws = w;
  }
  scratch s;
  if (scratch_alloc(&s, &m->cfg, o->B, o->T, w->logits)) return -1;
  int rc = backward(m, o, g, loss, n_scored, &w->a, &s);
  scratch_free(&s);
  return rc;
}
