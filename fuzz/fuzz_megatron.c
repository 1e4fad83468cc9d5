// libFuzzer harness: gm_megatron_open on a one-rank Megatron-LM directory whose
// mp_rank_00/model_optim_rng.pt is the input: DIR/latest_checkpointed_iteration.txt says 10 and
// DIR/iter_0000010/mp_rank_00/model_optim_rng.pt is rewritten each run. DIR is made once under
// fz_tmpdir() (TMPDIR, /dev/shm or /tmp) and removed at exit.
#include "fuzz_common.h"

#include "fuzz_ckpt.h"

static char dir[256], pt[512];
static char track[512], iter[512], rank[512];

static void cleanup(void) {
  unlink(pt);
  rmdir(rank);
  rmdir(iter);
  unlink(track);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  snprintf(dir, sizeof dir, "%s/gptmeg-fuzz-megatron-XXXXXX", fz_tmpdir());
  if (!mkdtemp(dir)) { perror("mkdtemp"); abort(); }
  snprintf(track, sizeof track, "%s/latest_checkpointed_iteration.txt", dir);
  snprintf(iter, sizeof iter, "%s/iter_0000010", dir);
  snprintf(rank, sizeof rank, "%s/mp_rank_00", iter);
  snprintf(pt, sizeof pt, "%s/model_optim_rng.pt", rank);
  fz_write_path(track, (const uint8_t *)"10\n", 3);
  if (mkdir(iter, 0700) != 0 || mkdir(rank, 0700) != 0) { perror("mkdir"); abort(); }
  atexit(cleanup);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_write_path(pt, data, size);
  gm_ckpt c;
  gm_gpt2_config cfg;
  gm_megatron_info info;
  memset(&c, 0, sizeof c);
  memset(&info, 0, sizeof info);
  if (fz_report("gm_megatron_open", gm_megatron_open(&c, &cfg, &info, dir, size & 1)) == 0) {
    fz_use_ckpt(&c);
    gm_ckpt_close(&c);
  }
  return 0;
}
