// gptmeg core: storage dtypes, f16/bf16 rounding, ULP distance, tolerances, errors.
#ifndef GPTMEG_CORE_H
#define GPTMEG_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

// Element types. f16 and bf16 are stored as uint16_t bit patterns.
typedef enum { GM_F32 = 0, GM_F16 = 1, GM_BF16 = 2, GM_F64 = 3, GM_I32 = 4, GM_I64 = 5 } gm_dtype;

const char *gm_dtype_name(gm_dtype dt);           // "f32", "f16", "bf16", "f64", "i32", "i64"
int gm_dtype_parse(const char *s, gm_dtype *out); // 0 on success; accepts float32/half/bfloat16 too
size_t gm_dtype_size(gm_dtype dt);
bool gm_dtype_is_float(gm_dtype dt);

// ---- rounding -------------------------------------------------------------------------------
// f32 -> f16: IEEE round to nearest, ties to even; subnormals kept; overflow to inf; NaN stays a
// quiet NaN with sign and top payload bits kept (what F16C vcvtps2ph imm 0 returns).
uint16_t gm_f32_to_f16(float f);
float gm_f16_to_f32(uint16_t h); // exact
// f64 -> f16 with a single rounding (no double rounding through f32).
uint16_t gm_f64_to_f16(double d);
// f32 -> bf16: round to nearest even on the f32 bit pattern; NaN -> quiet NaN (sign kept).
uint16_t gm_f32_to_bf16(float f);
float gm_bf16_to_f32(uint16_t b); // exact
uint16_t gm_f64_to_bf16(double d); // single rounding
// Round a float value to the dtype and back (the "storage round trip"). dt is F32/F16/BF16.
float gm_round_f32(gm_dtype dt, float f);

// ---- distance -------------------------------------------------------------------------------
// ULP distance in dtype dt between two values stored in that dtype (pointers to one element).
// +0/-0 are 0 apart, neighbours 1 apart, two NaNs 0 apart, NaN vs number UINT64_MAX.
uint64_t gm_ulp_dist(gm_dtype dt, const void *a, const void *b);
uint64_t gm_ulp_dist_f32(float a, float b);
uint64_t gm_ulp_dist_f64(double a, double b);
uint64_t gm_ulp_dist_u16(gm_dtype dt, uint16_t a, uint16_t b);
// Load element i of a float buffer of dtype dt widened exactly to double.
double gm_load_f64(gm_dtype dt, const void *buf, size_t i);
// Store v into element i, rounded once to the dtype (RNE).
void gm_store_f64(gm_dtype dt, void *buf, size_t i, double v);

// torch.testing.assert_close default tolerances per dtype.
// The GELU family's formulas, as their sources name them (the kernels are in gptmeg/gelu.h;
// config.json names one, so the name is core vocabulary).
typedef enum {
  GM_GELU_ERF = 0,          // gelu: torch F.gelu(x)
  GM_GELU_PYTHON,           // gelu_python: HF, erf written op by op
  GM_GELU_NEW,              // gelu_new: HF GPT-2, tanh written op by op
  GM_GELU_ACCURATE,         // gelu_accurate: HF, c precomputed, pow(x,3)
  GM_GELU_FAST,             // gelu_fast: HF
  GM_GELU_PYTORCH_TANH,     // gelu_pytorch_tanh: torch F.gelu(x, approximate='tanh')
  GM_GELU_MEGATRON,         // gelu_megatron: Megatron bias_gelu, custom backward
  GM_OPENAI_GELU,           // openai_gelu: Megatron
  GM_QUICK_GELU,            // quick_gelu: HF x*sigmoid(1.702x)
  GM_GELU_10,               // gelu_10: HF ClippedGELU(-10, 10)
  GM_GELU_N_VARIANTS
} gm_gelu_variant;

typedef struct { double rtol, atol; } gm_tolerance;
gm_tolerance gm_default_tolerance(gm_dtype dt);
// |a-e| <= atol + rtol*|e| with NaN == NaN and inf == inf of the same sign.
bool gm_close(double a, double e, gm_tolerance tol);

// ---- errors ---------------------------------------------------------------------------------
// Every fallible call returns 0 on success, non-zero on failure, and sets a one-line message
// naming what is wrong and where (thread-local).
int gm_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *gm_errmsg(void);

// ---- misc -----------------------------------------------------------------------------------
const char *gm_version(void);
int gm_threads_default(void);

// The CPU, its SIMD level and the GPTMEG_SIMD cap: gptmeg/cpu.h.
double gm_now_s(void); // monotonic clock

// Splitmix64 / xoshiro-style deterministic RNG.
typedef struct { uint64_t s[4]; } gm_rng;
void gm_rng_seed(gm_rng *r, uint64_t seed);
uint64_t gm_rng_u64(gm_rng *r);
double gm_rng_uniform(gm_rng *r);   // [0, 1)
double gm_rng_normal(gm_rng *r);    // standard normal (Box-Muller)

// Output files are written to PATH.tmp.PID and renamed into place on success.
typedef struct { char *final_path; char *tmp_path; void *fp; } gm_outfile;
int gm_outfile_open(gm_outfile *o, const char *path);
int gm_outfile_commit(gm_outfile *o);  // fclose + rename
void gm_outfile_abort(gm_outfile *o);  // fclose + unlink

#ifdef __cplusplus
}
#endif
#endif
