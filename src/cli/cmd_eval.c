// gptmeg eval: perplexity of a text file (or of token ids) by transformers' sliding-window recipe
// (argument parsing, reading, tokenizing and printing; the work is gm_gpt2_perplexity).
#include "cli/cli.h"
#include "cli/cli_model.h"
#include "gptmeg/model.h"
#include "gptmeg/tok.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void eval_help(FILE *f) {
  fprintf(f,
          "usage: gptmeg eval --model DIR (--text FILE | --tokens-npy T.npy) [--ctx N] [--stride S] [--json]\n"
          "                   [--tokenizer DIR] [--dtype f32|f16|bf16] [--threads N] [--profile P] [KNOB OPTIONS]\n"
          "  Perplexity as transformers' docs compute it (\"Perplexity of fixed-length models\"): windows of\n"
          "  --ctx tokens (default n_positions) moving by --stride (default ctx); each window scores the\n"
          "  tokens past the previous window's end, and counts one token fewer, as the recipe does.\n"
          "  --text FILE is tokenized with vocab.json + merges.txt from DIR (or --tokenizer DIR);\n"
          "  --tokens-npy takes int32/int64 ids instead (any shape, read flat).\n"
          "  --json prints {\"ppl\", \"nll\", \"n_tokens\", \"n_windows\", \"ctx\", \"stride\", \"n_scored\", \"n_input\"}.\n"
          "  A progress bar goes to stderr when stderr is a terminal.\n%s",
          cli_profile_help);
}

// Reads the whole file into a malloc'd buffer; an empty file is an error.
static int read_file(const char *path, char **buf, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return gm_fail("cannot open '%s': %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  while (b) {
    n += fread(b + n, 1, cap - n, f);
    if (n < cap) break;
    char *nb = realloc(b, 2 * cap);
    if (!nb) { free(b); b = NULL; break; }
    b = nb;
    cap *= 2;
  }
  int err = ferror(f);
  fclose(f);
  if (!b) return gm_fail("out of memory reading '%s'", path);
  if (err) { free(b); return gm_fail("read of '%s' failed", path); }
  if (n == 0) { free(b); return gm_fail("'%s' is empty: nothing to evaluate", path); }
  *buf = b;
  *len = n;
  return 0;
}

// gm_progress_fn: a one-line bar on stderr, redrawn in place.
static void progress_bar(void *ctx, int64_t done, int64_t total) {
  (void)ctx;
  int w = 40, k = (int)(done * w / (total > 0 ? total : 1));
  fprintf(stderr, "\r[%.*s%*s] %3d%% %lld/%lld tokens", k, "########################################", w - k, "",
          (int)(done * 100 / (total > 0 ? total : 1)), (long long)done, (long long)total);
  if (done >= total) fputs("\r\033[K", stderr);
  fflush(stderr);
}

