// Training checkpoints: DIR/config.json + model.safetensors (an HF GPT-2 folder), optimizer.bin
// (the Adam state file of gptmeg/optim.h: every tensor's moments and step, in checkpoint order),
// train_state.json (step, tokens, the sampler's state, and what the run was: recipe, profile, batch
// shape; optimizer_steps, the steps Adam took, when fp16's skipped steps make it differ from step;
// the fp16 loss scaler's state: Megatron's, or DeepSpeed FP16_Optimizer's).
// Written into DIR.tmp and renamed over DIR, so a crash leaves the previous checkpoint whole; the
// link OUT/last is replaced the same way (a new link renamed over it).
#include "gptmeg/train.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

// Removes a checkpoint directory's files (only the names a checkpoint has), then the directory.
static void remove_ckpt_dir(const char *dir) {
  static const char *files[] = {"config.json", "model.safetensors", "optimizer.bin", "train_state.json", "vocab.json",
                                "merges.txt"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char *p = join(dir, files[i]);
    if (p) unlink(p);
    free(p);
  }
  rmdir(dir);
}

static int write_state(const char *path, const gm_gpt2 *m, const gm_train_state *s, const gm_train_opts *o) {
  cJSON *j = cJSON_CreateObject();
  char hex[4][20];
  cJSON_AddStringToObject(j, "format", "gptmeg-train-1");
  cJSON_AddNumberToObject(j, "step", (double)s->step);
  cJSON_AddNumberToObject(j, "tokens", (double)s->tokens);
  cJSON *r = cJSON_AddArrayToObject(j, "sampler");
  for (int i = 0; i < 4; i++) {
    snprintf(hex[i], sizeof hex[i], "%016llx", (unsigned long long)s->rng.s[i]);
    cJSON_AddItemToArray(r, cJSON_CreateString(hex[i]));
  }
  cJSON_AddStringToObject(j, "recipe", gm_recipe_name(o->recipe));
  cJSON_AddStringToObject(j, "profile", o->profile->name);
  cJSON_AddNumberToObject(j, "batch", o->B);
  cJSON_AddNumberToObject(j, "seq", o->T);
  cJSON_AddNumberToObject(j, "n_params", (double)m->n_params);
  cJSON_AddNumberToObject(j, "optimizer_steps", (double)s->opt_steps);
  if (o->recipe == GM_RECIPE_FP16_MEGATRON) { // Megatron's DynamicGradScaler state_dict, and its constants
    const gm_megatron_scaler *g = &s->scaler;
    cJSON *ls = cJSON_AddObjectToObject(j, "loss_scaler");
    char sc[16];
    uint32_t u;
    memcpy(&u, &g->scale, 4);
    snprintf(sc, sizeof sc, "%08x", u);
    cJSON_AddStringToObject(ls, "scale_f32_bits", sc);
    cJSON_AddNumberToObject(ls, "scale", g->scale);
    cJSON_AddNumberToObject(ls, "growth_tracker", g->growth_tracker);
    cJSON_AddNumberToObject(ls, "hysteresis_tracker", g->hysteresis_tracker);
    cJSON_AddNumberToObject(ls, "min_scale", g->min_scale);
    cJSON_AddNumberToObject(ls, "growth_factor", g->growth_factor);
    cJSON_AddNumberToObject(ls, "backoff_factor", g->backoff_factor);
    cJSON_AddNumberToObject(ls, "growth_interval", g->growth_interval);
    cJSON_AddNumberToObject(ls, "hysteresis", g->hysteresis);
  } else if (o->recipe == GM_RECIPE_FP16_DEEPSPEED) { // FP16_Optimizer's state_dict: cur_scale, cur_iter, last_overflow_iter
    const gm_deepspeed_scaler *d = &s->ds_scaler;
    cJSON *ls = cJSON_AddObjectToObject(j, "loss_scaler");
    char sc[24];
    uint64_t u;
    memcpy(&u, &d->cur_scale, 8);
    snprintf(sc, sizeof sc, "%016llx", (unsigned long long)u);
    cJSON_AddStringToObject(ls, "cur_scale_f64_bits", sc);
    cJSON_AddNumberToObject(ls, "cur_scale", d->cur_scale);
    cJSON_AddNumberToObject(ls, "cur_iter", (double)d->cur_iter);
    cJSON_AddNumberToObject(ls, "last_overflow_iter", (double)d->last_overflow_iter);
    cJSON_AddNumberToObject(ls, "scale_window", (double)d->scale_window);
    cJSON_AddNumberToObject(ls, "min_loss_scale", d->min_scale);
    cJSON_AddNumberToObject(ls, "scale_factor", d->scale_factor);
  }
  char *txt = cJSON_Print(j);
  cJSON_Delete(j);
  if (!txt) return gm_fail("out of memory");
  gm_outfile f;
  int rc = gm_outfile_open(&f, path);
  if (!rc) {
    if (fputs(txt, (FILE *)f.fp) < 0 || fputc('\n', (FILE *)f.fp) < 0) {
      gm_outfile_abort(&f);
      rc = gm_fail("write of '%s' failed", path);
    } else rc = gm_outfile_commit(&f);
  }
  free(txt);
  return rc;
}

