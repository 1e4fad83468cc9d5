// lab/report_diverge: the "GPT-2 numerics divergence" section of the report. Computes, per
// profile pair and dtype, the point-by-point divergence (gm_diverge_run) on a checkpoint or on a
// tiny random model made in memory, and writes a table, an SVG plot and a sentence computed from
// the numbers. Contract in include/gptmeg/diverge.h (gm_report_add_diverge).
#include "gptmeg/config.h"
#include "gptmeg/diverge.h"
#include "lab/report_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { DV_NPAIR = 6, DV_T = 64 }; // five fixed pairs, and hf against the --profile of the report

typedef struct {
  const char *a, *b; // profile names
  gm_dtype da, db;
  bool ok;
  char err[300];
  gm_dv_result res;
} dv_pair;

struct gm_dv_section {
  char model[600];   // what model was used
  char tokens[200];  // what tokens were used
  int npair;         // pairs used: 5, or 6 with a user profile
  gm_profile user;   // the user's profile (pair 5)
  dv_pair pair[DV_NPAIR];
  char statement[700];
};

// The model in dtype dt: model_dir's checkpoint, or the tiny random model (seed 1).
static int model_in(const char *dir, gm_dtype dt, gm_gpt2 *m) {
  if (dir) {
    if (gm_gpt2_load(m, dir)) return -1;
  } else {
    gm_gpt2_config c;
    gm_config_tiny(&c);
    if (gm_gpt2_init_random(m, &c, 1)) return -1;
  }
  if (gm_gpt2_to_dtype(m, dt)) {
    char msg[300];
    snprintf(msg, sizeof msg, "%s", gm_errmsg());
    gm_gpt2_free(m);
    return gm_fail("cannot run in %s: %s", gm_dtype_name(dt), msg);
  }
  return 0;
}

// Writes "layer L point" / "point" for row i into buf.
static void where(const gm_dv_result *r, int i, char *buf, size_t n) {
  const gm_dv_row *R = &r->rows[i];
  if (R->layer < 0) snprintf(buf, n, "%s", gm_point_name(R->point));
  else snprintf(buf, n, "layer %d %s", R->layer, gm_point_name(R->point));
}

// Largest max_abs over every point of a result.
static double max_abs_all(const gm_dv_result *r) {
  double m = 0;
  for (int i = 0; i < r->n_rows; i++) m = fmax(m, r->rows[i].total.max_abs);
  return m;
}

// The sentence on hf vs meg in f32 and f16, from pairs 0 (f32) and 1 (f16).
static void statement(gm_dv_section *s) {
  const dv_pair *p32 = &s->pair[0], *p16 = &s->pair[1];
  if (!p32->ok || !p16->ok) { snprintf(s->statement, sizeof s->statement, "hf vs meg could not be run in f32 and f16 on this model (see below)."); return; }
  char a[320], b[320], w[64];
  if (p32->res.first_outside < 0)
    snprintf(a, sizeof a, "hf and meg agree within PyTorch's f32 tolerance in f32 (rtol %g, atol %g; max |diff| %.3g over every point, logits max |diff| %.3g)",
             p32->res.tol.rtol, p32->res.tol.atol, max_abs_all(&p32->res), p32->res.rows[p32->res.n_rows - 1].total.max_abs);
  else {
    where(&p32->res, p32->res.first_outside, w, sizeof w);
    snprintf(a, sizeof a, "hf and meg do not agree within PyTorch's f32 tolerance in f32 (first outside at %s, max |diff| %.3g)", w, max_abs_all(&p32->res));
  }
  const gm_dv_row *lg = &p16->res.rows[p16->res.n_rows - 1];
  if (p16->res.first_outside >= 0) {
    where(&p16->res, p16->res.first_outside, w, sizeof w);
    snprintf(b, sizeof b, "part in f16 (first outside the f16 tolerance at %s, logits max |diff| %.3g, %.1f%% of logits outside; top-1 differs at %d of %d positions)",
             w, lg->total.max_abs, 100.0 * gm_dv_outside_fraction(&lg->total), p16->res.top1_differ, p16->res.top1_positions);
  } else
    snprintf(b, sizeof b, "also agree within the f16 tolerance in f16 (logits max |diff| %.3g)", lg->total.max_abs);
  snprintf(s->statement, sizeof s->statement, "%s and %s.", a, b);
}

