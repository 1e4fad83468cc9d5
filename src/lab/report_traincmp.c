// lab/report_traincmp: the report's training section. Trains the embedded tiny random model a few
// steps under hf (gelu_new) and under hf with gelu_pytorch_tanh, in lockstep (gm_tc_run), with the
// noise baseline of a batch-order change, and writes a sentence computed from the numbers, a table
// and the plot. Contract in include/gptmeg/traincmp.h (gm_report_add_traincmp).
#include "gptmeg/config.h"
#include "gptmeg/traincmp.h"
#include "lab/report_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { TC_B = 2, TC_T = 32, TC_IDS = 256 };
#define TC_A "hf"
#define TC_BSPEC "hf+act=gelu_pytorch_tanh:torch-cpu"
#define TC_LR 1e-3

struct gm_tc_section {
  bool ok;
  char err[300];
  char model[300], data[300], optim[200];
  char statement[900];
  gm_tc_result res;
};

static void statement(gm_tc_section *s) {
  const gm_tc_result *r = &s->res;
  const gm_tc_step *l = &r->ab[r->steps - 1], *n = &r->noise[r->steps - 1];
  char a[400], b[400];
  if (!r->first_weights_differ)
    snprintf(a, sizeof a, "Training with gelu_pytorch_tanh instead of gelu_new left every weight bit-identical over %ld steps", r->steps);
  else {
    long g1 = 0; // the first step whose gradients differ
    while (g1 < r->steps - 1 && r->ab[g1].grad_rel == 0) g1++;
    snprintf(a, sizeof a,
             "Training with gelu_pytorch_tanh instead of gelu_new changes the model: the gradients differ from step %ld "
             "(relative L2 difference %.2g), the weights from step %ld, and after %ld steps the weights are %.2g apart "
             "(||wB - wA|| / ||wA||); the losses %s",
             g1 + 1, r->ab[g1].grad_rel, r->first_weights_differ, r->steps, l->weight_drift,
             r->first_loss_outside ? "leave f32's assert_close tolerance" : "stay within f32's assert_close tolerance at every step");
  }
  if (r->first_loss_outside) snprintf(a + strlen(a), sizeof a - strlen(a), " from step %ld", r->first_loss_outside);
  if (n->weight_drift > 0)
    snprintf(b, sizeof b, "Shuffling the order of the same batches moves the weights %.2g apart: the change of GELU is %.2g "
             "times the run-to-run noise of a batch-order change, %s.", n->weight_drift, l->weight_drift / n->weight_drift,
             l->weight_drift < 1e-3 * n->weight_drift ? "far below it" : l->weight_drift < n->weight_drift ? "below it" : "not below it");
  else snprintf(b, sizeof b, "The batch-order change left the weights identical (no noise to compare with).");
  snprintf(s->statement, sizeof s->statement, "%s. %s", a, b);
}

static void html(const gm_tc_section *s, FILE *f) {
  if (!s->ok) { fprintf(f, "<p><span class=\"badge na\">"); gm_lab_html_esc(f, s->err); fprintf(f, "</span></p>\n"); return; }
  const gm_tc_result *r = &s->res;
  fprintf(f, "<p class=\"lead\"><b>");
  gm_lab_html_esc(f, s->statement);
  fprintf(f, "</b></p>\n<p>Model: ");
  gm_lab_html_esc(f, s->model);
  fprintf(f, ". Data: ");
  gm_lab_html_esc(f, s->data);
  fprintf(f, ". Optimizer: ");
  gm_lab_html_esc(f, s->optim);
  fprintf(f, ". A = <code>%s</code> (the config's gelu_new), B = <code>%s</code>, trained in lockstep from the same weights on the "
             "same batches (f32; each step is torch's <code>loss.backward()</code> and AdamW bit for bit where docs/training.md says so: "
             "f32 <code>gelu_new</code> needs torch's MKL VML tanh, <code>GPTMEG_TORCH_MKL</code>); "
             "noise = A again on the same batches in a shuffled order. <code>gptmeg train-compare</code> runs any pair.</p>\n",
          TC_A, TC_BSPEC);
  fprintf(f, "<table><tr><th>step</th><th>loss A</th><th>loss B &minus; A</th><th>gradient rel diff</th><th>weight drift A vs B</th>"
             "<th>weights equal</th><th>noise: weight drift</th></tr>\n");
  for (long k = 0; k < r->steps; k++) {
    const gm_tc_step *x = &r->ab[k];
    fprintf(f, "<tr><td>%ld</td><td>%.7f</td><td>%.3g%s</td><td>%.3g</td><td>%.3g</td><td>%s</td><td>%.3g</td></tr>\n", x->step,
            x->loss_a, x->loss_diff, x->loss_close ? "" : " (outside)", x->grad_rel, x->weight_drift, x->weights_equal ? "yes" : "no",
            r->noise[k].weight_drift);
  }
  fprintf(f, "</table>\n<p>Gradient relative difference per group at step %ld:", r->steps);
  for (int g = 0; g < r->n_groups; g++) fprintf(f, " %s %.3g%s", r->group[g], r->ab[r->steps - 1].grad_rel_group[g], g + 1 < r->n_groups ? "," : ".");
  fprintf(f, " Tolerance of the losses: rtol %g, atol %g (torch.testing.assert_close for f32). Computed in %.1f s.</p>\n", r->tol.rtol,
          r->tol.atol, r->seconds);
  gm_tc_svg(r, f);
}

