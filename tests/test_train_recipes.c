// gm_train_run under the mixed-precision recipes against tools/ref/gen_recipe_goldens.py (20 steps of
// Megatron's mixed-precision loop written in plain torch, on an Intel AMX host: read under the
// intel-amx target).
// - bf16-megatron (hf, hf-legacy, meg, megatron; 1 and 2 threads): every step's loss, total gradient norm (f32
//   bits), lr, and the hash of the f32 main weights after the step must be torch's.
// - fp16-megatron (hf, base and quick_untied, 1 thread; from 2^32 and 2^12): the same, bit for bit, plus every
//   step's loss scale and skipped flag (the overflow of Megatron's initial 2^32 and the backoff to 2^15; a
//   skipped step has no grad norm in torch's record).
// - fp16-deepspeed (hf, base 1 and 2 threads, quick_untied with clipping 1 and off; from 2^16, window 4): DeepSpeed v0.5.8's
//   FP16_Optimizer transcribed in torch; the same fields bit for bit (the scale backs off, grows back
//   after its window and overflows again; grad norm = f32(scaled norm / cur_scale)).
// - bf16-autocast (hf, base 1 and 2 threads, quick_untied): torch.autocast('cpu', bfloat16) around the f32
//   model's forward, the f32 loop after (clip, AdamW on the f32 parameters): loss, norm, lr and the hash of
//   the f32 parameters bit for bit at every step; refused on a bf16 checkpoint and under another profile.
// Also: gm_gpt2_set_weights gives the bits of gm_gpt2_to_dtype (weights and fast copies), and a
// run cut by a checkpoint gives the straight run's bytes under both recipes (the fp16 one across
// the loss scaler's backoffs: its state is in train_state.json; fp16-deepspeed across a backoff and a growth).
#include "gptmeg/inputs.h"
#include "gptmeg/kernels.h"
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
  bool exact;         // bf16: every field bit for bit
  int bad_step;       // the first step that differed in what must hold (0: none)
  char what[200];
  int same_bits;      // steps whose loss and weights hash are torch's
  double max_rel_loss;
} watch;

static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static float from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}

static void on_step(void *ctx, const gm_train_step *s) {
  watch *w = ctx;
  const cJSON *g = cJSON_GetArrayItem(w->steps, (int)s->step - 1);
  if (!g || w->bad_step) return;
  char h[20];
  snprintf(h, sizeof h, "%016llx", (unsigned long long)gm_hash64(w->m->storage, (size_t)w->m->n_params * sizeof(float)));
  uint32_t gl = (uint32_t)strtoul(cJSON_GetObjectItem(g, "loss")->valuestring, NULL, 16);
  const cJSON *gnj = cJSON_GetObjectItem(g, "grad_norm");
  double glr = cJSON_GetObjectItem(g, "lr")->valuedouble, gscale = cJSON_GetObjectItem(g, "loss_scale")->valuedouble;
  bool gskip = cJSON_IsTrue(cJSON_GetObjectItem(g, "skipped"));
  const char *gw = cJSON_GetObjectItem(g, "weights")->valuestring;
  double rel = fabs((double)s->loss - from_bits(gl)) / fabs((double)from_bits(gl));
  if (rel > w->max_rel_loss) w->max_rel_loss = rel;
  w->same_bits += bits(s->loss) == gl && !strcmp(h, gw);
  if (s->skipped != gskip) snprintf(w->what, sizeof w->what, "skipped %d, torch %d", s->skipped, gskip);
  else if (s->loss_scale != gscale) snprintf(w->what, sizeof w->what, "loss scale %g, torch %g", s->loss_scale, gscale);
  else if (s->lr != glr) snprintf(w->what, sizeof w->what, "lr %.17g, torch %.17g", s->lr, glr);
  else if (!w->exact && !(rel <= 1e-3)) snprintf(w->what, sizeof w->what, "loss %.9g, torch %.9g", s->loss, from_bits(gl));
  else if (w->exact && bits(s->loss) != gl) snprintf(w->what, sizeof w->what, "loss %08x, torch %08x", bits(s->loss), gl);
  else if (w->exact && !(gskip && cJSON_IsNull(gnj)) && // a skipped fp16 step has no norm in torch's record
           (!cJSON_IsString(gnj) || bits(s->grad_norm) != (uint32_t)strtoul(gnj->valuestring, NULL, 16)))
    snprintf(w->what, sizeof w->what, "grad norm %08x, torch %s", bits(s->grad_norm), cJSON_IsString(gnj) ? gnj->valuestring : "null");
  else if (w->exact && strcmp(h, gw)) snprintf(w->what, sizeof w->what, "weights hash %s, torch %s", h, gw);
  else return;
  w->bad_step = (int)s->step;
}

