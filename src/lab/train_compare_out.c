// lab/train_compare_out: the text table, the JSON object and the SVG plot of a train-compare result
// (contract in include/gptmeg/traincmp.h).
#include "gptmeg/traincmp.h"
#include "lab/report_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// The largest of a step array's value over every step.
static double max_of(const gm_tc_step *s, long n, int what) {
  double m = 0;
  for (long k = 0; k < n; k++) {
    double v = what == 0 ? fabs(s[k].loss_diff) : what == 1 ? s[k].grad_rel : s[k].weight_drift;
    if (v > m || isnan(v)) m = v;
  }
  return m;
}

static void summary(const gm_tc_result *r, FILE *f) {
  const gm_tc_step *last = &r->ab[r->steps - 1];
  if (r->first_loss_outside) fprintf(f, "first step whose losses leave f32's tolerance (rtol %g, atol %g): %ld\n", r->tol.rtol, r->tol.atol, r->first_loss_outside);
  else fprintf(f, "the losses stay within f32's tolerance (rtol %g, atol %g) for all %ld steps\n", r->tol.rtol, r->tol.atol, r->steps);
  if (r->first_weights_differ) fprintf(f, "first step after which the weights differ: %ld\n", r->first_weights_differ);
  else fprintf(f, "the weights are bit-identical after every step\n");
  fprintf(f, "after %ld steps: weight drift %.3g, |loss diff| %.3g (max over steps %.3g), gradient rel diff %.3g\n", r->steps,
          last->weight_drift, fabs(last->loss_diff), max_of(r->ab, r->steps, 0), last->grad_rel);
  if (r->noise) {
    const gm_tc_step *nl = &r->noise[r->steps - 1];
    fprintf(f, "noise (A vs A on a shuffled batch order): weight drift %.3g after %ld steps", nl->weight_drift, r->steps);
    if (nl->weight_drift > 0) fprintf(f, "; A vs B drift is %.3g of it\n", last->weight_drift / nl->weight_drift);
    else fputc('\n', f);
  }
}

void gm_tc_print(const gm_tc_result *r, FILE *f) {
  fprintf(f, "train-compare: A = %s, B = %s; %ld steps of batch %d x %d (f32)\n", r->a_name, r->b_name, r->steps, r->B, r->T);
  fprintf(f, "%5s  %12s  %12s  %10s  %11s  %11s  %s%s\n", "step", "loss A", "loss B", "B - A", "grad rel", "w drift", "w equal",
          r->noise ? "   noise: grad rel  w drift" : "");
  for (long k = 0; k < r->steps; k++) {
    const gm_tc_step *s = &r->ab[k];
    fprintf(f, "%5ld  %12.8f  %12.8f  %10.3g%c %11.3g  %11.3g  %-7s", s->step, s->loss_a, s->loss_b, s->loss_diff,
            s->loss_close ? ' ' : '*', s->grad_rel, s->weight_drift, s->weights_equal ? "yes" : "no");
    if (r->noise) fprintf(f, "   %15.3g  %8.3g", r->noise[k].grad_rel, r->noise[k].weight_drift);
    fputc('\n', f);
  }
  if (r->first_loss_outside) fprintf(f, "(* the losses are not within f32's assert_close tolerance)\n");
  fprintf(f, "gradient rel diff per group at step %ld:", r->steps);
  for (int g = 0; g < r->n_groups; g++) fprintf(f, " %s %.3g", r->group[g], r->ab[r->steps - 1].grad_rel_group[g]);
  fputc('\n', f);
  summary(r, f);
}

