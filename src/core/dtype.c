// Storage dtypes: names, sizes, f16/bf16 round-to-nearest-even conversions.
#include "gptmeg/core.h"

#include <math.h>
#include <string.h>

const char *gm_dtype_name(gm_dtype dt) {
  switch (dt) {
  case GM_F32: return "f32";
  case GM_F16: return "f16";
  case GM_BF16: return "bf16";
  case GM_F64: return "f64";
  case GM_I32: return "i32";
  case GM_I64: return "i64";
  }
  return "?";
}

int gm_dtype_parse(const char *s, gm_dtype *out) {
  static const struct { const char *name; gm_dtype dt; } names[] = {
      {"f32", GM_F32}, {"float32", GM_F32}, {"float", GM_F32},   {"f16", GM_F16},
      {"float16", GM_F16}, {"half", GM_F16}, {"fp16", GM_F16},   {"bf16", GM_BF16},
      {"bfloat16", GM_BF16}, {"f64", GM_F64}, {"float64", GM_F64}, {"double", GM_F64},
      {"fp32", GM_F32},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(s, names[i].name) == 0) { *out = names[i].dt; return 0; }
  return gm_fail("unknown dtype '%s' (valid: f32, f16, bf16, f64)", s);
}

size_t gm_dtype_size(gm_dtype dt) {
  switch (dt) {
  case GM_F16: case GM_BF16: return 2;
  case GM_F32: case GM_I32: return 4;
  case GM_F64: case GM_I64: return 8;
  }
  return 0;
}

bool gm_dtype_is_float(gm_dtype dt) { return dt == GM_F32 || dt == GM_F16 || dt == GM_BF16 || dt == GM_F64; }

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint64_t f64_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

// f32 -> f16, RNE. Works on the bit pattern so that it matches F16C exactly.
uint16_t gm_f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN: quiet, keep the top 9 payload bits
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) // >= 65520 rounds to inf (65504 + half ulp, tie goes to even = inf)
    return (uint16_t)(sign | 0x7c00u);
  if (a < 0x38800000u) { // below 2^-14: f16 subnormal (or zero)
    // value = a_float; f16 subnormal unit = 2^-24. Shift the 24-bit significand.
    int e = (int)(a >> 23);         // biased f32 exponent
    if (e < 102) return sign;       // < 2^-25: rounds to zero (2^-25 exactly is a tie to 0)
    uint32_t m = (a & 0x7fffffu) | 0x800000u; // value = m * 2^(e-150)
    int shift = 126 - e;            // m * 2^(e-150) / 2^-24 = m >> (126 - e)
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  // normal: rebias exponent 127 -> 15, round 13 mantissa bits away
  uint32_t r = a - 0x38000000u; // exponent rebias
  uint32_t q = r >> 13;
  uint32_t rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;
  return (uint16_t)(sign | q); // carry into exponent is correct (may become inf: excluded above)
}

