// lab/train_compare: two f32 training runs in lockstep and their distance step by step (contract in
// include/gptmeg/traincmp.h). Each run is gm_gpt2_grad then gm_train_optimizer_step, as gm_train_run
// does a step; the comparison reads the gradients before the optimizer clips them. Norms are double
// sums in checkpoint order (thread-count independent).
#include "gptmeg/traincmp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int gm_tc_spec_parse(const char *spec, gm_profile *out) {
  if (!spec || !*spec) return gm_fail("empty profile spec (form: PROFILE[:f32][+KNOB=VALUE]..., e.g. hf+act=gelu_pytorch_tanh:torch-cpu)");
  const char *plus = strchr(spec, '+');
  size_t hl = plus ? (size_t)(plus - spec) : strlen(spec);
  char head[64];
  if (hl >= sizeof head) return gm_fail("unknown profile in '%s' (valid: hf, hf-legacy, meg, megatron)", spec);
  memcpy(head, spec, hl);
  head[hl] = 0;
  char *colon = strchr(head, ':');
  if (colon) {
    *colon = 0;
    if (strcmp(colon + 1, "f32"))
      return gm_fail("'%s': training compares f32 runs only (got dtype '%s')", spec, colon + 1);
  }
  if (gm_profile_get(head, GM_F32, out)) return -1;
  while (plus) {
    const char *k = plus + 1, *next = strchr(k, '+'), *eq = strchr(k, '=');
    size_t len = next ? (size_t)(next - k) : strlen(k);
    if (!eq || eq >= k + len || eq == k)
      return gm_fail("'%s': a knob change is NAME=VALUE after '+' (got '%.*s')", spec, (int)len, k);
    char name[64], value[128];
    size_t nl = (size_t)(eq - k), vl = len - nl - 1;
    if (nl >= sizeof name || vl >= sizeof value) return gm_fail("'%s': knob '%.*s' too long", spec, (int)len, k);
    memcpy(name, k, nl);
    name[nl] = 0;
    memcpy(value, eq + 1, vl);
    value[vl] = 0;
    if (gm_profile_set_knob(out, name, value)) return -1;
    plus = next;
  }
  return 0;
}

int gm_tc_draw_batches(const int32_t *tokens, int64_t n, int B, int T, long steps, uint64_t seed, int32_t *out) {
  if (B <= 0 || T <= 0 || steps <= 0) return gm_fail("batch %d x %d, %ld steps: all must be > 0", B, T, steps);
  if (n < T) return gm_fail("%lld tokens: too few for one sequence of %d", (long long)n, T);
  gm_rng r;
  gm_rng_seed(&r, seed);
  const uint64_t span = (uint64_t)(n - T) + 1;
  for (long s = 0; s < steps; s++)
    for (int b = 0; b < B; b++) {
      uint64_t at = gm_rng_u64(&r) % span;
      memcpy(out + ((size_t)s * B + b) * T, tokens + at, (size_t)T * sizeof *out);
    }
  return 0;
}

// One training run: its model, gradients and optimizer state.
typedef struct {
  gm_gpt2 m, g;
  gm_train_state s;
  bool have_m, have_g, have_s;
  gm_gpt2_tensor *tw, *tg; // its weights and gradients as tensors
  int nt;
} run;

static void run_free(run *r) {
  if (r->have_s) gm_train_state_free(&r->s);
  if (r->have_g) gm_gpt2_free(&r->g);
  if (r->have_m) gm_gpt2_free(&r->m);
  free(r->tw);
  memset(r, 0, sizeof *r);
}

static int run_init(run *r, const gm_gpt2 *m0, const gm_train_opts *o, size_t cap) {
  memset(r, 0, sizeof *r);
  if (gm_gpt2_alloc_like(&r->m, m0)) return -1;
  r->have_m = true;
  if (gm_gpt2_alloc_like(&r->g, m0)) return -1;
  r->have_g = true;
  r->tw = calloc(3 * cap, sizeof *r->tw);
  if (!r->tw) return gm_fail("out of memory");
  r->tg = r->tw + cap;
  gm_gpt2_tensor *t0 = r->tg + cap;
  int n0 = gm_gpt2_tensors(m0, t0);
  r->nt = gm_gpt2_tensors(&r->m, r->tw);
  if (n0 < 0 || r->nt != n0 || gm_gpt2_tensors(&r->g, r->tg) != n0) return gm_fail("out of memory");
  for (int i = 0; i < n0; i++) memcpy(r->tw[i].data, t0[i].data, t0[i].numel * sizeof(float));
  if (gm_train_state_init(&r->s, &r->m, o)) return -1;
  r->have_s = true;
  return 0;
}