static void set_run(gm_train_opts *o, const cJSON *doc, const gm_profile *p, gm_recipe r, const int32_t *batches, int threads) {
  gm_train_opts_default(o);
  o->profile = p;
  o->recipe = r;
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
                         cJSON_GetArrayItem(betas, 1)->valuedouble, cJSON_GetObjectItem(doc, "eps")->valuedouble, false);
}

// gm_gpt2_set_weights(work, main) == gm_gpt2_to_dtype of the same weights: storage and fast copies.
static void test_set_weights(const char *dir, gm_dtype dt) {
  gm_gpt2 a, b, w;
  CHECK(gm_gpt2_load(&a, dir) == 0 && gm_gpt2_load(&b, dir) == 0, "%s", gm_errmsg());
  CHECK(gm_gpt2_to_dtype(&a, dt) == 0, "%s", gm_errmsg());
  CHECK(gm_gpt2_alloc_like(&w, &b) == 0 && gm_gpt2_to_dtype(&w, dt) == 0, "%s", gm_errmsg());
  CHECK(gm_gpt2_set_weights(&w, &b, 2) == 0, "%s", gm_errmsg());
  CHECK(memcmp(a.storage, w.storage, (size_t)a.n_params * sizeof(float)) == 0, "%s: set_weights' %s storage differs", dir,
        gm_dtype_name(dt));
  CHECK(a.copy_bytes == w.copy_bytes, "copy sizes %zu, %zu", a.copy_bytes, w.copy_bytes);
  if (a.packed && w.packed) CHECK(memcmp(a.packed, w.packed, a.copy_bytes) == 0, "%s: the bf16 pairs differ", dir);
  if (a.half && w.half) CHECK(memcmp(a.half, w.half, a.copy_bytes) == 0, "%s: the f16 copies differ", dir);
  CHECK((a.packed != NULL) == (w.packed != NULL) && (a.half != NULL) == (w.half != NULL), "fast copies present in one only");
  CHECK(gm_gpt2_set_weights(&w, &w, 1) != 0, "set_weights onto itself must fail");
  gm_gpt2_free(&a);
  gm_gpt2_free(&b);
  gm_gpt2_free(&w);
}

