// core/inputs: the golden streams and hash are what tools/ref/gm_inputs.py computes; the fixture
// tests/golden/inputs.json was written by that script (tools/ref/gen_inputs_fixture.py).
#include "gptmeg/inputs.h"
#include "harness.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  char *txt = test_slurp("tests/golden/inputs.json");
  CHECK(txt != NULL, "tests/golden/inputs.json missing");
  if (!txt) return test_done("test_inputs");
  cJSON *j = cJSON_Parse(txt);
  CHECK(j != NULL, "inputs.json does not parse");
  cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "f32_streams")) {
    uint64_t seed = (uint64_t)cJSON_GetObjectItem(c, "seed")->valuedouble;
    size_t n = (size_t)cJSON_GetObjectItem(c, "n")->valuedouble;
    const char *want = cJSON_GetObjectItem(c, "hash")->valuestring;
    float *x = malloc(n * sizeof *x);
    gm_golden_f32_inputs(seed, n, x);
    char got[32];
    snprintf(got, sizeof got, "%016llx", (unsigned long long)gm_hash64(x, n * sizeof *x));
    CHECK(strcmp(got, want) == 0, "f32 stream seed %llu n %zu: hash %s, python %s",
          (unsigned long long)seed, n, got, want);
    free(x);
  }
  uint16_t all[65536];
  gm_all_u16(all);
  char got[32];
  snprintf(got, sizeof got, "%016llx", (unsigned long long)gm_hash64(all, sizeof all));
  CHECK(strcmp(got, cJSON_GetObjectItem(j, "all_u16_hash")->valuestring) == 0, "all_u16 hash %s", got);
  snprintf(got, sizeof got, "%016llx", (unsigned long long)gm_hash64("abc", 3));
  CHECK(strcmp(got, cJSON_GetObjectItem(j, "abc_hash")->valuestring) == 0, "hash of 'abc' %s", got);
  cJSON_Delete(j);
  free(txt);
  return test_done("test_inputs");
}
