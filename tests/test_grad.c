// gm_gpt2_grad against loss.backward() of transformers' GPT2LMHeadModel under each profile
// (tools/ref/gen_grad_goldens.py, made on an Intel AMX host: read under the intel-amx target).
// Per case (config, dtype, profile, threads): the f32 loss bits and gm_hash64 of every parameter's
// gradient in the dtype. Every f32, f16 and bf16 case must match bit for bit, on 1 and 2 threads
// (f16 since its B-as-stored products follow oneDNN's order on intel-amx). f32 cases whose
// activation is an op-by-op tanh/erf GELU (HF's gelu_new, gelu_fast, gelu_python, ..., and the
// Megatron GELU of meg/megatron) need torch's MKL VML for f32 tanh/erf (GPTMEG_TORCH_MKL, on the
// CPU model that wrote the goldens): without it they are skipped, with a SKIP line.
#include "gptmeg/gelu.h"
#include "gptmeg/inputs.h"
#include "gptmeg/kernels.h"
#include "gptmeg/model.h"
#include "gptmeg/npy.h"
#include "gptmeg/target.h"
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *const DTN[] = {"f32", "f16", "bf16"};
static const gm_dtype DTS[] = {GM_F32, GM_F16, GM_BF16};

// The cases promised bit for bit: f32, f16 and bf16, under every profile.
static bool promised(gm_dtype dt) { return dt == GM_F32 || dt == GM_F16 || dt == GM_BF16; }

// True when an f32 run of this profile and config evaluates torch.tanh/erf/exp in f32 (MKL VML in torch).
static bool needs_vml(const char *profile, const gm_gpt2_config *c) {
  if (strcmp(profile, "meg") == 0 || strcmp(profile, "megatron") == 0) return true; // Megatron's tanh GELU
  if (c->act.kind != GM_ACT_GELU_FAMILY) return false;
  gm_gelu_variant v = c->act.gelu;
  return v != GM_GELU_ERF && v != GM_GELU_PYTORCH_TANH && v != GM_QUICK_GELU; // ATen's own kernels, or sigmoid
}

static bool vml_usable; // MKL VML loaded, on the goldens' CPU model

static uint64_t tensor_hash(const float *x, size_t n, gm_dtype dt) {
  if (dt == GM_F32) return gm_hash64(x, n * sizeof(float));
  uint16_t *h = malloc(n * sizeof *h);
  if (!h) return 0;
  gm_f32_to_dtype_buf(dt, x, h, n);
  uint64_t r = gm_hash64(h, n * sizeof *h);
  free(h);
  return r;
}

typedef struct {
  int cases, identical, loss_same, skipped;
} tally;