// gm_gpt2_alloc_working(bf16) + gm_gpt2_set_weights == gm_gpt2_to_dtype(bf16) of the same weights:
// the pairs word for word, wte's bits the rounded wte, every tensor it keeps in f32 the same, and no
// f32 copy of the matrices (the memory the packed_only layout exists to save).
static void test_working_bf16(const char *dir) {
  gm_gpt2 a, b, w;
  CHECK(gm_gpt2_load(&a, dir) == 0 && gm_gpt2_load(&b, dir) == 0, "%s", gm_errmsg());
  CHECK(gm_gpt2_to_dtype(&a, GM_BF16) == 0, "%s", gm_errmsg());
  CHECK(gm_gpt2_alloc_working(&w, &b, GM_BF16) == 0 && gm_gpt2_set_weights(&w, &b, 2) == 0, "%s", gm_errmsg());
  CHECK(w.packed_only && !w.wte && !w.lm_head && !w.layers[0].attn_w && !w.layers[0].mproj_w && w.wpe && w.layers[0].ln1_w,
        "%s: the working copy keeps f32 matrices or lacks its other tensors", dir);
  const gm_gpt2_config *c = &a.cfg;
  const size_t VD = (size_t)c->vocab_size * c->n_embd, pairs = (size_t)(a.lm_head_p - a.packed) + gm_bf16_packed_size(c->n_embd, c->vocab_size);
  CHECK(memcmp(a.packed, w.packed, pairs * sizeof(uint32_t)) == 0, "%s: the working copy's bf16 pairs differ", dir);
  uint16_t *bits = malloc(VD * sizeof *bits);
  if (bits) {
    gm_f32_to_dtype_buf(GM_BF16, a.wte, bits, VD);
    CHECK(w.wte_bf16 && memcmp(bits, w.wte_bf16, VD * sizeof *bits) == 0, "%s: wte's bf16 bits differ", dir);
  }
  free(bits);
  gm_gpt2_tensor ta[64], tw[64];
  int n = c->n_layer <= 4 ? gm_gpt2_tensors(&a, ta) : 0;
  CHECK(n == 0 || gm_gpt2_tensors(&w, tw) == n, "tensor lists differ");
  for (int i = 0; i < n; i++)
    if (tw[i].data) CHECK(memcmp(ta[i].data, tw[i].data, ta[i].numel * sizeof(float)) == 0, "%s: %s differs", dir, ta[i].name);
  CHECK(gm_gpt2_write_tensors(&w, "test_working_bf16.safetensors", GM_F32, NULL, 0) != 0 && access("test_working_bf16.safetensors", F_OK) != 0,
        "writing a working copy's tensors must be refused, without a file");
  CHECK(w.copy_bytes == a.copy_bytes + (VD * 2 + 63) / 64 * 64, "the working copy's layout is %zu bytes (pairs %zu)", w.copy_bytes,
        a.copy_bytes);
  gm_gpt2_free(&a);
  gm_gpt2_free(&b);
  gm_gpt2_free(&w);
}

// The loss scale each step's backward used (the straight resume run's, steps 1..6).
static double scales_seen[8];
static void record_scale(void *ctx, const gm_train_step *s) {
  (void)ctx;
  if (s->step >= 1 && s->step <= 6) scales_seen[s->step] = s->loss_scale;
}

