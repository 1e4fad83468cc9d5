// lab/diverge_out: the divergence result as a text table, JSON, and an SVG plot of RMS relative
// difference against depth. Contracts in include/gptmeg/diverge.h.
#include "lab/diverge_internal.h"
#include "lab/report_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double gm_dv_outside_fraction(const gm_dv_metrics *m) { return m->n ? (double)m->n_outside / (double)m->n : 0.0; }

// "L0 ln_1" / "embed": the row's label.
static void row_label(const gm_dv_row *R, char *buf, size_t n) {
  if (R->layer < 0) snprintf(buf, n, "%s", gm_point_name(R->point));
  else snprintf(buf, n, "%d %s", R->layer, gm_point_name(R->point));
}

static void tol_text(const gm_dv_result *r, char *buf, size_t n) {
  if (r->ulp > 0) snprintf(buf, n, "%llu ULP of %s", (unsigned long long)r->ulp, gm_dtype_name(r->cmp_dtype));
  else snprintf(buf, n, "rtol %g, atol %g", r->tol.rtol, r->tol.atol);
}

void gm_dv_print(const gm_dv_result *r, FILE *f) {
  char tol[96];
  tol_text(r, tol, sizeof tol);
  fprintf(f, "A: %s   B: %s   compared in %s, tolerance %s   tokens [%d, %d]\n", r->a_name, r->b_name,
          gm_dtype_name(r->cmp_dtype), tol, r->B, r->T);
  char tt[512];
  gm_lab_target_text(tt, sizeof tt);
  fprintf(f, "torch target: %s\n", tt);
  fprintf(f, "%-16s %11s %11s %9s %9s", "point", "max_abs", "rms_rel", "max_ulp", "outside");
  if (r->have_added) fprintf(f, " | %11s %11s | %11s %11s", "added abs", "added rms", "inher abs", "inher rms");
  fprintf(f, "\n");
  for (int i = 0; i < r->n_rows; i++) {
    const gm_dv_row *R = &r->rows[i];
    char lab[48];
    row_label(R, lab, sizeof lab);
    fprintf(f, "%-16s %11.4g %11.4g %9llu %8.4f%%", lab, R->total.max_abs, R->total.rms_rel,
            (unsigned long long)R->total.max_ulp, 100.0 * gm_dv_outside_fraction(&R->total));
    if (r->have_added)
      fprintf(f, " | %11.4g %11.4g | %11.4g %11.4g", R->added.max_abs, R->added.rms_rel, R->inherited.max_abs, R->inherited.rms_rel);
    if (i == r->first_outside) fprintf(f, "  <- first outside the tolerance");
    fprintf(f, "\n");
  }
  if (r->first_outside < 0) fprintf(f, "every point is within the tolerance\n");
  fprintf(f, "top-1: %d of %d positions differ", r->top1_differ, r->top1_positions);
  if (r->top1_differ) fprintf(f, " (%d near ties: A's top-2 margin within the tolerance; %d flips)", r->top1_near_ties, r->top1_flips);
  fprintf(f, "\n");
}

// Adds m's fields to o (all of them when full, else max_abs and rms_rel); returns o.
static cJSON *metrics_json(cJSON *o, const gm_dv_metrics *m, bool full) {
  cJSON_AddItemToObject(o, "max_abs", gm_lab_json_num(m->max_abs));
  if (full) cJSON_AddItemToObject(o, "max_rel", gm_lab_json_num(m->max_rel));
  cJSON_AddItemToObject(o, "rms_rel", gm_lab_json_num(m->rms_rel));
  if (full) {
    cJSON_AddNumberToObject(o, "max_ulp", (double)m->max_ulp);
    cJSON_AddNumberToObject(o, "outside_fraction", gm_dv_outside_fraction(m));
  }
  return o;
}

void *gm_dv_json_obj(const gm_dv_result *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "a", r->a_name);
  cJSON_AddStringToObject(o, "b", r->b_name);
  char tt[512];
  gm_lab_target_text(tt, sizeof tt);
  cJSON_AddStringToObject(o, "torch_target", tt);
  cJSON_AddBoolToObject(o, "against", r->against);
  cJSON_AddStringToObject(o, "compare_dtype", gm_dtype_name(r->cmp_dtype));
  cJSON *t = cJSON_AddObjectToObject(o, "tolerance");
  if (r->ulp > 0) cJSON_AddNumberToObject(t, "ulp", (double)r->ulp);
  else { cJSON_AddNumberToObject(t, "rtol", r->tol.rtol); cJSON_AddNumberToObject(t, "atol", r->tol.atol); }
  cJSON_AddNumberToObject(o, "B", r->B);
  cJSON_AddNumberToObject(o, "T", r->T);
  cJSON *pts = cJSON_AddArrayToObject(o, "points");
  for (int i = 0; i < r->n_rows; i++) {
    const gm_dv_row *R = &r->rows[i];
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "layer", R->layer);
    cJSON_AddStringToObject(p, "point", gm_point_name(R->point));
    metrics_json(p, &R->total, true);
    if (r->have_added) {
      cJSON_AddItemToObject(p, "added", metrics_json(cJSON_CreateObject(), &R->added, false));
      cJSON_AddItemToObject(p, "inherited", metrics_json(cJSON_CreateObject(), &R->inherited, false));
    }
    cJSON_AddItemToArray(pts, p);
  }
  if (r->first_outside < 0) cJSON_AddNullToObject(o, "first_outside");
  else {
    const gm_dv_row *R = &r->rows[r->first_outside];
    cJSON *fo = cJSON_AddObjectToObject(o, "first_outside");
    cJSON_AddNumberToObject(fo, "layer", R->layer);
    cJSON_AddStringToObject(fo, "point", gm_point_name(R->point));
  }
  cJSON *t1 = cJSON_AddObjectToObject(o, "top1");
  cJSON_AddNumberToObject(t1, "positions", r->top1_positions);
  cJSON_AddNumberToObject(t1, "differ", r->top1_differ);
  cJSON_AddNumberToObject(t1, "near_ties", r->top1_near_ties);
  cJSON_AddNumberToObject(t1, "flips", r->top1_flips);
  cJSON_AddNumberToObject(o, "seconds", r->seconds);
  return o;
}