// The loss and gradients of one step on batch ids.
static int run_grad(run *r, const gm_profile *p, const gm_train_opts *o, const int32_t *ids, float *loss, const char *side, long step) {
  gm_gpt2_grad_opts go = {p, ids, NULL, o->B, o->T, o->threads, 1.0f, NULL};
  if (gm_gpt2_grad(&r->m, &go, &r->g, loss, NULL)) return -1;
  if (!isfinite(*loss)) return gm_fail("run %s, step %ld: the loss is %g under f32 (the run diverged)", side, step, *loss);
  return 0;
}

// The optimizer step (what gm_train_run does after the gradients).
static int run_update(run *r, const gm_train_opts *o, long step) {
  r->s.step = step;
  float norm;
  return gm_train_optimizer_step(&r->m, &r->g, &r->s, o, gm_lr_at(&o->lr, step - 1), &norm);
}

// The group of a checkpoint tensor name: 0 embeddings (and an untied lm_head), 1 + layer, n_layer + 1 ln_f.
static int group_of(const char *name, int n_layer) {
  const char *h = strstr(name, "h.");
  if (h && (h == name || h[-1] == '.') && h[2] >= '0' && h[2] <= '9') return 1 + atoi(h + 2);
  if (strstr(name, "ln_f")) return n_layer + 1;
  return 0;
}

static double rel(double d2, double e2) { return e2 > 0 ? sqrt(d2 / e2) : d2 > 0 ? INFINITY : 0.0; }

// Compares run b with run a after the gradients (grad_rel) into st.
static void cmp_grads(const run *a, const run *b, int n_layer, int ng, double *d2, double *e2, gm_tc_step *st) {
  memset(d2, 0, (size_t)ng * sizeof *d2);
  memset(e2, 0, (size_t)ng * sizeof *e2);
  double D = 0, E = 0;
  for (int i = 0; i < a->nt; i++) {
    int gi = group_of(a->tg[i].name, n_layer);
    const float *x = a->tg[i].data, *y = b->tg[i].data;
    double sd = 0, se = 0;
    for (size_t k = 0; k < a->tg[i].numel; k++) {
      double d = (double)y[k] - (double)x[k];
      sd += d * d;
      se += (double)x[k] * (double)x[k];
    }
    d2[gi] += sd;
    e2[gi] += se;
    D += sd;
    E += se;
  }
  for (int k = 0; k < ng; k++) st->grad_rel_group[k] = rel(d2[k], e2[k]);
  st->grad_rel = rel(D, E);
}

static void cmp_weights(const run *a, const run *b, gm_tc_step *st) {
  double D = 0, E = 0;
  bool eq = true;
  for (int i = 0; i < a->nt; i++) {
    const float *x = a->tw[i].data, *y = b->tw[i].data;
    if (eq && memcmp(x, y, a->tw[i].numel * sizeof *x)) eq = false;
    for (size_t k = 0; k < a->tw[i].numel; k++) {
      double d = (double)y[k] - (double)x[k];
      D += d * d;
      E += (double)x[k] * (double)x[k];
    }
  }
  st->weight_drift = rel(D, E);
  st->weights_equal = eq;
}

void gm_tc_result_free(gm_tc_result *r) {
  if (!r) return;
  if (r->ab) free(r->ab[0].grad_rel_group);
  if (r->noise) free(r->noise[0].grad_rel_group);
  free(r->ab);
  free(r->noise);
  memset(r, 0, sizeof *r);
}

static gm_tc_step *steps_alloc(long n, int ng) {
  gm_tc_step *s = calloc((size_t)n, sizeof *s);
  double *g = calloc((size_t)n * ng, sizeof *g);
  if (!s || !g) { free(s); free(g); return NULL; }
  for (long k = 0; k < n; k++) s[k].grad_rel_group = g + (size_t)k * ng;
  return s;
}

