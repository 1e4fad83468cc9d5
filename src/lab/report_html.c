// lab/report_html: the report page (index.html): verdict first, then the torch.equal experiment,
// accuracy against the ideal, ULP-vs-x plots, compatibility heatmaps, method notes. No external
// resources: CSS and SVG are inline.
#include "lab/report_internal.h"

#include <math.h>
#include <string.h>

void gm_lab_html_esc(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else if (*s == '"') fputs("&quot;", f);
    else fputc(*s, f);
  }
}

static const char *css =
    ":root{--fg:#1f2328;--muted:#59636e;--line:#d8dee4;--bg:#ffffff;--soft:#f6f8fa;--accent:#0b5cad}"
    "*{box-sizing:border-box}body{margin:0;font:14px/1.5 -apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}"
    "header{background:#0d1b2a;color:#fff;padding:28px 40px}header h1{margin:0 0 6px;font-size:24px;font-weight:600}"
    "header p{margin:0;color:#c5d0dc;font-size:13px}main{max-width:1280px;margin:0 auto;padding:8px 40px 60px}"
    "h2{font-size:19px;margin:34px 0 8px;padding-bottom:6px;border-bottom:1px solid var(--line)}h3{font-size:15px;margin:22px 0 6px}"
    "p.lead{color:var(--muted);margin:4px 0 12px;max-width:980px}"
    "table{border-collapse:collapse;margin:8px 0 14px;font-size:13px}th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}"
    "th{background:var(--soft);font-weight:600;text-align:center;border-top:1px solid var(--line);white-space:normal;vertical-align:bottom}td.l,th.l{text-align:left}"
    "tbody tr:hover{background:#f0f6fc}code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--soft);padding:1px 4px;border-radius:4px}"
    ".badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;white-space:nowrap}"
    ".ok{background:#dafbe1;color:#116329}.close{background:#eaf5d3;color:#3d6b0b}.warn{background:#fff4d4;color:#7a4d00}.bad{background:#ffe3e6;color:#a0111f}.na{background:#eceef1;color:#59636e}"
    ".answer{background:#f3f8ff;border:1px solid #c8dcf4;border-left:4px solid var(--accent);padding:12px 16px;border-radius:6px;max-width:1100px}"
    ".tol{color:var(--muted);font-size:11px;font-weight:400}.answer li{margin:3px 0}.grid{display:flex;flex-wrap:wrap;gap:10px 18px}.fig{border:1px solid var(--line);border-radius:6px;padding:6px 8px 2px;background:#fff}"
    ".fig h4{margin:0 0 2px;font-size:13px;font-weight:600}.fig .note{font-size:11px;color:var(--muted);margin:0 0 4px}"
    "svg text.tick{font-size:10px;fill:#59636e}svg text.axis{font-size:11px;fill:#1f2328}svg text.mlab{font-size:9px;fill:#1f2328}"
    ".legend span{display:inline-block;margin-right:16px;font-size:12px}.legend i{display:inline-block;width:18px;height:3px;vertical-align:middle;margin-right:5px}"
    ".legend b{display:inline-block;width:12px;height:12px;vertical-align:-2px;margin-right:5px;border-radius:2px}"
    "nav{font-size:13px;margin:14px 0 0}nav a{color:var(--accent);margin-right:14px;text-decoration:none}"
    "dl{display:grid;grid-template-columns:200px 1fr;gap:4px 16px;max-width:1100px}dt{font-weight:600}dd{margin:0;color:#333}"
    "footer{color:var(--muted);font-size:12px;margin-top:40px}";

static double pct(uint64_t a, uint64_t n) { return n ? 100.0 * (double)a / (double)n : 0; }

static void pct_cell(FILE *f, uint64_t a, uint64_t n) {
  double p = pct(a, n);
  if (a == n) fprintf(f, "<td>100%%</td>");
  else if (p >= 99.995) fprintf(f, "<td>&gt;99.99%%</td>");
  else fprintf(f, "<td>%.2f%%</td>", p);
}

