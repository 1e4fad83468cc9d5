// gm_train_run against 20 steps of torch.optim.AdamW on transformers' GPT2LMHeadModel
// (tools/ref/gen_train_goldens.py, made on an Intel AMX host: read under the intel-amx target):
// every step's loss and total gradient norm (f32 bits), learning rate (the double) and the hash of
// every weight after the step must match. Runs through op-by-op tanh GELUs in f32 need torch's MKL
// VML (GPTMEG_TORCH_MKL on the goldens' CPU model) and are skipped without it, with a SKIP line.
// Also: a run cut in two by a checkpoint (gm_train_save, gm_train_load) gives the weights of the
// straight run, byte for byte.
#include "gptmeg/gelu.h"
#include "gptmeg/inputs.h"
#include "gptmeg/npy.h"
#include "gptmeg/target.h"
#include "gptmeg/train.h"
#include "harness.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  const gm_gpt2 *m;
  const cJSON *steps; // the golden's per-step array
  const char *id;
  int bad_step;       // the first step that differed (0: none)
  char what[160];
} watch;

static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static void on_step(void *ctx, const gm_train_step *s) {
  watch *w = ctx;
  const cJSON *g = cJSON_GetArrayItem(w->steps, (int)s->step - 1);
  if (!g || w->bad_step) return;
  char h[20];
  snprintf(h, sizeof h, "%016llx", (unsigned long long)gm_hash64(w->m->storage, (size_t)w->m->n_params * sizeof(float)));
  uint32_t gl = (uint32_t)strtoul(cJSON_GetObjectItem(g, "loss")->valuestring, NULL, 16);
  uint32_t gn = (uint32_t)strtoul(cJSON_GetObjectItem(g, "grad_norm")->valuestring, NULL, 16);
  double glr = cJSON_GetObjectItem(g, "lr")->valuedouble;
  const char *gw = cJSON_GetObjectItem(g, "weights")->valuestring;
  if (bits(s->loss) != gl) snprintf(w->what, sizeof w->what, "loss %08x, torch %08x", bits(s->loss), gl);
  else if (bits(s->grad_norm) != gn) snprintf(w->what, sizeof w->what, "grad norm %08x, torch %08x", bits(s->grad_norm), gn);
  else if (s->lr != glr) snprintf(w->what, sizeof w->what, "lr %.17g, torch %.17g", s->lr, glr);
  else if (strcmp(h, gw)) snprintf(w->what, sizeof w->what, "weights hash %s, torch %s", h, gw);
  else return;
  w->bad_step = (int)s->step;
}

static void set_run(gm_train_opts *o, const cJSON *doc, const gm_profile *p, const int32_t *batches, bool fused, int threads) {
  gm_train_opts_default(o);
  o->profile = p;
  o->B = cJSON_GetObjectItem(doc, "batch")->valueint;
  o->T = cJSON_GetObjectItem(doc, "seq")->valueint;
  o->steps = cJSON_GetObjectItem(doc, "steps")->valueint;
  o->batches = batches;
  o->n_batches = o->steps;
  o->threads = threads;
  o->clip = cJSON_GetObjectItem(doc, "clip")->valuedouble;
  o->eval_every = 0;
  const cJSON *betas = cJSON_GetObjectItem(doc, "betas");
  gm_train_set_optimizer(o, cJSON_GetObjectItem(doc, "lr")->valuedouble, cJSON_GetObjectItem(doc, "warmup")->valueint, true,
                         cJSON_GetObjectItem(doc, "weight_decay")->valuedouble, cJSON_GetArrayItem(betas, 0)->valuedouble,
                         cJSON_GetArrayItem(betas, 1)->valuedouble, cJSON_GetObjectItem(doc, "eps")->valuedouble, fused);
}

static int32_t *read_batches(const char *path, size_t *count) {
  gm_npy a;
  CHECK(gm_npy_read(path, GM_F16, &a) == 0 && a.dtype == GM_I32, "%s: %s", path, gm_errmsg());
  if (a.dtype != GM_I32) return NULL;
  *count = a.count;
  return a.data; // malloc'd by gm_npy_read; the caller frees it
}

