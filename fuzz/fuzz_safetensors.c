// libFuzzer harness: gm_st_open on arbitrary bytes. What opens is used: every tensor found by
// name and widened to f32 (reads every byte the header claims), then closed.
#include "fuzz_common.h"

#include "gptmeg/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_file f;
  fz_file_open(&f, "model.safetensors", data, size);
  gm_safetensors st;
  memset(&st, 0, sizeof st);
  if (fz_report("gm_st_open", gm_st_open(&st, f.path)) == 0) {
    for (int i = 0; i < st.n_tensors; i++) {
      const gm_st_tensor *t = &st.tensors[i];
      if (gm_st_find(&st, t->name) != t) abort(); // names are unique: find returns this one
      if (t->numel > ((uint64_t)1 << 24)) continue;
      float *out = malloc((t->numel ? t->numel : 1) * sizeof *out);
      if (!out) abort();
      gm_st_read_f32(t, out);
      free(out);
    }
    gm_st_close(&st);
  }
  fz_file_close(&f);
  return 0;
}
