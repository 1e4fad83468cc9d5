// gptmeg lab: layer-by-layer divergence of two GPT-2 numerics runs (or of one run against a dump
// of PyTorch's activations). Every probe point of the forward (model.h gm_point) is compared:
// max abs, max rel, RMS relative difference, max ULP in the coarser dtype, the fraction outside
// the tolerance, and the first point (execution order) where any element leaves it. For two
// runs A and B it also splits B's error at each point into the part the op adds (B's op on A's
// inputs, against A) and the part it inherits (B's output against B's op on A's inputs).
#ifndef GPTMEG_DIVERGE_H
#define GPTMEG_DIVERGE_H

#include "gptmeg/lab.h"
#include "gptmeg/model.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---- points and tensors ------------------------------------------------------------------------
// Rows in execution order: embed, then per layer ln_1 .. resid (GM_DV_LAYER_POINTS), then ln_f, logits.
enum { GM_DV_LAYER_POINTS = GM_PT_RESID - GM_PT_LN1 + 1 };
int gm_dv_n_rows(int n_layer);
// Row index of (layer, point) (layer -1 for embed/ln_f/logits), or -1 if that pair is not a point.
int gm_dv_row_index(int n_layer, int layer, gm_point pt);
void gm_dv_row_point(int n_layer, int row, int *layer, gm_point *pt);
// The dump's tensor name: "embed", "h.{layer}.{point}", "ln_f", "logits" (dump_activations.py's).
void gm_dv_tensor_name(int layer, gm_point pt, char *buf, size_t n);
// Shape of a point's tensor for a fresh forward of [B, T] tokens; returns ndim (2 or 4).
int gm_dv_shape(const gm_gpt2_config *c, int B, int T, gm_point pt, int64_t shape[4]);

// ---- metrics -----------------------------------------------------------------------------------
// Difference of an actual tensor against an expected one (assert_close(actual, expected) order):
// max |a-e|; max |a-e|/max(|e|, tiny) over pairs not both 0, tiny = the tolerance's atol (FLT_MIN
// when atol is 0), so a reference that is exactly 0 does not make it 1e30; sqrt(sum (a-e)^2 / sum e^2) (0 when
// both sums are 0, inf when only the expected is all 0); max ULP distance with both rounded to the
// compare dtype; n_outside elements not within the tolerance (or more than `ulp` ULPs apart).
// A NaN difference makes max_abs/max_rel/rms_rel NaN.
typedef struct {
  uint64_t n, n_outside, max_ulp;
  double max_abs, max_rel, rms_rel;
  double sum_d2, sum_e2; // accumulators behind rms_rel
} gm_dv_metrics;

typedef struct {
  int layer;              // -1 for embed, ln_f, logits
  gm_point point;
  gm_dv_metrics total;    // B against A (or the run against the dump)
  gm_dv_metrics added;    // B's op on A's inputs against A's output (have_added)
  gm_dv_metrics inherited;// B's output against B's op on A's inputs (have_added)
} gm_dv_row;

typedef struct {
  gm_tolerance tol;       // used when have_tol (else torch's default of the compare dtype)
  bool have_tol;
  uint64_t ulp;           // > 0: an element is outside when more than ulp ULPs apart (compare dtype)
  int threads;            // <= 0: default
  const char *dump_path;  // non-NULL: stream run A's activations (the run, with --against) here
  bool no_added;          // skip the forced run (no added/inherited)
} gm_dv_opts;

typedef struct {
  char a_name[96], b_name[96];  // profile names with dtype, "hf:f16"; b is "FILE" against a dump
  gm_dtype a_dtype, b_dtype;
  gm_dtype cmp_dtype;           // the coarser of the two (fewer fraction bits)
  gm_tolerance tol;             // the tolerance used (when ulp == 0)
  uint64_t ulp;
  bool against;                 // B is a run compared with a dump (A = the dump)
  bool have_added;
  int n_layer, B, T, n_rows;
  gm_dv_row *rows;              // [n_rows]
  int first_outside;            // row index, -1 when every point is within the tolerance
  // top-1 of the logits per position: differ = argmax differs; near_tie = A's top-2 margin is within
  // the tolerance (|top1 - top2| <= atol + rtol*|top1|, or <= ulp ULPs); flips = differ - near_ties.
  int top1_positions, top1_differ, top1_near_ties, top1_flips;
  double seconds;
} gm_dv_result;

// Runs A = (ma, pa) recording every point, then B's op on A's inputs (B forced onto A's values,
// rounded to B's dtype, point by point), then B; fills *out. ma/mb hold the weights in pa/pb's
// dtypes (they may be the same model). tokens [B, T] with T <= n_positions. When exactly one
// profile fuses c_fc's bias into the activation, its fc point is compared with the bias added (in
// f32, rounded to its dtype), and B is forced with A's fc minus the bias.
int gm_diverge_run(const gm_gpt2 *ma, const gm_profile *pa, const gm_gpt2 *mb, const gm_profile *pb,
                   const int32_t *tokens, int B, int T, const gm_dv_opts *o, gm_dv_result *out);
// Runs (m, p) and compares each point with the tensor of the same name in the safetensors dump
// st_path (tools/ref/dump_activations.py or --dump): A = the dump, B = the run. The names and
// shapes are checked before running; a missing or mis-shaped tensor fails naming it.
int gm_diverge_against(const gm_gpt2 *m, const gm_profile *p, const int32_t *tokens, int B, int T,
                       const char *st_path, const gm_dv_opts *o, gm_dv_result *out);
void gm_dv_result_free(gm_dv_result *r);

// Runs (m, p) once and streams every point to a safetensors file (f32 tensors holding the dtype's
// values, the dump's names), header first; written through a temporary name renamed on success.
int gm_diverge_dump(const gm_gpt2 *m, const gm_profile *p, const int32_t *tokens, int B, int T, int threads,
                    const char *path);

// ---- output (diverge_out.c) ----------------------------------------------------------------------
double gm_dv_outside_fraction(const gm_dv_metrics *m);
// The table: per point total / added / inherited max_abs and rms_rel, '<' at first_outside, top-1.
void gm_dv_print(const gm_dv_result *r, FILE *f);
// JSON text (malloc'd): a, b, dtypes, tolerance, points [{layer, point, max_abs, max_rel, rms_rel,
// max_ulp, outside_fraction, added {max_abs, rms_rel}, inherited {...}}], first_outside, top1.
char *gm_dv_json(const gm_dv_result *r);
void *gm_dv_json_obj(const gm_dv_result *r); // the same as a cJSON * (caller owns it)
// Inline SVG: rms_rel (log scale) against the points in execution order, total and added.
void gm_dv_svg(const gm_dv_result *r, FILE *f);
// The SVG as a file, written atomically.
int gm_dv_write_svg(const gm_dv_result *r, const char *path);

// ---- report section (report_diverge.c) -----------------------------------------------------------
// Adds "GPT-2 numerics divergence" to the report: model_dir's checkpoint, or with NULL a tiny
// random model (gm_config_tiny, seed 1) made in memory; tokens: 64 from gm_rng seed 1. Pairs: hf
// vs meg in f32, f16, bf16; hf vs megatron in f16; hf:f32 vs hf:f16. Computed here, written when the
// report is written; *section holds the results and is freed with gm_report_diverge_free after
// gm_report_free.
typedef struct gm_dv_section gm_dv_section;
int gm_report_add_diverge(gm_report *r, const char *model_dir, int threads, const gm_profile *user,
                          gm_dv_section **section);
void gm_report_diverge_free(gm_dv_section *s);

#ifdef __cplusplus
}
#endif
#endif
