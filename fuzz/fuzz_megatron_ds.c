// libFuzzer harness: gm_megatron_open on a Megatron-DeepSpeed directory made from the input. The
// input is the directory's files joined by "\n--gptmeg-ds--\n": DIR/latest's text, then
// DIR/global_step10/mp_rank_00_model_states.pt, then the layer files layer_01-model_00-...,
// layer_02-model_00-..., ... (at most 16). A part after the second may be empty: that layer file
// is then left out (a missing layer). The seed (fuzz/corpus/megatron_ds/tiny.ds) comes from
// tools/ref/gen_megatron_goldens.py: hidden 8, 2 heads, 2 layers, vocab 16, TP 1, PP 1. DIR is made
// once under fz_tmpdir() (TMPDIR, /dev/shm or /tmp) and removed at exit.
#include "fuzz_common.h"

#include "fuzz_ckpt.h"

enum { MAX_LAYER_FILES = 16 };

static char dir[256], latest[320], step[320], mp[400];
static char layer[MAX_LAYER_FILES][400];

static void cleanup(void) {
  unlink(mp);
  for (int i = 0; i < MAX_LAYER_FILES; i++) unlink(layer[i]);
  rmdir(step);
  unlink(latest);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  snprintf(dir, sizeof dir, "%s/gptmeg-fuzz-megatron-ds-XXXXXX", fz_tmpdir());
  if (!mkdtemp(dir)) { perror("mkdtemp"); abort(); }
  snprintf(latest, sizeof latest, "%s/latest", dir);
  snprintf(step, sizeof step, "%s/global_step10", dir);
  snprintf(mp, sizeof mp, "%s/mp_rank_00_model_states.pt", step);
  for (int i = 0; i < MAX_LAYER_FILES; i++) snprintf(layer[i], sizeof layer[i], "%s/layer_%02d-model_00-model_states.pt", step, i + 1);
  if (mkdir(step, 0700) != 0) { perror("mkdir"); abort(); }
  atexit(cleanup);
  return 0;
}

static const char sep[] = "\n--gptmeg-ds--\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const size_t sl = sizeof sep - 1;
  size_t at = 0;
  int part = 0;
  for (int i = 0; i < MAX_LAYER_FILES; i++) unlink(layer[i]);
  unlink(mp);
  while (part < 2 + MAX_LAYER_FILES) {
    size_t end = at; // the next separator (memchr to each '\n' first: a memcmp at every byte was a tenth of the run)
    for (;;) {
      const uint8_t *nl = end < size ? memchr(data + end, '\n', size - end) : NULL;
      if (!nl || (size_t)(nl - data) + sl > size) { end = size; break; }
      end = (size_t)(nl - data);
      if (memcmp(data + end, sep, sl) == 0) break;
      end++;
    }
    const uint8_t *p = data + at;
    size_t n = end - at;
    if (part == 0) fz_write_path(latest, p, n);
    else if (part == 1) fz_write_path(mp, p, n);
    else if (n) fz_write_path(layer[part - 2], p, n);
    part++;
    if (end >= size) break;
    at = end + sl;
  }
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
