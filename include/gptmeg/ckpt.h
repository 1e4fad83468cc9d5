// gptmeg io: checkpoints in every layout a HF model directory uses, read without Python.
//   model.safetensors, model.safetensors.index.json (shards), pytorch_model.bin,
//   pytorch_model.bin.index.json (shards): that precedence, as transformers' from_pretrained.
// A .bin is either torch.save's zip container (PyTorch >= 1.6) or the legacy (pre-1.6) stream;
// both hold a pickle read by an inert VM over exactly the opcodes and globals that PyTorch's
// weights_only=True unpickler accepts: nothing is ever called, a tensor is only a description
// (storage, dtype, offset, size, stride). See docs/formats.md.
#ifndef GPTMEG_CKPT_H
#define GPTMEG_CKPT_H

#include "gptmeg/config.h"
#include "gptmeg/core.h"
#include "gptmeg/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

// Pickle limits (each refusal names the byte offset).
enum { GM_PKL_MAX_DEPTH = 64, GM_PKL_MAX_MARKS = 64, GM_CKPT_MAX_SHARDS = 4096 };

typedef struct {
  char *name;
  gm_dtype dtype;                 // GM_F32, GM_F16 or GM_BF16 when readable
  bool readable;                  // false: a dtype gptmeg does not read (torch_dtype names it)
  const char *torch_dtype;        // "torch.float32", ... (static string)
  int ndim;
  int64_t shape[GM_ST_MAX_DIMS];
  uint64_t numel;
  const void *data;               // numel contiguous little-endian elements (in a mapping, or owned)
  void *owned;                    // non-NULL when a strided view was copied out contiguously
  const char *file;               // the file it came from (owned by the gm_ckpt)
} gm_ckpt_tensor;

typedef struct {
  char *path;                     // the file or directory opened
  char format[96];                // "safetensors", "pytorch zip", "pytorch legacy", "... (N shards)"
  int n_tensors;
  gm_ckpt_tensor *tensors;
  int n_files;                    // mapped files (internal)
  char **files;
  void **maps;
  size_t *map_lens;
  uint64_t file_bytes;            // the checkpoint files' total size when they are not among the maps
                                  // (Megatron: the rank files, or the .zip); 0: the sum of map_lens
} gm_ckpt;

// One PyTorch .bin file (zip or legacy, told apart by the first bytes).
int gm_torch_open(gm_ckpt *c, const char *path);
// One safetensors file, as a gm_ckpt.
int gm_ckpt_open_safetensors(gm_ckpt *c, const char *path);
// A model directory: the first of model.safetensors, model.safetensors.index.json,
// pytorch_model.bin, pytorch_model.bin.index.json that exists; every shard is opened, every
// weight_map entry must name a tensor of its shard, and no tensor may appear in two shards.
int gm_ckpt_open_dir(gm_ckpt *c, const char *dir);
void gm_ckpt_close(gm_ckpt *c);
const gm_ckpt_tensor *gm_ckpt_find(const gm_ckpt *c, const char *name);
// Copies a readable tensor widened to f32 into out (numel floats); works for unaligned data.
void gm_ckpt_read_f32(const gm_ckpt_tensor *t, float *out);

// ---- Megatron-LM checkpoints (docs/formats.md) ----
typedef struct {
  int tp, pp;                     // tensor- and pipeline-parallel sizes (mp_rank_TT[_PPP] folders)
  double checkpoint_version;      // 0 when absent
  long long iteration;            // from the tracker file or the checkpoint (0 for release)
  bool release, has_args;
  char stack[16];                 // "transformer" or "encoder"
  bool deepspeed;                 // a Megatron-DeepSpeed checkpoint (global_stepN/, layer files or 'module')
  bool ds_layer_files;            // deepspeed: the weights came from layer_NN-model_TT-model_states.pt
  long long global_step;          // deepspeed: N of the global_stepN folder (-1: another tag)
} gm_megatron_info;
// True when dir looks like a Megatron-LM checkpoint (latest_checkpointed_iteration.txt, or an
// iteration folder holding mp_rank_00 / mp_rank_00_000), a Megatron-DeepSpeed one (DIR/latest, or
// a global_stepN folder holding mp_rank_00_model_states.pt), or a *.zip file (NGC's
// megatron_lm_345m_v0.0.zip: release/mp_rank_00/model_optim_rng.pt inside, stored or deflated).
bool gm_megatron_detect(const char *dir);
// Opens every rank's model_optim_rng.pt (or model_rng.pt) of the tracked iteration, or a
// Megatron-DeepSpeed folder's mp_rank_XX_model_states.pt and layer files, and returns the merged
// model under HF GPT-2 names (tied: no lm_head), bit for bit as transformers'
// convert_megatron_gpt2_checkpoint.py orders it; cfg from args (else the shapes). trim_vocab:
// keep the first 50257 rows of the padded vocabulary. c->format says which layout was read.
int gm_megatron_open(gm_ckpt *c, gm_gpt2_config *cfg, gm_megatron_info *info, const char *dir, bool trim_vocab);

#ifdef __cplusplus
}
#endif
#endif