// One config's cases in dtype d: the model loaded and rounded once, then every profile and thread count.
static void run_config(const char *key, const cJSON *cfg, int d, tally *t) {
  const cJSON *jm = cJSON_GetObjectItem(cfg, "model"), *jT = cJSON_GetObjectItem(cfg, "T");
  char dir[256];
  snprintf(dir, sizeof dir, "tests/golden/model/%s", jm->valuestring);
  const int T = jT->valueint;
  int B = 0;
  int32_t *ids = test_model_tokens(dir, T, &B);
  if (!ids) return;
  gm_gpt2 m, g;
  CHECK(gm_gpt2_load(&m, dir) == 0 && gm_gpt2_to_dtype(&m, DTS[d]) == 0, "%s: %s", dir, gm_errmsg());
  CHECK(gm_gpt2_alloc_like(&g, &m) == 0, "%s", gm_errmsg());
  gm_gpt2_tensor *ts = calloc((size_t)m.cfg.n_layer * 12 + 6, sizeof *ts);
  const int nt = gm_gpt2_tensors(&g, ts);
  const char *profiles[] = {"hf", "hf-legacy", "meg", "megatron"};
  for (int q = 0; q < 4; q++)
    for (int th = 1; th <= 2; th++) {
      if (test_quick() && th == 2) continue;
      char id[96], name[64];
      snprintf(name, sizeof name, "%s_%s_t%d", profiles[q], DTN[d], th);
      snprintf(id, sizeof id, "%s/%s", key, name);
      const cJSON *c = cJSON_GetObjectItem(cfg, name);
      if (!c) continue;
      if (DTS[d] == GM_F32 && needs_vml(profiles[q], &m.cfg) && !vml_usable) {
        t->skipped++;
        continue;
      }
      gm_profile p;
      gm_profile_get(profiles[q], DTS[d], &p);
      float loss = 0.0f;
      gm_gpt2_grad_opts o = {&p, ids, NULL, B, T, th, 1.0f, NULL};
      int rc = gm_gpt2_grad(&m, &o, &g, &loss, NULL);
      CHECK(rc == 0, "%s: %s", id, gm_errmsg());
      uint32_t lb;
      memcpy(&lb, &loss, 4);
      bool loss_ok = rc == 0 && lb == (uint32_t)strtoul(cJSON_GetObjectItem(c, "loss")->valuestring, NULL, 16);
      const cJSON *gh = cJSON_GetObjectItem(c, "grads");
      int same = 0;
      char first_bad[80] = "";
      for (int i = 0; i < nt; i++) {
        const cJSON *h = cJSON_GetObjectItem(gh, ts[i].name);
        CHECK(h != NULL, "%s: no golden for %s", id, ts[i].name);
        bool ok = rc == 0 && h && tensor_hash(ts[i].data, ts[i].numel, DTS[d]) == strtoull(h->valuestring, NULL, 16);
        same += ok;
        if (!ok && !first_bad[0]) snprintf(first_bad, sizeof first_bad, "%s", ts[i].name);
      }
      t->cases++;
      t->identical += loss_ok && same == nt;
      t->loss_same += loss_ok;
      if (promised(DTS[d]))
        CHECK(loss_ok && same == nt, "%s: loss %s, %d/%d gradients bit-identical (first differing: %s)", id,
              loss_ok ? "identical" : "differs", same, nt, first_bad);
      else if (getenv("GM_TEST_VERBOSE"))
        fprintf(stderr, "  %s: loss %s, %d/%d gradients identical%s%s\n", id, loss_ok ? "same" : "differs", same, nt,
                first_bad[0] ? ", first differing " : "", first_bad);
    }
  free(ts);
  gm_gpt2_free(&g);
  gm_gpt2_free(&m);
  free(ids);
}

int main(void) {
  gm_torch_target_set(GM_TT_INTEL_AMX); // the goldens' CPU class
  const char *path = "tests/golden/targets/intel-amx/grad/index.json";
  char *txt = test_slurp(path);
  CHECK(txt != NULL, "%s missing (run tools/ref/gen_grad_goldens.py on an Intel AMX machine)", path);
  if (!txt) return test_done("test_grad");
  cJSON *doc = cJSON_Parse(txt);
  CHECK(doc != NULL, "%s does not parse", path);
  char here[256];
  test_cpu_model(here, sizeof here);
  const cJSON *gcpu = cJSON_GetObjectItem(doc, "cpu");
  vml_usable = gm_gelu_torch_mkl_loaded() && cJSON_IsString(gcpu) && strcmp(gcpu->valuestring, here) == 0;
  tally t = {0, 0, 0, 0};
  const cJSON *cfgs = cJSON_GetObjectItem(doc, "configs");
  for (const cJSON *cfg = cfgs ? cfgs->child : NULL; cfg; cfg = cfg->next)
    for (int d = 0; d < 3; d++) run_config(cfg->string, cfg, d, &t);
  if (t.skipped)
    test_skip("f32 cases with op-by-op tanh/erf GELUs", gm_gelu_torch_mkl_loaded()
                                                            ? "the goldens were written on another CPU model (MKL VML's bits depend on it)"
                                                            : "GPTMEG_TORCH_MKL not set (torch's f32 tanh/erf are MKL VML)");
  printf("loss.backward() of GPT2LMHeadModel: %d/%d cases bit-identical (loss and every gradient), %d with the same loss, "
         "%d skipped\n", t.identical, t.cases, t.loss_same, t.skipped);
  cJSON_Delete(doc);
  free(txt);
  return test_done("test_grad");
}
