// lab/diverge: point-by-point divergence of two GPT-2 runs (A recorded, B forced onto A's values
// for the added error, then B plain), and of one run against a safetensors dump. Contracts in
// include/gptmeg/diverge.h.
#include "lab/diverge_internal.h"
#include "gptmeg/safetensors.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- points ------------------------------------------------------------------------------------
int gm_dv_n_rows(int n_layer) { return 3 + GM_DV_LAYER_POINTS * n_layer; }

int gm_dv_row_index(int n_layer, int layer, gm_point pt) {
  if (pt == GM_PT_EMBED) return layer == -1 ? 0 : -1;
  if (pt == GM_PT_LNF) return layer == -1 ? 1 + GM_DV_LAYER_POINTS * n_layer : -1;
  if (pt == GM_PT_LOGITS) return layer == -1 ? 2 + GM_DV_LAYER_POINTS * n_layer : -1;
  if (pt < GM_PT_LN1 || pt > GM_PT_RESID || layer < 0 || layer >= n_layer) return -1;
  return 1 + GM_DV_LAYER_POINTS * layer + (int)(pt - GM_PT_LN1);
}

void gm_dv_row_point(int n_layer, int row, int *layer, gm_point *pt) {
  int last = 1 + GM_DV_LAYER_POINTS * n_layer;
  if (row == 0) { *layer = -1; *pt = GM_PT_EMBED; }
  else if (row == last) { *layer = -1; *pt = GM_PT_LNF; }
  else if (row == last + 1) { *layer = -1; *pt = GM_PT_LOGITS; }
  else { *layer = (row - 1) / GM_DV_LAYER_POINTS; *pt = (gm_point)(GM_PT_LN1 + (row - 1) % GM_DV_LAYER_POINTS); }
}

void gm_dv_tensor_name(int layer, gm_point pt, char *buf, size_t n) {
  if (layer < 0) snprintf(buf, n, "%s", gm_point_name(pt));
  else snprintf(buf, n, "h.%d.%s", layer, gm_point_name(pt));
}

int gm_dv_shape(const gm_gpt2_config *c, int B, int T, gm_point pt, int64_t shape[4]) {
  int64_t N = (int64_t)B * T;
  shape[2] = shape[3] = 0;
  switch (pt) {
  case GM_PT_SCORES:
  case GM_PT_PROBS: shape[0] = B; shape[1] = c->n_head; shape[2] = T; shape[3] = T; return 4;
  case GM_PT_QKV: shape[1] = 3 * (int64_t)c->n_embd; break;
  case GM_PT_FC:
  case GM_PT_ACT: shape[1] = c->n_inner; break;
  case GM_PT_LOGITS: shape[1] = c->vocab_size; break;
  default: shape[1] = c->n_embd; break;
  }
  shape[0] = N;
  return 2;
}

// ---- metrics -----------------------------------------------------------------------------------
uint64_t gm_dv_ulp(gm_dtype cmp, float a, float b) {
  if (cmp == GM_F16) return gm_ulp_dist_u16(GM_F16, gm_f32_to_f16(a), gm_f32_to_f16(b));
  if (cmp == GM_BF16) return gm_ulp_dist_u16(GM_BF16, gm_f32_to_bf16(a), gm_f32_to_bf16(b));
  return gm_ulp_dist_f32(a, b);
}

void gm_dv_metrics_add(gm_dv_metrics *m, gm_dtype cmp, gm_tolerance tol, uint64_t ulp, const float *actual,
                    const float *expected, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double a = actual[i], e = expected[i], d = fabs(a - e);
    uint64_t u = gm_dv_ulp(cmp, actual[i], expected[i]);
    if (isnan(d) && !(isnan(a) && isnan(e))) { m->max_abs = m->max_rel = NAN; m->sum_d2 = NAN; }
    else if (a != e && !isnan(d)) { // equal values (inf == inf too) add nothing
      if (d > m->max_abs) m->max_abs = d;
      double rel = d / fmax(fabs(e), tol.atol > 0 ? tol.atol : (double)FLT_MIN);
      if (rel > m->max_rel) m->max_rel = rel;
      m->sum_d2 += d * d;
    }
    if (isfinite(e)) m->sum_e2 += e * e;
    if (u != UINT64_MAX && u > m->max_ulp) m->max_ulp = u;
    bool out = ulp > 0 ? u > ulp : !gm_close(a, e, tol);
    m->n_outside += out;
  }
  m->n += n;
}