char *gm_dv_json(const gm_dv_result *r) {
  cJSON *o = gm_dv_json_obj(r);
  char *s = o ? cJSON_Print(o) : NULL;
  cJSON_Delete(o);
  return s;
}

// log10 of an rms_rel value for the plot; 0 and non-finite values sit on the floor.
static double level(double v, double floor_lv) { return v > 0 && isfinite(v) ? fmax(log10(v), floor_lv) : floor_lv; }

void gm_dv_svg(const gm_dv_result *r, FILE *f) {
  const double W = 640, H = 260, L = 52, R = 12, T = 22, B = 40;
  double pw = W - L - R, ph = H - T - B, lo = -1, hi = -3;
  for (int i = 0; i < r->n_rows; i++) { // decades shown: from the smallest non-zero value to the largest
    double v[2] = {r->rows[i].total.rms_rel, r->have_added ? r->rows[i].added.rms_rel : 0};
    for (int k = 0; k < 2; k++)
      if (v[k] > 0 && isfinite(v[k])) { lo = fmin(lo, floor(log10(v[k]))); hi = fmax(hi, ceil(log10(v[k]))); }
  }
  if (lo < -12) lo = -12;
  if (hi < lo + 1) hi = lo + 1;
  lo -= 1; // the floor decade holds exact zeros
  int n = r->n_rows;
#define DX(i) (L + pw * ((n > 1) ? (double)(i) / (n - 1) : 0.5))
#define DY(lv) (T + ph - ((lv) - lo) / (hi - lo) * ph)
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\" font-family=\"sans-serif\" font-size=\"10\">\n",
          W, H, W, H);
  fprintf(f, "<text x=\"%.1f\" y=\"14\" font-size=\"12\">", L);
  fputs("A ", f);
  gm_lab_html_esc(f, r->a_name);
  fputs(" vs B ", f);
  gm_lab_html_esc(f, r->b_name);
  fputs(": RMS relative difference per point</text>\n", f);
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fcfcfd\" stroke=\"#c9ced6\"/>\n", L, T, pw, ph);
  for (int k = (int)lo; k <= (int)hi; k++) {
    double y = DY((double)k);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e6ea\"/>", L, L + pw, y, y);
    if (k == (int)lo) fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0</text>\n", L - 4, y + 3);
    else fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1e%d</text>\n", L - 4, y + 3, k);
  }
  for (int i = 0; i < n; i++) { // layer boundaries and labels
    if (r->rows[i].point == GM_PT_LN1 || r->rows[i].point == GM_PT_LNF) {
      double x = DX(i - 0.5);
      fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c9ced6\" stroke-dasharray=\"2 2\"/>", x, x, T, T + ph);
      if (r->rows[i].point == GM_PT_LN1) fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">layer %d</text>\n", x + 2, T + ph + 14, r->rows[i].layer);
    }
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">depth (points in execution order)</text>\n", L + pw / 2, H - 6);
  static const char *col[2] = {"#1f77b4", "#d62728"};
  static const char *what[2] = {"total (B vs A)", "added (B's op on A's inputs vs A)"};
  for (int k = 0; k < (r->have_added ? 2 : 1); k++) {
    fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" d=\"", col[k]);
    for (int i = 0; i < n; i++) {
      double v = k == 0 ? r->rows[i].total.rms_rel : r->rows[i].added.rms_rel;
      fprintf(f, "%c%.1f %.1f", i ? 'L' : 'M', DX(i), DY(level(v, lo)));
    }
    fprintf(f, "\"/>\n");
    for (int i = 0; i < n; i++) {
      double v = k == 0 ? r->rows[i].total.rms_rel : r->rows[i].added.rms_rel;
      char lab[48];
      row_label(&r->rows[i], lab, sizeof lab);
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"%s\"><title>%s%s: %.3g</title></circle>", DX(i),
              DY(level(v, lo)), col[k], k ? "added, " : "", lab, v);
    }
    fprintf(f, "\n<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n", L + 6 + 250 * k, T + 12, col[k], what[k]);
  }
  if (r->first_outside >= 0) {
    double x = DX(r->first_outside);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ff7f0e\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"#ff7f0e\">first outside</text>\n",
            x, x, T, T + ph, x + 2, T + ph - 4);
  }
#undef DX
#undef DY
  fprintf(f, "</svg>\n");
}

int gm_dv_write_svg(const gm_dv_result *r, const char *path) {
  gm_outfile o;
  if (gm_outfile_open(&o, path)) return -1;
  gm_dv_svg(r, o.fp);
  if (ferror((FILE *)o.fp)) { gm_outfile_abort(&o); return gm_fail("write to '%s' failed: %s", path, strerror(errno)); }
  return gm_outfile_commit(&o);
}
