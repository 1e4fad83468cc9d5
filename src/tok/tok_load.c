// Loading the GPT-2 BPE files: vocab.json (token -> id) and merges.txt (rank-ordered pairs),
// validated, into the tables tok_encode.c works from. Tokens are stored as their raw bytes: the
// GPT-2 byte-to-unicode alphabet of the files is undone once, here.
#include "tok/tok_internal.h"

#include "gptmeg/core.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- GPT-2 byte <-> unicode alphabet --------------------------------------------------------
// Bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves (as code points); the other 68
// bytes, in increasing order, become U+0100, U+0101, ... so every byte is a visible character.
static void byte_alphabet(uint32_t byte_to_cp[256], int16_t cp_to_byte[512]) {
  for (int i = 0; i < 512; i++) cp_to_byte[i] = -1;
  uint32_t next = 256;
  for (int b = 0; b < 256; b++) {
    bool self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    byte_to_cp[b] = self ? (uint32_t)b : next++;
    cp_to_byte[byte_to_cp[b]] = (int16_t)b;
  }
}

// Decodes one UTF-8 character at s[*i] (n bytes); -1 if the sequence is not valid UTF-8.
static int32_t utf8_next(const unsigned char *s, size_t n, size_t *i) {
  unsigned c = s[*i];
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (!len || *i + (size_t)len > n) return -1;
  uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < len; k++) {
    if ((s[*i + k] & 0xC0) != 0x80) return -1;
    cp = cp << 6 | (s[*i + k] & 0x3F);
  }
  static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return -1;
  *i += (size_t)len;
  return (int32_t)cp;
}

// Maps a token as spelled in the files (UTF-8 of alphabet characters) to raw bytes in out
// (capacity >= n). Returns the byte count, or -1 with *bad_cp set to the offending character
// (-1 for invalid UTF-8).
static long unspell(const int16_t cp_to_byte[512], const char *s, size_t n, char *out, int32_t *bad_cp) {
  size_t i = 0, o = 0;
  while (i < n) {
    int32_t cp = utf8_next((const unsigned char *)s, n, &i);
    if (cp < 0 || cp >= 512 || cp_to_byte[cp] < 0) { *bad_cp = cp; return -1; }
    out[o++] = (char)cp_to_byte[cp];
  }
  return (long)o;
}

static int read_file(const char *path, char **buf, size_t *len) {
  *buf = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return gm_fail("cannot open '%s': %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap + 1);
  while (b) {
    size_t got = fread(b + n, 1, cap - n, f);
    n += got;
    if (n < cap) break;
    char *nb = realloc(b, 2 * cap + 1);
    if (!nb) { free(b); b = NULL; break; }
    b = nb;
    cap *= 2;
  }
  int err = ferror(f);
  fclose(f);
  if (!b) return gm_fail("%s: out of memory", path);
  if (err) { free(b); return gm_fail("read of '%s' failed", path); }
  b[n] = 0;
  *buf = b;
  *len = n;
  return 0;
}

// ---- hashing ----------------------------------------------------------------------------------
uint64_t gm_tok_hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; // FNV-1a, then a final mix so low bits are good
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 32);
}

static uint32_t pow2_at_least(uint64_t n) {
  uint32_t c = 16;
  while (c < n) c *= 2;
  return c;
}

int32_t gm_tok_find(const gm_tokenizer *tok, const char *s, size_t n) {
  uint32_t mask = tok->by_bytes.cap - 1;
  for (uint32_t h = (uint32_t)gm_tok_hash_bytes(s, n) & mask;; h = (h + 1) & mask) {
    uint32_t v = tok->by_bytes.slot[h];
    if (!v) return -1;
    int32_t id = (int32_t)(v - 1);
    if (tok->tok_len[id] == n && memcmp(tok->tok_bytes[id], s, n) == 0) return id;
  }
}

// Inserts id (whose bytes are set) unless its bytes are present; returns the id already there or -1.
static int32_t strmap_insert(gm_tokenizer *tok, int32_t id) {
  const char *s = tok->tok_bytes[id];
  size_t n = tok->tok_len[id];
  uint32_t mask = tok->by_bytes.cap - 1;
  for (uint32_t h = (uint32_t)gm_tok_hash_bytes(s, n) & mask;; h = (h + 1) & mask) {
    uint32_t v = tok->by_bytes.slot[h];
    if (!v) { tok->by_bytes.slot[h] = (uint32_t)id + 1; return -1; }
    int32_t o = (int32_t)(v - 1);
    if (tok->tok_len[o] == n && memcmp(tok->tok_bytes[o], s, n) == 0) return o;
  }
}

uint32_t gm_tok_pair_hash(uint64_t k) {
  k ^= k >> 31;
  k *= 0x94d049bb133111ebull;
  return (uint32_t)(k ^ (k >> 29));
}