int cmd_eval(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { eval_help(stdout); return CLI_OK; }
  const char *dir = NULL, *text = NULL, *npy = NULL, *tokdir = NULL, *dts = "f32";
  long ctx = 0, stride = 0, threads = 0;
  bool json = false, have_ctx = false, have_stride = false;
  cli_profile_opts po = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int k = cli_profile_option("eval", argc, argv, &i, &po);
    if (k < 0) return CLI_USAGE;
    if (k > 0) continue;
    if (!strcmp(a, "--model")) { if (!(dir = cli_value("eval", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--text")) { if (!(text = cli_value("eval", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--tokens-npy")) { if (!(npy = cli_value("eval", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--tokenizer")) { if (!(tokdir = cli_value("eval", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--dtype")) { if (!(dts = cli_value("eval", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--json")) json = true;
    else if (!strcmp(a, "--ctx")) {
      if (!(v = cli_value("eval", argc, argv, &i)) || cli_parse_long("eval", a, v, -(1L << 30), 1L << 30, &ctx)) return CLI_USAGE;
      have_ctx = true;
    } else if (!strcmp(a, "--stride")) {
      if (!(v = cli_value("eval", argc, argv, &i)) || cli_parse_long("eval", a, v, -(1L << 30), 1L << 30, &stride)) return CLI_USAGE;
      have_stride = true;
    } else if (!strcmp(a, "--threads")) {
      if (!(v = cli_value("eval", argc, argv, &i)) || cli_parse_long("eval", a, v, 1, 1024, &threads)) return CLI_USAGE;
    } else return cli_usage_error("eval", "unknown option '%s'", a);
  }
  if (!dir || (!text && !npy)) return cli_usage_error("eval", "--model and one of --text, --tokens-npy are required");
  if (text && npy) return cli_usage_error("eval", "give --text or --tokens-npy, not both");
  gm_dtype dt;
  if (gm_dtype_parse(dts, &dt)) return cli_usage_error("eval", "%s", gm_errmsg());
  if (cli_profile_recorded(&po, dir)) return cli_fail("%s", gm_errmsg());
  gm_profile p;
  if (cli_profile_build(&po, dt, &p)) return cli_fail("%s", gm_errmsg());

  int32_t *ids = NULL;
  size_t n = 0;
  if (npy) {
    if (cli_read_tokens_npy(npy, true, &ids, &n, NULL, NULL)) return cli_fail("%s", gm_errmsg());
  } else {
    char *buf = NULL;
    size_t len = 0;
    if (read_file(text, &buf, &len)) return cli_fail("%s", gm_errmsg());
    gm_tokenizer *tok;
    int rc = cli_load_tokenizer(dir, tokdir, &tok);
    if (!rc) { rc = gm_tok_encode(tok, buf, len, &ids, &n); gm_tok_free(tok); }
    free(buf);
    if (rc) return cli_fail("%s", gm_errmsg());
  }
  const char *src = npy ? npy : text;
  gm_gpt2 m;
  if (n < 2) { free(ids); return cli_fail("%s holds %zu token(s): perplexity needs at least 2", src, n); }
  if (gm_gpt2_load(&m, dir)) { free(ids); return cli_fail("%s", gm_errmsg()); }
  int rc = gm_gpt2_to_dtype(&m, dt);
  int c = have_ctx ? (int)ctx : m.cfg.n_positions;
  int s = have_stride ? (int)stride : c;
  if (!rc && c > m.cfg.n_positions) rc = gm_fail("--ctx %d exceeds the model's n_positions %d", c, m.cfg.n_positions);
  else if (!rc && c < 2) rc = gm_fail("--ctx must be >= 2 (got %d)", c);
  else if (!rc && (s < 1 || s > c)) rc = gm_fail("--stride must be in [1, ctx %d] (got %d)", c, s);
  gm_ppl_result r;
  if (!rc) rc = gm_gpt2_perplexity(&m, &p, ids, (int64_t)n, c, s, (int)threads, isatty(2) ? progress_bar : NULL, NULL, &r);
  gm_gpt2_free(&m);
  free(ids);
  if (rc) return cli_fail("%s", gm_errmsg());
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "ppl", r.ppl);
    cJSON_AddNumberToObject(o, "nll", r.nll);
    cJSON_AddNumberToObject(o, "n_tokens", (double)r.n_tokens);
    cJSON_AddNumberToObject(o, "n_windows", r.n_windows);
    cJSON_AddNumberToObject(o, "ctx", r.ctx);
    cJSON_AddNumberToObject(o, "stride", r.stride);
    cJSON_AddNumberToObject(o, "n_scored", (double)r.n_scored);
    cJSON_AddNumberToObject(o, "n_input", (double)n);
    char *js = cJSON_PrintUnformatted(o);
    printf("%s\n", js);
    free(js);
    cJSON_Delete(o);
  } else {
    printf("ppl %.6f  nll %.8f  (%lld tokens counted, %lld scored, %d windows, ctx %d, stride %d, %zu input tokens)\n",
           r.ppl, r.nll, (long long)r.n_tokens, (long long)r.n_scored, r.n_windows, r.ctx, r.stride, n);
  }
  return CLI_OK;
}