void gm_dv_metrics_finish(gm_dv_metrics *m) {
  if (isnan(m->sum_d2)) { m->rms_rel = m->max_abs = m->max_rel = NAN; return; }
  if (m->sum_d2 == 0) m->rms_rel = 0;
  else if (m->sum_e2 == 0 || isinf(m->sum_d2)) m->rms_rel = INFINITY;
  else m->rms_rel = sqrt(m->sum_d2 / m->sum_e2);
}

// The coarser of two run dtypes (fewer fraction bits): bf16 > f16 > f32.
static gm_dtype coarser(gm_dtype a, gm_dtype b) {
  if (a == GM_BF16 || b == GM_BF16) return GM_BF16;
  if (a == GM_F16 || b == GM_F16) return GM_F16;
  return GM_F32;
}

// ---- runs --------------------------------------------------------------------------------------
// One recording of every point of a forward: rec[row] holds numel[row] floats.
typedef struct {
  int n_rows;
  float **rec;
  size_t *numel;
} dv_rec;

static void rec_free(dv_rec *r) {
  if (r->rec)
    for (int i = 0; i < r->n_rows; i++) free(r->rec[i]);
  free(r->rec);
  free(r->numel);
  memset(r, 0, sizeof *r);
}

static int rec_alloc(dv_rec *r, const gm_gpt2_config *c, int B, int T) {
  memset(r, 0, sizeof *r);
  r->n_rows = gm_dv_n_rows(c->n_layer);
  r->rec = calloc((size_t)r->n_rows, sizeof(float *));
  r->numel = calloc((size_t)r->n_rows, sizeof(size_t));
  if (!r->rec || !r->numel) { rec_free(r); return gm_fail("out of memory"); }
  for (int i = 0; i < r->n_rows; i++) {
    int layer;
    gm_point pt;
    int64_t s[4];
    gm_dv_row_point(c->n_layer, i, &layer, &pt);
    int nd = gm_dv_shape(c, B, T, pt, s);
    size_t n = 1;
    for (int k = 0; k < nd; k++) n *= (size_t)s[k];
    r->numel[i] = n;
    if (!(r->rec[i] = malloc(n * sizeof(float)))) { rec_free(r); return gm_fail("out of memory for the activations (B=%d, T=%d)", B, T); }
  }
  return 0;
}

typedef enum { PH_RECORD_A = 0, PH_FORCE_B, PH_PLAIN_B, PH_AGAINST } dv_phase;

typedef struct {
  dv_phase phase;
  const gm_gpt2 *m;        // the running model
  const gm_profile *p;     // the running profile
  bool fc_canon;           // the two sides differ in bias fusion: compare fc with the bias added
  dv_rec *a, *forced;      // A's values; B's op on A's inputs
  gm_dv_result *res;
  dv_dump *dump;
  const gm_safetensors *st; // PH_AGAINST
  float *scratch;           // PH_AGAINST: one tensor of the dump; else canonical fc
} dv_ctx;

// Copies t into dst, with c_fc's bias added (rounded to the run's dtype) when canon.
static void canonical(const dv_ctx *c, const gm_probe_tensor *t, float *dst) {
  if (t->point == GM_PT_FC && c->fc_canon && c->p->act_bias_fused) {
    const float *b = c->m->layers[t->layer].fc_b;
    size_t cols = (size_t)t->shape[1];
    for (size_t i = 0; i < t->numel; i++) dst[i] = gm_round_f32(c->p->dtype, t->data[i] + b[i % cols]);
  } else memcpy(dst, t->data, t->numel * sizeof(float));
}

