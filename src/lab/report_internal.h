// Internal pieces of the report (lab/report*.c): the computed data and the writers.
#ifndef GPTMEG_LAB_REPORT_INTERNAL_H
#define GPTMEG_LAB_REPORT_INTERNAL_H

#include "gptmeg/lab.h"

#include <cjson/cJSON.h>
#include <stdio.h>

enum {
  RPT_NDT = 3,                                  // f32, f16, bf16
  RPT_NSPEC = GM_GELU_N_VARIANTS * GM_GELU_N_MODES,   // spec index = variant * GM_GELU_N_MODES + mode
  RPT_BINS = 240,                               // ULP-vs-x plot bins over [RPT_XMIN, RPT_XMAX)
  RPT_MAX_SECTIONS = 8,
  RPT_NTENSOR = 6,
  RPT_NVERDICT = 3,
};
#define RPT_XMIN (-12.0)
#define RPT_XMAX (12.0)

typedef struct {
  gm_dtype dt;
  size_t n, excluded;           // inputs used; non-finite inputs left out
  bool ok[RPT_NSPEC];
  char err[RPT_NSPEC][160];     // why a spec did not run
  gm_cmp_stats vs_exact[RPT_NSPEC];
  double bin_max_ulp[RPT_NSPEC][RPT_BINS]; // -1 where a bin holds no input
  uint64_t outside_max_ulp[RPT_NSPEC];     // max ULP over inputs outside the plot range
  gm_cmp_stats *pair;           // [i * RPT_NSPEC + j], filled for i < j where both ran
  double seconds;
} rpt_dtype;

typedef struct {
  gm_gelu_spec a, b;
  gm_dtype dt;
  size_t len, trials;
  bool ok;
  char err[200];
  gm_compare_result res;
} rpt_tensor_row;

typedef struct {
  char title[120];
  gm_report_section_fn fn;
  void *user;
} rpt_section;

struct gm_report {
  gm_report_opts opts;
  rpt_dtype d[RPT_NDT];
  rpt_tensor_row tensor[RPT_NTENSOR];
  int n_tensor;
  rpt_section sections[RPT_MAX_SECTIONS];
  int n_sections;
  double seconds;
  char when[64];
};

// The verdict pairs: gelu_new:MODE -> gelu_pytorch_tanh:MODE for the modes that matter.
extern const gm_gelu_mode gm_rpt_verdict_modes[RPT_NVERDICT][2];
static inline int rpt_index(gm_gelu_spec s) { return (int)s.variant * GM_GELU_N_MODES + (int)s.mode; }
static inline gm_gelu_spec rpt_spec(int i) {
  gm_gelu_spec s = {(gm_gelu_variant)(i / GM_GELU_N_MODES), (gm_gelu_mode)(i % GM_GELU_N_MODES)};
  return s;
}
// Stats of spec i against spec j (a = i, b = j) if both ran; NULL otherwise. For i > j the stored
// pair is (j, i): the symmetric fields (equal, max_ulp, histogram) are what callers read then.
const gm_cmp_stats *gm_rpt_pair(const rpt_dtype *d, int i, int j);
// "drop-in: bitwise identical" / "within assert_close" / "no: ..." into buf.
void gm_rpt_verdict_text(const gm_cmp_stats *s, gm_dtype dt, char *buf, size_t n);

cJSON *gm_lab_json_num(double v); // a number, or "inf"/"-inf"/"nan" as a string
// Writes s into HTML or SVG text with &, <, > and " escaped (report_html.c).
void gm_lab_html_esc(FILE *f, const char *s);
cJSON *gm_rpt_json(const gm_report *r);
int gm_rpt_write_html(const gm_report *r, FILE *f);
// SVG pieces (report_svg.c), written inline into the page.
void gm_rpt_svg_ulp_plot(FILE *f, const rpt_dtype *d, gm_gelu_variant v);
void gm_rpt_svg_matrix(FILE *f, const rpt_dtype *d);

#endif
