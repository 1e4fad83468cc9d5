// GPT-2 encoding: '<|endoftext|>' split, the GPT-2 pre-tokenizer regex (PCRE2, UTF + Unicode
// properties, invalid UTF-8 tolerated), byte-level BPE by merge rank with a cache; and decoding.
#include "tok/tok_internal.h"

#include "gptmeg/core.h"

#include <stdlib.h>
#include <string.h>

// The pattern of OpenAI's encoder.py / HF GPT2Tokenizer, case-sensitive contractions included.
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

enum {
  CACHE_MAX_PIECE = 64,            // longer pre-tokens are not cached
  CACHE_ENTRIES = 1 << 16,
  CACHE_SLOTS = 1 << 17,           // twice the entries: load factor <= 1/2
  CACHE_BYTES = CACHE_ENTRIES * 16,
  CACHE_IDS = CACHE_ENTRIES * 8,
};

int gm_tok_compile_regex(gm_tokenizer *tok) {
  int err;
  PCRE2_SIZE at;
  tok->re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &at, NULL);
  if (!tok->re) {
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(err, msg, sizeof msg);
    return gm_fail("PCRE2 cannot compile the GPT-2 pattern at offset %zu: %s", (size_t)at, (char *)msg);
  }
  tok->jit = pcre2_jit_compile(tok->re, PCRE2_JIT_COMPLETE) == 0;
  tok->md = pcre2_match_data_create_from_pattern(tok->re, NULL);
  if (!tok->md) return gm_fail("out of memory");
  return 0;
}

void gm_tok_cache_free(gm_tok_cache *c) {
  free(c->bytes);
  free(c->ids);
  free(c->entry);
  free(c->slot);
  memset(c, 0, sizeof *c);
}

static void cache_clear(gm_tok_cache *c) {
  c->bytes_len = c->ids_len = c->n_entries = 0;
  memset(c->slot, 0, CACHE_SLOTS * sizeof(uint32_t));
}

// Growable output id vector.
typedef struct { int32_t *v; size_t n, cap; } id_vec;

static int push_ids(id_vec *o, const int32_t *ids, size_t n) {
  if (o->n + n > o->cap) {
    size_t cap = o->cap ? o->cap : 1024;
    while (cap < o->n + n) cap *= 2;
    int32_t *nv = realloc(o->v, cap * sizeof(int32_t));
    if (!nv) return gm_fail("out of memory encoding %zu tokens", o->n + n);
    o->v = nv;
    o->cap = cap;
  }
  if (n) memcpy(o->v + o->n, ids, n * sizeof(int32_t));
  o->n += n;
  return 0;
}

static bool pair_lookup(const gm_tok_pairmap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *merged) {
  uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
  uint32_t mask = m->cap - 1;
  for (uint32_t h = gm_tok_pair_hash(key) & mask;; h = (h + 1) & mask) {
    if (m->key[h] == UINT64_MAX) return false;
    if (m->key[h] == key) { *rank = m->rank[h]; *merged = m->merged[h]; return true; }
  }
}

// Byte-level BPE of one pre-token, in place on sym[0..n): repeatedly the adjacent pair of lowest
// merge rank is merged, every occurrence of it left to right (what GPT2Tokenizer.bpe does).
// Returns the new length.
static size_t bpe(const gm_tokenizer *tok, int32_t *sym, size_t n) {
  while (n > 1) {
    uint32_t best = UINT32_MAX, r;
    int32_t best_l = -1, best_r = -1, best_m = -1, m;
    for (size_t i = 0; i + 1 < n; i++)
      if (pair_lookup(&tok->merges, sym[i], sym[i + 1], &r, &m) && r < best) {
        best = r; best_l = sym[i]; best_r = sym[i + 1]; best_m = m;
      }
    if (best == UINT32_MAX) break;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
      if (i + 1 < n && sym[i] == best_l && sym[i + 1] == best_r) { sym[o++] = best_m; i++; }
      else sym[o++] = sym[i];
    }
    n = o;
  }
  return n;
}

// Encodes one pre-token (raw bytes) and appends its ids; scratch holds at least len ids.
static int encode_piece(gm_tokenizer *tok, const char *s, size_t len, int32_t *scratch, id_vec *out) {
  gm_tok_cache *c = &tok->cache;
  uint32_t slot = 0;
  bool cacheable = len <= CACHE_MAX_PIECE && c->slot;
  if (cacheable) {
    for (slot = (uint32_t)gm_tok_hash_bytes(s, len) & (CACHE_SLOTS - 1);; slot = (slot + 1) & (CACHE_SLOTS - 1)) {
      uint32_t v = c->slot[slot];
      if (!v) break;
      const gm_tok_cache_entry *e = &c->entry[v - 1];
      if (e->bytes_len == len && memcmp(c->bytes + e->bytes_off, s, len) == 0) return push_ids(out, c->ids + e->ids_off, e->n_ids);
    }
  }
  for (size_t i = 0; i < len; i++) scratch[i] = tok->byte_id[(unsigned char)s[i]];
  size_t n = bpe(tok, scratch, len);
  if (cacheable) {
    if (c->n_entries == CACHE_ENTRIES || c->bytes_len + len > CACHE_BYTES || c->ids_len + n > CACHE_IDS) {
      cache_clear(c);
      for (slot = (uint32_t)gm_tok_hash_bytes(s, len) & (CACHE_SLOTS - 1); c->slot[slot]; slot = (slot + 1) & (CACHE_SLOTS - 1)) {}
    }
    gm_tok_cache_entry *e = &c->entry[c->n_entries];
    *e = (gm_tok_cache_entry){c->bytes_len, (uint32_t)len, c->ids_len, (uint32_t)n};
    memcpy(c->bytes + c->bytes_len, s, len);
    memcpy(c->ids + c->ids_len, scratch, n * sizeof(int32_t));
    c->bytes_len += (uint32_t)len;
    c->ids_len += (uint32_t)n;
    c->slot[slot] = ++c->n_entries;
  }
  return push_ids(out, scratch, n);
}