static int dv_probe(void *ctx, const gm_probe_tensor *t) {
  dv_ctx *c = ctx;
  gm_dv_result *res = c->res;
  int row = gm_dv_row_index(res->n_layer, t->layer, t->point);
  if (row < 0) return gm_fail("unexpected probe point");
  gm_dv_row *R = &res->rows[row];
  gm_tolerance tol = res->tol;
  switch (c->phase) {
  case PH_RECORD_A:
    if (c->dump && gm_dv_dump_put(c->dump, row, t->data, t->numel)) return -1;
    canonical(c, t, c->a->rec[row]);
    break;
  case PH_FORCE_B: {
    float *f = c->forced->rec[row];
    const float *av = c->a->rec[row];
    canonical(c, t, f);
    gm_dv_metrics_add(&R->added, res->cmp_dtype, tol, res->ulp, f, av, t->numel);
    // continue from A's value (rounded to B's dtype); a fused B takes A's fc without the bias
    bool sub = t->point == GM_PT_FC && c->fc_canon && c->p->act_bias_fused;
    size_t cols = (size_t)t->shape[t->ndim - 1];
    for (size_t i = 0; i < t->numel; i++) {
      float v = av[i];
      if (sub) v = v - c->m->layers[t->layer].fc_b[i % cols];
      t->data[i] = gm_round_f32(c->p->dtype, v);
    }
    break;
  }
  case PH_PLAIN_B: {
    float *bv = c->scratch;
    canonical(c, t, bv);
    gm_dv_metrics_add(&R->total, res->cmp_dtype, tol, res->ulp, bv, c->a->rec[row], t->numel);
    if (res->have_added) gm_dv_metrics_add(&R->inherited, res->cmp_dtype, tol, res->ulp, bv, c->forced->rec[row], t->numel);
    if (t->point == GM_PT_LOGITS) memcpy(c->forced->rec[row], bv, t->numel * sizeof(float)); // B's logits for top-1
    break;
  }
  case PH_AGAINST: {
    char name[64];
    gm_dv_tensor_name(t->layer, t->point, name, sizeof name);
    const gm_st_tensor *st = gm_st_find(c->st, name);
    if (!st || st->numel != t->numel) return gm_fail("%s: tensor '%s' is missing or mis-shaped", c->st->path, name);
    gm_st_read_f32(st, c->scratch);
    if (c->dump && gm_dv_dump_put(c->dump, row, t->data, t->numel)) return -1;
    gm_dv_metrics_add(&R->total, res->cmp_dtype, tol, res->ulp, t->data, c->scratch, t->numel);
    if (t->point == GM_PT_LOGITS) { // keep both for top-1: dump in a, run in forced
      memcpy(c->a->rec[0], c->scratch, t->numel * sizeof(float));
      memcpy(c->forced->rec[0], t->data, t->numel * sizeof(float));
    }
    break;
  }
  }
  return 0;
}

static int argmax_row(const float *x, int n, int *second) {
  int k = 0, s = -1;
  for (int i = 1; i < n; i++) {
    if (x[i] > x[k]) { s = k; k = i; }
    else if (s < 0 || x[i] > x[s]) s = i;
  }
  *second = s;
  return k;
}

// Top-1 per position: a = reference logits, b = the other run's, [N, V].
static void top1(gm_dv_result *res, const float *a, const float *b, int N, int V) {
  res->top1_positions = N;
  for (int i = 0; i < N; i++) {
    int s, s2;
    const float *ra = a + (size_t)i * V, *rb = b + (size_t)i * V;
    int ka = argmax_row(ra, V, &s), kb = argmax_row(rb, V, &s2);
    if (ka == kb) continue;
    res->top1_differ++;
    bool tie = false;
    if (s >= 0) {
      if (res->ulp > 0) tie = gm_dv_ulp(res->cmp_dtype, ra[ka], ra[s]) <= res->ulp;
      else tie = fabs((double)ra[ka] - ra[s]) <= res->tol.atol + res->tol.rtol * fabs((double)ra[ka]);
    }
    if (tie) res->top1_near_ties++;
    else res->top1_flips++;
  }
}

static void finish(gm_dv_result *res) {
  res->first_outside = -1;
  for (int i = 0; i < res->n_rows; i++) {
    gm_dv_row *R = &res->rows[i];
    gm_dv_metrics_finish(&R->total);
    gm_dv_metrics_finish(&R->added);
    gm_dv_metrics_finish(&R->inherited);
    if (res->first_outside < 0 && R->total.n_outside > 0) res->first_outside = i;
  }
}

