// config.json loading: regressions found by the libFuzzer harness fuzz/fuzz_config.c.
#include "gptmeg/config.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[256];

static int load_text(const char *text, gm_gpt2_config *c) {
  FILE *f = fopen(path, "wb");
  if (!f) { CHECK(0, "cannot write %s", path); return -2; }
  fputs(text, f);
  fclose(f);
  return gm_config_load(path, c);
}

// An integer key holding a number outside int's range is refused naming the key (it was converted
// to int first: undefined behaviour, UBSan's float-cast-overflow; fuzz_config found it).
static void out_of_range_ints(void) {
  static const char *bad[] = {"4077777777777777777777777777770", "2147483648", "-2147483649", "1e308", "-1e308"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[256];
    snprintf(text, sizeof text, "{\"vocab_size\": %s}", bad[i]);
    gm_gpt2_config c;
    CHECK(load_text(text, &c) != 0, "vocab_size %s loaded", bad[i]);
    CHECK(strstr(gm_errmsg(), "vocab_size") != NULL, "message does not name the key: %s", gm_errmsg());
  }
  gm_gpt2_config c;
  CHECK(load_text("{\"vocab_size\": 2147483647, \"n_layer\": -2147483648}", &c) != 0, "n_layer INT_MIN validated");
  CHECK(load_text("{\"vocab_size\": 2147483647}", &c) == 0 && c.vocab_size == 2147483647, "INT_MAX refused: %s", gm_errmsg());
}

// n_inner null resolves to 4 * n_embd; an n_embd whose 4x overflows int is refused (was signed
// overflow).
static void n_inner_overflow(void) {
  gm_gpt2_config c;
  CHECK(load_text("{\"n_embd\": 1073741824, \"n_head\": 1, \"n_inner\": null}", &c) != 0, "4 * n_embd overflowed");
  CHECK(load_text("{\"n_embd\": 64, \"n_head\": 4, \"n_inner\": null}", &c) == 0 && c.n_inner == 256,
        "n_inner null: %s", gm_errmsg());
}

int main(void) {
  snprintf(path, sizeof path, "/tmp/gptmeg_test_config.%ld.json", (long)getpid());
  out_of_range_ints();
  n_inner_overflow();
  unlink(path);
  return test_done("test_config");
}
