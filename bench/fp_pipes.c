// bench_fp_pipes: how many 512-bit floating-point operations one core issues per cycle, by kind
// and in the pairs the accurate f32 kernels mix, and those kernels' cycles per 16 values, all in
// the same run. The evidence behind docs/performance.md's account of the 1-thread speed targets:
// a kernel's cycles per vector are bounded below by its operations divided by what this prints.
//
// Each rate: eight independent chains per kind (so latency does not count), a loop of inline
// assembly, best of several runs. The clock is measured by a chain of dependent integer multiplies
// (three cycles each on x86-64 cores since Sandy Bridge and Zen). x86-64 with AVX-512 only;
// elsewhere it says so and exits 0.
#include "gptmeg/core.h"
#include "gptmeg/cpu.h"
#include "gptmeg/gelu.h"

#include <stdio.h>
#include <stdlib.h>

#if defined(__x86_64__)

enum { RATE_ITERS = 20000000, RATE_RUNS = 3 };

// One body per measured kind: eight chains zmm0-7 of the first operation, zmm8-15 of the second;
// zmm29-31 hold constants (zeros, so nothing overflows or turns subnormal).
#define CHAINS(op) op(0) op(1) op(2) op(3) op(4) op(5) op(6) op(7)
#define FMA(i) "vfmadd231ps %%zmm29, %%zmm30, %%zmm" #i "\n\t"
#define ADD_B(i) "vaddps %%zmm29, %%zmm1" #i ", %%zmm1" #i "\n\t"
#define ADD(i) "vaddps %%zmm29, %%zmm" #i ", %%zmm" #i "\n\t"
#define FMA_ADD_B(i) FMA(i) ADD_B(i)
#define PERM2(i) "vpermt2ps %%zmm29, %%zmm31, %%zmm" #i "\n\t"
#define PERM2_B(i) "vpermt2ps %%zmm29, %%zmm31, %%zmm1" #i "\n\t"
#define PERM_B(i) "vpermps %%zmm29, %%zmm31, %%zmm1" #i "\n\t"
#define DIV(i) "vdivps %%zmm29, %%zmm30, %%zmm" #i "\n\t"
#define DIV_B(i) "vdivps %%zmm29, %%zmm30, %%zmm1" #i "\n\t"
#define VDP(i) "vdpbf16ps %%zmm29, %%zmm30, %%zmm" #i "\n\t"
#define VDP_B(i) "vdpbf16ps %%zmm29, %%zmm30, %%zmm1" #i "\n\t"
#define SCALEF_B(i) "vscalefps %%zmm29, %%zmm1" #i ", %%zmm1" #i "\n\t"
#define CLOBBERS                                                                                              \
  "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
      "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "cc" /* the _B chains are zmm10-17 */
#define RATE_LOOP(body)                                                                                        \
  __asm__ volatile("vpxord %%zmm29, %%zmm29, %%zmm29\n\tvpxord %%zmm30, %%zmm30, %%zmm30\n\t"                \
                   "vpxord %%zmm31, %%zmm31, %%zmm31\n\tmov %0, %%rcx\n\t1:\n\t" body "dec %%rcx\n\tjnz 1b" \
                   :                                                                                          \
                   : "r"((long)RATE_ITERS)                                                                    \
                   : CLOBBERS, "xmm29", "xmm30", "xmm31")

static void loop_fma(void) { RATE_LOOP(CHAINS(FMA)); }
static void loop_add(void) { RATE_LOOP(CHAINS(ADD)); }
static void loop_fma_add(void) { RATE_LOOP(CHAINS(FMA) CHAINS(ADD_B)); }
static void loop_fma_add_alternating(void) { RATE_LOOP(CHAINS(FMA_ADD_B)); }
static void loop_perm2(void) { RATE_LOOP(CHAINS(PERM2)); }
static void loop_fma_perm2(void) { RATE_LOOP(CHAINS(FMA) CHAINS(PERM2_B)); }
static void loop_fma_perm(void) { RATE_LOOP(CHAINS(FMA) CHAINS(PERM_B)); }
static void loop_add_scalef(void) { RATE_LOOP(CHAINS(ADD) CHAINS(SCALEF_B)); }
static void loop_div(void) { RATE_LOOP(CHAINS(DIV)); }
static void loop_fma_div(void) { RATE_LOOP(CHAINS(FMA) CHAINS(DIV_B)); }
// sixteen chains, so that a long latency cannot pass for the issue rate (AVX512-BF16 only, checked first)
static void loop_vdp(void) { RATE_LOOP(CHAINS(VDP) CHAINS(VDP_B)); }