static int init_result(gm_dv_result *res, const gm_gpt2_config *c, gm_dtype da, gm_dtype db, int B, int T,
                       const gm_dv_opts *o) {
  memset(res, 0, sizeof *res);
  res->a_dtype = da;
  res->b_dtype = db;
  res->cmp_dtype = coarser(da, db);
  res->tol = o->have_tol ? o->tol : gm_default_tolerance(res->cmp_dtype);
  res->ulp = o->ulp;
  res->n_layer = c->n_layer;
  res->B = B;
  res->T = T;
  res->n_rows = gm_dv_n_rows(c->n_layer);
  res->first_outside = -1;
  if (B <= 0 || T <= 0) return gm_fail("no tokens to compare (B = %d, T = %d)", B, T);
  if (T > c->n_positions) return gm_fail("sequence length %d exceeds n_positions %d", T, c->n_positions);
  if (!(res->rows = calloc((size_t)res->n_rows, sizeof(gm_dv_row)))) return gm_fail("out of memory");
  for (int i = 0; i < res->n_rows; i++) gm_dv_row_point(c->n_layer, i, &res->rows[i].layer, &res->rows[i].point);
  return 0;
}

// One forward of (m, p) with the probe context c.
static int run_once(const gm_gpt2 *m, const gm_profile *p, const int32_t *tokens, int B, int T, int threads,
                    float *logits, dv_ctx *c) {
  gm_kv_cache kv;
  if (gm_kv_init(&kv, m, B, T)) return -1;
  c->m = m;
  c->p = p;
  int rc = gm_gpt2_run(m, &(gm_gpt2_run_opts){.profile = p, .tokens = tokens, .B = B, .T = T, .kv = &kv, .logits = logits,
                                               .threads = threads, .probe = dv_probe, .probe_ctx = c});
  gm_kv_free(&kv);
  return rc;
}

static bool same_shape(const gm_gpt2_config *a, const gm_gpt2_config *b) {
  return a->n_layer == b->n_layer && a->n_embd == b->n_embd && a->n_head == b->n_head && a->n_inner == b->n_inner &&
         a->vocab_size == b->vocab_size && a->n_positions == b->n_positions;
}

int gm_diverge_run(const gm_gpt2 *ma, const gm_profile *pa, const gm_gpt2 *mb, const gm_profile *pb,
                   const int32_t *tokens, int B, int T, const gm_dv_opts *o, gm_dv_result *out) {
  double t0 = gm_now_s();
  const gm_gpt2_config *c = &ma->cfg;
  if (!same_shape(c, &mb->cfg)) return gm_fail("the two models differ in shape");
  if (init_result(out, c, pa->dtype, pb->dtype, B, T, o)) return -1;
  snprintf(out->a_name, sizeof out->a_name, "%s:%s", pa->name, gm_dtype_name(pa->dtype));
  snprintf(out->b_name, sizeof out->b_name, "%s:%s", pb->name, gm_dtype_name(pb->dtype));
  out->have_added = !o->no_added;
  dv_rec a, f;
  memset(&f, 0, sizeof f);
  size_t nl = (size_t)B * T * c->vocab_size;
  float *logits = malloc(nl * sizeof(float)), *scratch = NULL;
  int rc = rec_alloc(&a, c, B, T);
  if (!rc) rc = rec_alloc(&f, c, B, T); // the forced run's values (also B's logits)
  dv_dump dump;
  bool dumping = false;
  size_t maxn = 0;
  for (int i = 0; !rc && i < a.n_rows; i++) maxn = a.numel[i] > maxn ? a.numel[i] : maxn;
  scratch = rc ? NULL : malloc(maxn * sizeof(float));
  if (!rc && (!logits || !scratch)) rc = gm_fail("out of memory for the activations (B=%d, T=%d)", B, T);
  if (!rc && o->dump_path) { rc = gm_dv_dump_open(&dump, c, pa, B, T, o->dump_path); dumping = rc == 0; }
  dv_ctx ctx = {PH_RECORD_A, ma, pa, pa->act_bias_fused != pb->act_bias_fused, &a, &f, out, dumping ? &dump : NULL, NULL, scratch};
  if (!rc) rc = run_once(ma, pa, tokens, B, T, o->threads, logits, &ctx);
  if (dumping) {
    if (rc) gm_dv_dump_abort(&dump);
    else rc = gm_dv_dump_commit(&dump);
  }
  ctx.dump = NULL;
  if (!rc && out->have_added) { ctx.phase = PH_FORCE_B; rc = run_once(mb, pb, tokens, B, T, o->threads, logits, &ctx); }
  if (!rc) { ctx.phase = PH_PLAIN_B; rc = run_once(mb, pb, tokens, B, T, o->threads, logits, &ctx); }
  if (!rc) {
    finish(out);
    int lr = out->n_rows - 1;
    top1(out, a.rec[lr], f.rec[lr], B * T, c->vocab_size);
    out->seconds = gm_now_s() - t0;
  }
  rec_free(&a);
  rec_free(&f);
  free(logits);
  free(scratch);
  if (rc) gm_dv_result_free(out);
  return rc;
}

