// gptmeg train: argument parsing, the data (text tokenized once and cached beside it, or given
// batches), the progress bar and the JSONL log; the loop itself is gm_train_run (gptmeg/train.h).
#include "cli/cli.h"
#include "cli/cli_model.h"
#include "gptmeg/npy.h"
#include "gptmeg/tok.h"
#include "gptmeg/train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void train_help(FILE *f) {
  fprintf(f,
          "usage: gptmeg train (--model DIR | --resume CKPT) (--data FILE | --batches-npy F.npy) --steps N\n"
          "                    --out DIR [--batch B] [--seq T] [--lr LR] [--warmup K]\n"
          "                    [--schedule constant|cosine] [--weight-decay WD] [--beta1 B1] [--beta2 B2] [--eps E]\n"
          "                    [--fused] [--clip NORM] [--recipe R] [--loss-scale S] [--loss-scale-window W] [--seed S] [--threads N] [--save-every K]\n"
          "                    [--dropout 0]\n"
          "                    [--eval-every K] [--eval-batches N] [--val-fraction F] [--tokenizer DIR]\n"
          "                    [--profile P] [KNOB OPTIONS]\n"
          "  Trains a GPT-2 with AdamW as PyTorch runs it (torch.optim.AdamW on CPU; --fused: fused=True).\n"
          "  --data FILE: text, tokenized once with the model's tokenizer (or --tokenizer DIR) and cached as\n"
          "  FILE.tokens.npy; its last --val-fraction (default 0.1) is the validation text; each step draws B\n"
          "  windows of T tokens from the rest with a seeded generator. --batches-npy: int [steps, B, T]\n"
          "  batches used in order (labels are the inputs, shifted as transformers shifts them).\n"
          "  Writes OUT/log.jsonl (one line a step: step, loss, lr, grad_norm, loss_scale, skipped, val_loss,\n"
          "  tokens, seconds) and checkpoints OUT/step-NNNNNN/ (an HF folder plus the optimizer state; OUT/last\n"
          "  points at the newest), each written whole then renamed. --resume CKPT continues one exactly.\n"
          "  --recipe f32 (default) | bf16-megatron | fp16-megatron | fp16-deepspeed | bf16-autocast: the Megatron and DeepSpeed recipes run the forward and backward in bf16/fp16 (the\n"
          "  profile's numerics in that dtype) over f32 main weights, AdamW in f32, weights rounded back each\n"
          "  step; fp16-megatron scales the loss by Megatron's dynamic loss scale (--loss-scale: its initial\n"
          "  value, default 2^32) and skips steps whose gradients overflow. fp16-deepspeed is DeepSpeed's\n"
          "  FP16_Optimizer: one flat f32 master of the fp16 weights, its dynamic loss scale (--loss-scale, default\n"
          "  2^16; --loss-scale-window, default 1000; min 1, no hysteresis) and its combined unscale+clip.\n"
          "  bf16-autocast is torch.autocast('cpu', bfloat16) around the forward of the f32 model (profiles hf, hf-legacy, meg; an\n"
          "  f32 checkpoint): linears, attention and activation in bf16 on a bf16 copy of the weights, layer norms,\n"
          "  embeddings and the residual stream in f32, f32 gradients, AdamW on the f32 weights.\n"
          "  Checkpoints hold the f32 main weights.\n"
          "  Defaults: B 4, T 64, lr 6e-4, warmup 0, cosine (transformers' get_cosine_schedule_with_warmup to 0 at --steps), weight-decay 0.1, betas 0.9 0.95,\n"
          "  eps 1e-8, clip 1.0, recipe f32, seed 1337, eval every 100 steps over 4 batches.\n%s",
          cli_profile_help);
}

typedef struct {
  const char *tokdir; // a folder with vocab.json and merges.txt to copy into each checkpoint, or NULL
  FILE *log;
  long steps;
  bool bar;
  double t_total;
  long first_step;
} progress;

