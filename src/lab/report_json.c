// lab/report_json: JSON forms of comparison statistics (used by `act compare --json` and report.json).
#include "lab/report_internal.h"

#include <math.h>

cJSON *gm_lab_json_num(double v) {
  if (isnan(v)) return cJSON_CreateString("nan");
  if (isinf(v)) return cJSON_CreateString(v > 0 ? "inf" : "-inf");
  return cJSON_CreateNumber(v);
}

void *gm_cmp_stats_json(const gm_cmp_stats *s) {
  cJSON *j = cJSON_CreateObject();
  double n = s->n ? (double)s->n : 1;
  cJSON_AddNumberToObject(j, "n", (double)s->n);
  cJSON_AddNumberToObject(j, "equal_fraction", (double)s->equal / n);
  cJSON_AddNumberToObject(j, "allclose_fraction", (double)s->close_default / n);
  cJSON_AddNumberToObject(j, "user_close_fraction", (double)s->close_user / n);
  cJSON_AddItemToObject(j, "max_abs", gm_lab_json_num(s->max_abs));
  cJSON_AddItemToObject(j, "max_rel", gm_lab_json_num(s->max_rel));
  cJSON_AddNumberToObject(j, "max_ulp", (double)s->max_ulp);
  cJSON *h = cJSON_AddObjectToObject(j, "ulp_histogram");
  for (int b = 0; b < GM_LAB_BUCKETS; b++) cJSON_AddNumberToObject(h, gm_lab_bucket_labels[b], (double)s->hist[b]);
  cJSON_AddItemToObject(j, "mean_signed_error", gm_lab_json_num(gm_cmp_mean_signed(s)));
  cJSON_AddItemToObject(j, "rtol_needed", gm_lab_json_num(s->rtol_needed));
  cJSON_AddNumberToObject(j, "nan_mismatch", (double)s->nan_mismatch);
  if (s->have_worst) {
    cJSON *w = cJSON_AddObjectToObject(j, "worst");
    cJSON_AddItemToObject(w, "x", gm_lab_json_num(s->worst_x));
    cJSON_AddItemToObject(w, "a", gm_lab_json_num(s->worst_a));
    cJSON_AddItemToObject(w, "b", gm_lab_json_num(s->worst_b));
    cJSON_AddNumberToObject(w, "ulp", (double)s->worst_ulp);
  } else {
    cJSON_AddNullToObject(j, "worst");
  }
  return j;
}

static cJSON *verdict_json(const gm_report *r);

char *gm_report_verdict_json(const gm_report *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "verdict", verdict_json(r));
  char *s = cJSON_Print(o);
  cJSON_Delete(o);
  return s;
}

static cJSON *verdict_json(const gm_report *r) {
  cJSON *verdict = cJSON_CreateArray();
  for (int d = 0; d < RPT_NDT; d++)
    for (int v = 0; v < RPT_NVERDICT; v++) {
      gm_gelu_spec a = {GM_GELU_NEW, gm_rpt_verdict_modes[v][0]}, b = {GM_GELU_PYTORCH_TANH, gm_rpt_verdict_modes[v][1]};
      char na[64], nb[64], text[200];
      gm_gelu_spec_format(a, na, sizeof na);
      gm_gelu_spec_format(b, nb, sizeof nb);
      const gm_cmp_stats *s = gm_rpt_pair(&r->d[d], rpt_index(a), rpt_index(b));
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "dtype", gm_dtype_name(r->d[d].dt));
      cJSON_AddStringToObject(o, "a", na);
      cJSON_AddStringToObject(o, "b", nb);
      if (s) {
        gm_rpt_verdict_text(s, r->d[d].dt, text, sizeof text);
        cJSON_AddStringToObject(o, "verdict", text);
        cJSON_AddItemToObject(o, "stats", gm_cmp_stats_json(s));
        cJSON_AddItemToObject(o, "a_vs_exact", gm_cmp_stats_json(&r->d[d].vs_exact[rpt_index(a)]));
        cJSON_AddItemToObject(o, "b_vs_exact", gm_cmp_stats_json(&r->d[d].vs_exact[rpt_index(b)]));
      } else {
        cJSON_AddStringToObject(o, "verdict", "not available");
      }
      cJSON_AddItemToArray(verdict, o);
    }
  return verdict;
}

