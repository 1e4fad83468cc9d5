// Private to src/io: the zip container and the inert pickle VM behind gm_torch_open.
#ifndef GPTMEG_IO_TORCH_INTERNAL_H
#define GPTMEG_IO_TORCH_INTERNAL_H

#include "gptmeg/ckpt.h"

#include <stddef.h>
#include <stdint.h>

// ---- zip (stored entries only) ----
typedef struct {
  const char *name;              // into the mapping, not NUL-terminated
  size_t name_len;
  const unsigned char *data;     // into the mapping (stored: no copy; deflated: the csize compressed bytes)
  uint64_t size;                 // uncompressed size (as the central directory declares it)
  uint64_t csize;                // bytes at data (== size when stored)
  unsigned method;               // 0 stored, 8 deflated (gm_zip_read_entries with deflate_ok only)
  uint32_t crc;                  // CRC-32 the central directory declares
} gm_zip_entry;

typedef struct {
  int n;
  gm_zip_entry *e;
  const char *prefix;            // "<archive>/" of the entry ending in "/data.pkl" (into the mapping)
  size_t prefix_len;
} gm_zip;

// Reads the central directory of the mapped file p[0, len): EOCD, zip64 locator/record, zip64
// extra fields; refuses compressed or encrypted entries; every entry's data inside the file.
int gm_zip_read(gm_zip *z, const char *path, const unsigned char *p, uint64_t len);
// The same directory walk without the torch checks that follow it (no data.pkl needed, prefix
// left empty); deflate_ok: method 8 entries are accepted (their data is csize compressed bytes).
int gm_zip_read_entries(gm_zip *z, const char *path, const unsigned char *p, uint64_t len, bool deflate_ok);
void gm_zip_free(gm_zip *z);
// The entry named prefix + rest, or NULL.
const gm_zip_entry *gm_zip_find(const gm_zip *z, const char *rest);

// ---- pickle values ----
typedef enum { PK_NONE, PK_BOOL, PK_INT, PK_BIGINT, PK_FLOAT, PK_STR, PK_TUPLE, PK_LIST, PK_DICT, PK_SET,
               PK_GLOBAL, PK_STORAGE, PK_TENSOR,
               PK_NAMESPACE, // argparse.Namespace (Megatron's args): attribute pairs as a dict's
               PK_SKIPPED    // NumPy/RNG state in a Megatron checkpoint: never built, never read
} gm_pk_kind;

// The globals gptmeg represents (a subset of PyTorch's weights_only allow-list).
typedef enum { G_ORDERED_DICT, G_REBUILD_TENSOR, G_REBUILD_V2, G_REBUILD_V3, G_REBUILD_PARAM, G_REBUILD_PARAM_STATE,
               G_SIZE, G_STORAGE, G_UNTYPED_STORAGE, G_DTYPE,
               G_NAMESPACE,   // argparse.Namespace: NEWOBJ + BUILD(dict), Megatron checkpoints only
               G_SKIP         // numpy.*/_codecs.encode in a Megatron checkpoint's RNG state: REDUCE/BUILD make PK_SKIPPED
} gm_pk_global;

// Torch dtypes: index into gm_torch_dtypes.
typedef struct {
  const char *dtype;             // "float32" (torch.<dtype>)
  const char *storage;           // "FloatStorage" (torch.<storage>)
  int size;                      // bytes per element
  int gm;                        // gm_dtype, or -1 when gptmeg does not read it
} gm_torch_dtype;
extern const gm_torch_dtype gm_torch_dtypes[];
extern const int gm_torch_n_dtypes;

typedef struct gm_pk gm_pk;
struct gm_pk {
  gm_pk_kind kind;
  int depth;
  size_t at;                     // byte offset of the opcode that made it
  int64_t i;                     // bool, int; tensor: storage offset
  double f;
  const char *s;                 // str (UTF-8 bytes) / bigint bytes: into the pickle, not NUL-terminated
  size_t slen;
  gm_pk **items;                 // tuple/list/set items; dict: key, value pairs (n counts pairs)
  size_t n, cap;
  int glob, dt;                  // global: gm_pk_global and dtype index (storage types, dtypes)
  // storage (from persistent_load): storage type's dtype index (-1: untyped, bytes), key, location
  const char *key, *loc;
  size_t key_len, loc_len;
  int64_t numel;
  // tensor
  gm_pk *storage;
  int ndim;
  int64_t size[GM_ST_MAX_DIMS], stride[GM_ST_MAX_DIMS];
};

typedef struct {
  gm_pk **all;                   // every value made (freed together)
  size_t n_all, cap_all;
  size_t budget;                 // values left: bounded by the bytes of pickle read
  bool megatron;                 // reading a Megatron checkpoint: argparse.Namespace and skipped NumPy state allowed
} gm_pkvm;

