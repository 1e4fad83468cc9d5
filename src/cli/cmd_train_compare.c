// gptmeg train-compare: two f32 training runs of one checkpoint under two numerics specs, in lockstep,
// compared step by step (argument parsing, the data and the printing; the work is lab/train_compare.c).
#include "cli/cli.h"
#include "cli/cli_model.h"
#include "gptmeg/npy.h"
#include "gptmeg/tok.h"
#include "gptmeg/traincmp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *help =
    "usage: gptmeg train-compare --model DIR (--data FILE | --batches-npy F.npy) --steps N --a SPEC --b SPEC\n"
    "                            [--batch B] [--seq T] [--lr LR] [--warmup K] [--schedule constant|cosine]\n"
    "                            [--clip NORM] [--seed S] [--threads N] [--noise] [--json] [--svg F.svg]\n"
    "                            [--tokenizer DIR]\n"
    "\n"
    "Trains the checkpoint twice from the same weights on the same batches, A under SPEC A and B under\n"
    "SPEC B, in lockstep (step k of A, then step k of B; f32, AdamW as `gptmeg train`), and prints per\n"
    "step both losses and their difference, the relative L2 difference of the gradients (overall, and per\n"
    "group: emb, h.0 .., ln_f), the weight drift ||wB - wA|| / ||wA||, the first step whose losses leave\n"
    "f32's assert_close tolerance (rtol 1.3e-6, atol 1e-5) and the first step after which the weights differ.\n"
    "  SPEC            PROFILE[:f32][+KNOB=VALUE]..., PROFILE hf, hf-legacy, meg, megatron; knobs as the\n"
    "                  model commands' (ln, scores, mask, softmax, act, qk-layer-scaling, bias-act), e.g.\n"
    "                  hf+act=gelu_pytorch_tanh:torch-cpu\n"
    "  --data FILE     text tokenized with the model's tokenizer (or --tokenizer DIR); each step draws B\n"
    "                  windows of T tokens from its first 90% with the seeded generator `gptmeg train` uses\n"
    "  --batches-npy   int32/int64 [steps, B, T] batches used in order\n"
    "  --noise         also trains A on the same batches in a shuffled order (seeded by --seed): the distance\n"
    "                  a batch-order change makes, to weigh A vs B against\n"
    "  --json          one JSON object on stdout;  --svg FILE  |loss diff| and weight drift per step (log scale)\n"
    "Defaults as `gptmeg train`: B 4, T 64, lr 6e-4, warmup 0, cosine, weight decay 0.1, betas 0.9 0.95,\n"
    "eps 1e-8, clip 1.0, seed 1337. Exit: 0 ok (whatever the difference), 1 failure, 2 usage error.\n";

typedef struct {
  const char *dir, *data, *bnpy, *a, *b, *svg, *tokdir, *sched;
  double steps, B, T, lr, warmup, clip, seed, threads;
  bool noise, json;
} args;