static void json(const gm_tc_section *s, cJSON *o) {
  if (!s->ok) { cJSON_AddStringToObject(o, "error", s->err); return; }
  cJSON_AddStringToObject(o, "statement", s->statement);
  cJSON_AddStringToObject(o, "model", s->model);
  cJSON_AddStringToObject(o, "data", s->data);
  cJSON_AddStringToObject(o, "optimizer", s->optim);
  cJSON_AddItemToObject(o, "result", gm_tc_json_obj(&s->res));
}

static int section(const gm_report *r, void *html_file, void *json_obj, void *user) {
  (void)r;
  if (html_file) html(user, html_file);
  if (json_obj) json(user, json_obj);
  return 0;
}

int gm_report_add_traincmp(gm_report *r, long steps, int threads, gm_tc_section **out) {
  *out = NULL;
  if (steps < 1) return gm_fail("report: the training section needs >= 1 step");
  gm_tc_section *s = calloc(1, sizeof *s);
  if (!s) return gm_fail("out of memory");
  gm_gpt2_config c;
  gm_config_tiny(&c);
  gm_gpt2 m;
  int32_t *batches = malloc((size_t)steps * TC_B * TC_T * sizeof *batches);
  if (!batches) { free(s); return gm_fail("out of memory"); }
  gm_rng g;
  gm_rng_seed(&g, 1);
  for (size_t i = 0; i < (size_t)steps * TC_B * TC_T; i++) batches[i] = (int32_t)(gm_rng_u64(&g) % TC_IDS);
  snprintf(s->model, sizeof s->model, "the embedded default: gptmeg init --config tiny --seed 1 made in memory (%d layers, n_embd %d, %d heads, vocab %d)",
           c.n_layer, c.n_embd, c.n_head, c.vocab_size);
  snprintf(s->data, sizeof s->data, "%ld batches of %d x %d token ids drawn uniformly from [0, %d) (gm_rng seed 1), so the loss falls from ln %d toward ln %d",
           steps, TC_B, TC_T, TC_IDS, c.vocab_size, TC_IDS);
  gm_train_opts o;
  gm_train_opts_default(&o);
  o.B = TC_B;
  o.T = TC_T;
  o.steps = steps;
  o.threads = threads;
  gm_train_set_optimizer(&o, TC_LR, 0, false, 0.1, 0.9, 0.95, 1e-8, false);
  snprintf(s->optim, sizeof s->optim, "AdamW (torch.optim.AdamW, single-tensor), constant lr %g, betas 0.9/0.95, weight decay 0.1, clip_grad_norm_ 1.0", TC_LR);
  gm_profile pa, pb;
  int rc = gm_gpt2_init_random(&m, &c, 1);
  if (!rc) {
    if (!gm_tc_spec_parse(TC_A, &pa) && !gm_tc_spec_parse(TC_BSPEC, &pb)) {
      gm_tc_opts to = {&pa, &pb, TC_A, TC_BSPEC, &o, batches, true, 2, NULL, NULL};
      s->ok = gm_tc_run(&m, &to, &s->res) == 0;
    }
    if (!s->ok) snprintf(s->err, sizeof s->err, "the training comparison did not run: %s", gm_errmsg());
    gm_gpt2_free(&m);
  } else snprintf(s->err, sizeof s->err, "the tiny model could not be made: %s", gm_errmsg());
  free(batches);
  if (s->ok) statement(s);
  rc = gm_report_add_section(r, "Does a change of GELU change training?", section, s);
  if (rc) { gm_report_traincmp_free(s); return -1; }
  *out = s;
  return 0;
}

void gm_report_traincmp_free(gm_tc_section *s) {
  if (!s) return;
  gm_tc_result_free(&s->res);
  free(s);
}