// OUT/last -> step-NNNNNN, replaced atomically.
static int link_last(const char *dir) {
  char *copy = strdup(dir);
  if (!copy) return gm_fail("out of memory");
  char *slash = strrchr(copy, '/');
  const char *base = slash ? slash + 1 : copy;
  if (slash) *slash = 0;
  const char *parent = slash ? copy : ".";
  char *last = join(parent, "last"), *tmp = join(parent, "last.tmp");
  int rc = last && tmp ? 0 : gm_fail("out of memory");
  if (!rc) {
    unlink(tmp);
    if (symlink(base, tmp) != 0 || rename(tmp, last) != 0) rc = gm_fail("cannot point '%s' at '%s': %s", last, base, strerror(errno));
  }
  free(last);
  free(tmp);
  free(copy);
  return rc;
}

// Adam's step count: the optimizer steps taken, plus FP16_Optimizer's constructor step under fp16-deepspeed.
static long adam_count(const gm_train_state *s, const gm_train_opts *o) {
  return s->opt_steps + (o->recipe == GM_RECIPE_FP16_DEEPSPEED ? 1 : 0);
}

// The moments of s as one gm_adam_state a tensor (pointing into s's buffers; step = adam_count), in
// checkpoint order: *out (caller frees) and their number, or -1.
static int adam_states(const gm_train_state *s, const gm_train_opts *o, gm_adam_state **out) {
  const size_t cap = (size_t)s->exp_avg.cfg.n_layer * 12 + 6;
  gm_gpt2_tensor *tm = calloc(2 * cap, sizeof *tm);
  gm_adam_state *st = calloc(cap, sizeof *st);
  int n = tm && st ? gm_gpt2_tensors(&s->exp_avg, tm) : gm_fail("out of memory");
  if (n >= 0 && gm_gpt2_tensors(&s->exp_avg_sq, tm + cap) != n) n = gm_fail("the two moments differ in layout");
  for (int i = 0; i < n; i++) st[i] = (gm_adam_state){tm[i].numel, adam_count(s, o), tm[i].data, tm[cap + i].data};
  free(tm);
  if (n < 0) { free(st); return -1; }
  *out = st;
  return n;
}

int gm_train_save(const char *dir, const gm_gpt2 *m, const gm_train_state *s, const gm_train_opts *o) {
  char *tmp = malloc(strlen(dir) + 8), *old = malloc(strlen(dir) + 8);
  if (!tmp || !old) { free(tmp), free(old); return gm_fail("out of memory"); }
  sprintf(tmp, "%s.tmp", dir);
  sprintf(old, "%s.old", dir);
  remove_ckpt_dir(tmp); // a previous crash's leftovers
  char *po = join(tmp, "optimizer.bin"), *ps = join(tmp, "train_state.json");
  gm_adam_state *st = NULL;
  int rc = po && ps ? 0 : gm_fail("out of memory"), k = 0;
  if (!rc) rc = gm_gpt2_save(m, tmp);
  if (!rc && (k = adam_states(s, o, &st)) < 0) rc = -1;
  if (!rc) rc = gm_adam_state_save(po, &o->adam, st, k);
  if (!rc) rc = write_state(ps, m, s, o);
  if (!rc && o->on_save) rc = o->on_save(o->ctx, tmp);
  if (!rc) { // DIR -> DIR.old, DIR.tmp -> DIR, then DIR.old removed
    struct stat st;
    bool had = stat(dir, &st) == 0;
    remove_ckpt_dir(old);
    if (had && rename(dir, old) != 0) rc = gm_fail("cannot move the old checkpoint '%s' aside: %s", dir, strerror(errno));
    if (!rc && rename(tmp, dir) != 0) rc = gm_fail("cannot rename '%s' to '%s': %s", tmp, dir, strerror(errno));
    if (!rc && had) remove_ckpt_dir(old);
  }
  if (rc) remove_ckpt_dir(tmp);
  else rc = link_last(dir);
  free(st), free(po), free(ps), free(tmp), free(old);
  return rc;
}

