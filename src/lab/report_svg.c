// lab/report_svg: hand-written inline SVG for the report: ULP error against x per variant (one
// line per mode, log-scale y), and the pairwise compatibility heatmap.
#include "lab/report_internal.h"

#include <math.h>

static const char *mode_color[GM_GELU_N_MODES] = {"#000000", "#d62728", "#1f77b4", "#ff7f0e", "#2ca02c"};

// y position of a ULP value: 0 sits half a decade below 1, then log10.
static double ulp_level(double u) { return u <= 0 ? -0.5 : log10(u); }

void gm_rpt_svg_ulp_plot(FILE *f, const rpt_dtype *d, gm_gelu_variant v) {
  const double W = 340, H = 200, L = 46, R = 10, T = 10, B = 28;
  double top = 1; // decades shown
  for (int m = 1; m < GM_GELU_N_MODES; m++) {
    int i = v * GM_GELU_N_MODES + m;
    for (int b = 0; b < RPT_BINS; b++)
      if (d->bin_max_ulp[i][b] > 0 && ulp_level(d->bin_max_ulp[i][b]) > top) top = ceil(ulp_level(d->bin_max_ulp[i][b]));
  }
  if (top > 12) top = 12;
  double pw = W - L - R, ph = H - T - B;
#define PX(x) (L + ((x) - RPT_XMIN) / (RPT_XMAX - RPT_XMIN) * pw)
#define PY(lv) (T + ph - ((lv) + 0.5) / (top + 0.5) * ph)
  fprintf(f, "<svg class=\"plot\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", W, H, W, H);
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fcfcfd\" stroke=\"#c9ced6\"/>\n", L, T, pw, ph);
  for (int k = 0; k <= (int)top; k++) { // decade grid
    double y = PY((double)k);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e6ea\"/>", L, L + pw, y, y);
    if (k == 0) fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">1</text>\n", L - 4, y + 3);
    else if (k < 4) fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">%.0f</text>\n", L - 4, y + 3, pow(10, k));
    else fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">1e%d</text>\n", L - 4, y + 3, k);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">0</text>\n", L - 4, PY(-0.5) + 3);
  for (int xt = -12; xt <= 12; xt += 4) {
    double x = PX((double)xt);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>", x, x, T, T + ph, xt == 0 ? "#c9ced6" : "#eef0f3");
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"middle\">%d</text>\n", x, T + ph + 14, xt);
  }
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"axis\" text-anchor=\"middle\">x</text>\n", L + pw / 2, H - 2);
  fprintf(f, "<text x=\"10\" y=\"%.1f\" class=\"axis\" text-anchor=\"middle\" transform=\"rotate(-90 10 %.1f)\">max ULP vs exact</text>\n",
          T + ph / 2, T + ph / 2);
  for (int m = 1; m < GM_GELU_N_MODES; m++) {
    int i = v * GM_GELU_N_MODES + m;
    if (!d->ok[i]) continue;
    static const char *style[GM_GELU_N_MODES] = {"", "stroke-width=\"3.2\" stroke-opacity=\"0.45\"", "stroke-width=\"1.6\"",
                                             "stroke-width=\"1.3\" stroke-dasharray=\"4 2\"", "stroke-width=\"1.4\""};
    fprintf(f, "<path fill=\"none\" stroke=\"%s\" %s d=\"", mode_color[m], style[m]);
    bool pen = false;
    for (int b = 0; b < RPT_BINS; b++) {
      double u = d->bin_max_ulp[i][b];
      if (u < 0) { pen = false; continue; }
      double lv = ulp_level(u);
      if (lv > top) lv = top;
      double x0 = PX(RPT_XMIN + (RPT_XMAX - RPT_XMIN) * b / RPT_BINS), x1 = PX(RPT_XMIN + (RPT_XMAX - RPT_XMIN) * (b + 1) / RPT_BINS);
      fprintf(f, "%c%.1f %.1fH%.1f", pen ? 'L' : 'M', x0, PY(lv), x1);
      pen = true;
    }
    fprintf(f, "\"><title>%s:%s</title></path>\n", gm_gelu_variant_info(v)->name, gm_gelu_mode_name((gm_gelu_mode)m));
  }
  fprintf(f, "</svg>\n");
#undef PX
#undef PY
}

static const char *cell_color(const gm_cmp_stats *s) {
  if (!s) return "#eceef1";
  if (s->equal == s->n) return "#1a7f37";
  if (s->close_default == s->n) return s->max_ulp <= 2 ? "#4cb86a" : "#a3d977";
  if (s->max_ulp <= 16) return "#f4d35e";
  if (s->max_ulp <= 256) return "#f29e4c";
  return "#d1495b";
}

void gm_rpt_svg_matrix(FILE *f, const rpt_dtype *d) {
  const int cell = 11, lab = 150, top = 64;
  int W = lab + cell * RPT_NSPEC + 10, H = top + cell * RPT_NSPEC + 10;
  fprintf(f, "<svg class=\"matrix\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">\n", W, H, W, H);
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++) {
    int x = lab + v * GM_GELU_N_MODES * cell + cell / 2;
    fprintf(f, "<text class=\"mlab\" transform=\"translate(%d %d) rotate(-45)\">%s</text>\n", x, top - 4, gm_gelu_variant_info((gm_gelu_variant)v)->name);
  }
  for (int i = 0; i < RPT_NSPEC; i++) {
    gm_gelu_spec si = rpt_spec(i);
    char ni[64];
    gm_gelu_spec_format(si, ni, sizeof ni);
    fprintf(f, "<text class=\"mlab\" x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", lab - 4, top + i * cell + cell - 2, ni);
    for (int j = 0; j <= i; j++) {
      int x = lab + j * cell, y = top + i * cell;
      if (i == j) { fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#ffffff\" stroke=\"#d5d9de\"/>\n", x, y, cell - 1, cell - 1); continue; }
      const gm_cmp_stats *s = gm_rpt_pair(d, i, j);
      char nj[64];
      gm_gelu_spec_format(rpt_spec(j), nj, sizeof nj);
      fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>", x, y, cell - 1, cell - 1, cell_color(s));
      if (s)
        fprintf(f, "%s vs %s: %.2f%% bitwise equal, %.2f%% within assert_close, max %llu ulp", ni, nj, 100.0 * (double)s->equal / (double)s->n,
                100.0 * (double)s->close_default / (double)s->n, (unsigned long long)s->max_ulp);
      else fprintf(f, "%s vs %s: not available", ni, nj);
      fprintf(f, "</title></rect>\n");
    }
    if (si.mode == 0 && i) fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#6b7280\" stroke-width=\"0.8\"/>\n", lab, lab + i * cell, top + i * cell - 1, top + i * cell - 1);
  }
  fprintf(f, "</svg>\n");
}
