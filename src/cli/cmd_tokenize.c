// gptmeg tokenize: GPT-2 BPE encode stdin to ids, or decode ids on stdin back to bytes.
#include "cli/cli.h"
#include "gptmeg/core.h"
#include "gptmeg/tok.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: gptmeg tokenize --model DIR [--decode] [--json]\n"
    "\n"
    "Reads stdin. Encode (default): the bytes are tokenized with DIR/vocab.json and DIR/merges.txt\n"
    "(GPT-2 byte-level BPE, '<|endoftext|>' read as the special token) and the ids are printed\n"
    "space-separated on one line, or as a JSON array with --json.\n"
    "--decode: stdin holds ids (whitespace separated, or a JSON array) and the bytes they stand for\n"
    "are written to stdout unchanged.\n"
    "Exit status: 0 ok, 1 failure (unreadable model, id outside the vocab), 2 usage error.\n";

static int read_stdin(char **buf, size_t *len) {
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap + 1);
  while (b) {
    n += fread(b + n, 1, cap - n, stdin);
    if (n < cap) break;
    char *nb = realloc(b, 2 * cap + 1);
    if (!nb) { free(b); b = NULL; break; }
    b = nb;
    cap *= 2;
  }
  if (!b) return gm_fail("out of memory reading stdin");
  if (ferror(stdin)) { free(b); return gm_fail("read of stdin failed: %s", strerror(errno)); }
  b[n] = 0;
  *buf = b;
  *len = n;
  return 0;
}

// Parses ids: integers separated by whitespace, or a JSON array of integers (commas, brackets).
static int parse_ids(const char *s, size_t len, int32_t **ids, size_t *n) {
  size_t cap = 256, k = 0;
  int32_t *v = malloc(cap * sizeof(int32_t));
  if (!v) return gm_fail("out of memory");
  size_t i = 0;
  while (i < len && isspace((unsigned char)s[i])) i++;
  bool json = i < len && s[i] == '[';
  if (json) i++;
  bool closed = false, need_sep = false;
  while (i < len) {
    unsigned char c = (unsigned char)s[i];
    if (isspace(c)) { i++; continue; }
    if (json && c == ']') {
      if (!need_sep && k) { free(v); return gm_fail("stdin: byte %zu: ']' after ','", i); }
      closed = true;
      i++;
      break;
    }
    if (json && c == ',') {
      if (!need_sep) { free(v); return gm_fail("stdin: byte %zu: unexpected ','", i); }
      need_sep = false;
      i++;
      continue;
    }
    if (json && need_sep) { free(v); return gm_fail("stdin: byte %zu: expected ',' or ']' in the id array", i); }
    size_t st = i;
    if (s[i] == '-' || s[i] == '+') i++;
    while (i < len && isdigit((unsigned char)s[i])) i++;
    bool digits = i > st + (s[st] == '-' || s[st] == '+');
    if (!digits || (i < len && !isspace((unsigned char)s[i]) && !(json && (s[i] == ',' || s[i] == ']')))) {
      size_t e = st;
      while (e < len && !isspace((unsigned char)s[e]) && e - st < 20) e++;
      free(v);
      return gm_fail("stdin: id %zu (byte %zu) is not an integer: '%.*s'", k, st, (int)(e - st), s + st);
    }
    errno = 0;
    long long x = strtoll(s + st, NULL, 10);
    if (errno || x < INT32_MIN || x > INT32_MAX) { free(v); return gm_fail("stdin: id %.*s at position %zu is out of range", (int)(i - st), s + st, k); }
    if (k == cap) {
      int32_t *nv = realloc(v, 2 * cap * sizeof(int32_t));
      if (!nv) { free(v); return gm_fail("out of memory"); }
      v = nv;
      cap *= 2;
    }
    v[k++] = (int32_t)x;
    need_sep = true;
  }
  if (json && !closed) { free(v); return gm_fail("stdin: the JSON id array has no closing ']'"); }
  while (i < len && isspace((unsigned char)s[i])) i++;
  if (i < len) { free(v); return gm_fail("stdin: unexpected text after the id array at byte %zu", i); }
  *ids = v;
  *n = k;
  return 0;
}

int cmd_tokenize(int argc, char **argv) {
  const char *cmd = "tokenize";
  if (cli_wants_help(argc, argv)) { fputs(USAGE, stdout); return CLI_OK; }
  const char *model = NULL;
  bool decode = false, json = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--model") == 0) { if (!(model = cli_value(cmd, argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--decode") == 0) decode = true;
    else if (strcmp(argv[i], "--json") == 0) json = true;
    else return cli_usage_error(cmd, "unknown argument '%s'", argv[i]);
  }
  if (!model) return cli_usage_error(cmd, "--model DIR is required (a folder with vocab.json and merges.txt)");
  gm_tokenizer *tok;
  if (gm_tok_load(model, &tok)) return cli_fail("%s", gm_errmsg());
  char *in = NULL;
  int32_t *ids = NULL;
  char *bytes = NULL;
  size_t len, n;
  int rc = CLI_OK;
  if (read_stdin(&in, &len)) { rc = cli_fail("%s", gm_errmsg()); goto done; }
  if (decode) {
    if (parse_ids(in, len, &ids, &n) || gm_tok_decode(tok, ids, n, &bytes, &len)) { rc = cli_fail("%s", gm_errmsg()); goto done; }
    fwrite(bytes, 1, len, stdout);
  } else {
    if (gm_tok_encode(tok, in, len, &ids, &n)) { rc = cli_fail("%s", gm_errmsg()); goto done; }
    if (json) putchar('[');
    for (size_t i = 0; i < n; i++) printf(i ? (json ? ", %d" : " %d") : "%d", ids[i]);
    puts(json ? "]" : "");
  }
  if (fflush(stdout) != 0 || ferror(stdout)) rc = cli_fail("write to stdout failed: %s", strerror(errno));
done:
  free(in);
  free(ids);
  free(bytes);
  gm_tok_free(tok);
  return rc;
}