static int parse(int argc, char **argv, args *g) {
  const char *cmd = "train-compare";
  struct { const char *name; double lo, hi; double *dst; } nums[] = {
      {"--steps", 1, 1e7, &g->steps}, {"--batch", 1, 65536, &g->B},     {"--seq", 1, 1 << 20, &g->T},
      {"--lr", 0, 10, &g->lr},         {"--warmup", 0, 1e9, &g->warmup}, {"--clip", 0, 1e9, &g->clip},
      {"--seed", 0, 9.007e15, &g->seed}, {"--threads", 1, 1024, &g->threads}};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (!strcmp(a, "--json")) { g->json = true; continue; }
    if (!strcmp(a, "--noise")) { g->noise = true; continue; }
    if (strncmp(a, "--", 2) != 0) return cli_usage_error(cmd, "unexpected argument '%s'", a);
    if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
    bool num = false;
    for (size_t k = 0; k < sizeof nums / sizeof *nums; k++) {
      if (strcmp(a, nums[k].name)) continue;
      double x;
      if (cli_parse_double(cmd, a, v, &x)) return CLI_USAGE;
      if (!(x >= nums[k].lo && x <= nums[k].hi)) return cli_usage_error(cmd, "%s must be in [%g, %g] (got %s)", a, nums[k].lo, nums[k].hi, v);
      *nums[k].dst = x;
      num = true;
    }
    if (num) continue;
    if (!strcmp(a, "--model")) g->dir = v;
    else if (!strcmp(a, "--data")) g->data = v;
    else if (!strcmp(a, "--batches-npy")) g->bnpy = v;
    else if (!strcmp(a, "--a")) g->a = v;
    else if (!strcmp(a, "--b")) g->b = v;
    else if (!strcmp(a, "--svg")) g->svg = v;
    else if (!strcmp(a, "--tokenizer")) g->tokdir = v;
    else if (!strcmp(a, "--schedule")) g->sched = v;
    else return cli_usage_error(cmd, "unknown option '%s'", a);
  }
  if (!g->dir) return cli_usage_error(cmd, "--model DIR is required");
  if (!g->data == !g->bnpy) return cli_usage_error(cmd, "give one of --data FILE or --batches-npy F.npy");
  if (g->steps < 1) return cli_usage_error(cmd, "--steps N is required");
  if (!g->a || !g->b) return cli_usage_error(cmd, "--a SPEC and --b SPEC are required");
  if (strcmp(g->sched, "constant") && strcmp(g->sched, "cosine"))
    return cli_usage_error(cmd, "--schedule is constant or cosine (got '%s')", g->sched);
  return 0;
}

// The token ids of a text file: FILE.tokens.npy (gptmeg train's cache) when it is newer, else tokenized now.
static int text_tokens(const args *g, int32_t **ids, size_t *n) {
  struct stat st, sc;
  if (stat(g->data, &st) != 0) return gm_fail("cannot open '%s': %s", g->data, strerror(errno));
  size_t cl = strlen(g->data) + 16;
  char *cache = malloc(cl);
  if (!cache) return gm_fail("out of memory");
  snprintf(cache, cl, "%s.tokens.npy", g->data);
  if (stat(cache, &sc) == 0 && sc.st_mtime >= st.st_mtime) {
    int rc = cli_read_tokens_npy(cache, true, ids, n, NULL, NULL);
    free(cache);
    return rc;
  }
  free(cache);
  FILE *f = fopen(g->data, "rb");
  char *buf = f ? malloc((size_t)st.st_size + 1) : NULL;
  size_t len = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
  if (f) fclose(f);
  int rc = !f ? gm_fail("cannot open '%s': %s", g->data, strerror(errno)) : !buf ? gm_fail("out of memory reading '%s'", g->data) : 0;
  if (!rc && len == 0) rc = gm_fail("'%s' is empty: nothing to train on", g->data);
  gm_tokenizer *tok = NULL;
  if (!rc) rc = cli_load_tokenizer(g->dir, g->tokdir, &tok);
  if (!rc) rc = gm_tok_encode(tok, buf, len, ids, n);
  if (tok) gm_tok_free(tok);
  free(buf);
  return rc;
}