static int read_state(const char *path, gm_train_state *s, const gm_gpt2 *m, const gm_train_opts *o) {
  FILE *f = fopen(path, "rb");
  if (!f) return gm_fail("cannot open '%s': %s (not a gptmeg training checkpoint?)", path, strerror(errno));
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  cJSON *j = cJSON_Parse(buf);
  if (!j) return gm_fail("%s: not valid JSON", path);
  int rc = 0;
  const cJSON *fmt = cJSON_GetObjectItem(j, "format"), *step = cJSON_GetObjectItem(j, "step"),
              *tok = cJSON_GetObjectItem(j, "tokens"), *smp = cJSON_GetObjectItem(j, "sampler"),
              *rec = cJSON_GetObjectItem(j, "recipe"), *prof = cJSON_GetObjectItem(j, "profile"),
              *bb = cJSON_GetObjectItem(j, "batch"), *tt = cJSON_GetObjectItem(j, "seq"), *np = cJSON_GetObjectItem(j, "n_params");
  if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "gptmeg-train-1") || !cJSON_IsNumber(step) || !cJSON_IsNumber(tok) ||
      cJSON_GetArraySize(smp) != 4 || !cJSON_IsString(rec) || !cJSON_IsString(prof) || !cJSON_IsNumber(bb) ||
      !cJSON_IsNumber(tt) || !cJSON_IsNumber(np))
    rc = gm_fail("%s: not a gptmeg-train-1 state (missing or mistyped fields)", path);
  else if ((uint64_t)np->valuedouble != m->n_params)
    rc = gm_fail("%s: the checkpoint's model has %.0f parameters, this one %llu", path, np->valuedouble,
                 (unsigned long long)m->n_params);
  else if (strcmp(rec->valuestring, gm_recipe_name(o->recipe)))
    rc = gm_fail("%s: the run used recipe '%s', not '%s'", path, rec->valuestring, gm_recipe_name(o->recipe));
  else if (strcmp(prof->valuestring, o->profile->name))
    rc = gm_fail("%s: the run used profile '%s', not '%s'", path, prof->valuestring, o->profile->name);
  else if (bb->valueint != o->B || tt->valueint != o->T)
    rc = gm_fail("%s: the run used batches of %d x %d, not %d x %d", path, bb->valueint, tt->valueint, o->B, o->T);
  const cJSON *os = cJSON_GetObjectItem(j, "optimizer_steps"), *ls = cJSON_GetObjectItem(j, "loss_scaler");
  if (!rc && os && (!cJSON_IsNumber(os) || os->valuedouble < 0 || os->valuedouble > step->valuedouble))
    rc = gm_fail("%s: optimizer_steps is not a count of at most step", path);
  if (!rc && o->recipe == GM_RECIPE_FP16_MEGATRON) {
    const cJSON *sb = cJSON_GetObjectItem(ls, "scale_f32_bits"), *gt = cJSON_GetObjectItem(ls, "growth_tracker"),
                *ht = cJSON_GetObjectItem(ls, "hysteresis_tracker");
    if (!cJSON_IsObject(ls) || !cJSON_IsString(sb) || !cJSON_IsNumber(gt) || !cJSON_IsNumber(ht))
      rc = gm_fail("%s: recipe fp16-megatron needs the loss scaler's state (loss_scaler: scale_f32_bits, growth_tracker, "
                   "hysteresis_tracker)", path);
    else { // the constants are the run's (gm_train_state_init); the state is the checkpoint's
      uint32_t u = (uint32_t)strtoul(sb->valuestring, NULL, 16);
      memcpy(&s->scaler.scale, &u, 4);
      s->scaler.growth_tracker = gt->valueint;
      s->scaler.hysteresis_tracker = ht->valueint;
    }
  } else if (!rc && o->recipe == GM_RECIPE_FP16_DEEPSPEED) {
    const cJSON *sb = cJSON_GetObjectItem(ls, "cur_scale_f64_bits"), *ci = cJSON_GetObjectItem(ls, "cur_iter"),
                *lo = cJSON_GetObjectItem(ls, "last_overflow_iter");
    if (!cJSON_IsObject(ls) || !cJSON_IsString(sb) || !cJSON_IsNumber(ci) || !cJSON_IsNumber(lo) || ci->valuedouble < 0 ||
        lo->valuedouble < -1 || lo->valuedouble >= ci->valuedouble)
      rc = gm_fail("%s: recipe fp16-deepspeed needs the loss scaler's state (loss_scaler: cur_scale_f64_bits, cur_iter >= 0, "
                   "last_overflow_iter in [-1, cur_iter))", path);
    else { // as FP16_Optimizer.load_state_dict: cur_scale, cur_iter, last_overflow_iter and, when present,
           // scale_window and scale_factor from the checkpoint; min_loss_scale is the run's (DeepSpeed's config)
      const cJSON *sw = cJSON_GetObjectItem(ls, "scale_window"), *sf = cJSON_GetObjectItem(ls, "scale_factor");
      if (cJSON_IsNumber(sw) && sw->valuedouble >= 1 && sw->valuedouble <= 1e12) s->ds_scaler.scale_window = (long)sw->valuedouble;
      else if (sw) rc = gm_fail("%s: loss_scaler.scale_window must be a count >= 1", path);
      if (cJSON_IsNumber(sf) && sf->valuedouble > 1 && sf->valuedouble <= 1e6) s->ds_scaler.scale_factor = sf->valuedouble;
      else if (sf) rc = gm_fail("%s: loss_scaler.scale_factor must be a number > 1", path);
      uint64_t u = strtoull(sb->valuestring, NULL, 16);
      double cs;
      memcpy(&cs, &u, 8);
      if (!(cs > 0) || isinf(cs)) rc = gm_fail("%s: loss_scaler.cur_scale_f64_bits is not a positive finite scale", path);
      s->ds_scaler.cur_scale = cs;
      s->ds_scaler.cur_iter = (long)ci->valuedouble;
      s->ds_scaler.last_overflow_iter = (long)lo->valuedouble;
    }
  }
  if (!rc) {
    s->step = (long)step->valuedouble;
    s->opt_steps = os ? (long)os->valuedouble : s->step; // written before fp16 could skip steps: the same
    s->tokens = (long)tok->valuedouble;
    for (int i = 0; i < 4; i++) {
      const cJSON *h = cJSON_GetArrayItem(smp, i);
      s->rng.s[i] = cJSON_IsString(h) ? strtoull(h->valuestring, NULL, 16) : 0;
    }
  }
  cJSON_Delete(j);
  return rc;
}