static void on_step(void *ctx, const gm_train_step *s) {
  progress *p = ctx;
  p->t_total += s->seconds;
  if (p->log) {
    fprintf(p->log, "{\"step\": %ld, \"loss\": %.9g, \"lr\": %.9g, ", s->step, s->loss, s->lr);
    if (isnan(s->grad_norm)) fprintf(p->log, "\"grad_norm\": null, "); // a skipped step computes none
    else fprintf(p->log, "\"grad_norm\": %.9g, ", s->grad_norm);
    fprintf(p->log, "\"loss_scale\": %.17g, \"skipped\": %s, ", s->loss_scale, s->skipped ? "true" : "false");
    if (isnan(s->val_loss)) fprintf(p->log, "\"val_loss\": null, ");
    else fprintf(p->log, "\"val_loss\": %.9g, ", s->val_loss);
    fprintf(p->log, "\"tokens\": %ld, \"seconds\": %.6f}\n", s->tokens, s->seconds);
    fflush(p->log);
  }
  long done = s->step - p->first_step;
  double per = p->t_total / (double)(done > 0 ? done : 1), eta = per * (double)(p->steps - s->step);
  if (p->bar) {
    int w = 30, k = (int)(s->step * w / (p->steps > 0 ? p->steps : 1));
    fprintf(stderr, "\r[%.*s%*s] step %ld/%ld  loss %.4f  %.0f tok/s  ETA %.0fs", k, "##############################",
            w - k, "", s->step, p->steps, s->loss, s->seconds > 0 ? (double)(s->tokens / s->step) / s->seconds : 0.0, eta);
    if (!isnan(s->val_loss)) fprintf(stderr, "  val %.4f\n", s->val_loss);
    if (s->step == p->steps) fputs("\n", stderr);
    fflush(stderr);
  } else if (!cli_quiet && (!isnan(s->val_loss) || s->step == p->steps)) {
    fprintf(stderr, "step %ld/%ld  loss %.4f", s->step, p->steps, s->loss);
    if (!isnan(s->val_loss)) fprintf(stderr, "  val %.4f", s->val_loss);
    fputc('\n', stderr);
  }
}

// gm_train_opts.on_save: the tokenizer goes with every checkpoint (generate and eval read it there).
static int on_save(void *ctx, const char *dir) {
  const progress *p = ctx;
  return p->tokdir ? cli_copy_tokenizer(p->tokdir, dir) : 0;
}

// The token ids of a text file: FILE.tokens.npy when it is newer than FILE, else tokenized now and
// cached there (atomically).
static int text_tokens(const char *path, const char *model_dir, const char *tokdir, int32_t **ids, size_t *n) {
  size_t cl = strlen(path) + 16;
  char *cache = malloc(cl);
  if (!cache) return gm_fail("out of memory");
  snprintf(cache, cl, "%s.tokens.npy", path);
  struct stat st, sc;
  if (stat(path, &st) != 0) { free(cache); return gm_fail("cannot open '%s': %s", path, strerror(errno)); }
  if (stat(cache, &sc) == 0 && sc.st_mtime >= st.st_mtime) {
    int rc = cli_read_tokens_npy(cache, true, ids, n, NULL, NULL);
    free(cache);
    return rc;
  }
  FILE *f = fopen(path, "rb");
  char *buf = f ? malloc((size_t)st.st_size + 1) : NULL;
  size_t len = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
  if (f) fclose(f);
  int rc = !f ? gm_fail("cannot open '%s': %s", path, strerror(errno)) : !buf ? gm_fail("out of memory reading '%s'", path) : 0;
  if (!rc && len == 0) rc = gm_fail("'%s' is empty: nothing to train on", path);
  gm_tokenizer *tok = NULL;
  if (!rc) rc = cli_load_tokenizer(model_dir, tokdir, &tok);
  if (!rc) rc = gm_tok_encode(tok, buf, len, ids, n);
  if (tok) gm_tok_free(tok);
  free(buf);
  if (!rc) {
    size_t shape[1] = {*n};
    if (gm_npy_write(cache, GM_I32, *ids, 1, shape, false) && !cli_quiet)
      fprintf(stderr, "gptmeg train: note: could not cache the tokens in %s: %s\n", cache, gm_errmsg());
  }
  free(cache);
  return rc;
}

// A numeric option: its name, its range, where it goes.
typedef struct {
  const char *name;
  double lo, hi;
  double *dst;
} num_opt;

// 1 when argv[*i] is one of opts (its value parsed into place), 0 when it is none, -1 after a usage error.
static int take_num(const num_opt *opts, int n, int argc, char **argv, int *i) {
  for (int k = 0; k < n; k++) {
    if (strcmp(argv[*i], opts[k].name)) continue;
    const char *a = argv[*i], *v;
    double x;
    if (!(v = cli_value("train", argc, argv, i)) || cli_parse_double("train", a, v, &x)) return -1;
    if (!(x >= opts[k].lo && x <= opts[k].hi)) {
      cli_usage_error("train", "%s must be in [%g, %g] (got %s)", a, opts[k].lo, opts[k].hi, v);
      return -1;
    }
    *opts[k].dst = x;
    return 1;
  }
  return 0;
}

