// Private layout of gm_tokenizer, shared by tok_load.c (files -> tables) and tok_encode.c.
#ifndef GPTMEG_TOK_INTERNAL_H
#define GPTMEG_TOK_INTERNAL_H

#include "gptmeg/tok.h"

#include <pcre2.h>
#include <stdbool.h>

// Open-addressing table from byte strings to an int32 value (token id, or a cache slot).
typedef struct {
  uint32_t *slot;   // cap entries: index+1 into the owner's key list, 0 = empty
  uint32_t cap;     // power of two
} gm_tok_strmap;

// One merge rule: (left, right) -> merged, applied in rank order (lower first).
typedef struct {
  uint64_t *key;    // cap keys (left << 32 | right), UINT64_MAX = empty
  uint32_t *rank;
  int32_t *merged;
  uint32_t cap;
} gm_tok_pairmap;

// Cache of encoded pre-tokens (bytes -> ids), kept in fixed arenas and emptied when one is full.
typedef struct { uint32_t bytes_off, bytes_len, ids_off, n_ids; } gm_tok_cache_entry;
typedef struct {
  char *bytes;    uint32_t bytes_len;  // arena of keys
  int32_t *ids;   uint32_t ids_len;    // arena of values
  gm_tok_cache_entry *entry;
  uint32_t n_entries;
  uint32_t *slot;                      // GM_TOK_CACHE_SLOTS entries: entry index + 1, 0 = empty
} gm_tok_cache;

struct gm_tokenizer {
  int32_t n_vocab;          // max id + 1
  char **tok_bytes;         // per id: raw bytes (NULL where the id is a hole)
  uint32_t *tok_len;
  gm_tok_strmap by_bytes;   // raw bytes -> id
  int32_t byte_id[256];     // the single-byte tokens
  int32_t eot_id;
  gm_tok_pairmap merges;
  uint32_t n_merges;
  pcre2_code *re;
  pcre2_match_data *md;
  bool jit;
  gm_tok_cache cache;
};

uint64_t gm_tok_hash_bytes(const char *s, size_t n);
uint32_t gm_tok_pair_hash(uint64_t key);
// Looks raw bytes up in the vocab; -1 if absent.
int32_t gm_tok_find(const gm_tokenizer *tok, const char *s, size_t n);
// Compiles the pre-tokenizer regex into tok->re / tok->md. 0 or gm_fail.
int gm_tok_compile_regex(gm_tokenizer *tok);
void gm_tok_cache_free(gm_tok_cache *c);

#endif