// steps 1..3, save, load, 4..6 == 1..6 straight (main weights, moments, scaler).
static void test_resume(const cJSON *doc, const int32_t *batches, gm_recipe r, const char *model) {
  gm_profile p;
  const bool fp16 = r == GM_RECIPE_FP16_MEGATRON || r == GM_RECIPE_FP16_DEEPSPEED;
  gm_profile_get("hf", fp16 ? GM_F16 : GM_BF16, &p);
  gm_train_opts o;
  set_run(&o, doc, &p, r, batches, 1);
  o.steps = 6;
  if (r == GM_RECIPE_FP16_MEGATRON) o.loss_scale_init = 1u << 20; // overflows at first: backoffs on both sides of the cut
  if (r == GM_RECIPE_FP16_DEEPSPEED) { // overflows at step 1; window 2: grows at step 5, after the cut
    o.loss_scale_init = 65536;
    o.loss_scale_window = 2;
  }
  gm_gpt2 a, b;
  gm_train_state sa, sb;
  char dir[128];
  snprintf(dir, sizeof dir, "tests/golden/model/%s", model);
  CHECK(gm_gpt2_load(&a, dir) == 0 && gm_train_state_init(&sa, &a, &o) == 0, "%s", gm_errmsg());
  o.on_step = record_scale;
  CHECK(gm_train_run(&a, &sa, &o) == 0, "straight run: %s", gm_errmsg());
  o.on_step = NULL;
  CHECK(gm_gpt2_load(&b, dir) == 0 && gm_train_state_init(&sb, &b, &o) == 0, "%s", gm_errmsg());
  char tmp[] = "/tmp/gptmeg_test_recipes_XXXXXX";
  CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
  char ck[64];
  snprintf(ck, sizeof ck, "%s/ck", tmp);
  o.steps = 3;
  CHECK(gm_train_run(&b, &sb, &o) == 0 && gm_train_save(ck, &b, &sb, &o) == 0, "first half: %s", gm_errmsg());
  const long opt3 = sb.opt_steps;
  const float scale3 = sb.scaler.scale;
  const gm_deepspeed_scaler ds3 = sb.ds_scaler;
  gm_train_state_free(&sb);
  gm_gpt2_free(&b);
  o.steps = 6;
  CHECK(gm_train_load(ck, &b, &sb, &o) == 0, "load: %s", gm_errmsg());
  CHECK(sb.step == 3 && sb.opt_steps == opt3 && sb.scaler.scale == scale3, "resumed at step %ld (%ld optimizer steps, scale %g)",
        sb.step, sb.opt_steps, sb.scaler.scale);
  CHECK(sb.ds_scaler.cur_scale == ds3.cur_scale && sb.ds_scaler.cur_iter == ds3.cur_iter &&
            sb.ds_scaler.last_overflow_iter == ds3.last_overflow_iter,
        "resumed DeepSpeed scaler: scale %g iter %ld last overflow %ld", sb.ds_scaler.cur_scale, sb.ds_scaler.cur_iter,
        sb.ds_scaler.last_overflow_iter);
  CHECK(gm_train_run(&b, &sb, &o) == 0, "second half: %s", gm_errmsg());
  CHECK(memcmp(a.storage, b.storage, (size_t)a.n_params * sizeof(float)) == 0, "%s: resumed weights differ",
        gm_recipe_name(r));
  CHECK(memcmp(sa.exp_avg_sq.storage, sb.exp_avg_sq.storage, (size_t)a.n_params * sizeof(float)) == 0,
        "%s: resumed second moments differ", gm_recipe_name(r));
  CHECK(sa.opt_steps == sb.opt_steps && sa.scaler.scale == sb.scaler.scale &&
            sa.scaler.hysteresis_tracker == sb.scaler.hysteresis_tracker && sa.scaler.growth_tracker == sb.scaler.growth_tracker,
        "%s: resumed scaler/optimizer count differ", gm_recipe_name(r));
  CHECK(sa.ds_scaler.cur_scale == sb.ds_scaler.cur_scale && sa.ds_scaler.cur_iter == sb.ds_scaler.cur_iter &&
            sa.ds_scaler.last_overflow_iter == sb.ds_scaler.last_overflow_iter,
        "%s: resumed DeepSpeed scaler differs", gm_recipe_name(r));
  if (fp16) CHECK(sa.opt_steps < sa.step, "the fp16 resume case should skip a step (opt %ld)", sa.opt_steps);
  if (r == GM_RECIPE_FP16_DEEPSPEED) {
    printf("fp16-deepspeed resume: scales of steps 1..6: %g %g %g %g %g %g\n", scales_seen[1], scales_seen[2], scales_seen[3],
           scales_seen[4], scales_seen[5], scales_seen[6]);
    CHECK(scales_seen[2] < scales_seen[1] && ds3.cur_scale < 65536 && (scales_seen[5] > scales_seen[4] || scales_seen[6] > scales_seen[5]),
          "the DeepSpeed resume case should back off before the cut and grow after it");
  }
  // the checkpoint of one recipe is refused by the other
  o.recipe = r == GM_RECIPE_FP16_MEGATRON ? GM_RECIPE_FP16_DEEPSPEED
           : r == GM_RECIPE_FP16_DEEPSPEED ? GM_RECIPE_FP16_MEGATRON : GM_RECIPE_FP16_MEGATRON;
  gm_gpt2 c;
  gm_train_state sc;
  CHECK(gm_train_load(ck, &c, &sc, &o) != 0 && strstr(gm_errmsg(), "recipe") != NULL, "another recipe: '%s'", gm_errmsg());
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  CHECK(system(cmd) == 0, "cleanup");
  gm_train_state_free(&sa);
  gm_train_state_free(&sb);
  gm_gpt2_free(&a);
  gm_gpt2_free(&b);
}

