// gptmeg io: NumPy .npy files (format versions 1.0, 2.0 and 3.0), C order, little-endian.
// dtypes: '<f8' f64, '<f4' f32, '<f2' f16, '<u2' 16-bit patterns (bf16, or f16 when asked),
// '<i4' i32, '<i8' i64; up to GM_NPY_MAX_DIMS dims. Errors name the file and what is wrong.
#ifndef GPTMEG_NPY_H
#define GPTMEG_NPY_H

#include "gptmeg/core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GM_NPY_MAX_DIMS = 8 };

typedef struct {
  gm_dtype dtype;                 // how gptmeg stores the elements
  char descr[8];                  // the descr as the file has it ("<f4", "<u2", ...)
  int ndim;                       // 0 for a scalar
  size_t shape[GM_NPY_MAX_DIMS];
  size_t count;                   // product of shape (1 for a scalar)
  void *data;                     // count * gm_dtype_size(dtype) bytes, malloc'd
} gm_npy;

// Reads path into *out. A '<u2' array is read as u16_as (GM_BF16 or GM_F16 bit patterns).
// On failure *out is zeroed and nothing needs freeing.
int gm_npy_read(const char *path, gm_dtype u16_as, gm_npy *out);
void gm_npy_free(gm_npy *a);

// Writes a C-order array atomically (temp file + rename). f16 goes out as '<f2' unless
// f16_as_u2, bf16 always as '<u2' (numpy has no bfloat16). Version 1.0 unless the header needs 2.0.
int gm_npy_write(const char *path, gm_dtype dt, const void *data, int ndim, const size_t *shape,
                 bool f16_as_u2);

#ifdef __cplusplus
}
#endif
#endif