// Runs one pickle from buf[start, len) up to and including its STOP; *end: the byte after STOP.
// where: names the stream in errors ("FILE:archive/data.pkl"); offsets are reported from base.
// legacy: persistent ids are 6-tuples (pre-1.6 format) rather than 5-tuples.
int gm_pk_run(gm_pkvm *vm, const char *where, const unsigned char *buf, size_t len, size_t start, size_t base,
              bool legacy, size_t *end, gm_pk **out);
void gm_pkvm_free(gm_pkvm *vm);



// ---- Megatron checkpoints (torch_file.c, megatron.c) ----
enum { GM_MEG_MAX_ARGS = 512 };
typedef struct {
  char name[48];
  char kind;                     // 'i' int, 'b' bool, 'f' float, 's' str, 'n' None
  int64_t i;
  double f;
  char s[64];
} gm_meg_arg;
typedef struct {
  bool has_version, has_args;
  bool has_module;               // Megatron-DeepSpeed: the weights came from DeepSpeed's 'module' (None: no tensors)
  double version;                // checkpoint_version (absent: 0)
  int64_t iteration;
  int n_args;
  gm_meg_arg args[GM_MEG_MAX_ARGS]; // the scalar attributes of 'args' (argparse.Namespace)
} gm_meg_meta;
// One Megatron .pt file (zip or legacy) read with the VM's Megatron flag: the tensors under
// 'model' (else DeepSpeed's 'module': a dict, or None with no tensors) under dotted names
// ("language_model.embedding.word_embeddings.weight"), and meta.
int gm_torch_open_megatron(gm_ckpt *c, const char *path, gm_meg_meta *meta);
// The same from a memory range: the torch file is map[off, off + len); c takes ownership of the
// mapping (munmapped by gm_ckpt_close, also on failure); name labels it in errors and as the
// tensors' file. meta NULL: a plain state dict (gm_torch_open's rules); else Megatron's.
int gm_torch_open_range(gm_ckpt *c, const char *name, void *map, size_t map_len, size_t off, size_t len, gm_meg_meta *meta);

// ---- the NGC Megatron zip (megatron_zip.c) ----
// True when path is a regular file that starts as a zip and whose name ends in ".zip".
bool gm_megatron_zip_detect(const char *path);
// Opens the one rank inside the zip: release/mp_rank_00/model_optim_rng.pt (what transformers'
// converter opens), else the single entry named */mp_rank_00/model_optim_rng.pt (or
// model_rng.pt). Stored: read in place from the zip's mapping; deflated: inflated with zlib into
// a buffer of the declared size (at most GM_ZIP_MAX_RATIO times the compressed size), the CRC-32
// checked. *release: the entry's folder is release/.
enum { GM_ZIP_MAX_RATIO = 64 };
int gm_megatron_zip_rank(gm_ckpt *c, const char *zip_path, gm_meg_meta *meta, bool *release, char *entry, size_t entry_cap);

// ---- megatron.c, shared with megatron_ds.c ----
// shards[p * tp + t]: each TP rank t / pipeline stage p under Megatron-LM's names
// ("language_model.embedding...", "language_model.{transformer,encoder}.layers.N...", layers
// numbered from 0 in each stage); m0: rank 0's meta. Fills c (HF GPT-2 names, merged as
// transformers' converter does), cfg and info (tp, pp, version, args, stack, iteration); c->path
// becomes folder. Does not close the shards, nor check args' TP/PP sizes.
int gm_meg_build(gm_ckpt *c, gm_gpt2_config *cfg, gm_megatron_info *info, gm_ckpt *shards, const gm_meg_meta *m0, int tp,
                 int pp, const char *folder, bool trim_vocab);
bool gm_meg_arg_int(const gm_meg_meta *m, const char *name, int64_t *v);
// Megatron-DeepSpeed (megatron_ds.c): DIR/latest or DIR holding mp_rank_00_model_states.pt.
bool gm_megatron_ds_detect(const char *dir);
int gm_megatron_ds_open(gm_ckpt *c, gm_gpt2_config *cfg, gm_megatron_info *info, const char *dir, bool trim_vocab);

// ---- gm_ckpt building (ckpt.c) ----
// Takes ownership of the mapping; returns the file's stored path (owned by c), NULL on failure.
const char *gm_ckpt_add_map(gm_ckpt *c, const char *path, void *map, size_t len);
// A new zeroed tensor slot (NULL: out of memory, reported).
gm_ckpt_tensor *gm_ckpt_add_tensor(gm_ckpt *c);
// Maps a whole regular file read-only (*len may be 0: then *map is NULL).
int gm_ckpt_map_file(const char *path, void **map, size_t *len);
#endif