int gm_diverge_against(const gm_gpt2 *m, const gm_profile *p, const int32_t *tokens, int B, int T,
                       const char *st_path, const gm_dv_opts *o, gm_dv_result *out) {
  double t0 = gm_now_s();
  const gm_gpt2_config *c = &m->cfg;
  if (init_result(out, c, p->dtype, p->dtype, B, T, o)) return -1;
  out->against = true;
  snprintf(out->a_name, sizeof out->a_name, "%.95s", st_path);
  snprintf(out->b_name, sizeof out->b_name, "%s:%s", p->name, gm_dtype_name(p->dtype));
  gm_safetensors st;
  if (gm_st_open(&st, st_path)) { gm_dv_result_free(out); return -1; }
  int rc = 0;
  size_t maxn = 0, nl = (size_t)B * T * c->vocab_size;
  for (int i = 0; i < out->n_rows && !rc; i++) { // names and shapes first: one clear error
    char name[64];
    int64_t s[4];
    int nd = gm_dv_shape(c, B, T, out->rows[i].point, s);
    gm_dv_tensor_name(out->rows[i].layer, out->rows[i].point, name, sizeof name);
    const gm_st_tensor *t = gm_st_find(&st, name);
    if (!t) { rc = gm_fail("%s: no tensor '%s' (a dump of B=%d, T=%d tokens by tools/ref/dump_activations.py has one)", st_path, name, B, T); break; }
    bool ok = t->ndim == nd;
    for (int k = 0; ok && k < nd; k++) ok = t->shape[k] == s[k];
    if (!ok) {
      char got[96] = "", want[96] = "";
      for (int k = 0; k < t->ndim && k < 4; k++) snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? ", " : "", (long long)t->shape[k]);
      for (int k = 0; k < nd; k++) snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", k ? ", " : "", (long long)s[k]);
      rc = gm_fail("%s: tensor '%s' has shape [%s], expected [%s] for B=%d, T=%d", st_path, name, got, want, B, T);
    }
    if (t->numel > maxn) maxn = t->numel;
  }
  float *logits = NULL, *scratch = NULL;
  dv_rec a = {0}, f = {0};
  float *la = NULL, *lb = NULL;
  if (!rc) {
    logits = malloc(nl * sizeof(float));
    scratch = malloc(maxn * sizeof(float));
    la = malloc(nl * sizeof(float));
    lb = malloc(nl * sizeof(float));
    if (!logits || !scratch || !la || !lb) rc = gm_fail("out of memory (B=%d, T=%d)", B, T);
  }
  a.n_rows = f.n_rows = 1;
  float *ra[1] = {la}, *rf[1] = {lb};
  a.rec = ra;
  f.rec = rf;
  dv_dump dump;
  bool dumping = false;
  if (!rc && o->dump_path) { rc = gm_dv_dump_open(&dump, c, p, B, T, o->dump_path); dumping = rc == 0; }
  dv_ctx ctx = {PH_AGAINST, m, p, false, &a, &f, out, dumping ? &dump : NULL, &st, scratch};
  if (!rc) rc = run_once(m, p, tokens, B, T, o->threads, logits, &ctx);
  if (dumping) {
    if (rc) gm_dv_dump_abort(&dump);
    else rc = gm_dv_dump_commit(&dump);
  }
  if (!rc) {
    finish(out);
    top1(out, la, lb, B * T, c->vocab_size);
    out->seconds = gm_now_s() - t0;
  }
  gm_st_close(&st);
  free(logits);
  free(scratch);
  free(la);
  free(lb);
  if (rc) gm_dv_result_free(out);
  return rc;
}

void gm_dv_result_free(gm_dv_result *r) {
  free(r->rows);
  r->rows = NULL;
  r->n_rows = 0;
}