// What a recipe accepts: f32 checkpoints or its own dtype's; another dtype or a profile of another dtype is refused.
static void test_refusals(const cJSON *doc, const int32_t *batches) {
  gm_profile p16, pb16;
  gm_profile_get("hf", GM_F16, &p16);
  gm_profile_get("hf", GM_BF16, &pb16);
  gm_train_opts o;
  set_run(&o, doc, &p16, GM_RECIPE_FP16_MEGATRON, batches, 1);
  o.steps = 1;
  gm_gpt2 m;
  gm_train_state s;
  CHECK(gm_gpt2_load(&m, "tests/golden/profile/base_bf16_checkpoint") == 0 && gm_train_state_init(&s, &m, &o) == 0, "%s", gm_errmsg());
  CHECK(gm_train_run(&m, &s, &o) != 0 && strstr(gm_errmsg(), "bf16 weights") != NULL, "fp16 recipe on bf16 weights: '%s'",
        gm_errmsg());
  o.recipe = GM_RECIPE_BF16_MEGATRON;
  CHECK(gm_train_run(&m, &s, &o) != 0 && strstr(gm_errmsg(), "profile") != NULL, "bf16 recipe, f16 profile: '%s'", gm_errmsg());
  o.profile = &pb16;
  o.T = 8;
  o.B = 1;
  static int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  o.batches = ids;
  o.n_batches = 1;
  CHECK(gm_train_run(&m, &s, &o) == 0, "bf16 recipe on a bf16 checkpoint: %s", gm_errmsg());
  o.recipe = GM_RECIPE_BF16_AUTOCAST; // autocast keeps the parameters f32: a bf16 checkpoint is refused
  o.steps = 2;
  CHECK(gm_train_run(&m, &s, &o) != 0 && strstr(gm_errmsg(), "bf16 weights") != NULL, "autocast on bf16 weights: '%s'",
        gm_errmsg());
  gm_train_state_free(&s);
  gm_gpt2_free(&m);
  gm_profile pm; // reproduced for transformers' own modules only
  gm_profile_get("megatron", GM_BF16, &pm);
  o.profile = &pm;
  CHECK(gm_gpt2_load(&m, "tests/golden/model/base") == 0 && gm_train_state_init(&s, &m, &o) == 0, "%s", gm_errmsg());
  CHECK(gm_train_run(&m, &s, &o) != 0 && strstr(gm_errmsg(), "profiles hf, hf-legacy and meg only") != NULL, "autocast, megatron: '%s'", gm_errmsg());
  o.profile = &p16;
  CHECK(gm_train_run(&m, &s, &o) != 0 && strstr(gm_errmsg(), "profile") != NULL, "autocast, f16 profile: '%s'", gm_errmsg());
  o.profile = &pb16;
  o.steps = 1;
  CHECK(gm_train_run(&m, &s, &o) == 0 && s.step == 1, "autocast on an f32 checkpoint: %s", gm_errmsg());
  gm_train_state_free(&s);
  gm_gpt2_free(&m);
}