int cmd_train(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { train_help(stdout); return CLI_OK; }
  const char *dir = NULL, *resume = NULL, *data = NULL, *bnpy = NULL, *out = NULL, *tokdir = NULL, *recipe = "f32",
             *sched = "cosine";
  double steps = 0, B = 4, T = 64, seed = 1337, threads = 0, save_every = 0, eval_every = 100, eval_batches = 4,
         val_frac = 0.1, lr = 6e-4, warmup = 0, wd = 0.1, b1 = 0.9, b2 = 0.95, eps = 1e-8, clip = 1.0, lscale = 0, lwindow = 0,
         dropout = 0;
  bool fused = false;
  const num_opt nums[] = {
      {"--steps", 1, 1e9, &steps},           {"--batch", 1, 65536, &B},           {"--seq", 1, 1 << 20, &T},
      {"--seed", 0, 9.007e15, &seed},        {"--threads", 1, 1024, &threads},    {"--save-every", 0, 1e9, &save_every},
      {"--eval-every", 0, 1e9, &eval_every}, {"--eval-batches", 1, 1e6, &eval_batches},
      {"--val-fraction", 0, 0.9, &val_frac}, {"--lr", 0, 10, &lr},
      {"--warmup", 0, 1e9, &warmup},         {"--weight-decay", 0, 10, &wd},      {"--beta1", 0, 0.999999, &b1},
      {"--beta2", 0, 0.999999, &b2},         {"--eps", 0, 1, &eps},               {"--clip", 0, 1e9, &clip},
      {"--dropout", 0, 1, &dropout},
      {"--loss-scale", 1, 3.4e38, &lscale},  {"--loss-scale-window", 1, 1e9, &lwindow},
  };
  cli_profile_opts po = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = cli_profile_option("train", argc, argv, &i, &po);
    if (k < 0) return CLI_USAGE;
    if (k > 0) continue;
    if ((k = take_num(nums, (int)(sizeof nums / sizeof *nums), argc, argv, &i)) < 0) return CLI_USAGE;
    if (k > 0) continue;
    if (!strcmp(a, "--model")) { if (!(dir = cli_value("train", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--resume")) { if (!(resume = cli_value("train", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--data")) { if (!(data = cli_value("train", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--batches-npy")) { if (!(bnpy = cli_value("train", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--out")) { if (!(out = cli_value("train", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--tokenizer")) { if (!(tokdir = cli_value("train", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--recipe")) { if (!(recipe = cli_value("train", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--schedule")) { if (!(sched = cli_value("train", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--fused")) fused = true;
    else return cli_usage_error("train", "unknown option '%s'", a);
  }
  if (!dir == !resume) return cli_usage_error("train", "give one of --model DIR or --resume CKPT");
  if (cli_profile_recorded(&po, dir)) return cli_fail("%s", gm_errmsg());
  if (!data == !bnpy) return cli_usage_error("train", "give one of --data FILE or --batches-npy F.npy");
  if (!out || steps < 1) return cli_usage_error("train", "--out DIR and --steps N are required");
  if (dropout > 0) // the runs compare bit for bit with dropout off; its mask is not generated as torch does
    return cli_fail("--dropout %g: dropout is not reproduced (PyTorch's CPU generator and bernoulli path are not implemented); "
                    "training runs with dropout off (--dropout 0), as transformers does in eval mode", dropout);
  gm_recipe rc_;
  if (gm_recipe_parse(recipe, &rc_)) return cli_usage_error("train", "%s", gm_errmsg());
  if (strcmp(sched, "constant") && strcmp(sched, "cosine"))
    return cli_usage_error("train", "--schedule is constant or cosine (got '%s')", sched);
  gm_profile p;
  const bool fp16 = rc_ == GM_RECIPE_FP16_MEGATRON || rc_ == GM_RECIPE_FP16_DEEPSPEED;
  if (lscale > 0 && !fp16) return cli_usage_error("train", "--loss-scale is for --recipe fp16-megatron or fp16-deepspeed");
  if (lwindow > 0 && rc_ != GM_RECIPE_FP16_DEEPSPEED) return cli_usage_error("train", "--loss-scale-window is for --recipe fp16-deepspeed");
  const gm_dtype pdt = fp16 ? GM_F16 : rc_ == GM_RECIPE_BF16_MEGATRON || rc_ == GM_RECIPE_BF16_AUTOCAST ? GM_BF16 : GM_F32;
  if (cli_profile_build(&po, pdt, &p)) return cli_fail("%s", gm_errmsg());

  gm_train_opts o;
  gm_train_opts_default(&o);
  o.profile = &p;
  o.recipe = rc_;
  o.B = (int)B;
  o.T = (int)T;
  o.steps = (long)steps;
  o.seed = (uint64_t)seed;
  o.threads = (int)threads;
  o.clip = clip;
  o.loss_scale_init = lscale;
  o.loss_scale_window = (long)lwindow;
  o.eval_every = (long)eval_every;
  o.eval_batches = (int)eval_batches;
  o.save_every = (long)save_every;
  o.out_dir = out;
  gm_train_set_optimizer(&o, lr, (long)warmup, !strcmp(sched, "cosine"), wd, b1, b2, eps, fused);

  // the data
  int32_t *ids = NULL;
  size_t n = 0;
  int rc = 0;
  if (bnpy) {
    int nb = 0, bt = 0;
    gm_npy a;
    rc = gm_npy_read(bnpy, GM_F16, &a);
    const bool read = rc == 0;
    if (!rc && (a.ndim != 3 || (a.dtype != GM_I32 && a.dtype != GM_I64)))
      rc = gm_fail("%s: batches are an int32/int64 array [steps, B, T] (got %d dimensions of %s)", bnpy, a.ndim, a.descr);
    else if (!rc && ((int)a.shape[1] != o.B || (int)a.shape[2] != o.T))
      rc = gm_fail("%s holds batches of %zu x %zu, but --batch %d --seq %d", bnpy, a.shape[1], a.shape[2], o.B, o.T);
    if (!rc) {
      ids = malloc(a.count * sizeof *ids);
      if (!ids) rc = gm_fail("out of memory");
      for (size_t i = 0; !rc && i < a.count; i++) {
        int64_t x = a.dtype == GM_I64 ? ((const int64_t *)a.data)[i] : ((const int32_t *)a.data)[i];
        if (x < 0 || x > INT32_MAX) rc = gm_fail("%s: element %zu is %lld, not a token id", bnpy, i, (long long)x);
        else ids[i] = (int32_t)x;
      }
      nb = (int)a.shape[0];
      bt = (int)(a.shape[1] * a.shape[2]);
    }
    if (read) gm_npy_free(&a); // also when its shape was refused
    (void)bt;
    o.batches = ids;
    o.n_batches = nb;
  } else {
    rc = text_tokens(data, dir ? dir : resume, tokdir, &ids, &n);
    size_t nv = (size_t)((double)n * val_frac);
    o.train_tokens = ids;
    o.n_train = (int64_t)(n - nv);
    o.val_tokens = nv >= (size_t)o.T ? ids + (n - nv) : NULL;
    o.n_val = (int64_t)nv;
  }
  if (rc) { free(ids); return cli_fail("%s", gm_errmsg()); }

  gm_gpt2 m;
  gm_train_state s;
  if (resume) rc = gm_train_load(resume, &m, &s, &o);
  else {
    rc = gm_gpt2_load(&m, dir);
    if (!rc && (rc = gm_train_state_init(&s, &m, &o))) gm_gpt2_free(&m);
  }
  if (rc) { free(ids); return cli_fail("%s", gm_errmsg()); }
  if (mkdir(out, 0755) != 0 && errno != EEXIST) rc = gm_fail("cannot create '%s': %s", out, strerror(errno));
  size_t ll = strlen(out) + 16;
  char *logp = malloc(ll);
  const char *src = tokdir ? tokdir : dir ? dir : resume;
  char *vj = malloc(strlen(src) + 16);
  if (vj) snprintf(vj, strlen(src) + 16, "%s/vocab.json", src);
  progress pr = {vj && access(vj, R_OK) == 0 ? src : NULL, NULL, o.steps, isatty(2) && !cli_quiet, 0.0, s.step};
  free(vj);
  if (!rc && logp) {
    snprintf(logp, ll, "%s/log.jsonl", out);
    if (!(pr.log = fopen(logp, resume ? "a" : "w"))) rc = gm_fail("cannot write '%s': %s", logp, strerror(errno));
  }
  o.on_step = on_step;
  o.on_save = on_save;
  o.ctx = &pr;
  if (!rc) rc = gm_train_run(&m, &s, &o);
  if (pr.log) fclose(pr.log);
  if (pr.bar) fputs("\r\033[K", stderr);
  if (!rc && !cli_quiet)
    printf("trained to step %ld (%ld tokens); checkpoint %s/step-%06ld, log %s\n", s.step, s.tokens, out, s.step, logp);
  free(logp);
  gm_train_state_free(&s);
  gm_gpt2_free(&m);
  free(ids);
  return rc ? cli_fail("%s", gm_errmsg()) : CLI_OK;
}