static const char *ulp_class(uint64_t u) { return u == 0 ? "ok" : u <= 2 ? "close" : u <= 256 ? "warn" : "bad"; }

static void ulp_badge(FILE *f, const gm_cmp_stats *s) {
  if (!s || !s->n) { fprintf(f, "<span class=\"badge na\">n/a</span>"); return; }
  fprintf(f, "<span class=\"badge %s\">%llu</span>", ulp_class(s->max_ulp), (unsigned long long)s->max_ulp);
  if (s->nan_mismatch) fprintf(f, " <span class=\"badge bad\">NaN&times;%llu</span>", (unsigned long long)s->nan_mismatch);
}

static void spec_name(gm_gelu_spec s, char *buf, size_t n) { gm_gelu_spec_format(s, buf, n); }

static void verdict_badge(FILE *f, const gm_cmp_stats *s) {
  if (s->equal == s->n) fprintf(f, "<span class=\"badge ok\">drop-in, bitwise</span>");
  else if (s->close_default == s->n) fprintf(f, "<span class=\"badge close\">yes, assert_close</span>");
  else fprintf(f, "<span class=\"badge bad\">no</span>");
}

static void section_verdict(const gm_report *r, FILE *f) {
  fprintf(f, "<h2 id=\"verdict\">Can <code>gelu_new</code> be replaced by <code>gelu_pytorch_tanh</code>?</h2>\n");
  fprintf(f, "<p class=\"lead\">Same inputs, both formulas. <b>torch-cpu</b> is what PyTorch on CPU computes (bit for bit, one tensor, 1 thread); "
             "<b>eager &rarr; fused</b> is HF's op-by-op <code>gelu_new</code> against a one-kernel <code>F.gelu(x, approximate='tanh')</code> "
             "computed in f32 opmath (the CUDA kernel's arithmetic); <b>accurate</b> is gptmeg's own kernels. "
             "&ldquo;vs ideal&rdquo; is each side's distance to its own formula evaluated exactly and correctly rounded.</p>\n");
  fprintf(f, "<div class=\"answer\"><ul>\n");
  for (int d = 0; d < RPT_NDT; d++) {
    const rpt_dtype *D = &r->d[d];
    gm_gelu_spec a = {GM_GELU_NEW, GM_MODE_TORCH_CPU}, b = {GM_GELU_PYTORCH_TANH, GM_MODE_TORCH_CPU};
    const gm_cmp_stats *s = gm_rpt_pair(D, rpt_index(a), rpt_index(b));
    const gm_cmp_stats *ea = &D->vs_exact[rpt_index(a)], *eb = &D->vs_exact[rpt_index(b)];
    gm_tolerance t = gm_default_tolerance(D->dt);
    fprintf(f, "<li><b>%s</b>: ", gm_dtype_name(D->dt));
    if (!s) { fprintf(f, "torch-cpu not available in this build.</li>\n"); continue; }
    if (s->equal == s->n) fprintf(f, "yes, bitwise identical on all %zu inputs", D->n);
    else if (s->close_default == s->n)
      fprintf(f, "yes under <code>assert_close</code> (rtol %g, atol %g), but not bitwise: %.2f%% of outputs differ, by up to %llu ULP, "
                 "at most %.3g apart%s", t.rtol, t.atol, 100 - pct(s->equal, s->n), (unsigned long long)s->max_ulp, s->max_abs,
              s->max_abs <= t.atol && s->max_ulp > 256 ? " (huge ULP counts at outputs far below atol: the negative tail)" : "");
    else
      fprintf(f, "no under <code>assert_close</code>: %.3g%% of inputs fail (up to %llu ULP apart); it would pass at rtol %.3g", 100 - pct(s->close_default, s->n),
              (unsigned long long)s->max_ulp, s->rtol_needed);
    fprintf(f, ". Against the ideal: <code>gelu_new</code> is off by up to %llu ULP, <code>gelu_pytorch_tanh</code> by up to %llu ULP%s.</li>\n",
            (unsigned long long)ea->max_ulp, (unsigned long long)eb->max_ulp,
            eb->max_ulp < ea->max_ulp ? " &mdash; the replacement is the more accurate one" : "");
  }
  fprintf(f, "</ul></div>\n");
  fprintf(f, "<table><thead><tr><th>dtype</th><th class=\"l\">gelu_new as</th><th class=\"l\">gelu_pytorch_tanh as</th><th>bitwise equal</th>"
             "<th>within assert_close</th><th>max ULP apart</th><th>rtol needed</th><th>max abs</th>"
             "<th>gelu_new vs ideal (ULP)</th><th>pytorch_tanh vs ideal (ULP)</th><th class=\"l\">verdict</th></tr></thead><tbody>\n");
  for (int d = 0; d < RPT_NDT; d++) {
    const rpt_dtype *D = &r->d[d];
    gm_tolerance t = gm_default_tolerance(D->dt);
    for (int v = 0; v < RPT_NVERDICT; v++) {
      gm_gelu_spec a = {GM_GELU_NEW, gm_rpt_verdict_modes[v][0]}, b = {GM_GELU_PYTORCH_TANH, gm_rpt_verdict_modes[v][1]};
      const gm_cmp_stats *s = gm_rpt_pair(D, rpt_index(a), rpt_index(b));
      fprintf(f, "<tr><td class=\"l\"><b>%s</b> <span class=\"tol\">(%g, %g)</span></td><td class=\"l\">%s</td><td class=\"l\">%s</td>", gm_dtype_name(D->dt),
              t.rtol, t.atol, gm_gelu_mode_name(a.mode), gm_gelu_mode_name(b.mode));
      if (!s) { fprintf(f, "<td colspan=\"8\" class=\"l\"><span class=\"badge na\">not available in this build</span></td></tr>\n"); continue; }
      pct_cell(f, s->equal, s->n);
      pct_cell(f, s->close_default, s->n);
      fprintf(f, "<td>");
      ulp_badge(f, s);
      if (isinf(s->rtol_needed)) fprintf(f, "</td><td>&infin;</td>");
      else fprintf(f, "</td><td>%.3g</td>", s->rtol_needed);
      fprintf(f, "<td>%.3g</td><td>", s->max_abs);
      ulp_badge(f, &D->vs_exact[rpt_index(a)]);
      fprintf(f, "</td><td>");
      ulp_badge(f, &D->vs_exact[rpt_index(b)]);
      fprintf(f, "</td><td class=\"l\">");
      verdict_badge(f, s);
      fprintf(f, "</td></tr>\n");
    }
  }
  fprintf(f, "</tbody></table>\n<p class=\"lead\"><b>rtol needed</b>: the smallest rtol at which every output passes with the dtype's default atol. "
             "Huge ULP counts next to 100%% within assert_close sit at outputs far below atol (large negative x), where a written formula "
             "returns &minus;0 or a tiny value instead of the exact tail. "
             "Inputs: every finite f16/bf16 value; f32: %zu values (special values plus a mix of magnitudes, see Method).</p>\n", r->d[0].n);
}