// The batches [steps, B, T]: drawn from the text, or read from the .npy.
static int batches_of(const args *g, int B, int T, long steps, int32_t **out) {
  *out = NULL;
  if (g->bnpy) {
    gm_npy a;
    if (gm_npy_read(g->bnpy, GM_F16, &a)) return -1;
    int rc = 0;
    if (a.ndim != 3 || (a.dtype != GM_I32 && a.dtype != GM_I64))
      rc = gm_fail("%s: batches are an int32/int64 array [steps, B, T] (got %d dimensions of %s)", g->bnpy, a.ndim, a.descr);
    else if ((int)a.shape[1] != B || (int)a.shape[2] != T)
      rc = gm_fail("%s holds batches of %zu x %zu, but --batch %d --seq %d", g->bnpy, a.shape[1], a.shape[2], B, T);
    else if ((long)a.shape[0] < steps)
      rc = gm_fail("%s holds %zu batches for %ld steps: one batch a step is needed", g->bnpy, a.shape[0], steps);
    size_t need = (size_t)steps * B * T;
    if (!rc && !(*out = malloc(need * sizeof **out))) rc = gm_fail("out of memory");
    for (size_t i = 0; !rc && i < need; i++) {
      int64_t x = a.dtype == GM_I64 ? ((const int64_t *)a.data)[i] : ((const int32_t *)a.data)[i];
      if (x < 0 || x > INT32_MAX) rc = gm_fail("%s: element %zu is %lld, not a token id", g->bnpy, i, (long long)x);
      else (*out)[i] = (int32_t)x;
    }
    gm_npy_free(&a);
    if (rc) { free(*out); *out = NULL; }
    return rc;
  }
  int32_t *ids = NULL;
  size_t n = 0;
  if (text_tokens(g, &ids, &n)) return -1;
  int64_t n_train = (int64_t)(n - (size_t)((double)n * 0.1)); // gptmeg train's default --val-fraction
  int rc = n_train < T ? gm_fail("'%s' has %lld training tokens: too few for one sequence of %d", g->data, (long long)n_train, T) : 0;
  if (!rc && !(*out = malloc((size_t)steps * B * T * sizeof **out))) rc = gm_fail("out of memory");
  if (!rc) rc = gm_tc_draw_batches(ids, n_train, B, T, steps, (uint64_t)g->seed, *out);
  free(ids);
  if (rc) { free(*out); *out = NULL; }
  return rc;
}

static void progress(void *ctx, long step, long steps) {
  (void)ctx;
  if (!cli_quiet) fprintf(stderr, "\rtrain-compare: step %ld/%ld%s", step, steps, step == steps ? "\n" : "");
}

static int run(const args *g) {
  gm_profile pa, pb;
  if (gm_tc_spec_parse(g->a, &pa) || gm_tc_spec_parse(g->b, &pb)) return -1;
  gm_train_opts o;
  gm_train_opts_default(&o);
  o.B = (int)g->B;
  o.T = (int)g->T;
  o.steps = (long)g->steps;
  o.seed = (uint64_t)g->seed;
  o.threads = (int)g->threads;
  o.clip = g->clip;
  gm_train_set_optimizer(&o, g->lr, (long)g->warmup, !strcmp(g->sched, "cosine"), 0.1, 0.9, 0.95, 1e-8, false);
  int32_t *batches;
  if (batches_of(g, o.B, o.T, o.steps, &batches)) return -1;
  gm_outfile svg = {0};
  if (g->svg && gm_outfile_open(&svg, g->svg)) { free(batches); return -1; } // fail before the work
  gm_gpt2 m;
  int rc = gm_gpt2_load(&m, g->dir);
  gm_tc_result res;
  if (!rc) {
    gm_tc_opts to = {&pa, &pb, g->a, g->b, &o, batches, g->noise, (uint64_t)g->seed ^ 0x6e6f697365ull,
                     isatty(2) ? progress : NULL, NULL};
    rc = gm_tc_run(&m, &to, &res);
    gm_gpt2_free(&m);
  }
  free(batches);
  if (rc) { if (g->svg) gm_outfile_abort(&svg); return rc; }
  if (g->svg) {
    gm_tc_svg(&res, svg.fp);
    rc = gm_outfile_commit(&svg);
  }
  if (!rc) {
    if (g->json) {
      char *s = gm_tc_json(&res);
      if (s) puts(s);
      else rc = gm_fail("out of memory");
      free(s);
    } else gm_tc_print(&res, stdout);
  }
  gm_tc_result_free(&res);
  return rc;
}

int cmd_train_compare(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { fputs(help, stdout); return CLI_OK; }
  args g = {.sched = "cosine", .B = 4, .T = 64, .lr = 6e-4, .clip = 1.0, .seed = 1337};
  int rc = parse(argc, argv, &g);
  if (rc) return rc;
  return run(&g) ? cli_fail("%s", gm_errmsg()) : CLI_OK;
}