// Inserts (key -> rank, merged); returns the rank already stored for key, or UINT32_MAX.
static uint32_t pair_insert(gm_tok_pairmap *m, uint64_t key, uint32_t rank, int32_t merged) {
  uint32_t mask = m->cap - 1;
  for (uint32_t h = gm_tok_pair_hash(key) & mask;; h = (h + 1) & mask) {
    if (m->key[h] == UINT64_MAX) { m->key[h] = key; m->rank[h] = rank; m->merged[h] = merged; return UINT32_MAX; }
    if (m->key[h] == key) return m->rank[h];
  }
}

// ---- vocab.json -------------------------------------------------------------------------------
static void line_col(const char *buf, size_t off, long *line, long *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off; i++) {
    if (buf[i] == '\n') { (*line)++; *col = 1; }
    else (*col)++;
  }
}

static int load_vocab(gm_tokenizer *tok, const char *path, const int16_t cp_to_byte[512]) {
  char *buf;
  size_t len;
  if (read_file(path, &buf, &len)) return 1;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
  int rc = 0;
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    size_t off = (at && at >= buf && at <= buf + len) ? (size_t)(at - buf) : 0;
    long line, col;
    line_col(buf, off, &line, &col);
    rc = gm_fail("%s: not valid JSON: parse error at byte %zu (line %ld, column %ld)", path, off, line, col);
    goto done;
  }
  if (!cJSON_IsObject(root)) { rc = gm_fail("%s: expected a JSON object mapping tokens to ids", path); goto done; }
  long max_id = -1, count = 0;
  for (cJSON *e = root->child; e; e = e->next, count++) {
    double v = e->valuedouble;
    // The range test comes first: casting a double outside long's range (or NaN) is undefined.
    if (!cJSON_IsNumber(e) || !(v >= 0 && v < (double)(1 << 24)) || v != (double)(long)v) {
      rc = gm_fail("%s: token #%ld '%.60s': id must be an integer in [0, 2^24)", path, count, e->string);
      goto done;
    }
    if ((long)v > max_id) max_id = (long)v;
  }
  if (count == 0) { rc = gm_fail("%s: the vocabulary is empty", path); goto done; }
  tok->n_vocab = (int32_t)(max_id + 1);
  tok->tok_bytes = calloc((size_t)tok->n_vocab, sizeof(char *));
  tok->tok_len = calloc((size_t)tok->n_vocab, sizeof(uint32_t));
  tok->by_bytes.cap = pow2_at_least(2 * (uint64_t)count);
  tok->by_bytes.slot = calloc(tok->by_bytes.cap, sizeof(uint32_t));
  if (!tok->tok_bytes || !tok->tok_len || !tok->by_bytes.slot) { rc = gm_fail("%s: out of memory", path); goto done; }
  for (cJSON *e = root->child; e; e = e->next) {
    int32_t id = (int32_t)e->valuedouble;
    size_t slen = strlen(e->string);
    if (tok->tok_bytes[id]) {
      rc = gm_fail("%s: duplicate id %d (tokens '%.60s' and another)", path, id, e->string);
      goto done;
    }
    char *raw = malloc(slen + 1);
    int32_t bad = 0;
    long n = raw ? unspell(cp_to_byte, e->string, slen, raw, &bad) : -1;
    if (n < 0) {
      free(raw);
      if (bad < 0) rc = gm_fail("%s: token with id %d is not valid UTF-8", path, id);
      else rc = gm_fail("%s: token '%.60s' (id %d) has character U+%04X outside GPT-2's byte alphabet", path, e->string, id, bad);
      goto done;
    }
    if (n == 0) { free(raw); rc = gm_fail("%s: empty token with id %d", path, id); goto done; }
    tok->tok_bytes[id] = raw;
    tok->tok_len[id] = (uint32_t)n;
    int32_t prev = strmap_insert(tok, id);
    if (prev >= 0) { rc = gm_fail("%s: duplicate token '%.60s' (ids %d and %d)", path, e->string, prev, id); goto done; }
  }
  for (int b = 0; b < 256; b++) {
    char c = (char)b;
    tok->byte_id[b] = gm_tok_find(tok, &c, 1);
    if (tok->byte_id[b] < 0) { rc = gm_fail("%s: no token for byte 0x%02X (a byte-level vocab needs all 256)", path, b); goto done; }
  }
  tok->eot_id = gm_tok_find(tok, "<|endoftext|>", 13);
done:
  cJSON_Delete(root);
  free(buf);
  return rc;
}