// True when every point of layer l (l = -1: embed, ln_f, logits) is within the tolerance.
static bool layer_within(const gm_dv_result *r, int l) {
  for (int i = 0; i < r->n_rows; i++)
    if (r->rows[i].layer == l && r->rows[i].total.n_outside) return false;
  return true;
}

static void html(const gm_dv_section *s, FILE *f) {
  fprintf(f, "<p class=\"lead\"><b>");
  gm_lab_html_esc(f, s->statement);
  fprintf(f, "</b></p>\n<p>Model: ");
  gm_lab_html_esc(f, s->model);
  fprintf(f, ". Tokens: ");
  gm_lab_html_esc(f, s->tokens);
  fprintf(f, ". Each pair runs A recording every point, B forced onto A's values (the error each op <i>adds</i>), then B; "
             "tolerances are torch.testing.assert_close's defaults for the coarser dtype of the two runs. "
             "<code>gptmeg diverge</code> prints every point.</p>\n");
  for (int k = 0; k < s->npair; k++) {
    const dv_pair *p = &s->pair[k];
    fprintf(f, "<h3>%s:%s vs %s:%s</h3>\n", p->a, gm_dtype_name(p->da), p->b, gm_dtype_name(p->db));
    if (!p->ok) { fprintf(f, "<p><span class=\"badge na\">"); gm_lab_html_esc(f, p->err); fprintf(f, "</span></p>\n"); continue; }
    const gm_dv_result *r = &p->res;
    const gm_dv_row *lg = &r->rows[r->n_rows - 1];
    fprintf(f, "<table><tr><th>layer</th><th>residual max rel diff</th><th>residual RMS rel diff</th><th>largest added RMS rel (point)</th><th>within tolerance</th></tr>\n");
    for (int l = 0; l < r->n_layer; l++) {
      const gm_dv_row *R = &r->rows[gm_dv_row_index(r->n_layer, l, GM_PT_RESID)];
      int worst = -1;
      for (int i = 0; i < r->n_rows; i++)
        if (r->rows[i].layer == l && (worst < 0 || r->rows[i].added.rms_rel > r->rows[worst].added.rms_rel)) worst = i;
      fprintf(f, "<tr><td>%d</td><td>%.3g</td><td>%.3g</td><td>%.3g (%s)</td><td>%s</td></tr>\n", l, R->total.max_rel, R->total.rms_rel,
              r->rows[worst].added.rms_rel, gm_point_name(r->rows[worst].point),
              layer_within(r, l) ? "<span class=\"badge ok\">yes</span>" : "<span class=\"badge bad\">no</span>");
    }
    fprintf(f, "<tr><td>logits</td><td colspan=\"2\">max |diff| %.3g, RMS rel %.3g</td><td>top-1 agreement %d/%d (%d near ties, %d flips)</td><td>%s</td></tr></table>\n",
            lg->total.max_abs, lg->total.rms_rel, r->top1_positions - r->top1_differ, r->top1_positions, r->top1_near_ties,
            r->top1_flips, layer_within(r, -1) ? "<span class=\"badge ok\">yes</span>" : "<span class=\"badge bad\">no</span>");
    char w[64] = "none";
    if (r->first_outside >= 0) where(r, r->first_outside, w, sizeof w);
    fprintf(f, "<p>Compared in %s (rtol %g, atol %g). First point outside the tolerance: %s.</p>\n", gm_dtype_name(r->cmp_dtype),
            r->tol.rtol, r->tol.atol, w);
    gm_dv_svg(r, f);
  }
}

static void json(const gm_dv_section *s, cJSON *o) {
  cJSON_AddStringToObject(o, "statement", s->statement);
  cJSON_AddStringToObject(o, "model", s->model);
  cJSON_AddStringToObject(o, "tokens", s->tokens);
  cJSON *arr = cJSON_AddArrayToObject(o, "pairs");
  for (int k = 0; k < s->npair; k++) {
    const dv_pair *p = &s->pair[k];
    cJSON *j;
    if (p->ok) j = gm_dv_json_obj(&p->res);
    else {
      char n[64];
      j = cJSON_CreateObject();
      snprintf(n, sizeof n, "%s:%s", p->a, gm_dtype_name(p->da));
      cJSON_AddStringToObject(j, "a", n);
      snprintf(n, sizeof n, "%s:%s", p->b, gm_dtype_name(p->db));
      cJSON_AddStringToObject(j, "b", n);
      cJSON_AddStringToObject(j, "error", p->err);
    }
    cJSON_AddItemToArray(arr, j);
  }
}

