// gm_f32_fma_peak_gflops: the f32 FMA rate a core reaches at the kernels' SIMD level, the ceiling
// `gptmeg bench gemm` reports the GEMM against. Twelve independent FMA chains (matmul_peak_*.c) for
// about 50 ms, best of five; on `threads` threads at once, their rates summed.
#include "gptmeg/core.h"
#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"

#include <omp.h>

#include "kernels/matmul/matmul_isa.h"

static volatile float sink; // keeps the chains' result alive

double gm_f32_fma_peak_gflops(int threads) {
  gm_simd_level isa = gm_cpu_simd();
  if (isa == GM_SIMD_SCALAR) return 0.0;
  if (threads < 1) threads = 1;
  const int lanes = isa == GM_SIMD_AVX512 ? 16 : 8;
  const long iters = 2000000; // 24 M FMA instructions: about 5 ms at two a cycle
  double total = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : total) if (threads > 1)
  {
    double best = 1e30;
    for (int run = 0; run < 5; run++) {
      double t = gm_now_s();
      for (int rep = 0; rep < 10; rep++) sink = isa == GM_SIMD_AVX512 ? gm_fma_chains_avx512(iters) : gm_fma_chains_avx2(iters);
      t = gm_now_s() - t;
      if (t < best) best = t;
    }
    total += 10.0 * iters * 12 * lanes * 2 / best * 1e-9;
  }
  return total;
}