// Pre-tokenizes and encodes a span with no special tokens. Bytes the regex cannot match are
// exactly the invalid UTF-8 sequences (PCRE2_MATCH_INVALID_UTF never matches them); each
// maximal run of them between two matches is encoded as one pre-token of its own.
static int encode_ordinary(gm_tokenizer *tok, const char *s, size_t len, int32_t *scratch, id_vec *out) {
  size_t pos = 0;
  while (pos < len) {
    int rc = tok->jit ? pcre2_jit_match(tok->re, (PCRE2_SPTR)s, len, pos, 0, tok->md, NULL)
                      : pcre2_match(tok->re, (PCRE2_SPTR)s, len, pos, 0, tok->md, NULL);
    size_t start = len, end = len;
    if (rc >= 0) {
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer(tok->md);
      start = ov[0];
      end = ov[1];
      if (end <= start) return gm_fail("tokenizer: empty pre-token match at byte %zu", start);
    } else if (rc != PCRE2_ERROR_NOMATCH) {
      PCRE2_UCHAR msg[160];
      pcre2_get_error_message(rc, msg, sizeof msg);
      return gm_fail("tokenizer: PCRE2 match failed at byte %zu: %s", pos, (char *)msg);
    }
    if (start > pos && encode_piece(tok, s + pos, start - pos, scratch, out)) return 1;
    if (end > start && encode_piece(tok, s + start, end - start, scratch, out)) return 1;
    pos = end;
  }
  return 0;
}

static const char *find_eot(const char *s, size_t len) {
  const char *p = s, *e = s + len;
  while ((size_t)(e - p) >= 13) {
    const char *q = memchr(p, '<', (size_t)(e - p) - 12);
    if (!q) return NULL;
    if (memcmp(q, "<|endoftext|>", 13) == 0) return q;
    p = q + 1;
  }
  return NULL;
}

int gm_tok_encode(gm_tokenizer *tok, const char *text, size_t len, int32_t **ids, size_t *n) {
  *ids = NULL;
  *n = 0;
  gm_tok_cache *c = &tok->cache;
  if (!c->slot) {
    c->bytes = malloc(CACHE_BYTES);
    c->ids = malloc(CACHE_IDS * sizeof(int32_t));
    c->entry = malloc(CACHE_ENTRIES * sizeof(gm_tok_cache_entry));
    c->slot = calloc(CACHE_SLOTS, sizeof(uint32_t));
    if (!c->bytes || !c->ids || !c->entry || !c->slot) { gm_tok_cache_free(c); return gm_fail("out of memory"); }
  }
  // scratch for the longest possible pre-token (the whole text)
  int32_t *scratch = malloc((len ? len : 1) * sizeof(int32_t));
  if (!scratch) return gm_fail("out of memory encoding %zu bytes", len);
  id_vec out = {0};
  int rc = push_ids(&out, NULL, 0);
  const char *p = text, *end = text + len;
  while (!rc && p < end) {
    const char *q = tok->eot_id >= 0 ? find_eot(p, (size_t)(end - p)) : NULL;
    const char *stop = q ? q : end;
    rc = encode_ordinary(tok, p, (size_t)(stop - p), scratch, &out);
    if (!rc && q) rc = push_ids(&out, &tok->eot_id, 1);
    p = q ? q + 13 : end;
  }
  free(scratch);
  if (rc) { free(out.v); return rc; }
  *ids = out.v;
  *n = out.n;
  return 0;
}

int gm_tok_decode(const gm_tokenizer *tok, const int32_t *ids, size_t n, char **bytes, size_t *len) {
  *bytes = NULL;
  *len = 0;
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= tok->n_vocab || !tok->tok_bytes[ids[i]])
      return gm_fail("token id %d at position %zu is not in the vocab (ids are 0..%d)", ids[i], i, tok->n_vocab - 1);
    total += tok->tok_len[ids[i]];
  }
  char *b = malloc(total + 1);
  if (!b) return gm_fail("out of memory decoding %zu tokens", n);
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    memcpy(b + o, tok->tok_bytes[ids[i]], tok->tok_len[ids[i]]);
    o += tok->tok_len[ids[i]];
  }
  b[o] = 0;
  *bytes = b;
  *len = o;
  return 0;
}