// ---- merges.txt -------------------------------------------------------------------------------
static int load_merges(gm_tokenizer *tok, const char *path, const int16_t cp_to_byte[512]) {
  char *buf;
  size_t len;
  if (read_file(path, &buf, &len)) return 1;
  int rc = 0;
  uint64_t lines = 1;
  for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
  gm_tok_pairmap *m = &tok->merges;
  m->cap = pow2_at_least(2 * lines);
  m->key = malloc(m->cap * sizeof(uint64_t));
  m->rank = malloc(m->cap * sizeof(uint32_t));
  m->merged = malloc(m->cap * sizeof(int32_t));
  char *raw = malloc(len + 1);
  if (!m->key || !m->rank || !m->merged || !raw) { rc = gm_fail("%s: out of memory", path); goto done; }
  memset(m->key, 0xFF, m->cap * sizeof(uint64_t));
  size_t pos = 0;
  long lineno = 0;
  uint32_t rank = 0;
  while (pos < len) {
    char *line = buf + pos;
    char *nl = memchr(line, '\n', len - pos);
    size_t ll = nl ? (size_t)(nl - line) : len - pos;
    pos += ll + 1;
    lineno++;
    if (ll && line[ll - 1] == '\r') ll--;
    if (lineno == 1) {
      if (ll < 8 || memcmp(line, "#version", 8) != 0)
        { rc = gm_fail("%s: line 1 should be the '#version: 0.2' header, got '%.40s'", path, line); goto done; }
      continue;
    }
    if (ll == 0) continue;
    char *sp = memchr(line, ' ', ll);
    size_t la = sp ? (size_t)(sp - line) : 0, lb = sp ? ll - la - 1 : 0;
    if (!sp || la == 0 || lb == 0 || memchr(sp + 1, ' ', lb))
      { rc = gm_fail("%s: line %ld: expected two tokens separated by one space, got '%.*s'", path, lineno, (int)(ll < 60 ? ll : 60), line); goto done; }
    int32_t bad = 0;
    long na = unspell(cp_to_byte, line, la, raw, &bad);
    long nb = na < 0 ? -1 : unspell(cp_to_byte, sp + 1, lb, raw + na, &bad);
    if (na < 0 || nb < 0)
      { rc = gm_fail("%s: line %ld: '%.*s' has a character outside GPT-2's byte alphabet", path, lineno, (int)(ll < 60 ? ll : 60), line); goto done; }
    int32_t a = gm_tok_find(tok, raw, (size_t)na), b = gm_tok_find(tok, raw + na, (size_t)nb);
    int32_t ab = gm_tok_find(tok, raw, (size_t)(na + nb));
    if (a < 0) { rc = gm_fail("%s: line %ld: token '%.*s' is not in the vocab", path, lineno, (int)la, line); goto done; }
    if (b < 0) { rc = gm_fail("%s: line %ld: token '%.*s' is not in the vocab", path, lineno, (int)lb, sp + 1); goto done; }
    if (ab < 0) { rc = gm_fail("%s: line %ld: merged token '%.*s%.*s' is not in the vocab", path, lineno, (int)la, line, (int)lb, sp + 1); goto done; }
    uint32_t prev = pair_insert(m, (uint64_t)(uint32_t)a << 32 | (uint32_t)b, rank, ab);
    if (prev != UINT32_MAX) { rc = gm_fail("%s: line %ld: merge '%.*s' repeats the one of rank %u", path, lineno, (int)ll, line, prev); goto done; }
    rank++;
  }
  if (lineno == 0) rc = gm_fail("%s: empty file (expected the '#version: 0.2' header)", path);
  tok->n_merges = rank;
done:
  free(raw);
  free(buf);
  return rc;
}

int gm_tok_load_files(const char *vocab_path, const char *merges_path, gm_tokenizer **out) {
  *out = NULL;
  gm_tokenizer *tok = calloc(1, sizeof *tok);
  if (!tok) return gm_fail("out of memory");
  uint32_t byte_to_cp[256];
  int16_t cp_to_byte[512];
  byte_alphabet(byte_to_cp, cp_to_byte);
  if (load_vocab(tok, vocab_path, cp_to_byte) || load_merges(tok, merges_path, cp_to_byte) || gm_tok_compile_regex(tok)) {
    gm_tok_free(tok);
    return 1;
  }
  *out = tok;
  return 0;
}

int gm_tok_load(const char *dir, gm_tokenizer **out) {
  *out = NULL;
  size_t n = strlen(dir) + 16;
  char *v = malloc(n), *m = malloc(n);
  int rc;
  if (!v || !m) rc = gm_fail("out of memory");
  else {
    snprintf(v, n, "%s/vocab.json", dir);
    snprintf(m, n, "%s/merges.txt", dir);
    rc = gm_tok_load_files(v, m, out);
  }
  free(v);
  free(m);
  return rc;
}

void gm_tok_free(gm_tokenizer *tok) {
  if (!tok) return;
  if (tok->tok_bytes)
    for (int32_t i = 0; i < tok->n_vocab; i++) free(tok->tok_bytes[i]);
  free(tok->tok_bytes);
  free(tok->tok_len);
  free(tok->by_bytes.slot);
  free(tok->merges.key);
  free(tok->merges.rank);
  free(tok->merges.merged);
  if (tok->md) pcre2_match_data_free(tok->md);
  if (tok->re) pcre2_code_free(tok->re);
  gm_tok_cache_free(&tok->cache);
  free(tok);
}

int32_t gm_tok_vocab_size(const gm_tokenizer *tok) { return tok->n_vocab; }
int32_t gm_tok_eot_id(const gm_tokenizer *tok) { return tok->eot_id; }

const char *gm_tok_token_bytes(const gm_tokenizer *tok, int32_t id, size_t *len) {
  if (id < 0 || id >= tok->n_vocab || !tok->tok_bytes[id]) return NULL;
  *len = tok->tok_len[id];
  return tok->tok_bytes[id];
}
