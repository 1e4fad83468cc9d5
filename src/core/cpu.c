// This CPU (cpuid, xgetbv), read once; GPTMEG_SIMD; the level the kernels run (gptmeg/cpu.h).
#include "gptmeg/cpu.h"
#include "gptmeg/core.h"

#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define GM_X86 1
#else
#define GM_X86 0
#endif

static const char *const feature_names[GM_CPU_N_FEATURES] = {
    "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw", "avx512vl",
    "avx512bf16", "avx512fp16", "amx-tile", "amx-bf16", "amx-fp16",
};

const char *gm_cpu_feature_name(gm_cpu_features bit) {
  for (int i = 0; i < GM_CPU_N_FEATURES; i++)
    if (bit == 1u << i) return feature_names[i];
  return NULL;
}

const char *gm_simd_level_name(gm_simd_level l) {
  return l == GM_SIMD_AVX512 ? "avx512" : l == GM_SIMD_AVX2 ? "avx2" : "scalar";
}

static gm_cpu host;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

#if GM_X86
static uint64_t xcr0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t)hi << 32 | lo;
}

static void put_bit(gm_cpu_features *f, uint32_t reg, int bit, gm_cpu_features feature) {
  if (reg >> bit & 1u) *f |= feature;
}
#endif

static void read_host(void) {
  gm_cpu *c = &host;
  memset(c, 0, sizeof *c);
  c->vendor_id = GM_CPU_VENDOR_OTHER;
#if GM_X86
  uint32_t a, b, cx, d;
  if (!__get_cpuid(0, &a, &b, &cx, &d)) return;
  uint32_t max_leaf = a;
  memcpy(c->vendor, &b, 4);
  memcpy(c->vendor + 4, &d, 4);
  memcpy(c->vendor + 8, &cx, 4);
  c->vendor[12] = '\0';
  if (!strcmp(c->vendor, "GenuineIntel")) c->vendor_id = GM_CPU_VENDOR_INTEL;
  else if (!strcmp(c->vendor, "AuthenticAMD")) c->vendor_id = GM_CPU_VENDOR_AMD;

  bool osxsave = false;
  if (max_leaf >= 1) {
    __cpuid(1, a, b, cx, d);
    int family = (int)(a >> 8 & 0xf), model = (int)(a >> 4 & 0xf);
    if (family == 0xf) family += (int)(a >> 20 & 0xff);
    if (family == 0x6 || family >= 0xf) model += (int)(a >> 16 & 0xf) << 4;
    c->family = family;
    c->model = model;
    c->stepping = (int)(a & 0xf);
    put_bit(&c->cpuid, cx, 12, GM_CPU_FMA);
    put_bit(&c->cpuid, cx, 29, GM_CPU_F16C);
    osxsave = cx >> 27 & 1u;
  }
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, cx, d);
    uint32_t max_sub = a;
    put_bit(&c->cpuid, b, 5, GM_CPU_AVX2);
    put_bit(&c->cpuid, b, 16, GM_CPU_AVX512F);
    put_bit(&c->cpuid, b, 17, GM_CPU_AVX512DQ);
    put_bit(&c->cpuid, b, 30, GM_CPU_AVX512BW);
    put_bit(&c->cpuid, b, 31, GM_CPU_AVX512VL);
    put_bit(&c->cpuid, d, 22, GM_CPU_AMX_BF16);
    put_bit(&c->cpuid, d, 23, GM_CPU_AVX512_FP16);
    put_bit(&c->cpuid, d, 24, GM_CPU_AMX_TILE);
    if (max_sub >= 1) {
      __cpuid_count(7, 1, a, b, cx, d);
      put_bit(&c->cpuid, a, 5, GM_CPU_AVX512_BF16);
      put_bit(&c->cpuid, a, 21, GM_CPU_AMX_FP16);
    }
  }
  if (osxsave) {
    uint64_t x = xcr0();
    c->os_avx = (x & 0x6) == 0x6;
    c->os_avx512 = c->os_avx && (x & 0xe0) == 0xe0;
    c->os_amx = (x & 0x60000) == 0x60000;
  }
  uint32_t ext = __get_cpuid_max(0x80000000u, NULL);
  if (ext >= 0x80000004u) {
    uint32_t r[12];
    for (uint32_t i = 0; i < 3; i++) __cpuid(0x80000002u + i, r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
    memcpy(c->brand, r, 48);
    c->brand[48] = '\0';
    size_t s = 0, n = strlen(c->brand); // the string is padded with leading or trailing spaces on some CPUs
    while (s < n && c->brand[s] == ' ') s++;
    while (n > s && c->brand[n - 1] == ' ') n--;
    memmove(c->brand, c->brand + s, n - s);
    c->brand[n - s] = '\0';
  }
#endif
  const gm_cpu_features ymm = GM_CPU_AVX2 | GM_CPU_FMA | GM_CPU_F16C; // VEX-encoded: need YMM state
  const gm_cpu_features zmm = GM_CPU_AVX512F | GM_CPU_AVX512DQ | GM_CPU_AVX512BW | GM_CPU_AVX512VL |
                              GM_CPU_AVX512_BF16 | GM_CPU_AVX512_FP16;
  const gm_cpu_features tiles = GM_CPU_AMX_TILE | GM_CPU_AMX_BF16 | GM_CPU_AMX_FP16;
  c->features = c->cpuid & ((c->os_avx ? ymm : 0) | (c->os_avx512 ? zmm : 0) | (c->os_amx ? tiles : 0));
  c->simd = (c->features & GM_CPU_LEVEL_AVX512) == GM_CPU_LEVEL_AVX512 ? GM_SIMD_AVX512
            : (c->features & GM_CPU_LEVEL_AVX2) == GM_CPU_LEVEL_AVX2  ? GM_SIMD_AVX2
                                                                      : GM_SIMD_SCALAR;
}

