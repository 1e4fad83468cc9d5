// libFuzzer harness: gm_torch_open (torch.save's zip container or the legacy stream, told apart by
// the first bytes) on arbitrary bytes. Every readable tensor of what opens is found by name and
// widened to f32, then the checkpoint is closed.
#include "fuzz_common.h"

#include "fuzz_ckpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_file f;
  fz_file_open(&f, "pytorch_model.bin", data, size);
  gm_ckpt c;
  memset(&c, 0, sizeof c);
  if (fz_report("gm_torch_open", gm_torch_open(&c, f.path)) == 0) {
    fz_use_ckpt(&c);
    gm_ckpt_close(&c);
  }
  fz_file_close(&f);
  return 0;
}
