// gm_gpt2_grad under autocast (gm_gpt2_grad_opts.autocast) against tools/ref/gen_autocast_grad_goldens.py:
// transformers' GPT2LMHeadModel with f32 parameters, `with torch.autocast("cpu", dtype=torch.bfloat16):
// loss = model(ids, labels=ids).loss`, then `loss.backward()`, on an Intel AMX host (read under the
// intel-amx target: the bf16 matmuls are oneDNN's AMX kernels there). Profiles hf, hf-legacy, meg. Per case
// (config, profile, threads 1 and 2): the f32 loss bits and gm_hash64 of every parameter's f32 gradient, all promised
// bit for bit. GM_TEST_VERBOSE=DIR also writes each case's gradients to DIR/<case>.safetensors.
// Also: autocast's argument checks (an f32 profile, a working copy that is the model itself).
#include "gptmeg/inputs.h"
#include "gptmeg/model.h"
#include "gptmeg/npy.h"
#include "gptmeg/target.h"
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static int cases, identical;

static void run_config(const char *key, const cJSON *cfg) {
  const cJSON *jm = cJSON_GetObjectItem(cfg, "model"), *jT = cJSON_GetObjectItem(cfg, "T");
  char dir[256];
  snprintf(dir, sizeof dir, "tests/golden/model/%s", jm->valuestring);
  const int T = jT->valueint;
  int B = 0;
  int32_t *ids = test_model_tokens(dir, T, &B);
  if (!ids) return;
  gm_gpt2 m, work, g;
  CHECK(gm_gpt2_load(&m, dir) == 0, "%s: %s", dir, gm_errmsg());
  CHECK(gm_gpt2_alloc_like(&work, &m) == 0 && gm_gpt2_to_dtype(&work, GM_BF16) == 0 && gm_gpt2_set_weights(&work, &m, 1) == 0,
        "%s", gm_errmsg());
  CHECK(gm_gpt2_alloc_like(&g, &m) == 0, "%s", gm_errmsg());
  gm_gpt2_tensor *ts = calloc((size_t)m.cfg.n_layer * 12 + 6, sizeof *ts);
  const int nt = gm_gpt2_tensors(&g, ts);
  static const char *const profiles[] = {"hf", "hf-legacy", "meg"};
  for (int k = 0; k < 6; k++) {
    const int th = 1 + k % 2;
    if (test_quick() && th == 2) continue;
    gm_profile p;
    gm_profile_get(profiles[k / 2], GM_BF16, &p);
    char id[96], name[32];
    snprintf(name, sizeof name, "%s_t%d", profiles[k / 2], th);
    snprintf(id, sizeof id, "%s/%s", key, name);
    const cJSON *c = cJSON_GetObjectItem(cfg, name);
    if (!c) continue;
    float loss = 0.0f;
    gm_gpt2_grad_opts o = {&p, ids, NULL, B, T, th, 1.0f, &work};
    int rc = gm_gpt2_grad(&m, &o, &g, &loss, NULL);
    CHECK(rc == 0, "%s: %s", id, gm_errmsg());
    uint32_t lb;
    memcpy(&lb, &loss, 4);
    bool loss_ok = rc == 0 && lb == (uint32_t)strtoul(cJSON_GetObjectItem(c, "loss")->valuestring, NULL, 16);
    const cJSON *gh = cJSON_GetObjectItem(c, "grads");
    int same = 0;
    char bad[400] = "";
    for (int i = 0; i < nt; i++) {
      const cJSON *h = cJSON_GetObjectItem(gh, ts[i].name);
      CHECK(h != NULL, "%s: no golden for %s", id, ts[i].name);
      bool ok = rc == 0 && h && gm_hash64(ts[i].data, ts[i].numel * sizeof(float)) == strtoull(h->valuestring, NULL, 16);
      same += ok;
      if (!ok && strlen(bad) + strlen(ts[i].name) + 2 < sizeof bad) strcat(strcat(bad, " "), ts[i].name);
    }
    const char *dump = getenv("GM_TEST_VERBOSE");
    if (dump && dump[0] == '/') {
      char out[400];
      snprintf(out, sizeof out, "%s/%s_%s.safetensors", dump, key, name);
      CHECK(gm_gpt2_write_tensors(&g, out, GM_F32, NULL, 0) == 0, "%s", gm_errmsg());
    }
    cases++;
    identical += loss_ok && same == nt;
    CHECK(loss_ok && same == nt, "%s: loss %s, %d/%d gradients bit-identical (differing:%s)", id, loss_ok ? "identical" : "differs",
          same, nt, bad);
  }
  free(ts);
  gm_gpt2_free(&g);
  gm_gpt2_free(&work);
  gm_gpt2_free(&m);
  free(ids);
}

static void test_refusals(void) {
  gm_gpt2 m, g;
  CHECK(gm_gpt2_load(&m, "tests/golden/model/base") == 0 && gm_gpt2_alloc_like(&g, &m) == 0, "%s", gm_errmsg());
  int32_t ids[4] = {1, 2, 3, 4};
  gm_profile p32, p16;
  gm_profile_get("hf", GM_F32, &p32);
  gm_profile_get("hf", GM_BF16, &p16);
  float loss;
  gm_gpt2_grad_opts o = {&p16, ids, NULL, 1, 4, 1, 1.0f, &m};
  CHECK(gm_gpt2_grad(&m, &o, &g, &loss, NULL) != 0 && strstr(gm_errmsg(), "autocast"), "working copy = model: '%s'", gm_errmsg());
  gm_gpt2 work;
  CHECK(gm_gpt2_alloc_like(&work, &m) == 0 && gm_gpt2_to_dtype(&work, GM_BF16) == 0 && gm_gpt2_set_weights(&work, &m, 1) == 0,
        "%s", gm_errmsg());
  o.autocast = &work;
  o.profile = &p32;
  CHECK(gm_gpt2_grad(&m, &o, &g, &loss, NULL) != 0 && strstr(gm_errmsg(), "bf16 profile"), "f32 profile: '%s'", gm_errmsg());
  gm_gpt2_free(&work);
  gm_gpt2_free(&g);
  gm_gpt2_free(&m);
}

int main(void) {
  gm_torch_target_set(GM_TT_INTEL_AMX); // the goldens' CPU class
  test_refusals();
  const char *path = "tests/golden/targets/intel-amx/grad_autocast/index.json";
  char *txt = test_slurp(path);
  CHECK(txt != NULL, "%s missing (run tools/ref/gen_autocast_grad_goldens.py on an Intel AMX machine)", path);
  if (!txt) return test_done("test_grad_autocast");
  cJSON *doc = cJSON_Parse(txt);
  CHECK(doc != NULL, "%s does not parse", path);
  const cJSON *cfgs = cJSON_GetObjectItem(doc, "configs");
  for (const cJSON *cfg = cfgs ? cfgs->child : NULL; cfg; cfg = cfg->next) run_config(cfg->string, cfg);
  printf("autocast loss.backward(): %d/%d cases bit-identical (loss and every f32 gradient)\n", identical, cases);
  cJSON_Delete(doc);
  free(txt);
  return test_done("test_grad_autocast");
}