static void section_tensors(const gm_report *r, FILE *f) {
  fprintf(f, "<h2 id=\"tensors\">The 3&times;3 experiment: <code>torch.equal</code> on whole tensors</h2>\n");
  fprintf(f, "<p class=\"lead\"><code>torch.equal(F.gelu(x, approximate='tanh'), gelu_new(x))</code> as PyTorch on CPU computes them (torch-cpu, 1 thread), "
             "for many tensors of N(0,1) inputs. PyTorch's vector loop handles whole blocks and sends the rest of each tensor to libm, so the answer depends on the length.</p>\n");
  fprintf(f, "<table><thead><tr><th>dtype</th><th>tensor length</th><th>tensors</th><th>tensors bitwise equal</th><th>elements bitwise equal</th><th>max ULP apart</th></tr></thead><tbody>\n");
  for (int t = 0; t < r->n_tensor; t++) {
    const rpt_tensor_row *T = &r->tensor[t];
    fprintf(f, "<tr><td class=\"l\">%s</td><td>%zu%s</td><td>%zu</td>", gm_dtype_name(T->dt), T->len, T->len == 9 ? " (3&times;3)" : "", T->trials);
    if (!T->ok) { fprintf(f, "<td colspan=\"3\" class=\"l\"><span class=\"badge na\">"); gm_lab_html_esc(f, T->err); fprintf(f, "</span></td></tr>\n"); continue; }
    pct_cell(f, T->res.tensors_equal, T->res.tensors);
    pct_cell(f, T->res.ab.equal, T->res.ab.n);
    fprintf(f, "<td>");
    ulp_badge(f, &T->res.ab);
    fprintf(f, "</td></tr>\n");
  }
  fprintf(f, "</tbody></table>\n");
}

