// libFuzzer harness: gm_npy_read on arbitrary bytes, '<u2' read as bf16 and then as f16; every
// element of what loads is touched (ASan sees a short buffer), then freed.
#include "fuzz_common.h"

#include "gptmeg/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_file f;
  fz_file_open(&f, "a.npy", data, size);
  for (int pass = 0; pass < 2; pass++) {
    gm_npy a;
    if (fz_report("gm_npy_read", gm_npy_read(f.path, pass ? GM_F16 : GM_BF16, &a)) != 0) break; // the dtype does not decide failure
    size_t nbytes = a.count * gm_dtype_size(a.dtype);
    unsigned char sum = 0;
    for (size_t i = 0; i < nbytes; i++) sum ^= ((const unsigned char *)a.data)[i];
    __asm__ volatile("" : : "r"(sum));
    gm_npy_free(&a);
  }
  fz_file_close(&f);
  return 0;
}
