// gm_tc_run (gptmeg/traincmp.h): two runs of one spec are identical at every step (1 and 2 threads),
// hf against meg differs from step 1, run A is gm_train_run's run bit for bit (its losses and final
// weights), the A-vs-B numbers do not depend on the noise run, the model passed in is not changed, and
// the spec parser accepts and refuses what it should. A 2-layer model of vocab 97: well under a second.
#include "gptmeg/traincmp.h"
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, T = 8, STEPS = 4 };

typedef struct { float loss[STEPS]; int n; } losses;
static void on_step(void *ctx, const gm_train_step *s) {
  losses *l = ctx;
  if (l->n < STEPS) l->loss[l->n++] = s->loss;
}

static void test_specs(void) {
  gm_profile p;
  CHECK(gm_tc_spec_parse("hf", &p) == 0 && p.dtype == GM_F32, "hf: %s", gm_errmsg());
  CHECK(gm_tc_spec_parse("meg:f32", &p) == 0, "meg:f32: %s", gm_errmsg());
  CHECK(gm_tc_spec_parse("hf+act=gelu_pytorch_tanh:torch-cpu", &p) == 0 && strstr(p.name, "act"), "knob: %s (%s)", gm_errmsg(), p.name);
  CHECK(gm_tc_spec_parse("hf+ln=fp32+act=gelu_pytorch_tanh:torch-cpu", &p) == 0, "two knobs: %s", gm_errmsg());
  CHECK(gm_tc_spec_parse("hf:f16", &p) != 0 && strstr(gm_errmsg(), "f32"), "f16 refused: %s", gm_errmsg());
  CHECK(gm_tc_spec_parse("nope", &p) != 0, "unknown profile refused");
  CHECK(gm_tc_spec_parse("hf+", &p) != 0, "empty knob refused");
  CHECK(gm_tc_spec_parse("hf+act", &p) != 0, "knob without value refused");
  CHECK(gm_tc_spec_parse("hf+nope=1", &p) != 0, "unknown knob refused");
  CHECK(gm_tc_spec_parse("", &p) != 0, "empty spec refused");
}