static void section_accuracy(const gm_report *r, FILE *f) {
  fprintf(f, "<h2 id=\"accuracy\">Every variant:mode against the ideal</h2>\n");
  fprintf(f, "<p class=\"lead\">Each output against its variant's <b>exact</b> mode (the formula over the reals, correctly rounded). "
             "Max ULP error, the share of outputs that are correctly rounded, and the share within <code>assert_close</code> of the ideal.</p>\n");
  fprintf(f, "<table><thead><tr><th class=\"l\" rowspan=\"2\">variant:mode</th>");
  for (int d = 0; d < RPT_NDT; d++) fprintf(f, "<th colspan=\"3\">%s</th>", gm_dtype_name(r->d[d].dt));
  fprintf(f, "</tr><tr>");
  for (int d = 0; d < RPT_NDT; d++) fprintf(f, "<th>max ULP</th><th>correctly rounded</th><th>assert_close</th>");
  fprintf(f, "</tr></thead><tbody>\n");
  for (int i = 0; i < RPT_NSPEC; i++) {
    gm_gelu_spec s = rpt_spec(i);
    if (s.mode == GM_MODE_EXACT) continue;
    char name[64];
    spec_name(s, name, sizeof name);
    fprintf(f, "<tr><td class=\"l\"><code>%s</code></td>", name);
    for (int d = 0; d < RPT_NDT; d++) {
      const rpt_dtype *D = &r->d[d];
      const gm_cmp_stats *e = &D->vs_exact[i];
      if (!D->ok[i] || !e->n) { fprintf(f, "<td colspan=\"3\"><span class=\"badge na\">n/a</span></td>"); continue; }
      fprintf(f, "<td>");
      ulp_badge(f, e);
      fprintf(f, "</td>");
      pct_cell(f, e->equal, e->n);
      pct_cell(f, e->close_default, e->n);
    }
    fprintf(f, "</tr>\n");
  }
  fprintf(f, "</tbody></table>\n");
}

static void section_plots(const gm_report *r, FILE *f) {
  static const char *colors[GM_GELU_N_MODES] = {"#000000", "#d62728", "#1f77b4", "#ff7f0e", "#2ca02c"};
  fprintf(f, "<h2 id=\"plots\">ULP error against x</h2>\n");
  fprintf(f, "<p class=\"lead\">Maximum ULP distance to the exact result in bins of width %.1f over x in [%g, %g), log scale (0 = correctly rounded). "
             "The note under each title gives the worst error outside that range.</p>\n<p class=\"legend\">",
          (RPT_XMAX - RPT_XMIN) / RPT_BINS, RPT_XMIN, RPT_XMAX);
  for (int m = 1; m < GM_GELU_N_MODES; m++) fprintf(f, "<span><i style=\"background:%s;height:%dpx\"></i>%s</span>", colors[m], m == 1 ? 4 : 2, gm_gelu_mode_name((gm_gelu_mode)m));
  fprintf(f, "<span>(eager drawn wide and light, torch-cpu dashed, so coinciding modes stay visible)</span>");
  fprintf(f, "</p>\n");
  for (int d = 0; d < RPT_NDT; d++) {
    const rpt_dtype *D = &r->d[d];
    fprintf(f, "<h3>%s</h3>\n<div class=\"grid\">\n", gm_dtype_name(D->dt));
    for (int v = 0; v < GM_GELU_N_VARIANTS; v++) {
      uint64_t out = 0;
      for (int m = 1; m < GM_GELU_N_MODES; m++) if (D->outside_max_ulp[v * GM_GELU_N_MODES + m] > out) out = D->outside_max_ulp[v * GM_GELU_N_MODES + m];
      fprintf(f, "<div class=\"fig\"><h4>%s</h4><p class=\"note\">|x| &ge; 12: max %llu ULP</p>\n", gm_gelu_variant_info((gm_gelu_variant)v)->name,
              (unsigned long long)out);
      gm_rpt_svg_ulp_plot(f, D, (gm_gelu_variant)v);
      fprintf(f, "</div>\n");
    }
    fprintf(f, "</div>\n");
  }
}