static cJSON *step_json(const gm_tc_result *r, const gm_tc_step *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "step", (double)s->step);
  cJSON_AddItemToObject(o, "loss_a", gm_lab_json_num(s->loss_a));
  cJSON_AddItemToObject(o, "loss_b", gm_lab_json_num(s->loss_b));
  cJSON_AddItemToObject(o, "loss_diff", gm_lab_json_num(s->loss_diff));
  cJSON_AddBoolToObject(o, "loss_close", s->loss_close);
  cJSON_AddItemToObject(o, "grad_rel", gm_lab_json_num(s->grad_rel));
  cJSON *g = cJSON_AddObjectToObject(o, "grad_rel_groups");
  for (int k = 0; k < r->n_groups; k++) cJSON_AddItemToObject(g, r->group[k], gm_lab_json_num(s->grad_rel_group[k]));
  cJSON_AddItemToObject(o, "weight_drift", gm_lab_json_num(s->weight_drift));
  cJSON_AddBoolToObject(o, "weights_equal", s->weights_equal);
  return o;
}

static void add_step_or_null(cJSON *o, const char *name, long v) {
  if (v) cJSON_AddNumberToObject(o, name, (double)v);
  else cJSON_AddNullToObject(o, name);
}

void *gm_tc_json_obj(const gm_tc_result *r) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "a", r->a_name);
  cJSON_AddStringToObject(o, "b", r->b_name);
  cJSON_AddNumberToObject(o, "steps", (double)r->steps);
  cJSON_AddNumberToObject(o, "batch", r->B);
  cJSON_AddNumberToObject(o, "seq", r->T);
  cJSON *t = cJSON_AddObjectToObject(o, "tolerance");
  cJSON_AddNumberToObject(t, "rtol", r->tol.rtol);
  cJSON_AddNumberToObject(t, "atol", r->tol.atol);
  cJSON *g = cJSON_AddArrayToObject(o, "groups");
  for (int k = 0; k < r->n_groups; k++) cJSON_AddItemToArray(g, cJSON_CreateString(r->group[k]));
  cJSON *a = cJSON_AddArrayToObject(o, "per_step");
  for (long k = 0; k < r->steps; k++) cJSON_AddItemToArray(a, step_json(r, &r->ab[k]));
  add_step_or_null(o, "first_loss_outside", r->first_loss_outside);
  add_step_or_null(o, "first_weights_differ", r->first_weights_differ);
  cJSON_AddItemToObject(o, "final_weight_drift", gm_lab_json_num(r->ab[r->steps - 1].weight_drift));
  cJSON_AddItemToObject(o, "max_abs_loss_diff", gm_lab_json_num(max_of(r->ab, r->steps, 0)));
  if (r->noise) {
    cJSON *n = cJSON_AddObjectToObject(o, "noise");
    cJSON_AddStringToObject(n, "what", "A against A on the same batches in a shuffled order");
    cJSON *na = cJSON_AddArrayToObject(n, "per_step");
    for (long k = 0; k < r->steps; k++) cJSON_AddItemToArray(na, step_json(r, &r->noise[k]));
    add_step_or_null(n, "first_weights_differ", r->noise_first_weights_differ);
    double nd = r->noise[r->steps - 1].weight_drift;
    cJSON_AddItemToObject(n, "final_weight_drift", gm_lab_json_num(nd));
    cJSON_AddItemToObject(o, "drift_vs_noise", gm_lab_json_num(nd > 0 ? r->ab[r->steps - 1].weight_drift / nd : NAN));
  } else cJSON_AddNullToObject(o, "noise");
  cJSON_AddNumberToObject(o, "seconds", r->seconds);
  return o;
}

char *gm_tc_json(const gm_tc_result *r) {
  cJSON *o = gm_tc_json_obj(r);
  char *s = o ? cJSON_Print(o) : NULL;
  cJSON_Delete(o);
  return s;
}

// log10 of a value for the plot; 0 and non-finite values sit on the floor.
static double level(double v, double floor_lv) { return v > 0 && isfinite(v) ? fmax(log10(v), floor_lv) : floor_lv; }

