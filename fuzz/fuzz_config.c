// libFuzzer harness: gm_config_load on arbitrary bytes as config.json; what loads is validated,
// written back as JSON and freed.
#include "fuzz_common.h"

#include "gptmeg/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_file f;
  fz_file_open(&f, "config.json", data, size);
  gm_gpt2_config c;
  if (fz_report("gm_config_load", gm_config_load(f.path, &c)) == 0) {
    (void)gm_config_validate(&c, f.path);
    char *js = gm_config_to_json(&c);
    free(js);
  }
  fz_file_close(&f);
  return 0;
}
