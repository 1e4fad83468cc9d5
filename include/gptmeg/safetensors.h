// gptmeg io: safetensors checkpoints (https://github.com/huggingface/safetensors format).
// File layout: u64 little-endian header length N, N bytes of JSON header, then the data buffer.
// Header: {"__metadata__": {str: str}, "NAME": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}}
// with offsets relative to the start of the data buffer.
#ifndef GPTMEG_SAFETENSORS_H
#define GPTMEG_SAFETENSORS_H

#include "gptmeg/core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GM_ST_MAX_DIMS = 8 };
// Headers above this are refused (the reference implementation refuses above 100 MB too).
#define GM_ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)

typedef struct {
  char *name;
  gm_dtype dtype;                 // GM_F32, GM_F16 or GM_BF16 (stored little-endian)
  int ndim;
  int64_t shape[GM_ST_MAX_DIMS];
  uint64_t numel;
  uint64_t begin, end;            // byte range inside the data buffer
  const void *data;               // points into the mapping (may be unaligned for f32: see below)
} gm_st_tensor;

typedef struct {
  char *path;
  void *map;                      // read-only mmap of the whole file
  size_t map_len;
  uint64_t data_start;            // 8 + header length
  int n_tensors;
  gm_st_tensor *tensors;          // in header order
  char *metadata_format;          // __metadata__["format"] or NULL
} gm_safetensors;

// Maps and validates the file: header length bound, JSON, dtypes (F32/F16/BF16; any other is an
// error naming it), shape product * dtype size == byte range, ranges inside the file, pairwise
// non-overlapping, names unique. Every error names the file, the tensor and the byte offset.
int gm_st_open(gm_safetensors *st, const char *path);
void gm_st_close(gm_safetensors *st);
// Tensor by exact name, or NULL.
const gm_st_tensor *gm_st_find(const gm_safetensors *st, const char *name);
// Copies tensor t widened to f32 into out (t->numel floats); works for unaligned data.
void gm_st_read_f32(const gm_st_tensor *t, float *out);

// Writer: tensors laid out contiguously in the given order, header padded with spaces to a
// multiple of 8, __metadata__ {"format": "pt"} (what transformers requires). data of each tensor is
// numel * dtype size bytes. Written through gm_outfile (temporary name, renamed on success).
typedef struct {
  const char *name;
  gm_dtype dtype;
  int ndim;
  int64_t shape[GM_ST_MAX_DIMS];
  const void *data;
} gm_st_entry;
int gm_st_write(const char *path, const gm_st_entry *entries, int n);

#ifdef __cplusplus
}
#endif
#endif
