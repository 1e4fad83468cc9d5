// gptmeg lab: does a change of numerics change training? Two f32 training runs of one model from the
// same initial weights on the same batches, in lockstep (step k of A, then step k of B), each step
// gm_gpt2_grad then gm_train_optimizer_step (gptmeg/train.h), compared after every step: the two
// losses, the relative L2 difference of the gradients per group (embeddings, each block, ln_f) and
// overall, the weight drift ||wB - wA|| / ||wA||, the first step whose losses leave the f32
// tolerance and the first step after which the weights differ at all. Optionally a noise baseline:
// A against A run on the same batches in another (seeded, shuffled) order.
// Every norm is a double sum in checkpoint order, so the result does not depend on the thread count
// beyond what the runs themselves do (their bits follow torch's: docs/training.md).
// Layer: lab.
#ifndef GPTMEG_TRAINCMP_H
#define GPTMEG_TRAINCMP_H

#include "gptmeg/lab.h"
#include "gptmeg/train.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// A side: "PROFILE[:f32][+KNOB=VALUE]...", e.g. "hf", "meg", "hf+act=gelu_pytorch_tanh:torch-cpu".
// The knobs are gm_profile_set_knob's; the value runs to the next '+'. Only f32 (training is f32).
int gm_tc_spec_parse(const char *spec, gm_profile *out);

enum { GM_TC_MAX_GROUPS = 130 }; // embeddings, up to 128 blocks, ln_f

// One step of one comparison (A against B, or A against its reshuffled self).
typedef struct {
  long step;              // 1-based
  float loss_a, loss_b;   // the batch losses (f32) before the update
  double loss_diff;       // loss_b - loss_a
  bool loss_close;        // |loss_b - loss_a| <= atol + rtol*|loss_a| (f32's assert_close tolerance)
  double grad_rel;        // ||gB - gA|| / ||gA|| over every gradient (before clipping)
  double *grad_rel_group; // [n_groups], the same per group
  double weight_drift;    // ||wB - wA|| / ||wA|| after the update
  bool weights_equal;     // every weight bit-identical after the update
} gm_tc_step;

typedef struct {
  char a_name[160], b_name[160];
  long steps;
  int n_groups;
  char group[GM_TC_MAX_GROUPS][16]; // "emb" (wte, wpe; an untied lm_head too), "h.0", ..., "ln_f"
  gm_tc_step *ab;                   // [steps]
  gm_tc_step *noise;                // [steps] or NULL: A against A on the shuffled batch order
  long first_loss_outside;          // A vs B: first step whose losses are not close; 0 when none
  long first_weights_differ;        // A vs B: first step after which the weights differ; 0 when none
  long noise_first_weights_differ;  // the same for the noise run (0 when none or no noise run)
  gm_tolerance tol;                 // f32's: rtol 1.3e-6, atol 1e-5
  int B, T;
  double seconds;
} gm_tc_result;

typedef struct {
  const gm_profile *a, *b;  // f32 profiles
  const char *a_name, *b_name; // labels (the specs as given); NULL: the profiles' names
  const gm_train_opts *train; // optimizer, lr schedule, clip, B, T, steps, threads (data and callbacks unused)
  const int32_t *batches;   // [steps, B, T] token ids (labels = inputs), step k uses batch k - 1
  bool noise;               // also run A on the batches in a shuffled order
  uint64_t noise_seed;      // the shuffle's seed (Fisher-Yates over gm_rng)
  void (*on_step)(void *ctx, long step, long steps); // progress, may be NULL
  void *ctx;
} gm_tc_opts;

// Runs the comparison from model m's weights (f32; m itself is not changed). Fails on bad options,
// out of memory, or a run's failure (a non-finite loss stops it, naming the side and step).
int gm_tc_run(const gm_gpt2 *m, const gm_tc_opts *o, gm_tc_result *out);
void gm_tc_result_free(gm_tc_result *r);

// B windows of T tokens per step for `steps` steps, drawn as gm_train_run draws them (offsets uniform
// over tokens[0 .. n - T] from a gm_rng seeded with seed): out [steps, B, T].
int gm_tc_draw_batches(const int32_t *tokens, int64_t n, int B, int T, long steps, uint64_t seed, int32_t *out);

// Text table (one row a step: losses, difference, overall gradient difference, weight drift; then
// the per-group gradient differences of the last step, and the summary lines) into f.
void gm_tc_print(const gm_tc_result *r, FILE *f);
// One JSON object (malloc'd text / a cJSON * the caller owns): a, b, steps, B, T, tolerance, groups,
// per step {step, loss_a, loss_b, loss_diff, loss_close, grad_rel, grad_rel_groups, weight_drift,
// weights_equal}, first_loss_outside, first_weights_differ (null when none), noise {...} when run.
char *gm_tc_json(const gm_tc_result *r);
void *gm_tc_json_obj(const gm_tc_result *r);
// Inline SVG: |loss difference| and weight drift against the step (log scale), A vs B and noise.
void gm_tc_svg(const gm_tc_result *r, FILE *f);
int gm_tc_write_svg(const gm_tc_result *r, const char *path); // atomically

// ---- report section (lab/report_traincmp.c) ----------------------------------------------------
// Adds "Does a change of GELU change training?" to the report: the tiny random model (gm_config_tiny
// shape, seed 1) trained `steps` steps on random tokens (gm_rng seed 1; B 2, T 32, AdamW lr 1e-3)
// under hf (gelu_new) and hf+act=gelu_pytorch_tanh:torch-cpu, with the noise baseline. Computed
// here; freed with gm_report_traincmp_free after gm_report_free.
typedef struct gm_tc_section gm_tc_section;
int gm_report_add_traincmp(gm_report *r, long steps, int threads, gm_tc_section **section);
void gm_report_traincmp_free(gm_tc_section *s);

#ifdef __cplusplus
}
#endif
#endif
