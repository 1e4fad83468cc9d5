// Deterministic test inputs shared with the Python reference harness (tools/ref/gm_inputs.py
// computes the same values bit for bit), and the hash the goldens store.
#ifndef GPTMEG_INPUTS_H
#define GPTMEG_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Stateless counter-based generator: element i of stream `seed`.
uint64_t gm_stream_u64(uint64_t seed, uint64_t i);

// The golden f32 input stream: the special values first (gm_special_f32_count of them), then
// element i drawn from a mix: 4/8 log-uniform |x| in [2^-8, 16), 2/8 log-uniform in [2^-30, 128),
// 1/8 raw random bit patterns (any f32), 1/8 uniform on [-12, 12) in steps of 12*2^-23.
size_t gm_special_f32_count(void);
void gm_golden_f32_inputs(uint64_t seed, size_t n, float *out);
// All 65,536 bit patterns in order, as f16/bf16 storage.
void gm_all_u16(uint16_t *out);
// The f16/bf16 golden inputs of a case of length n: `total` consecutive bit patterns, wrapping
// after 0xffff, from offset 0 when n == 65536 (the exhaustive case) else (n * 7919) % 65536.
void gm_golden_u16_inputs(size_t n, size_t total, uint16_t *out);

// Order-sensitive 64-bit hash of a byte buffer (zero-padded to 8-byte little-endian words w_i):
// h = mix(nbytes + sum_i mix(w_i + (i+1)*0x9e3779b97f4a7c15)) with wrapping sums; mix is
// splitmix64's finaliser. Vectorisable in numpy, so goldens can store hashes of big outputs.
uint64_t gm_hash64(const void *data, size_t nbytes);

#ifdef __cplusplus
}
#endif
#endif