int main(void) {
  gm_torch_target_set(GM_TT_INTEL_AMX); // the goldens' CPU class
  test_set_weights("tests/golden/model/base", GM_BF16);
  test_set_weights("tests/golden/model/quick_untied", GM_F16);
  test_working_bf16("tests/golden/model/base");
  test_working_bf16("tests/golden/model/quick_untied");
  const char *path = "tests/golden/targets/intel-amx/recipes/index.json";
  char *txt = test_slurp(path);
  CHECK(txt != NULL, "%s missing (run tools/ref/gen_recipe_goldens.py on an Intel AMX machine)", path);
  if (!txt) return test_done("test_train_recipes");
  cJSON *doc = cJSON_Parse(txt);
  gm_npy a;
  int32_t *batches = NULL;
  if (gm_npy_read("tests/golden/targets/intel-amx/train/batches.npy", GM_F16, &a) == 0 && a.dtype == GM_I32) batches = a.data;
  CHECK(batches != NULL, "batches: %s", gm_errmsg());
  int runs = 0, exact = 0, skipped = 0, fp16_skips = 0, ds_runs = 0, ds_skips = 0;
  for (const cJSON *c = cJSON_GetObjectItem(doc, "cases")->child; c && batches; c = c->next) {
    const char *model = cJSON_GetObjectItem(c, "model")->valuestring, *prof = cJSON_GetObjectItem(c, "profile")->valuestring;
    const int threads = cJSON_GetObjectItem(c, "threads")->valueint;
    gm_recipe r;
    CHECK(gm_recipe_parse(cJSON_GetObjectItem(c, "recipe")->valuestring, &r) == 0, "%s", gm_errmsg());
    if (test_quick() && threads > 1) { skipped++; continue; }
    const bool fp16 = r == GM_RECIPE_FP16_MEGATRON || r == GM_RECIPE_FP16_DEEPSPEED;
    char dir[128];
    snprintf(dir, sizeof dir, "tests/golden/model/%s", model);
    gm_gpt2 m;
    CHECK(gm_gpt2_load(&m, dir) == 0, "%s: %s", dir, gm_errmsg());
    gm_profile p;
    gm_profile_get(prof, fp16 ? GM_F16 : GM_BF16, &p);
    gm_train_opts o;
    set_run(&o, doc, &p, r, batches, threads);
    const cJSON *init = cJSON_GetObjectItem(c, "loss_scale_init");
    if (cJSON_IsNumber(init)) o.loss_scale_init = init->valuedouble;
    const cJSON *win = cJSON_GetObjectItem(c, "loss_scale_window");
    if (cJSON_IsNumber(win)) o.loss_scale_window = (long)win->valuedouble;
    const cJSON *clip = cJSON_GetObjectItem(c, "clip"); // fp16-deepspeed's gradient_clipping (0: off)
    if (cJSON_IsNumber(clip)) o.clip = clip->valuedouble;
    watch w = {&m, cJSON_GetObjectItem(c, "steps"), true, 0, "", 0, 0.0};
    o.on_step = on_step;
    o.ctx = &w;
    gm_train_state s;
    CHECK(gm_train_state_init(&s, &m, &o) == 0, "%s", gm_errmsg());
    CHECK(gm_train_run(&m, &s, &o) == 0, "%s: %s", c->string, gm_errmsg());
    CHECK(w.bad_step == 0, "%s: step %d: %s", c->string, w.bad_step, w.what);
    if (fp16) {
      fp16_skips += (int)(s.step - s.opt_steps);
      if (r == GM_RECIPE_FP16_DEEPSPEED) {
        ds_runs++;
        ds_skips += (int)(s.step - s.opt_steps);
        bool grew = false; // the golden's scale grows back at least once (the window is exercised)
        for (int k = 1; k < cJSON_GetArraySize(w.steps); k++)
          grew |= cJSON_GetObjectItem(cJSON_GetArrayItem(w.steps, k), "loss_scale")->valuedouble >
                  cJSON_GetObjectItem(cJSON_GetArrayItem(w.steps, k - 1), "loss_scale")->valuedouble;
        CHECK(grew, "%s: the loss scale never grows back", c->string);
      }
      printf("%s: loss scale and skipped steps as torch's (%ld of %ld skipped); %d/%d steps bit-identical (loss, grad "
             "norm, lr, main weights)\n",
             c->string, s.step - s.opt_steps, s.step, w.same_bits, (int)s.step);
    } else {
      printf("%s: %d/%d steps bit-identical (loss, grad norm, lr, main weights)\n", c->string, w.same_bits, (int)s.step);
    }
    runs++;
    exact += w.bad_step == 0;
    gm_train_state_free(&s);
    gm_gpt2_free(&m);
  }
  CHECK(fp16_skips > 0, "no fp16 run skipped a step (Megatron's 2^32 start overflows)");
  CHECK(ds_runs >= 2 && ds_skips >= 2 * ds_runs, "fp16-deepspeed: %d runs, %d skipped steps (the goldens overflow twice a run)",
        ds_runs, ds_skips);
  if (skipped) test_skip("2-thread recipe runs", "GPTMEG_QUICK");
  printf("recipes against torch: %d runs, %d bit-identical at every step, %d skipped\n", runs, exact, skipped);
  if (batches) {
    test_resume(doc, batches, GM_RECIPE_BF16_MEGATRON, "base");
    test_resume(doc, batches, GM_RECIPE_FP16_MEGATRON, "quick_untied");
    test_resume(doc, batches, GM_RECIPE_FP16_DEEPSPEED, "quick_untied");
    test_resume(doc, batches, GM_RECIPE_BF16_AUTOCAST, "base");
    test_refusals(doc, batches);
  }
  free(batches);
  cJSON_Delete(doc);
  free(txt);
  return test_done("test_train_recipes");
}