// report.json: config, the verdict pairs, the tensor experiment, and per dtype every spec against
// exact plus every pair (a < b in spec order).
cJSON *gm_rpt_json(const gm_report *r) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "generator", "gptmeg report");
  cJSON_AddStringToObject(root, "version", gm_version());
  cJSON_AddStringToObject(root, "generated", r->when);
  cJSON_AddNumberToObject(root, "seconds", r->seconds);
  char tt[512];
  gm_lab_target_text(tt, sizeof tt);
  cJSON_AddStringToObject(root, "torch_target", tt);
  cJSON *cfg = cJSON_AddObjectToObject(root, "config");
  cJSON_AddNumberToObject(cfg, "n_f32", (double)r->opts.n_f32);
  cJSON_AddNumberToObject(cfg, "seed", (double)r->opts.seed);
  cJSON_AddNumberToObject(cfg, "threads", r->opts.threads);
  cJSON_AddStringToObject(cfg, "torch_cpu_threads", "1");
  cJSON_AddItemToObject(root, "verdict", verdict_json(r));
  cJSON *tens = cJSON_AddArrayToObject(root, "tensor_equal");
  for (int t = 0; t < r->n_tensor; t++) {
    const rpt_tensor_row *T = &r->tensor[t];
    char na[64], nb[64];
    gm_gelu_spec_format(T->a, na, sizeof na);
    gm_gelu_spec_format(T->b, nb, sizeof nb);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "a", na);
    cJSON_AddStringToObject(o, "b", nb);
    cJSON_AddStringToObject(o, "dtype", gm_dtype_name(T->dt));
    cJSON_AddNumberToObject(o, "len", (double)T->len);
    cJSON_AddNumberToObject(o, "trials", (double)T->trials);
    if (T->ok) {
      cJSON_AddNumberToObject(o, "tensor_equal_fraction", (double)T->res.tensors_equal / (double)T->res.tensors);
      cJSON_AddNumberToObject(o, "equal_fraction", (double)T->res.ab.equal / (double)T->res.ab.n);
      cJSON_AddNumberToObject(o, "max_ulp", (double)T->res.ab.max_ulp);
    } else {
      cJSON_AddStringToObject(o, "error", T->err);
    }
    cJSON_AddItemToArray(tens, o);
  }
  cJSON *dts = cJSON_AddObjectToObject(root, "dtypes");
  for (int d = 0; d < RPT_NDT; d++) {
    const rpt_dtype *D = &r->d[d];
    cJSON *o = cJSON_AddObjectToObject(dts, gm_dtype_name(D->dt));
    cJSON_AddNumberToObject(o, "n", (double)D->n);
    cJSON_AddNumberToObject(o, "excluded_nonfinite", (double)D->excluded);
    cJSON_AddNumberToObject(o, "seconds", D->seconds);
    cJSON *ve = cJSON_AddObjectToObject(o, "vs_exact");
    cJSON *un = cJSON_AddObjectToObject(o, "unavailable");
    for (int i = 0; i < RPT_NSPEC; i++) {
      char name[64];
      gm_gelu_spec_format(rpt_spec(i), name, sizeof name);
      if (!D->ok[i]) cJSON_AddStringToObject(un, name, D->err[i]);
      else if (D->vs_exact[i].n) cJSON_AddItemToObject(ve, name, gm_cmp_stats_json(&D->vs_exact[i]));
    }
    cJSON *pairs = cJSON_AddArrayToObject(o, "pairs");
    for (int i = 0; i < RPT_NSPEC; i++)
      for (int j = i + 1; j < RPT_NSPEC; j++) {
        const gm_cmp_stats *s = gm_rpt_pair(D, i, j);
        if (!s) continue;
        char na[64], nb[64];
        gm_gelu_spec_format(rpt_spec(i), na, sizeof na);
        gm_gelu_spec_format(rpt_spec(j), nb, sizeof nb);
        cJSON *p = gm_cmp_stats_json(s);
        cJSON_AddStringToObject(p, "a", na);
        cJSON_AddStringToObject(p, "b", nb);
        cJSON_AddItemToArray(pairs, p);
      }
  }
  cJSON *extra = cJSON_AddObjectToObject(root, "sections");
  for (int s = 0; s < r->n_sections; s++) {
    cJSON *o = cJSON_AddObjectToObject(extra, r->sections[s].title);
    if (r->sections[s].fn(r, NULL, o, r->sections[s].user)) { cJSON_Delete(root); return NULL; }
  }
  return root;
}
