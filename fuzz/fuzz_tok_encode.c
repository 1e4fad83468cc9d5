// libFuzzer harness: gm_tok_encode of arbitrary bytes with the fixture tokenizer
// (tests/fixtures/tok, or the folder GPTMEG_FUZZ_TOK names). Checks the documented round trip:
// decode(encode(s)) == s for every byte string s (with '<|endoftext|>' only when the vocab has it),
// and every id inside the vocab.
#include "fuzz_common.h"

#include "gptmeg/core.h"
#include "gptmeg/tok.h"

static gm_tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  const char *dir = getenv("GPTMEG_FUZZ_TOK");
  if (!dir) dir = GPTMEG_SOURCE_DIR "/tests/fixtures/tok";
  if (gm_tok_load(dir, &tok) != 0) {
    fprintf(stderr, "fuzz_tok_encode: %s\n", gm_errmsg());
    abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int32_t *ids = NULL;
  size_t n = 0;
  if (gm_tok_encode(tok, (const char *)data, size, &ids, &n) != 0) {
    fprintf(stderr, "fuzz_tok_encode: encode failed: %s\n", gm_errmsg());
    abort(); // encoding never fails on any bytes (short of memory)
  }
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= gm_tok_vocab_size(tok)) abort();
  char *back = NULL;
  size_t blen = 0;
  if (gm_tok_decode(tok, ids, n, &back, &blen) != 0) {
    fprintf(stderr, "fuzz_tok_encode: decode failed: %s\n", gm_errmsg());
    abort();
  }
  if (blen != size || (size && memcmp(back, data, size) != 0)) {
    fprintf(stderr, "fuzz_tok_encode: decode(encode(s)) != s (%zu bytes in, %zu out)\n", size, blen);
    abort();
  }
  free(back);
  free(ids);
  return 0;
}
