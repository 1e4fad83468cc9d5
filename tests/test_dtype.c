// core/dtype: f16 and bf16 conversions over all 65,536 values each, against F16C and against an
// independent f64 reference; ULP distance properties; tolerances.
#include "gptmeg/core.h"
#include "harness.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

__attribute__((target("f16c"))) static uint16_t f16c_from_f32(float f) {
  return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), 0), 0);
}
__attribute__((target("f16c"))) static float f16c_to_f32(uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

// Nearest f16 to a finite double by brute force over all finite f16 values (ties to even).
static uint16_t nearest_f16_bruteforce(double d) {
  uint16_t best = 0; double bestd = INFINITY;
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00u) == 0x7c00u) continue;
    double v = gm_f16_to_f32((uint16_t)h);
    double e = fabs(v - d);
    if (e < bestd || (e == bestd && !(h & 1u) && signbit(v) == signbit(d))) { bestd = e; best = (uint16_t)h; }
  }
  return best;
}

int main(void) {
  bool have_f16c = __builtin_cpu_supports("f16c");
  // f16 -> f32 -> f16 round trip for every pattern; F16C agreement.
  int bad_rt = 0, bad_f16c_up = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = gm_f16_to_f32((uint16_t)h);
    uint16_t back = gm_f32_to_f16(f);
    bool nan = isnan(f);
    if (nan ? !isnan(gm_f16_to_f32(back)) : back != h) bad_rt++;
    if (have_f16c && bits(f16c_to_f32((uint16_t)h)) != bits(f)) bad_f16c_up++;
  }
  CHECK(bad_rt == 0, "%d f16 values do not round-trip", bad_rt);
  CHECK(bad_f16c_up == 0, "%d f16->f32 differ from F16C", bad_f16c_up);

  // f32 -> f16 against F16C: every f16 value, its neighbours, the midpoints to the next value
  // (ties), and a stride over all f32 patterns.
  if (have_f16c) {
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
      uint32_t u = bits(gm_f16_to_f32((uint16_t)h));
      for (int d = -4; d <= 4; d++) {
        float f = from_bits(u + (uint32_t)d);
        if (gm_f32_to_f16(f) != f16c_from_f32(f)) bad++;
      }
      float next = gm_f16_to_f32((uint16_t)(h + 1));
      float mid = (float)(((double)gm_f16_to_f32((uint16_t)h) + next) / 2);
      if (!isnan(mid) && gm_f32_to_f16(mid) != f16c_from_f32(mid)) bad++;
    }
    uint32_t stride = test_quick() ? 65537u : 4099u;
    for (uint64_t u = 0; u < 0x100000000ull; u += stride)
      if (gm_f32_to_f16(from_bits((uint32_t)u)) != f16c_from_f32(from_bits((uint32_t)u))) bad++;
    CHECK(bad == 0, "%d f32->f16 conversions differ from F16C", bad);
  } else {
    test_skip("F16C comparison", "this CPU has no F16C");
  }

  // f64 -> f16 single rounding against brute force on a sample, including double-rounding traps:
  // values just above an f16 tie that f32 would round onto the tie.
  {
    int bad = 0;
    gm_rng r; gm_rng_seed(&r, 1);
    int n = test_quick() ? 50 : 400;
    for (int i = 0; i < n; i++) {
      uint16_t h = (uint16_t)(gm_rng_u64(&r) & 0x7bffu);
      double lo = gm_f16_to_f32(h), hi = gm_f16_to_f32((uint16_t)(h + 1));
      double mid = (lo + hi) / 2;
      double trap = mid + (hi - lo) * 0x1p-30; // above the tie, below f32 resolution of the tie
      double vals[3] = {mid, trap, lo + (hi - lo) * 0.3};
      for (int k = 0; k < 3; k++)
        if (gm_f64_to_f16(vals[k]) != nearest_f16_bruteforce(vals[k])) bad++;
    }
    CHECK(bad == 0, "%d f64->f16 roundings differ from brute force", bad);
    CHECK(gm_f64_to_f16(65519.99) == 0x7bff, "65519.99 must round to 65504");
    CHECK(gm_f64_to_f16(65520.0) == 0x7c00, "65520 must round to inf");
    CHECK(gm_f64_to_f16(0x1p-25) == 0, "2^-25 is a tie to 0");
    CHECK(gm_f64_to_f16(0x1.0000001p-25) == 1, "just above 2^-25 rounds to the smallest subnormal");
  }

  // bf16: round trip of every pattern; the documented bit formula; f64 single rounding.
  {
    int bad = 0, bad_formula = 0;
    for (uint32_t b = 0; b < 0x10000; b++) {
      float f = gm_bf16_to_f32((uint16_t)b);
      uint16_t back = gm_f32_to_bf16(f);
      if (isnan(f) ? !isnan(gm_bf16_to_f32(back)) : back != b) bad++;
      for (int d = -3; d <= 0x8001; d += 0x4000) {
        uint32_t u = bits(f) + (uint32_t)d;
        float g = from_bits(u);
        uint16_t want = isnan(g) ? 0 : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        if (!isnan(g) && gm_f32_to_bf16(g) != want) bad_formula++;
        if (isnan(g) && !isnan(gm_bf16_to_f32(gm_f32_to_bf16(g)))) bad_formula++;
      }
    }
    CHECK(bad == 0, "%d bf16 values do not round-trip", bad);
    CHECK(bad_formula == 0, "%d f32->bf16 roundings differ from the RNE bit formula", bad_formula);
    // 1 + 2^-8 is a tie between 1 and 1+2^-7: to even (1). Slightly above goes up.
    CHECK(gm_f64_to_bf16(1.0 + 0x1p-8) == 0x3f80, "bf16 tie to even");
    CHECK(gm_f64_to_bf16(1.0 + 0x1p-8 + 0x1p-40) == 0x3f81, "bf16 single rounding from f64");
  }

  // ULP distance.
  CHECK(gm_ulp_dist_f32(0.0f, -0.0f) == 0, "+0/-0");
  CHECK(gm_ulp_dist_f32(1.0f, nextafterf(1.0f, 2.0f)) == 1, "neighbours");
  CHECK(gm_ulp_dist_f32(-0x1p-149f, 0x1p-149f) == 2, "across zero");
  CHECK(gm_ulp_dist_f32(NAN, NAN) == 0, "two NaNs");
  CHECK(gm_ulp_dist_f32(NAN, 1.0f) == UINT64_MAX, "NaN vs number");
  CHECK(gm_ulp_dist_u16(GM_F16, 0x3c00, 0x3c01) == 1, "f16 neighbours");
  CHECK(gm_ulp_dist_u16(GM_F16, 0x8001, 0x0001) == 2, "f16 across zero");
  CHECK(gm_ulp_dist_u16(GM_BF16, 0x7fc0, 0xffff) == 0, "bf16 NaNs");
  CHECK(gm_ulp_dist_u16(GM_F16, 0x7c00, 0x7bff) == 1, "inf is one past max");
  CHECK(gm_ulp_dist_f64(-1.0, 1.0) == 2 * 0x3ff0000000000000ull, "f64 across zero");
  {
    int bad = 0;
    for (uint32_t h = 1; h < 0x7c00; h++)
      if (gm_ulp_dist_u16(GM_F16, (uint16_t)h, (uint16_t)(h - 1)) != 1) bad++;
    CHECK(bad == 0, "adjacent f16 values must be 1 ULP apart");
  }

  // Tolerances (assert_close defaults).
  gm_tolerance t16 = gm_default_tolerance(GM_F16);
  CHECK(t16.rtol == 1e-3 && t16.atol == 1e-5, "f16 tolerance");
  CHECK(gm_default_tolerance(GM_BF16).rtol == 1.6e-2, "bf16 tolerance");
  CHECK(gm_default_tolerance(GM_F32).rtol == 1.3e-6, "f32 tolerance");
  CHECK(gm_close(1.0, 1.0 + 1e-6, gm_default_tolerance(GM_F32)), "close");
  CHECK(!gm_close(1.0, 1.0 + 1e-4, gm_default_tolerance(GM_F32)), "not close");
  CHECK(gm_close(NAN, NAN, t16) && !gm_close(NAN, 0, t16), "NaN rules");
  return test_done("test_dtype");
}