static double series(const gm_tc_result *r, int k, long i) {
  const gm_tc_step *s = k < 2 ? &r->ab[i] : &r->noise[i];
  return (k % 2) == 0 ? fabs(s->loss_diff) : s->weight_drift;
}

void gm_tc_svg(const gm_tc_result *r, FILE *f) {
  const double W = 640, H = 260, L = 52, R = 12, T = 22, B = 40;
  double pw = W - L - R, ph = H - T - B, lo = -1, hi = -3;
  const int ns = r->noise ? 4 : 2;
  for (int k = 0; k < ns; k++)
    for (long i = 0; i < r->steps; i++) {
      double v = series(r, k, i);
      if (v > 0 && isfinite(v)) { lo = fmin(lo, floor(log10(v))); hi = fmax(hi, ceil(log10(v))); }
    }
  if (lo < -14) lo = -14;
  if (hi < lo + 1) hi = lo + 1;
  lo -= 1; // the floor decade holds exact zeros
  long n = r->steps;
#define DX(i) (L + pw * ((n > 1) ? (double)(i) / (double)(n - 1) : 0.5))
#define DY(lv) (T + ph - ((lv) - lo) / (hi - lo) * ph)
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\" font-family=\"sans-serif\" font-size=\"10\">\n",
          W, H, W, H);
  fprintf(f, "<text x=\"%.1f\" y=\"14\" font-size=\"12\">A ", L);
  gm_lab_html_esc(f, r->a_name);
  fputs(" vs B ", f);
  gm_lab_html_esc(f, r->b_name);
  fputs(": |loss difference| and weight drift per step</text>\n", f);
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fcfcfd\" stroke=\"#c9ced6\"/>\n", L, T, pw, ph);
  for (int k = (int)lo; k <= (int)hi; k++) {
    double y = DY((double)k);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e6ea\"/>", L, L + pw, y, y);
    if (k == (int)lo) fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0</text>\n", L - 4, y + 3);
    else fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1e%d</text>\n", L - 4, y + 3, k);
  }
  long tick = n <= 10 ? 1 : (n + 9) / 10;
  for (long i = 0; i < n; i += tick) fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%ld</text>", DX(i), T + ph + 14, i + 1);
  fprintf(f, "\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n", L + pw / 2, H - 6);
  static const char *col[4] = {"#1f77b4", "#d62728", "#9ecae1", "#f4a6a6"};
  static const char *what[4] = {"|loss B - loss A|", "weight drift A vs B", "noise |loss diff|", "noise weight drift"};
  for (int k = 0; k < ns; k++) {
    fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s d=\"", col[k], k >= 2 ? " stroke-dasharray=\"4 2\"" : "");
    for (long i = 0; i < n; i++) fprintf(f, "%c%.1f %.1f", i ? 'L' : 'M', DX(i), DY(level(series(r, k, i), lo)));
    fprintf(f, "\"/>\n");
    for (long i = 0; i < n; i++)
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"%s\"><title>step %ld, %s: %.3g</title></circle>", DX(i),
              DY(level(series(r, k, i), lo)), col[k], i + 1, what[k], series(r, k, i));
    fprintf(f, "\n<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n", L + 6 + 140 * k, T + 12, col[k], what[k]);
  }
  if (r->first_loss_outside) {
    double x = DX(r->first_loss_outside - 1);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ff7f0e\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"#ff7f0e\">loss leaves tolerance</text>\n",
            x, x, T, T + ph, x + 2, T + ph - 4);
  }
#undef DX
#undef DY
  fprintf(f, "</svg>\n");
}

int gm_tc_write_svg(const gm_tc_result *r, const char *path) {
  gm_outfile o;
  if (gm_outfile_open(&o, path)) return -1;
  gm_tc_svg(r, o.fp);
  if (ferror((FILE *)o.fp)) { gm_outfile_abort(&o); return gm_fail("write to '%s' failed: %s", path, strerror(errno)); }
  return gm_outfile_commit(&o);
}
