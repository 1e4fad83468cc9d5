// gptmeg generate: tokenize a prompt (or take its ids), run it through the KV cache, then sample
// token by token and stream the text (or the ids) to stdout, optionally keeping each step's logits
// (argument parsing, tokenizer lookup and printing; the work is gm_gpt2_generate in
// src/model/gpt2_generate.c).
#include "gptmeg/npy.h"
#include "cli/cli.h"
#include "cli/cli_model.h"
#include "gptmeg/model.h"
#include "gptmeg/tok.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void generate_help(FILE *f) {
  fprintf(f,
          "usage: gptmeg generate --model DIR (--prompt TEXT | --prompt-ids T.npy) [--max-new-tokens N]\n"
          "                       [--temperature T] [--top-k K] [--top-p P] [--seed S] [--tokenizer DIR]\n"
          "                       [--dtype f32|f16|bf16] [--threads N] [--logits-out L.npy] [--profile P]\n"
          "                       [KNOB OPTIONS]\n"
          "  Writes the continuation of TEXT (not TEXT itself) to stdout as it is produced.\n"
          "  --prompt-ids T.npy  the prompt as token ids (int32/int64, [T] or [1, T]); stdout then gets the\n"
          "                      new ids, space-separated, and no tokenizer is needed; the end-of-text id\n"
          "                      is config.json's eos_token_id\n"
          "  --logits-out L.npy  also write f32 [n, V]: row i the logits new token i was drawn from (row 0:\n"
          "                      the prompt's last position; then each cached decode step), as transformers'\n"
          "                      generate(output_logits=True) returns them (written once generation ends)\n"
          "  --max-new-tokens N  tokens to produce (default 64); generation also stops when the sequence\n"
          "                      reaches n_positions (said on stderr) or at <|endoftext|>\n"
          "  --temperature T     0: greedy (argmax, lowest id on ties); > 0: sample (default 1)\n"
          "  --top-k K           keep the K most likely tokens (0: off, default); applied after T\n"
          "  --top-p P           keep the smallest most-likely set whose probability reaches P (1: off,\n"
          "                      default); applied after top-k, as transformers does\n"
          "  --seed S            the same seed gives the same text (default 0)\n"
          "  --tokenizer DIR     vocab.json + merges.txt from DIR instead of the model's folder\n"
          "%s",
          cli_profile_help);
}

// Streams token bytes to stdout, holding back a UTF-8 sequence cut by a token boundary until the
// next token completes it (or until the end, when whatever is left is written as it is).
// ids: print token ids instead of their bytes. keep: append each token's logits [V] to *logits.
typedef struct {
  const gm_tokenizer *tok;
  char pend[8];
  size_t n_pend;
  int err;
  bool ids, keep;
  size_t n_ids; // ids printed
  int V;
  float *logits;
  size_t n_rows, cap_rows;
} streamer;

// Bytes a UTF-8 lead byte announces (1 for ASCII and for bytes that cannot lead a sequence).
static size_t utf8_len(unsigned char c) {
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 1;
}

// Writes b[0..n) except a trailing incomplete UTF-8 sequence, which is kept in s->pend.
static void stream_bytes(streamer *s, const char *b, size_t n) {
  char buf[256];
  size_t total = s->n_pend + n;
  char *all = total <= sizeof buf ? buf : malloc(total);
  if (!all) { s->err = 1; return; }
  memcpy(all, s->pend, s->n_pend);
  memcpy(all + s->n_pend, b, n);
  size_t keep = 0; // length of the held-back tail
  for (size_t back = 1; back <= 3 && back <= total; back++) {
    unsigned char c = (unsigned char)all[total - back];
    if ((c & 0xC0) == 0x80) continue; // continuation byte: look further back
    size_t want = utf8_len(c);
    if (want > back) keep = back;
    break;
  }
  if (fwrite(all, 1, total - keep, stdout) != total - keep) s->err = 1;
  memcpy(s->pend, all + total - keep, keep);
  s->n_pend = keep;
  if (all != buf) free(all);
  fflush(stdout);
}