int gm_train_load(const char *dir, gm_gpt2 *m, gm_train_state *s, const gm_train_opts *o) {
  memset(s, 0, sizeof *s);
  if (gm_gpt2_load(m, dir)) return -1;
  char *po = join(dir, "optimizer.bin"), *ps = join(dir, "train_state.json");
  gm_adam_state *st = NULL;
  int rc = po && ps ? 0 : gm_fail("out of memory"), k = 0;
  if (!rc) { // the scaler's constants as a fresh run has them; read_state restores its state
    gm_megatron_scaler_init(&s->scaler, o->loss_scale_init > 0 ? o->loss_scale_init : 4294967296.0, 1.0, 2.0, 0.5, 1000, 2);
    gm_deepspeed_scaler_init(&s->ds_scaler, o->loss_scale_init > 0 ? o->loss_scale_init : 65536.0, 2.0,
                             o->loss_scale_window > 0 ? o->loss_scale_window : 1000, 1.0, 1, false);
    rc = read_state(ps, s, m, o);
  }
  if (!rc) rc = gm_gpt2_alloc_like(&s->exp_avg, m) || gm_gpt2_alloc_like(&s->exp_avg_sq, m);
  if (!rc && (k = adam_states(s, o, &st)) < 0) rc = -1;
  if (!rc) rc = gm_adam_state_load(po, &o->adam, st, k);
  for (int i = 0; !rc && i < k; i++)
    if (st[i].step != adam_count(s, o))
      rc = gm_fail("%s: tensor %d is at step %ld, the run's optimizer at %ld", po, i, st[i].step, adam_count(s, o));
  free(st), free(po), free(ps);
  if (rc) {
    gm_train_state_free(s);
    gm_gpt2_free(m);
  }
  return rc;
}