float gm_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) // inf, or NaN made quiet (as F16C does)
    return bits_f32(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
  if (e == 0) {
    if (m == 0) return bits_f32(sign);
    float v = (float)m * 0x1p-24f; // exact
    return sign ? -v : v;
  }
  return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t gm_f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float gm_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

// Single rounding from f64 to a binary format with p significand bits, emin, emax (generic RNE).
static double round_to_format(double d, int p, int emin, double maxfinite) {
  if (isnan(d) || isinf(d) || d == 0.0) return d;
  double a = fabs(d);
  int e;
  frexp(a, &e);     // a = f * 2^e, f in [0.5, 1): exponent of leading bit is e-1
  int lead = e - 1;
  if (lead < emin) lead = emin; // subnormal: fixed quantum
  double quantum = ldexp(1.0, lead - (p - 1));
  double q = a / quantum;        // exact (power-of-two scaling)
  double r = nearbyint(q);       // RNE in the default rounding mode
  double v = r * quantum;
  if (v > maxfinite) {
    // overflow: RNE rounds to inf when a >= maxfinite + half ulp of maxfinite
    v = INFINITY;
  }
  return d < 0 ? -v : v;
}

uint16_t gm_f64_to_f16(double d) {
  if (isnan(d)) return gm_f32_to_f16((float)d);
  double r = round_to_format(d, 11, -14, 65504.0);
  return gm_f32_to_f16((float)r); // exact: r is representable in f16
}

uint16_t gm_f64_to_bf16(double d) {
  if (isnan(d)) return gm_f32_to_bf16((float)d);
  double r = round_to_format(d, 8, -126, 0x1.fep127);
  return gm_f32_to_bf16((float)r); // exact
}

float gm_round_f32(gm_dtype dt, float f) {
  switch (dt) {
  case GM_F16: return gm_f16_to_f32(gm_f32_to_f16(f));
  case GM_BF16: return gm_bf16_to_f32(gm_f32_to_bf16(f));
  default: return f;
  }
}

// ---- ULP distance ----------------------------------------------------------------------------
static int64_t ord32(uint32_t u) { return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u; }
static int64_t ord16(uint16_t u) { return (u & 0x8000u) ? -(int64_t)(u & 0x7fffu) : (int64_t)u; }

uint64_t gm_ulp_dist_f32(float a, float b) {
  if (isnan(a) || isnan(b)) return (isnan(a) && isnan(b)) ? 0 : UINT64_MAX;
  int64_t d = ord32(f32_bits(a)) - ord32(f32_bits(b));
  return (uint64_t)(d < 0 ? -d : d);
}

uint64_t gm_ulp_dist_f64(double a, double b) {
  if (isnan(a) || isnan(b)) return (isnan(a) && isnan(b)) ? 0 : UINT64_MAX;
  uint64_t ua = f64_bits(a), ub = f64_bits(b);
  // ordered magnitude as unsigned with sign handled separately (avoid int64 overflow)
  uint64_t ma = ua & 0x7fffffffffffffffull, mb = ub & 0x7fffffffffffffffull;
  bool na = ua >> 63, nb = ub >> 63;
  if (na == nb) return ma > mb ? ma - mb : mb - ma;
  uint64_t s = ma + mb;
  return s < ma ? UINT64_MAX : s;
}

uint64_t gm_ulp_dist_u16(gm_dtype dt, uint16_t a, uint16_t b) {
  uint16_t nanthr = dt == GM_F16 ? 0x7c00u : 0x7f80u;
  bool an = (a & 0x7fffu) > nanthr, bn = (b & 0x7fffu) > nanthr;
  if (an || bn) return (an && bn) ? 0 : UINT64_MAX;
  int64_t d = ord16(a) - ord16(b);
  return (uint64_t)(d < 0 ? -d : d);
}

uint64_t gm_ulp_dist(gm_dtype dt, const void *a, const void *b) {
  switch (dt) {
  case GM_F32: return gm_ulp_dist_f32(*(const float *)a, *(const float *)b);
  case GM_F64: return gm_ulp_dist_f64(*(const double *)a, *(const double *)b);
  case GM_F16: case GM_BF16: return gm_ulp_dist_u16(dt, *(const uint16_t *)a, *(const uint16_t *)b);
  default: return UINT64_MAX;
  }
}

double gm_load_f64(gm_dtype dt, const void *buf, size_t i) {
  switch (dt) {
  case GM_F32: return ((const float *)buf)[i];
  case GM_F64: return ((const double *)buf)[i];
  case GM_F16: return gm_f16_to_f32(((const uint16_t *)buf)[i]);
  case GM_BF16: return gm_bf16_to_f32(((const uint16_t *)buf)[i]);
  case GM_I32: return ((const int32_t *)buf)[i];
  case GM_I64: return (double)((const int64_t *)buf)[i];
  }
  return NAN;
}

void gm_store_f64(gm_dtype dt, void *buf, size_t i, double v) {
  switch (dt) {
  case GM_F32: ((float *)buf)[i] = (float)v; break;
  case GM_F64: ((double *)buf)[i] = v; break;
  case GM_F16: ((uint16_t *)buf)[i] = gm_f64_to_f16(v); break;
  case GM_BF16: ((uint16_t *)buf)[i] = gm_f64_to_bf16(v); break;
  case GM_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case GM_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
  }
}

gm_tolerance gm_default_tolerance(gm_dtype dt) {
  switch (dt) {
  case GM_F16: return (gm_tolerance){1e-3, 1e-5};
  case GM_BF16: return (gm_tolerance){1.6e-2, 1e-5};
  case GM_F64: return (gm_tolerance){1e-7, 1e-7};
  default: return (gm_tolerance){1.3e-6, 1e-5};
  }
}

bool gm_close(double a, double e, gm_tolerance tol) {
  if (isnan(a) || isnan(e)) return isnan(a) && isnan(e);
  if (isinf(a) || isinf(e)) return a == e;
  return fabs(a - e) <= tol.atol + tol.rtol * fabs(e);
}