const gm_cpu *gm_cpu_host(void) {
  pthread_once(&host_once, read_host);
  return &host;
}

bool gm_cpu_has(gm_cpu_features f) { return (gm_cpu_host()->features & f) == f; }

// GPTMEG_SIMD as a level, or -1 for a value that names none.
static int simd_level_of_env(const char **value) {
  const char *v = getenv("GPTMEG_SIMD");
  *value = v;
  if (!v || !*v || !strcmp(v, "avx512")) return GM_SIMD_AVX512;
  if (!strcmp(v, "avx2")) return GM_SIMD_AVX2;
  if (!strcmp(v, "scalar")) return GM_SIMD_SCALAR;
  return -1;
}

// The cap as read from the environment, or -1 before the first read (and after a reload). The
// kernels ask for the level per row in places, and getenv walks the whole environment each time.
static atomic_int simd_cap_cached = -1;

gm_simd_level gm_simd_cap(void) {
  int c = atomic_load_explicit(&simd_cap_cached, memory_order_relaxed);
  if (c >= 0) return (gm_simd_level)c;
  const char *v;
  int lvl = simd_level_of_env(&v);
  c = lvl < 0 ? GM_SIMD_AVX512 : lvl;
  atomic_store_explicit(&simd_cap_cached, c, memory_order_relaxed);
  return (gm_simd_level)c;
}

void gm_simd_cap_reload(void) { atomic_store_explicit(&simd_cap_cached, -1, memory_order_relaxed); }

int gm_simd_cap_check(void) {
  const char *v;
  if (simd_level_of_env(&v) >= 0) return 0;
  return gm_fail("GPTMEG_SIMD='%s' is not one of scalar, avx2, avx512 (or empty for no cap)", v);
}

gm_simd_level gm_cpu_simd(void) {
  gm_simd_level own = gm_cpu_host()->simd, cap = gm_simd_cap();
  return cap < own ? cap : own;
}

int gm_cpu_describe(char *buf, size_t size) {
  const gm_cpu *c = gm_cpu_host();
  char feats[256] = "", *p = feats;
  for (int i = 0; i < GM_CPU_N_FEATURES; i++) {
    gm_cpu_features bit = 1u << i;
    if (!(c->cpuid & bit)) continue;
    size_t left = sizeof feats - (size_t)(p - feats);
    int k = snprintf(p, left, "%s%s%s", p == feats ? "" : " ", feature_names[i], c->features & bit ? "" : "(off)");
    if (k < 0 || (size_t)k >= left) break;
    p += k;
  }
  const char *env = getenv("GPTMEG_SIMD");
  return snprintf(buf, size,
                  "cpu:          %s\n"
                  "vendor:       %s (%s), family %d, model %d (0x%x), stepping %d\n"
                  "features:     %s\n"
                  "os state:     avx %s, avx-512 %s, amx tiles %s (xcr0)\n"
                  "simd:         %s (this cpu %s, GPTMEG_SIMD %s)\n",
                  c->brand[0] ? c->brand : "(no brand string)",
                  c->vendor[0] ? c->vendor : "?",
                  c->vendor_id == GM_CPU_VENDOR_INTEL ? "intel" : c->vendor_id == GM_CPU_VENDOR_AMD ? "amd" : "other",
                  c->family, c->model, c->model, c->stepping, feats[0] ? feats : "(none)", c->os_avx ? "on" : "off",
                  c->os_avx512 ? "on" : "off", c->os_amx ? "on" : "off", gm_simd_level_name(gm_cpu_simd()),
                  gm_simd_level_name(c->simd), env && *env ? env : "unset");
}