static void section_matrix(const gm_report *r, FILE *f) {
  fprintf(f, "<h2 id=\"matrix\">Compatibility matrix</h2>\n");
  fprintf(f, "<p class=\"lead\">Every pair of variant:mode outputs on the same inputs (hover a cell for the figures; report.json has every statistic).</p>\n");
  fprintf(f, "<p class=\"legend\"><span><b style=\"background:#1a7f37\"></b>bitwise identical</span><span><b style=\"background:#4cb86a\"></b>assert_close, &le; 2 ULP</span>"
             "<span><b style=\"background:#a3d977\"></b>assert_close, &gt; 2 ULP</span><span><b style=\"background:#f4d35e\"></b>fails, &le; 16 ULP</span>"
             "<span><b style=\"background:#f29e4c\"></b>fails, &le; 256 ULP</span><span><b style=\"background:#d1495b\"></b>fails, &gt; 256 ULP</span>"
             "<span><b style=\"background:#eceef1\"></b>not available</span></p>\n<div class=\"grid\">\n");
  for (int d = 0; d < RPT_NDT; d++) {
    fprintf(f, "<div class=\"fig\"><h4>%s</h4>\n", gm_dtype_name(r->d[d].dt));
    gm_rpt_svg_matrix(f, &r->d[d]);
    fprintf(f, "</div>\n");
  }
  fprintf(f, "</div>\n");
}

static void section_unavailable(const gm_report *r, FILE *f) {
  int count = 0;
  for (int d = 0; d < RPT_NDT; d++)
    for (int i = 0; i < RPT_NSPEC; i++) count += !r->d[d].ok[i];
  if (!count) return;
  fprintf(f, "<h2 id=\"missing\">Not available</h2>\n<table><thead><tr><th class=\"l\">dtype</th><th class=\"l\">variant:mode</th><th class=\"l\">reason</th></tr></thead><tbody>\n");
  for (int d = 0; d < RPT_NDT; d++)
    for (int i = 0; i < RPT_NSPEC; i++) {
      if (r->d[d].ok[i]) continue;
      char name[64];
      spec_name(rpt_spec(i), name, sizeof name);
      fprintf(f, "<tr><td class=\"l\">%s</td><td class=\"l\"><code>%s</code></td><td class=\"l\">", gm_dtype_name(r->d[d].dt), name);
      gm_lab_html_esc(f, r->d[d].err[i]);
      fprintf(f, "</td></tr>\n");
    }
  fprintf(f, "</tbody></table>\n");
}

