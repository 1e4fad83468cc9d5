// libFuzzer harness: gm_tok_load_files on arbitrary bytes split at the first NUL byte: before it
// vocab.json, after it merges.txt (no NUL: all vocab.json, empty merges.txt). What loads encodes
// and decodes a short text, then is freed.
#include "fuzz_common.h"

#include "gptmeg/tok.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *sep = memchr(data, 0, size);
  size_t vlen = sep ? (size_t)(sep - data) : size;
  fz_file v, m;
  fz_file_open(&v, "vocab.json", data, vlen);
  fz_file_open(&m, "merges.txt", sep ? sep + 1 : data, sep ? size - vlen - 1 : 0);
  gm_tokenizer *tok = NULL;
  if (fz_report("gm_tok_load_files", gm_tok_load_files(v.path, m.path, &tok)) == 0) {
    static const char text[] = "Hello, world! <|endoftext|> it's 2024\n\xff\xfe";
    int32_t *ids = NULL;
    size_t n = 0;
    if (gm_tok_encode(tok, text, sizeof text - 1, &ids, &n) == 0) {
      char *back = NULL;
      size_t blen = 0;
      if (gm_tok_decode(tok, ids, n, &back, &blen) == 0) free(back);
      free(ids);
    }
    (void)gm_tok_vocab_size(tok);
    int32_t eot = gm_tok_eot_id(tok);
    size_t len;
    if (eot >= 0 && !gm_tok_token_bytes(tok, eot, &len)) abort(); // the eot id is in the vocab
    gm_tok_free(tok);
  }
  fz_file_close(&v);
  fz_file_close(&m);
  return 0;
}
