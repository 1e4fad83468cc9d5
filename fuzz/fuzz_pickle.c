// libFuzzer harness: the inert pickle VM (gm_pk_run, src/io/torch_internal.h) on raw pickle bytes.
// Up to five pickles run back to back, as the legacy .bin stream holds them (magic, protocol,
// sys_info, the state dict with 6-tuple persistent ids, the storage keys); a zip's data.pkl is the
// first. The VM runs with the Megatron flag (argparse.Namespace, skipped NumPy state) on odd sizes.
#include "fuzz_common.h"

#include "io/torch_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gm_pkvm vm;
  memset(&vm, 0, sizeof vm);
  vm.megatron = size & 1;
  size_t pos = 0;
  for (int i = 0; i < 5 && pos < size; i++) {
    size_t end = 0;
    gm_pk *v = NULL;
    if (fz_report("gm_pk_run", gm_pk_run(&vm, "fuzz.pkl", data, size, pos, 0, i == 3, &end, &v)) != 0) break;
    if (!v || end <= pos || end > size) abort(); // a pickle ends after its STOP, inside the buffer
    pos = end;
  }
  gm_pkvm_free(&vm);
  return 0;
}