static void section_method(const gm_report *r, FILE *f) {
  fprintf(f, "<h2 id=\"method\">Method</h2>\n<dl>\n");
  fprintf(f, "<dt>Inputs</dt><dd>f16 and bf16: every finite bit pattern (%zu and %zu values; NaN and &plusmn;inf left out). f32: <code>gm_golden_f32_inputs</code> "
             "(seed %llu): the special values, then %zu draws from a mix (4/8 log-uniform |x| in [2<sup>-8</sup>, 16), 2/8 log-uniform in [2<sup>-30</sup>, 128), "
             "1/8 raw bit patterns, 1/8 uniform on [-12, 12)); %zu non-finite values left out, %zu used.</dd>\n",
          r->d[1].n, r->d[2].n, (unsigned long long)r->opts.seed, r->opts.n_f32, r->d[0].excluded, r->d[0].n);
  fprintf(f, "<dt>Modes</dt><dd><b>exact</b>: the formula over the reals, correctly rounded; <b>eager</b>: op by op, each op rounded to the dtype; "
             "<b>fused</b>: the whole formula in f32 opmath, rounded once; <b>torch-cpu</b>: bit for bit the pinned PyTorch on CPU (run as one tensor, 1 thread: "
             "its bits depend on length and threads; f32 tanh/erf/exp of the op-by-op variants %s); <b>accurate</b>: gptmeg's kernels.</dd>\n",
          gm_gelu_torch_mkl_loaded() ? "through MKL VML loaded from torch's libtorch_cpu.so (GPTMEG_TORCH_MKL, or a torch installation found), bit for bit"
                                     : "computed in double and rounded, since no torch installation with MKL VML was found (GPTMEG_TORCH_MKL): close to torch's, not promised bit for bit");
  fprintf(f, "<dt>ULP</dt><dd>distance in the compared dtype between ordered bit patterns; +0 and &minus;0 are 0 apart, NaN against a number counts as a failure "
             "and is shown separately.</dd>\n");
  fprintf(f, "<dt>assert_close</dt><dd><code>|a&minus;b| &le; atol + rtol&middot;|b|</code> with torch.testing defaults: f32 (1.3e-6, 1e-5), f16 (1e-3, 1e-5), "
             "bf16 (1.6e-2, 1e-5).</dd>\n");
  fprintf(f, "<dt>Bitwise equal</dt><dd>identical bit patterns (stricter than <code>torch.equal</code>, which calls +0 and &minus;0 equal).</dd>\n");
  fprintf(f, "<dt>Reproduce</dt><dd><code>gptmeg report --n %zu</code>; a single pair: <code>gptmeg act compare gelu_new:torch-cpu gelu_pytorch_tanh:torch-cpu --dtype f16 --exhaustive</code>.</dd>\n",
          r->opts.n_f32);
  fprintf(f, "</dl>\n");
}

int gm_rpt_write_html(const gm_report *r, FILE *f) {
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
             "<title>gptmeg GELU compatibility report</title>\n<style>%s</style></head><body>\n", css);
  fprintf(f, "<header><h1>GELU compatibility report</h1><p>gptmeg %s &middot; %s &middot; %d variants &times; %d modes in f32, f16 and bf16 &middot; computed in %.1f s</p></header>\n<main>\n",
          gm_version(), r->when, GM_GELU_N_VARIANTS, GM_GELU_N_MODES, r->seconds);
  char tt[512];
  gm_lab_target_text(tt, sizeof tt);
  fprintf(f, "<p>torch CPU target (whose torch-cpu bits these are): ");
  gm_lab_html_esc(f, tt);
  fprintf(f, "</p>\n");
  fprintf(f, "<nav><a href=\"#verdict\">Verdict</a><a href=\"#tensors\">3&times;3 experiment</a><a href=\"#accuracy\">Accuracy</a><a href=\"#plots\">Plots</a>"
             "<a href=\"#matrix\">Matrix</a>");
  for (int s = 0; s < r->n_sections; s++) { fprintf(f, "<a href=\"#extra%d\">", s); gm_lab_html_esc(f, r->sections[s].title); fprintf(f, "</a>"); }
  fprintf(f, "<a href=\"#method\">Method</a><a href=\"report.json\">report.json</a></nav>\n");
  section_verdict(r, f);
  section_tensors(r, f);
  section_accuracy(r, f);
  section_plots(r, f);
  section_matrix(r, f);
  section_unavailable(r, f);
  for (int s = 0; s < r->n_sections; s++) {
    fprintf(f, "<h2 id=\"extra%d\">", s);
    gm_lab_html_esc(f, r->sections[s].title);
    fprintf(f, "</h2>\n");
    if (r->sections[s].fn(r, f, NULL, r->sections[s].user)) return -1;
  }
  section_method(r, f);
  fprintf(f, "<footer>Generated by <code>gptmeg report</code>. Numbers of a released variant name never change; see docs/numerics.md.</footer>\n</main></body></html>\n");
  return 0;
}
