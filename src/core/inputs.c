// Golden input streams; tools/ref/gm_inputs.py is the Python twin and must stay in step.
#include "gptmeg/inputs.h"

#include <math.h>
#include <string.h>

uint64_t gm_stream_u64(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0xd1342543de82ef95ull + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static const uint32_t special_bits[] = {
    0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x00000001u, 0x80000001u,
    0x00800000u, 0x80800000u, 0x7f7fffffu, 0xff7fffffu, 0x3f800000u, 0xbf800000u,
    0x40a1eb85u /* 5.06 */, 0xc0a1eb85u /* -5.06 */, 0x41200000u /* 10 */, 0xc1200000u,
    0x40400000u /* 3 */, 0xc0400000u, 0x40800000u /* 4 */, 0xc0800000u, 0x3f000000u /* .5 */,
    0xbf000000u, 0x46ea6000u /* 3e4 */, 0xc6ea6000u, 0x42c80000u /* 100 */, 0xc2c80000u,
    0x33800000u /* 2^-24 */, 0xb3800000u, 0x41100000u /* 9 */, 0xc1100000u,
};

size_t gm_special_f32_count(void) { return sizeof special_bits / sizeof special_bits[0]; }

void gm_golden_f32_inputs(uint64_t seed, size_t n, float *out) {
  size_t ns = gm_special_f32_count();
  for (size_t i = 0; i < n; i++) {
    if (i < ns) { memcpy(&out[i], &special_bits[i], 4); continue; }
    uint64_t z = gm_stream_u64(seed, i);
    unsigned kind = (unsigned)(z & 7u);
    uint32_t m = (uint32_t)(z >> 41);              // 23 bits
    uint32_t sign = (uint32_t)((z >> 40) & 1u) << 31;
    uint32_t r = (uint32_t)((z >> 8) & 0xffffffffu); // 32 bits for exponent choice / raw
    uint32_t u;
    if (kind < 4) {
      int e = -8 + (int)(r % 12u); // [2^-8, 2^4)
      u = sign | ((uint32_t)(e + 127) << 23) | m;
    } else if (kind < 6) {
      int e = -30 + (int)(r % 37u); // [2^-30, 2^7)
      u = sign | ((uint32_t)(e + 127) << 23) | m;
    } else if (kind == 6) {
      u = r;
    } else {
      int64_t k = (int64_t)(z >> 40) - 8388608; // [-2^23, 2^23)
      float f = (float)((double)k * 12.0 * 0x1p-23);
      memcpy(&u, &f, 4);
    }
    memcpy(&out[i], &u, 4);
  }
}

void gm_all_u16(uint16_t *out) {
  for (uint32_t i = 0; i < 0x10000u; i++) out[i] = (uint16_t)i;
}

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t gm_hash64(const void *data, size_t nbytes) {
  const unsigned char *p = data;
  uint64_t sum = 0;
  size_t nw = (nbytes + 7) / 8;
  for (size_t i = 0; i < nw; i++) {
    uint64_t w = 0;
    size_t k = nbytes - i * 8 < 8 ? nbytes - i * 8 : 8;
    for (size_t b = 0; b < k; b++) w |= (uint64_t)p[i * 8 + b] << (8 * b);
    sum += mix64(w + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull);
  }
  return mix64((uint64_t)nbytes + sum);
}

void gm_golden_u16_inputs(size_t n, size_t total, uint16_t *out) {
  size_t off = n == 65536 ? 0 : (n * 7919) % 65536;
  for (size_t i = 0; i < total; i++) out[i] = (uint16_t)((off + i) % 65536);
}