int main(void) {
  test_specs();
  gm_gpt2_config c;
  memset(&c, 0, sizeof c);
  gm_config_defaults(&c);
  c.vocab_size = 97;
  c.n_positions = 16;
  c.n_embd = 16;
  c.n_layer = 2;
  c.n_head = 2;
  gm_gpt2 m;
  CHECK(gm_gpt2_init_random(&m, &c, 3) == 0, "init: %s", gm_errmsg());
  gm_gpt2 m0;
  CHECK(gm_gpt2_alloc_like(&m0, &m) == 0, "alloc");
  gm_gpt2_tensor tm[30], t0[30];
  int nt = gm_gpt2_tensors(&m, tm);
  CHECK(gm_gpt2_tensors(&m0, t0) == nt, "tensors");
  for (int i = 0; i < nt; i++) memcpy(t0[i].data, tm[i].data, tm[i].numel * sizeof(float));

  int32_t text[300], batches[STEPS * B * T];
  gm_rng r;
  gm_rng_seed(&r, 11);
  for (int i = 0; i < 300; i++) text[i] = (int32_t)(gm_rng_u64(&r) % 97);
  CHECK(gm_tc_draw_batches(text, 300, B, T, STEPS, 5, batches) == 0, "draw: %s", gm_errmsg());
  CHECK(gm_tc_draw_batches(text, T - 1, B, T, STEPS, 5, batches) != 0, "too few tokens refused");

  gm_train_opts o;
  gm_train_opts_default(&o);
  o.B = B;
  o.T = T;
  o.steps = STEPS;
  o.threads = 1;
  gm_train_set_optimizer(&o, 3e-3, 0, false, 0.1, 0.9, 0.95, 1e-8, false);
  gm_profile hf, meg;
  gm_profile_get("hf", GM_F32, &hf);
  gm_profile_get("meg", GM_F32, &meg);

  for (int th = 1; th <= 2; th++) { // A against A: zero at every step
    o.threads = th;
    gm_tc_opts to = {&hf, &hf, NULL, NULL, &o, batches, true, 9, NULL, NULL};
    gm_tc_result res;
    CHECK(gm_tc_run(&m, &to, &res) == 0, "A vs A: %s", gm_errmsg());
    if (!res.ab) continue;
    int nz = 0;
    for (int k = 0; k < STEPS; k++) {
      const gm_tc_step *s = &res.ab[k];
      nz += s->loss_diff != 0 || s->grad_rel != 0 || s->weight_drift != 0 || !s->weights_equal || !s->loss_close;
      for (int g = 0; g < res.n_groups; g++) nz += s->grad_rel_group[g] != 0;
    }
    CHECK(nz == 0, "A vs A on %d threads: %d non-zero differences", th, nz);
    CHECK(res.first_loss_outside == 0 && res.first_weights_differ == 0, "A vs A first divergence %ld %ld", res.first_loss_outside,
          res.first_weights_differ);
    CHECK(res.n_groups == 4 && !strcmp(res.group[0], "emb") && !strcmp(res.group[2], "h.1") && !strcmp(res.group[3], "ln_f"),
          "groups %d", res.n_groups);
    CHECK(res.noise_first_weights_differ >= 1 && res.noise[STEPS - 1].weight_drift > 0, "the shuffled run moves the weights");
    gm_tc_result_free(&res);
  }
  o.threads = 1;

  // hf against meg, with and without the noise run: the same A-vs-B numbers
  gm_tc_result rn, rq;
  gm_tc_opts ton = {&hf, &meg, "hf", "meg", &o, batches, true, 9, NULL, NULL};
  gm_tc_opts toq = {&hf, &meg, "hf", "meg", &o, batches, false, 0, NULL, NULL};
  CHECK(gm_tc_run(&m, &ton, &rn) == 0, "hf vs meg: %s", gm_errmsg());
  CHECK(gm_tc_run(&m, &toq, &rq) == 0, "hf vs meg (no noise): %s", gm_errmsg());
  if (rn.ab && rq.ab) {
    CHECK(rn.first_weights_differ == 1 && rn.ab[0].grad_rel > 0 && rn.ab[0].grad_rel < 1e-4, "hf vs meg: first differ %ld, grad rel %g",
          rn.first_weights_differ, rn.ab[0].grad_rel);
    CHECK(rn.ab[STEPS - 1].weight_drift > 0 && rn.ab[STEPS - 1].weight_drift < 1e-4, "hf vs meg drift %g", rn.ab[STEPS - 1].weight_drift);
    int same = 0;
    for (int k = 0; k < STEPS; k++)
      same += rn.ab[k].loss_a == rq.ab[k].loss_a && rn.ab[k].loss_b == rq.ab[k].loss_b && rn.ab[k].grad_rel == rq.ab[k].grad_rel &&
              rn.ab[k].weight_drift == rq.ab[k].weight_drift;
    CHECK(same == STEPS, "the noise run changed the A-vs-B numbers (%d of %d steps equal)", same, STEPS);
    CHECK(rq.noise == NULL, "no noise run asked");
    CHECK(!strcmp(rn.a_name, "hf") && !strcmp(rn.b_name, "meg"), "names %s %s", rn.a_name, rn.b_name);
    char *js = gm_tc_json(&rn);
    CHECK(js && strstr(js, "\"first_weights_differ\":\t1") && strstr(js, "\"drift_vs_noise\""), "json: %.300s", js ? js : "NULL");
    free(js);
    FILE *f = tmpfile(); // the table and the plot: written whole
    if (f) {
      gm_tc_print(&rn, f);
      gm_tc_svg(&rn, f);
      long len = ftell(f);
      char *buf = calloc((size_t)len + 1, 1);
      rewind(f);
      CHECK(buf && fread(buf, 1, (size_t)len, f) == (size_t)len, "read back");
      CHECK(buf && strstr(buf, "first step after which the weights differ: 1") && strstr(buf, "noise (A vs A") &&
                strstr(buf, "<svg") && strstr(buf, "</svg>"),
            "table and svg: %.400s", buf ? buf : "");
      free(buf);
      fclose(f);
    }
  }

  // the model given is unchanged
  int changed = 0;
  for (int i = 0; i < nt; i++) changed += memcmp(t0[i].data, tm[i].data, tm[i].numel * sizeof(float)) != 0;
  CHECK(changed == 0, "gm_tc_run changed %d tensors of its model", changed);

  // run A is gm_train_run's run: the losses of every step, bit for bit
  gm_train_state s;
  losses l = {{0}, 0};
  o.profile = &hf;
  o.batches = batches;
  o.n_batches = STEPS;
  o.eval_every = 0;
  o.on_step = on_step;
  o.ctx = &l;
  CHECK(gm_train_state_init(&s, &m0, &o) == 0, "state");
  CHECK(gm_train_run(&m0, &s, &o) == 0, "train: %s", gm_errmsg());
  int eq = 0;
  for (int k = 0; k < STEPS && rq.ab; k++) eq += memcmp(&l.loss[k], &rq.ab[k].loss_a, sizeof(float)) == 0;
  CHECK(l.n == STEPS && eq == STEPS, "run A's losses are gm_train_run's at %d of %d steps", eq, STEPS);
  gm_train_state_free(&s);

  // bad options
  gm_tc_result rb;
  gm_profile h16;
  gm_profile_get("hf", GM_F16, &h16);
  gm_tc_opts bad = {&hf, &h16, NULL, NULL, &o, batches, false, 0, NULL, NULL};
  CHECK(gm_tc_run(&m, &bad, &rb) != 0 && strstr(gm_errmsg(), "f32"), "an f16 profile refused: %s", gm_errmsg());
  int32_t oov[STEPS * B * T];
  memcpy(oov, batches, sizeof oov);
  oov[5] = 97;
  gm_tc_opts bad2 = {&hf, &meg, NULL, NULL, &o, oov, false, 0, NULL, NULL};
  CHECK(gm_tc_run(&m, &bad2, &rb) != 0 && strstr(gm_errmsg(), "vocabulary"), "a token outside the vocabulary refused: %s", gm_errmsg());

  gm_tc_result_free(&rn);
  gm_tc_result_free(&rq);
  gm_gpt2_free(&m0);
  gm_gpt2_free(&m);
  return test_done("test_traincmp");
}