// Appends one row of logits; 2 when out of memory (the message set).
static int keep_row(streamer *s, const float *row) {
  if (s->n_rows == s->cap_rows) {
    size_t cap = s->cap_rows ? 2 * s->cap_rows : 64;
    float *p = realloc(s->logits, cap * (size_t)s->V * sizeof(float));
    if (!p) {
      gm_fail("out of memory for the logits of %zu steps (--logits-out)", s->n_rows + 1);
      return 2;
    }
    s->logits = p;
    s->cap_rows = cap;
  }
  memcpy(s->logits + s->n_rows++ * (size_t)s->V, row, (size_t)s->V * sizeof(float));
  return 0;
}

// gm_token_fn: keeps the logits (--logits-out), then appends the token's bytes (or its id) to the
// stream; stops on an id the vocab lacks.
static int on_token(void *ctx, int32_t id, const float *logits) {
  streamer *s = ctx;
  if (s->keep && (s->err = keep_row(s, logits))) return 1;
  if (s->ids) {
    if (printf("%s%d", s->n_ids++ ? " " : "", (int)id) < 0) s->err = 1;
    fflush(stdout);
    return s->err;
  }
  size_t n;
  const char *b = gm_tok_token_bytes(s->tok, id, &n);
  if (!b) { gm_fail("generated token %d has no entry in vocab.json (the model's vocabulary is larger)", id); s->err = 2; return 1; }
  stream_bytes(s, b, n);
  return s->err;
}

