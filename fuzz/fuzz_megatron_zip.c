// libFuzzer harness: gm_megatron_open on an NGC-style Megatron zip (src/io/megatron_zip.c): the
// input is written to DIR/m.zip (the reader takes a path named *.zip), DIR made once under fz_tmpdir()
// (TMPDIR, /dev/shm or /tmp) and removed at exit. The zip directory, the stored/deflated entry (zlib, size, CRC,
// ratio) and the torch file inside are all reached.
#include "fuzz_common.h"

#include "fuzz_ckpt.h"

static char dir[256], zp[512];

static void cleanup(void) {
  unlink(zp);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  snprintf(dir, sizeof dir, "%s/gptmeg-fuzz-megatron-zip-XXXXXX", fz_tmpdir());
  if (!mkdtemp(dir)) { perror("mkdtemp"); abort(); }
  snprintf(zp, sizeof zp, "%s/m.zip", dir);
  atexit(cleanup);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_write_path(zp, data, size);
  gm_ckpt c;
  gm_gpt2_config cfg;
  gm_megatron_info info;
  memset(&c, 0, sizeof c);
  memset(&info, 0, sizeof info);
  if (fz_report("gm_megatron_open", gm_megatron_open(&c, &cfg, &info, zp, size & 1)) == 0) {
    fz_use_ckpt(&c);
    gm_ckpt_close(&c);
  }
  return 0;
}
