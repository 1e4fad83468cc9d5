// Minimal test harness: CHECK records a failure and continues; tests end with test_done().
#ifndef GPTMEG_TEST_HARNESS_H
#define GPTMEG_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gptmeg/core.h"

extern int test_failures;
extern int test_checks;

#define CHECK(cond, ...)                                                         \
  do {                                                                           \
    test_checks++;                                                               \
    if (!(cond)) {                                                               \
      test_failures++;                                                           \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);   \
      fprintf(stderr, __VA_ARGS__);                                              \
      fputc('\n', stderr);                                                       \
    }                                                                            \
  } while (0)

// True under `make test-asan` (GPTMEG_QUICK=1): tests shrink their sweeps, never their assertions.
bool test_quick(void);
// Sets GPTMEG_SIMD to cap (NULL: unsets it) and makes the library read it again.
void test_set_simd(const char *cap);
// Prints "SKIP: why" and returns; counted in the summary.
void test_skip(const char *what, const char *why);
// Path to ../shared/data/<rel> if present (caller frees), else NULL.
char *test_shared_data(const char *rel);
// Index of the largest of x[0..n) (the first one on ties).
int test_argmax(const float *x, int n);
// max |a[i] - b[i]| in f64; a NaN difference makes it NaN.
double test_max_abs_diff(const float *a, const float *b, size_t n);
// The whole file at path, NUL-terminated (caller frees), or NULL if it cannot be read.
char *test_slurp(const char *path);
// The same, also giving the length (len may be NULL).
char *test_slurp_len(const char *path, size_t *len);
// Tensor `name` of an open safetensors file widened to f32 (caller frees; NULL if absent), with
// its first two dimensions (d0, d1 may be NULL; d1 = 1 for a vector).
float *test_st_f32(const void *st, const char *name, int64_t *d0, int64_t *d1);
// Tensor "s<S>.<what>" of a matmul golden file (tools/ref/gen_matmul_goldens.py), as test_st_f32.
float *test_matmul_golden_f32(const void *st, int s, const char *what, int64_t *d0, int64_t *d1);
// The first T tokens of each row of DIR/tokens.npy (int32 or int64 ids) as int32 [B, T] (caller
// frees; *B gets the rows); NULL (with a failed CHECK) when the file is missing or shorter than T.
int32_t *test_model_tokens(const char *dir, int T, int *B);
// The bf16 AMX goldens' operands (tools/ref/gen_bf16_amx_chunk_goldens.py's value(idx, salt), shift 0):
// u = idx * 2654435761 + salt * 40503 (mod 2^32), x[idx] = +-(128 + (u >> 8) % 128) * 2^-(7 + (u >> 15) % 10),
// minus when bit 31 of u is set; exact in bf16.
void test_amx_fill(float *x, size_t n, uint32_t salt);
// The same values for idx = off .. off + n - 1 (gen_bf16_amx_tiles_goldens.py's slices).
void test_amx_fill_from(float *x, size_t n, uint32_t salt, size_t off);
// gen_attention_bwd_goldens.py's gen_values: s = s * 6364136223846793005 + 1442695040888963407
// (mod 2^64) from s = seed, x = 4 (s >> 40) / 2^24 - 2, rounded to dt.
void test_lcg_values(uint64_t seed, float *x, size_t n, gm_dtype dt);
// FNV-1a 32 of n floats' bytes (the attention goldens' row hashes).
uint32_t test_fnv_row(const float *x, int n);
// Those goldens' sampled rows (the generators' rows(M)): {0, 1, M / 2, M - 1} sorted and distinct,
// 1 read as 0 when M = 1; into r[4], returning how many.
int test_amx_rows(int M, int *r);
// Number of positions where a and b differ bit for bit.
int test_count_diff(const float *a, const float *b, size_t n);
// The same over columns [c0, c0 + w) of C (M rows, row stride ldc) against ref (M x w).
int test_count_diff_cols(const float *C, int ldc, int c0, const float *ref, int w, int M);
// The f32 matmul goldens' operands (tools/ref/gm_inputs.py formula_a, formula_b), x [m, n] row-major
// with x[i, k] = ((37 i + 71 k) % 1009 - 504) / 503 and ((31 i + 17 k) % 97 - 48) / 64 in float32.
void test_formula_a(float *x, int m, int n);
void test_formula_b(float *x, int m, int n);
// check(t) for each torch CPU target whose f32 sgemm is MKL's Intel AVX-512 kernel (intel-amx,
// intel-avx512-fp16, intel-avx512-bf16, intel-avx512), then avx2 when with_avx2; the sum of what
// they return (1 where the target's golden file exists, 0 where not).
int test_intel_targets(bool with_avx2, int (*check)(int target));
// Opens tests/golden/targets/<target>/<rel> into *st (a gm_safetensors), its path in file[n]; when it
// is there, prints it and makes target the active torch CPU target. 1 when opened, 0 when absent.
int test_open_target_st(int target, const char *rel, void *st, char *file, size_t n);
// test_open_target_st, then the profile hf f32 into *prof (a gm_profile) and the file's "bias" of nb
// floats into *bias (NULL, with a failed CHECK, when missing or another length; the caller frees it).
// 1 when the file was opened, 0 when absent.
int test_open_f32_golden(int target, const char *rel, void *st, char *file, size_t n, void *prof, int nb, float **bias);
// The work paths the f32 matmul golden tests run each product on: 1 and 2 threads as the CPU
// allows, the AVX2 cap on 2, the scalar cap on 1 (simd: the GPTMEG_SIMD cap, NULL for none).
typedef struct {
  const char *name, *simd;
  int threads;
} test_path;
enum { TEST_N_PATHS = 4 };
extern const test_path TEST_PATHS[TEST_N_PATHS];
// The golden file at tests/golden/<rel> as torch made it on target t: tests/golden/targets/<t>/<rel>
// where the target's bits differ from zen4's, else tests/golden/<rel> (zen4's). Into buf.
const char *test_golden_for(int target, const char *rel, char *buf, size_t n);
// "model name" of /proc/cpuinfo, trimmed, as tools/ref writes it into goldens ("" if unknown).
void test_cpu_model(char *buf, size_t n);
// Every test process starts under the zen4 torch CPU target (the base goldens' target), whatever
// the host or GPTMEG_TORCH_TARGET; a test of another target sets it (gm_torch_target_set).
// Prints the summary and returns the process exit code.
int test_done(const char *name);

#endif