// The report's section callback: HTML into html_file or JSON into json_obj.
static int section(const gm_report *r, void *html_file, void *json_obj, void *user) {
  (void)r;
  if (html_file) html(user, html_file);
  if (json_obj) json(user, json_obj);
  return 0;
}

int gm_report_add_diverge(gm_report *r, const char *model_dir, int threads, const gm_profile *user,
                          gm_dv_section **out) {
  *out = NULL;
  gm_dv_section *s = calloc(1, sizeof *s);
  if (!s) return gm_fail("out of memory");
  struct { const char *a, *b; gm_dtype da, db; } pairs[DV_NPAIR] = {
      {"hf", "meg", GM_F32, GM_F32}, {"hf", "meg", GM_F16, GM_F16}, {"hf", "meg", GM_BF16, GM_BF16},
      {"hf", "megatron", GM_F16, GM_F16}, {"hf", "hf", GM_F32, GM_F16}, {"hf", NULL, GM_F32, GM_F32}};
  s->npair = DV_NPAIR - 1;
  if (user) {
    s->user = *user;
    pairs[DV_NPAIR - 1].b = s->user.name;
    pairs[DV_NPAIR - 1].da = pairs[DV_NPAIR - 1].db = user->dtype;
    s->npair = DV_NPAIR;
  }
  gm_gpt2 m[3];
  bool have[3] = {false, false, false};
  char err[3][300];
  for (int d = 0; d < 3; d++) {
    have[d] = model_in(model_dir, (gm_dtype)d, &m[d]) == 0;
    if (!have[d]) snprintf(err[d], sizeof err[d], "%s", gm_errmsg());
  }
  int rc = 0;
  if (!have[0] && !have[1] && !have[2]) { rc = gm_fail("report: %s", err[0]); goto done; }
  const gm_gpt2_config *c = &m[have[0] ? 0 : have[1] ? 1 : 2].cfg;
  if (model_dir) snprintf(s->model, sizeof s->model, "%.400s (%d layers, n_embd %d, %d heads)", model_dir, c->n_layer, c->n_embd, c->n_head);
  else snprintf(s->model, sizeof s->model, "the embedded default: gptmeg init --config tiny --seed 1 made in memory (%d layers, n_embd %d, %d heads, weights N(0, 0.02))",
                c->n_layer, c->n_embd, c->n_head);
  int T = c->n_positions < DV_T ? c->n_positions : DV_T;
  int32_t tok[DV_T];
  gm_rng g;
  gm_rng_seed(&g, 1);
  for (int t = 0; t < T; t++) tok[t] = (int32_t)(gm_rng_u64(&g) % (uint64_t)c->vocab_size);
  snprintf(s->tokens, sizeof s->tokens, "one fixed sequence of %d token ids drawn uniformly from the vocabulary (gm_rng seed 1)", T);
  for (int k = 0; k < s->npair; k++) {
    dv_pair *p = &s->pair[k];
    p->a = pairs[k].a; p->b = pairs[k].b; p->da = pairs[k].da; p->db = pairs[k].db;
    gm_profile pa, pb;
    gm_dv_opts o = {.threads = threads};
    if (!have[p->da] || !have[p->db]) { snprintf(p->err, sizeof p->err, "%s", err[have[p->da] ? p->db : p->da]); continue; }
    bool user_pair = k == DV_NPAIR - 1;
    if (user_pair) pb = s->user;
    if (gm_profile_get(p->a, p->da, &pa) || (!user_pair && gm_profile_get(p->b, p->db, &pb)) ||
        gm_diverge_run(&m[p->da], &pa, &m[p->db], &pb, tok, 1, T, &o, &p->res)) {
      snprintf(p->err, sizeof p->err, "%s", gm_errmsg());
      continue;
    }
    p->ok = true;
  }
  statement(s);
  rc = gm_report_add_section(r, "GPT-2 numerics divergence", section, s);
done:
  for (int d = 0; d < 3; d++)
    if (have[d]) gm_gpt2_free(&m[d]);
  if (rc) gm_report_diverge_free(s);
  else *out = s;
  return rc;
}

void gm_report_diverge_free(gm_dv_section *s) {
  if (!s) return;
  for (int k = 0; k < s->npair; k++) gm_dv_result_free(&s->pair[k].res);
  free(s);
}
