// gptmeg lab: compare two GELU implementations on the same inputs, and the compatibility report.
#ifndef GPTMEG_LAB_H
#define GPTMEG_LAB_H

#include "gptmeg/gelu.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---- statistics of one pair of output buffers --------------------------------------------------
enum { GM_LAB_BUCKETS = 7 };
extern const char *const gm_lab_bucket_labels[GM_LAB_BUCKETS]; // "0","1","2","3-4","5-16","17-256",">256"
int gm_lab_bucket(uint64_t ulp);

// a is compared against b ("actual" against "expected", as assert_close(a, b)): relative error is
// |a-b|/|b|, signed error a-b. Distances are in ULPs of the dtype (core.h gm_ulp_dist).
// A NaN against a number counts as not equal, not close, in bucket ">256", and in nan_mismatch;
// it is left out of max_ulp, max_abs, max_rel and the mean (so those stay finite numbers).
typedef struct {
  uint64_t n;
  uint64_t equal;          // bitwise identical (+0 and -0 differ; identical NaN bits are equal)
  uint64_t close_default;  // within gm_default_tolerance(dtype) (assert_close defaults)
  uint64_t close_user;     // within the user's rtol/atol
  uint64_t nan_mismatch;   // one side NaN, the other not
  uint64_t hist[GM_LAB_BUCKETS];
  uint64_t max_ulp;
  double max_abs, max_rel;
  double rtol_needed;      // smallest rtol at which every finite pair passes with the dtype's
                           // default atol (inf if some |a-b| > atol where b == 0)
  double sum_signed;       // sum of a-b over pairs where both are finite
  uint64_t n_signed;       // how many pairs went into sum_signed
  // the input with the largest ULP distance (the first one found)
  double worst_x, worst_a, worst_b;
  uint64_t worst_ulp;
  bool have_worst;
} gm_cmp_stats;

void gm_cmp_init(gm_cmp_stats *s);
// Accumulates n elements of dtype dt (x is the input, a and b the two outputs).
void gm_cmp_add(gm_cmp_stats *s, gm_dtype dt, const void *x, const void *a, const void *b, size_t n,
                gm_tolerance user);
void gm_cmp_merge(gm_cmp_stats *into, const gm_cmp_stats *from);
double gm_cmp_mean_signed(const gm_cmp_stats *s); // 0 when nothing was finite

// A cJSON object (returned as void *, caller owns it) with n, equal_fraction, allclose_fraction,
// user_close_fraction, max_abs, max_rel, max_ulp, ulp_histogram {label: count}, mean_signed_error,
// rtol_needed, nan_mismatch and worst {x, a, b, ulp}. Non-finite numbers are written as strings "inf"/"nan".
void *gm_cmp_stats_json(const gm_cmp_stats *s);

// ---- inputs --------------------------------------------------------------------------------------
typedef enum { GM_DIST_NORMAL = 0, GM_DIST_UNIFORM, GM_DIST_WIDE } gm_dist_kind;
typedef struct { gm_dist_kind kind; double lo, hi; } gm_dist;
// "normal" | "uniform:LO:HI" | "wide". Error message lists the forms.
int gm_dist_parse(const char *s, gm_dist *out);
// n inputs of dtype dt drawn from gm_rng (core.h), already seeded; each value rounded once to dt.
//   normal:  standard normal.
//   uniform: uniform on [lo, hi).
//   wide:    |x| log-uniform from the smallest subnormal to the largest finite of dt, random sign.
void gm_dist_fill(gm_dist d, gm_dtype dt, gm_rng *r, void *x, size_t n);
// All finite f16/bf16 patterns in increasing bit order (0x0000.., then 0x8000..); returns the count
// (63,488 for f16, 65,280 for bf16). NaN and +-inf are excluded (reported as `excluded`).
size_t gm_finite_u16(gm_dtype dt, uint16_t *out);
// The --grad upstream gradient: dy[i] = s*(1+u) rounded to dt, u uniform [0,1) and sign s from
// gm_stream_u64(seed ^ GM_DY_SALT, first+i) (top 52 bits -> u, bit 0 -> sign). Magnitudes in [1,2).
#define GM_DY_SALT 0x6479647964796479ull
void gm_dy_fill(gm_dtype dt, uint64_t seed, uint64_t first, void *dy, size_t n);