int gm_tc_run(const gm_gpt2 *m, const gm_tc_opts *o, gm_tc_result *out) {
  memset(out, 0, sizeof *out);
  const gm_train_opts *to = o->train;
  if (!o->a || !o->b || !to || !o->batches) return gm_fail("train-compare: profiles, training options and batches are required");
  if (o->a->dtype != GM_F32 || o->b->dtype != GM_F32 || m->dtype != GM_F32)
    return gm_fail("train-compare runs f32 training only (profiles %s, %s; model %s)", gm_dtype_name(o->a->dtype),
                   gm_dtype_name(o->b->dtype), gm_dtype_name(m->dtype));
  if (m->file_dtype != GM_F32 || m->mixed_dtypes)
    return gm_fail("the checkpoint holds %s weights; train-compare trains f32 checkpoints (as recipe f32)",
                   m->mixed_dtypes ? "mixed-dtype" : gm_dtype_name(m->file_dtype));
  if (to->steps < 1 || to->B < 1 || to->T < 1) return gm_fail("train-compare: steps, B and T must be >= 1");
  if (to->T > m->cfg.n_positions) return gm_fail("--seq %d is beyond the model's n_positions %d", to->T, m->cfg.n_positions);
  if (m->cfg.n_layer + 2 > GM_TC_MAX_GROUPS) return gm_fail("train-compare: at most %d layers", GM_TC_MAX_GROUPS - 2);
  const size_t bt = (size_t)to->B * to->T;
  for (size_t i = 0; i < bt * (size_t)to->steps; i++)
    if (o->batches[i] < 0 || o->batches[i] >= m->cfg.vocab_size)
      return gm_fail("batch token %zu is id %d, outside the vocabulary [0, %d)", i, o->batches[i], m->cfg.vocab_size);
  double t0 = gm_now_s();
  const int L = m->cfg.n_layer, ng = L + 2;
  snprintf(out->a_name, sizeof out->a_name, "%s", o->a_name ? o->a_name : o->a->name);
  snprintf(out->b_name, sizeof out->b_name, "%s", o->b_name ? o->b_name : o->b->name);
  out->steps = to->steps;
  out->n_groups = ng;
  out->B = to->B;
  out->T = to->T;
  out->tol = gm_default_tolerance(GM_F32);
  snprintf(out->group[0], sizeof out->group[0], "emb");
  for (int l = 0; l < L; l++) snprintf(out->group[1 + l], sizeof out->group[0], "h.%d", l);
  snprintf(out->group[L + 1], sizeof out->group[0], "ln_f");
  out->ab = steps_alloc(to->steps, ng);
  if (o->noise) out->noise = steps_alloc(to->steps, ng);
  long *perm = o->noise ? malloc((size_t)to->steps * sizeof *perm) : NULL;
  double *d2 = malloc(2 * (size_t)ng * sizeof *d2);
  const size_t cap = (size_t)L * 12 + 6;
  run ra, rb, rn;
  memset(&rn, 0, sizeof rn);
  int rc = (!out->ab || (o->noise && (!out->noise || !perm)) || !d2) ? gm_fail("out of memory") : 0;
  memset(&ra, 0, sizeof ra);
  memset(&rb, 0, sizeof rb);
  if (!rc) rc = run_init(&ra, m, to, cap);
  if (!rc) rc = run_init(&rb, m, to, cap);
  if (!rc && o->noise) rc = run_init(&rn, m, to, cap);
  if (!rc && o->noise) { // Fisher-Yates over the step indices
    gm_rng g;
    gm_rng_seed(&g, o->noise_seed);
    for (long k = 0; k < to->steps; k++) perm[k] = k;
    for (long k = to->steps - 1; k > 0; k--) {
      long j = (long)(gm_rng_u64(&g) % (uint64_t)(k + 1)), t = perm[k];
      perm[k] = perm[j];
      perm[j] = t;
    }
  }
  for (long k = 1; !rc && k <= to->steps; k++) {
    const int32_t *ids = o->batches + (size_t)(k - 1) * bt;
    gm_tc_step *s = &out->ab[k - 1];
    s->step = k;
    if ((rc = run_grad(&ra, o->a, to, ids, &s->loss_a, "A", k))) break;
    if ((rc = run_grad(&rb, o->b, to, ids, &s->loss_b, "B", k))) break;
    cmp_grads(&ra, &rb, L, ng, d2, d2 + ng, s);
    gm_tc_step *n = o->noise ? &out->noise[k - 1] : NULL;
    if (n) {
      n->step = k;
      n->loss_a = s->loss_a;
      if ((rc = run_grad(&rn, o->a, to, o->batches + (size_t)perm[k - 1] * bt, &n->loss_b, "A (shuffled)", k))) break;
      cmp_grads(&ra, &rn, L, ng, d2, d2 + ng, n);
    }
    if ((rc = run_update(&ra, to, k)) || (rc = run_update(&rb, to, k)) || (n && (rc = run_update(&rn, to, k)))) break;
    gm_tc_step *both[2] = {s, n};
    for (int w = 0; w < 2 && both[w]; w++) {
      gm_tc_step *x = both[w];
      x->loss_diff = (double)x->loss_b - (double)x->loss_a;
      x->loss_close = fabs(x->loss_diff) <= out->tol.atol + out->tol.rtol * fabs((double)x->loss_a);
      cmp_weights(&ra, w ? &rn : &rb, x);
    }
    if (!s->loss_close && !out->first_loss_outside) out->first_loss_outside = k;
    if (!s->weights_equal && !out->first_weights_differ) out->first_weights_differ = k;
    if (n && !n->weights_equal && !out->noise_first_weights_differ) out->noise_first_weights_differ = k;
    if (o->on_step) o->on_step(o->ctx, k, to->steps);
  }
  run_free(&ra);
  run_free(&rb);
  run_free(&rn);
  free(perm);
  free(d2);
  out->seconds = gm_now_s() - t0;
  if (rc) gm_tc_result_free(out);
  return rc ? -1 : 0;
}