// Cycles per second: a chain of dependent integer multiplies, 4 per iteration, 3 cycles each (on
// Intel since Sandy Bridge and on AMD since Zen). Not adds: Golden Cove (Sapphire Rapids, Alder
// Lake) folds a chain of add-immediates at rename, four a cycle, so an add chain measured this core
// at 16 GHz, four times its clock.
static double clock_hz(void) {
  double best = 1e30;
  for (int run = 0; run < RATE_RUNS; run++) {
    long x = 1;
    double t = gm_now_s();
    for (long i = 0; i < 20000000L; i++)
      __asm__ volatile("imul $1, %0, %0\n\timul $1, %0, %0\n\timul $1, %0, %0\n\timul $1, %0, %0" : "+r"(x));
    t = gm_now_s() - t;
    if (t < best) best = t;
  }
  return 12.0 * 20000000.0 / best;
}

static double best_seconds(void (*loop)(void)) {
  double best = 1e30;
  for (int run = 0; run < RATE_RUNS; run++) {
    double t = gm_now_s();
    loop();
    t = gm_now_s() - t;
    if (t < best) best = t;
  }
  return best;
}

typedef struct {
  const char *kind;
  void (*loop)(void);
  int ops_per_iter;
} rate_case;

// Best-of time of one call of the kernel on n values, in seconds.
static double kernel_seconds(gm_gelu_spec s, int bwd, const float *x, const float *dy, float *out, size_t n) {
  double best = 1e30;
  for (int run = 0; run < 200; run++) {
    double t = gm_now_s();
    int rc = bwd ? gm_gelu_bwd(s, GM_F32, x, dy, out, n, 1) : gm_gelu_fwd(s, GM_F32, x, out, n, 1);
    t = gm_now_s() - t;
    if (rc != 0) return -1;
    if (t < best) best = t;
  }
  return best;
}

int main(void) {
  if (!__builtin_cpu_supports("avx512f")) {
    printf("bench_fp_pipes: skipped (this CPU has no AVX-512)\n");
    return 0;
  }
  double hz = clock_hz();
  printf("512-bit operations issued per cycle, one core (clock %.2f GHz by a dependent imul chain)\n", hz / 1e9);
  printf("  %-34s %9s\n", "kind (8 independent chains each)", "ops/cycle");
  const rate_case cases[] = {
      {"FMA (vfmadd231ps)", loop_fma, 8},
      {"add (vaddps)", loop_add, 8},
      {"FMA + add, 1:1, eight of each", loop_fma_add, 16},
      {"FMA + add, 1:1, alternating", loop_fma_add_alternating, 16},
      {"two-source permute (vpermt2ps)", loop_perm2, 8},
      {"FMA + vpermt2ps, 1:1", loop_fma_perm2, 16},
      {"FMA + one-source permute (vpermps)", loop_fma_perm, 16},
      {"add + vscalefps, 1:1", loop_add_scalef, 16},
      {"divide (vdivps)", loop_div, 8},
      {"FMA + vdivps, 1:1", loop_fma_div, 16},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    double t = best_seconds(cases[c].loop);
    printf("  %-34s %9.2f\n", cases[c].kind, (double)RATE_ITERS * cases[c].ops_per_iter / (t * hz));
  }
  // bf16 pairs (32 multiply-adds per instruction, the intel-avx512-bf16/-fp16 and zen4 bf16 GEMM's)
  if (gm_cpu_has(GM_CPU_AVX512_BF16)) {
    double t = best_seconds(loop_vdp);
    printf("  %-34s %9.2f\n", "bf16 dot product (vdpbf16ps), x16", (double)RATE_ITERS * 16 / (t * hz));
  }

  enum { N = 16384 }; // 64 KiB per array: in L2, so the kernels' arithmetic is what is timed
  float *x = malloc(N * sizeof *x), *dy = malloc(N * sizeof *dy), *out = malloc(N * sizeof *out);
  if (!x || !dy || !out) {
    fprintf(stderr, "bench_fp_pipes: out of memory\n");
    return 1;
  }
  gm_rng r;
  gm_rng_seed(&r, 1);
  for (size_t i = 0; i < N; i++) {
    x[i] = (float)(3.0 * gm_rng_normal(&r));
    dy[i] = (float)gm_rng_normal(&r);
  }
  printf("accurate f32 kernels, %d values of N(0, 3^2), one thread: cycles per 16 values\n", N);
  const char *specs[] = {"gelu_new:accurate", "gelu:accurate", "quick_gelu:accurate"};
  for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
    gm_gelu_spec s;
    if (gm_gelu_spec_parse(specs[k], &s) != 0) return 1;
    for (int bwd = 0; bwd < 2; bwd++) {
      double t = kernel_seconds(s, bwd, x, dy, out, N);
      if (t < 0) {
        fprintf(stderr, "bench_fp_pipes: %s failed\n", specs[k]);
        return 1;
      }
      printf("  %-22s %s %6.1f\n", specs[k], bwd ? "bwd" : "fwd", t * hz / (N / 16.0));
    }
  }
  free(x);
  free(dy);
  free(out);
  return 0;
}

#else
int main(void) {
  printf("bench_fp_pipes: skipped (x86-64 only)\n");
  return 0;
}
#endif
