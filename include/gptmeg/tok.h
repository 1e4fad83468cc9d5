// GPT-2 byte-level BPE tokenizer: vocab.json + merges.txt, the GPT-2 pre-tokenizer regex (PCRE2,
// Unicode properties), merges applied by rank, '<|endoftext|>' in text read as the special token.
// Token ids match HF transformers' GPT2Tokenizer / GPT2TokenizerFast on valid UTF-8 (see
// tests/golden/tok/README.md for the few code points where those two disagree with each other).
// Bytes that are not valid UTF-8 are never dropped: each maximal run of them is its own pre-token,
// encoded through the byte tokens, so decode(encode(s)) == s for every byte string s.
#ifndef GPTMEG_TOK_H
#define GPTMEG_TOK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gm_tokenizer gm_tokenizer;

// Loads DIR/vocab.json and DIR/merges.txt. Returns 0 and sets *out, or sets gm_fail and returns
// non-zero (unparsable json with its line/column, duplicate ids or tokens, malformed merges line,
// merge naming a token missing from the vocab -- each message names the file and where).
int gm_tok_load(const char *dir, gm_tokenizer **out);
int gm_tok_load_files(const char *vocab_path, const char *merges_path, gm_tokenizer **out);
void gm_tok_free(gm_tokenizer *tok);

// One more than the largest id in vocab.json (50257 for GPT-2).
int32_t gm_tok_vocab_size(const gm_tokenizer *tok);
// Id of '<|endoftext|>', or -1 when the vocab has no such token.
int32_t gm_tok_eot_id(const gm_tokenizer *tok);
// Raw bytes of token `id` (not NUL-terminated) and their count; NULL if id is not in the vocab.
const char *gm_tok_token_bytes(const gm_tokenizer *tok, int32_t id, size_t *len);

// Encodes len bytes of text into a malloc'd array *ids of *n ids (caller frees). Occurrences of
// '<|endoftext|>' become the special id; the text between them is encoded on its own, like HF.
// Not thread-safe: the tokenizer keeps a cache of encoded pre-tokens.
int gm_tok_encode(gm_tokenizer *tok, const char *text, size_t len, int32_t **ids, size_t *n);
// Decodes n ids into a malloc'd byte buffer *bytes of *len bytes (NUL-terminated for convenience,
// the NUL not counted). An id outside the vocab fails naming the id and its position.
int gm_tok_decode(const gm_tokenizer *tok, const int32_t *ids, size_t n, char **bytes, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