// The resume property: steps 1..k, save, load, k+1..n == 1..n straight (weights and moments bytes).
static void test_resume(const cJSON *doc, const int32_t *batches) {
  gm_profile p;
  gm_profile_get("hf", GM_F32, &p);
  gm_train_opts o;
  set_run(&o, doc, &p, batches, false, 1);
  o.steps = 6;
  gm_train_set_optimizer(&o, 3e-3, 2, true, 0.1, 0.9, 0.95, 1e-8, false);
  gm_gpt2 a, b;
  gm_train_state sa, sb;
  CHECK(gm_gpt2_load(&a, "tests/golden/model/quick_untied") == 0 && gm_train_state_init(&sa, &a, &o) == 0, "%s", gm_errmsg());
  CHECK(gm_train_run(&a, &sa, &o) == 0, "straight run: %s", gm_errmsg());
  CHECK(gm_gpt2_load(&b, "tests/golden/model/quick_untied") == 0 && gm_train_state_init(&sb, &b, &o) == 0, "%s", gm_errmsg());
  char dir[] = "/tmp/gptmeg_test_train_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char ck[64];
  snprintf(ck, sizeof ck, "%s/ck", dir);
  long total = o.steps;
  o.steps = 3;
  CHECK(gm_train_run(&b, &sb, &o) == 0 && gm_train_save(ck, &b, &sb, &o) == 0, "first half: %s", gm_errmsg());
  gm_train_state_free(&sb);
  gm_gpt2_free(&b);
  o.steps = total;
  CHECK(gm_train_load(ck, &b, &sb, &o) == 0, "load: %s", gm_errmsg());
  CHECK(sb.step == 3, "resumed at step %ld", sb.step);
  CHECK(gm_train_run(&b, &sb, &o) == 0, "second half: %s", gm_errmsg());
  CHECK(memcmp(a.storage, b.storage, (size_t)a.n_params * sizeof(float)) == 0, "resumed weights differ from the straight run's");
  CHECK(memcmp(sa.exp_avg_sq.storage, sb.exp_avg_sq.storage, (size_t)a.n_params * sizeof(float)) == 0,
        "resumed second moments differ");
  // a checkpoint refuses another batch shape, naming it
  o.B += 1;
  gm_gpt2 c;
  gm_train_state sc;
  CHECK(gm_train_load(ck, &c, &sc, &o) != 0 && strstr(gm_errmsg(), "batches of") != NULL, "another batch shape: '%s'", gm_errmsg());
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0, "cleanup");
  gm_train_state_free(&sa);
  gm_train_state_free(&sb);
  gm_gpt2_free(&a);
  gm_gpt2_free(&b);
}

int main(void) {
  gm_torch_target_set(GM_TT_INTEL_AMX); // the goldens' CPU class
  const char *path = "tests/golden/targets/intel-amx/train/index.json";
  char *txt = test_slurp(path);
  CHECK(txt != NULL, "%s missing (run tools/ref/gen_train_goldens.py on an Intel AMX machine)", path);
  if (!txt) return test_done("test_train");
  cJSON *doc = cJSON_Parse(txt);
  size_t nb = 0;
  int32_t *batches = read_batches("tests/golden/targets/intel-amx/train/batches.npy", &nb);
  char here[256];
  test_cpu_model(here, sizeof here);
  const cJSON *gcpu = cJSON_GetObjectItem(doc, "cpu");
  const bool vml = gm_gelu_torch_mkl_loaded() && cJSON_IsString(gcpu) && strcmp(gcpu->valuestring, here) == 0;
  int runs = 0, same = 0, skipped = 0;
  for (const cJSON *c = cJSON_GetObjectItem(doc, "cases")->child; c && batches; c = c->next) {
    const char *model = cJSON_GetObjectItem(c, "model")->valuestring, *prof = cJSON_GetObjectItem(c, "profile")->valuestring;
    const int threads = cJSON_GetObjectItem(c, "threads")->valueint;
    const bool fused = strcmp(cJSON_GetObjectItem(c, "optimizer")->valuestring, "adamw-fused") == 0;
    char dir[128];
    snprintf(dir, sizeof dir, "tests/golden/model/%s", model);
    gm_gpt2 m;
    CHECK(gm_gpt2_load(&m, dir) == 0, "%s: %s", dir, gm_errmsg());
    // torch's f32 tanh/erf (MKL VML) run in Megatron's GELU and in HF's op-by-op GELUs
    const gm_gelu_variant v = m.cfg.act.gelu;
    const bool tanh_gelu = strcmp(prof, "hf") != 0 || (m.cfg.act.kind == GM_ACT_GELU_FAMILY && v != GM_GELU_ERF &&
                                                        v != GM_GELU_PYTORCH_TANH && v != GM_QUICK_GELU);
    if ((tanh_gelu && !vml) || (test_quick() && threads > 1)) {
      skipped++;
      gm_gpt2_free(&m);
      continue;
    }
    gm_profile p;
    gm_profile_get(prof, GM_F32, &p);
    gm_train_opts o;
    set_run(&o, doc, &p, batches, fused, threads);
    watch w = {&m, cJSON_GetObjectItem(c, "steps"), c->string, 0, ""};
    o.on_step = on_step;
    o.ctx = &w;
    gm_train_state s;
    CHECK(gm_train_state_init(&s, &m, &o) == 0, "%s", gm_errmsg());
    CHECK(gm_train_run(&m, &s, &o) == 0, "%s: %s", c->string, gm_errmsg());
    CHECK(w.bad_step == 0, "%s: step %d: %s", c->string, w.bad_step, w.what);
    runs++;
    same += w.bad_step == 0;
    gm_train_state_free(&s);
    gm_gpt2_free(&m);
  }
  if (skipped)
    test_skip("training runs", vml ? "threads > 1 under GPTMEG_QUICK" : "f32 op-by-op tanh GELUs need GPTMEG_TORCH_MKL on the goldens' CPU model");
  printf("20 AdamW steps against torch: %d/%d runs bit-identical at every step (loss, grad norm, lr, weights), %d skipped\n",
         same, runs, skipped);
  if (batches) test_resume(doc, batches);
  free(batches);
  cJSON_Delete(doc);
  free(txt);
  return test_done("test_train");
}