int cmd_generate(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { generate_help(stdout); return CLI_OK; }
  const char *dir = NULL, *prompt = NULL, *prompt_ids = NULL, *logits_out = NULL, *tokdir = NULL, *dts = "f32";
  long max_new = 64, top_k = 0, threads = 0, seed = 0;
  double temperature = 1.0, top_p = 1.0;
  cli_profile_opts po = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int k = cli_profile_option("generate", argc, argv, &i, &po);
    if (k < 0) return CLI_USAGE;
    if (k > 0) continue;
    if (!strcmp(a, "--model")) { if (!(dir = cli_value("generate", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--prompt")) { if (!(prompt = cli_value("generate", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--prompt-ids")) { if (!(prompt_ids = cli_value("generate", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--logits-out")) { if (!(logits_out = cli_value("generate", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--tokenizer")) { if (!(tokdir = cli_value("generate", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--dtype")) { if (!(dts = cli_value("generate", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--max-new-tokens")) {
      if (!(v = cli_value("generate", argc, argv, &i)) || cli_parse_long("generate", a, v, 0, 1L << 30, &max_new)) return CLI_USAGE;
    } else if (!strcmp(a, "--top-k")) {
      if (!(v = cli_value("generate", argc, argv, &i)) || cli_parse_long("generate", a, v, 0, 1L << 30, &top_k)) return CLI_USAGE;
    } else if (!strcmp(a, "--seed")) {
      if (!(v = cli_value("generate", argc, argv, &i)) || cli_parse_long("generate", a, v, 0, 0x7fffffffffffffffL, &seed)) return CLI_USAGE;
    } else if (!strcmp(a, "--threads")) {
      if (!(v = cli_value("generate", argc, argv, &i)) || cli_parse_long("generate", a, v, 1, 1024, &threads)) return CLI_USAGE;
    } else if (!strcmp(a, "--temperature")) {
      if (!(v = cli_value("generate", argc, argv, &i)) || cli_parse_double("generate", a, v, &temperature)) return CLI_USAGE;
    } else if (!strcmp(a, "--top-p")) {
      if (!(v = cli_value("generate", argc, argv, &i)) || cli_parse_double("generate", a, v, &top_p)) return CLI_USAGE;
    } else return cli_usage_error("generate", "unknown option '%s'", a);
  }
  if (!dir || !prompt == !prompt_ids) return cli_usage_error("generate", "--model and one of --prompt and --prompt-ids are required");
  if (!(temperature >= 0) || temperature > 1e30) return cli_usage_error("generate", "--temperature must be a number >= 0 (got '%g')", temperature);
  if (!(top_p > 0 && top_p <= 1)) return cli_usage_error("generate", "--top-p must be in (0, 1] (got '%g')", top_p);
  gm_dtype dt;
  if (gm_dtype_parse(dts, &dt)) return cli_usage_error("generate", "%s", gm_errmsg());
  if (prompt && !*prompt) return cli_fail("the prompt is empty: give --prompt some text to continue");
  if (cli_profile_recorded(&po, dir)) return cli_fail("%s", gm_errmsg());
  gm_profile p;
  if (cli_profile_build(&po, dt, &p)) return cli_fail("%s", gm_errmsg());

  gm_tokenizer *tok = NULL;
  int32_t *ids = NULL;
  size_t n_ids = 0;
  int B = 1;
  if (prompt_ids) {
    if (cli_read_tokens_npy(prompt_ids, false, &ids, &n_ids, &B, NULL)) return cli_fail("%s", gm_errmsg());
    if (B != 1) {
      free(ids);
      return cli_fail("%s: the prompt must be one sequence ([T] or [1, T]); the file holds %d", prompt_ids, B);
    }
  } else if (cli_load_tokenizer(dir, tokdir, &tok)) return cli_fail("%s", gm_errmsg());
  gm_gpt2 m;
  bool loaded = false;
  gm_sampler s = {0};
  int rc = tok ? gm_tok_encode(tok, prompt, strlen(prompt), &ids, &n_ids) : 0;
  if (!rc && !(rc = gm_gpt2_load(&m, dir))) loaded = true;
  if (!rc) rc = gm_gpt2_to_dtype(&m, dt);
  if (!rc && (long)n_ids > m.cfg.n_positions)
    rc = gm_fail("the prompt is %zu tokens, more than the model's n_positions %d", n_ids, m.cfg.n_positions);
  for (size_t i = 0; !rc && prompt_ids && i < n_ids; i++)
    if (ids[i] < 0 || ids[i] >= m.cfg.vocab_size)
      rc = gm_fail("%s: token %d at index %zu is outside the vocabulary [0, %d)", prompt_ids, (int)ids[i], i,
                   m.cfg.vocab_size);
  gm_sample_params sp = {temperature, (int)top_k, top_p, (uint64_t)seed};
  if (!rc) rc = gm_sampler_init(&s, &sp, m.cfg.vocab_size);
  streamer st = {.tok = tok, .ids = prompt_ids != NULL, .keep = logits_out != NULL, .V = loaded ? m.cfg.vocab_size : 0};
  gm_generate_stats stats;
  int32_t eot = tok ? gm_tok_eot_id(tok) : loaded ? m.cfg.eos_token_id : -1;
  if (!rc) rc = gm_gpt2_generate(&m, &p, ids, (int)n_ids, (int)max_new, &s, eot, (int)threads, on_token, &st, &stats);
  if (st.n_pend && fwrite(st.pend, 1, st.n_pend, stdout) != st.n_pend) st.err = 1;
  if (st.ids && st.n_ids && putchar('\n') == EOF) st.err = 1;
  fflush(stdout);
  if (!rc && st.err == 2) rc = -1; // on_token set the message
  else if (!rc && st.err) rc = gm_fail("writing to stdout failed: %s", strerror(errno));
  if (!rc && logits_out) {
    const size_t shape[2] = {st.n_rows, (size_t)st.V};
    rc = gm_npy_write(logits_out, GM_F32, st.logits, 2, shape, false);
  }
  free(st.logits);
  if (!rc && stats.stop == GM_STOP_POSITIONS)
    fprintf(stderr, "gptmeg generate: stopped at n_positions %d (prompt %d + %d new tokens)\n", m.cfg.n_positions,
            stats.n_prompt, stats.n_new);
  gm_sampler_free(&s);
  free(ids);
  gm_tok_free(tok);
  if (loaded) gm_gpt2_free(&m);
  return rc ? cli_fail("%s", gm_errmsg()) : CLI_OK;
}