// ---- a comparison run -----------------------------------------------------------------------------
typedef enum { GM_SRC_DIST = 0, GM_SRC_EXHAUSTIVE, GM_SRC_ARRAY } gm_src_kind;

typedef struct {
  gm_gelu_spec a, b;
  gm_dtype dtype;
  gm_src_kind src;
  gm_dist dist;          // GM_SRC_DIST
  uint64_t seed;
  size_t n;              // GM_SRC_DIST: total number of inputs (= len*trials when trials > 0)
  const void *array;     // GM_SRC_ARRAY: n inputs of dtype
  size_t len, trials;    // trials > 0: `trials` separate tensors of `len` elements each
  bool grad;             // compare dx = backward(x, dy) instead of y
  gm_tolerance user_tol;
  int threads;
  bool allow_f32_exhaustive; // 2^32 inputs (minus non-finite), in tensors of 2^24
} gm_compare_job;

typedef struct {
  gm_cmp_stats ab, a_exact, b_exact;
  bool have_exact;              // false if the exact mode failed (exact_error says why)
  char exact_error[200];
  uint64_t tensors, tensors_equal; // bitwise-identical whole tensors (torch.equal on bits)
  uint64_t excluded;            // exhaustive: non-finite patterns skipped
  double seconds;
} gm_compare_result;

// Bytes a job needs at once (inputs, outputs, exact, dy); used to refuse before allocating.
size_t gm_compare_bytes(const gm_compare_job *job);
// Runs the job. Fails (with a clear message) if a side's mode is not available for the dtype, if
// the job needs more memory than the machine has, or on f32 exhaustive without the flag.
int gm_compare_run(const gm_compare_job *job, gm_compare_result *res);

// ---- report -----------------------------------------------------------------------------------
typedef struct gm_report gm_report;
typedef struct {
  size_t n_f32;     // f32 sample size (besides the special values); default 200,000
  int threads;
  uint64_t seed;
  bool quiet;
} gm_report_opts;

// Computes the report (every variant:mode in f32, f16, bf16). Caller frees with gm_report_free.
int gm_report_compute(const gm_report_opts *o, gm_report **out);
void gm_report_free(gm_report *r);
// Writes DIR/index.html and DIR/report.json through DIR.tmp.PID and a rename; a failed write
// leaves no DIR behind (an existing DIR is replaced only on success).
int gm_report_write(const gm_report *r, const char *dir);
// Checks up front that gm_report_write(dir) can succeed: dir is absent (and its parent writable)
// or holds an earlier report. Lets the CLI fail before the computation.
int gm_report_check_dir(const char *dir);
// The verdict part of report.json as a JSON text (malloc'd; caller frees).
char *gm_report_verdict_json(const gm_report *r);
// Prints the short verdict summary.
void gm_report_print_summary(const gm_report *r, FILE *f);

// Hook for later sections (e.g. model divergence): called while writing index.html after the
// built-in sections; writes HTML into f (an open FILE*) and JSON into json (a cJSON object *).
typedef int (*gm_report_section_fn)(const gm_report *r, void *html_file, void *json_obj, void *user);
int gm_report_add_section(gm_report *r, const char *title, gm_report_section_fn fn, void *user);

// The torch CPU target in force (gptmeg/target.h), in one line: "intel-amx; not reproduced there:
// f32 matmul, ..." (the ops gptmeg runs in zen4's order under it). The report and diverge print it.
void gm_lab_target_text(char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
