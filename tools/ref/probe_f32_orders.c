// The candidate orders for tools/ref/probe_f32_mt.py --orders: reads DIR/a.bin (M x K), DIR/bt.bin
// (op(B) transposed, N x K), DIR/bias.bin (N floats), DIR/torch.bin (torch's C, M x N), and prints
// the names of the candidate orders whose bits equal torch's at every output:
//   P<p>  K in p balanced parts (the first K % p one longer), each summed in blocks of 384 then the
//         rest, one FMA chain from zero per block, blocks added in order;
//   H<p>  the same parts in GM_F32_BLOCKS_INTEL_HALVES's blocks (a rest below 768 in two halves);
//   S<p>  the same parts in GM_F32_BLOCKS_INTEL_SPLIT's blocks (a part below 768 in two halves);
// with p = 1 the one part starts from the bias; with p > 1, C = (bias + part 0) + (((part 1 +
// part 2) + ...) + part p-1), gm_f32_torch_kparts's cut; and p, h, s<p> (p > 1): the same parts and
// blocks in gm_f32_torch_kgroups's sum (the rows in p balanced groups, group g adds part g right
// after part 0, then the others in order), with an r suffix where the parts are ceil(K / p)
// rounded up to a multiple of 4 (the last the rest). Every product is an explicit fmaf.
//   probe_f32_orders DIR M K N PMAX
// Build (from the repo root, after building gptmeg_lib in build-mine; one line):
//   gcc -O2 -ffp-contract=off -Iinclude -fopenmp tools/ref/probe_f32_orders.c build-mine/libgptmeg.a -lsleef
//       -lmpfr -lgmp -lcjson -lpcre2-8 -lz -lm -ldl -o build-mine/probe_f32_orders
#include "gptmeg/kernels.h"
#include "probe_io.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The candidates' blocks: gptmeg's own schedules.
static const gm_f32_blocks KINDS[3] = {GM_F32_BLOCKS_INTEL_384, GM_F32_BLOCKS_INTEL_HALVES, GM_F32_BLOCKS_INTEL_SPLIT};

// One part's sum: its blocks added in order, from *start (or from the first block).
static float part_sum(const float *a, const float *b, int len, gm_f32_blocks kind, const float *start) {
  float c = start ? *start : 0.0f;
  for (int k0 = 0, k1; k0 < len; k0 = k1) {
    k1 = gm_f32_torch_block_end_for(kind, len, k0);
    float acc = 0.0f;
    for (int k = k0; k < k1; k++) acc = fmaf(a[k], b[k], acc);
    c = k0 == 0 && !start ? acc : c + acc;
  }
  return c;
}

static int part_start(int K, int p, int i) { return i * (K / p) + (i < K % p ? i : K % p); }

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: probe_f32_orders DIR M K N PMAX\n");
    return 2;
  }
  const char *dir = argv[1];
  const int M = atoi(argv[2]), K = atoi(argv[3]), N = atoi(argv[4]), pmax = atoi(argv[5]);
  float *A = probe_read_floats(dir, "a.bin", (size_t)M * K), *Bt = probe_read_floats(dir, "bt.bin", (size_t)N * K);
  float *bias = probe_read_floats(dir, "bias.bin", (size_t)N), *T = probe_read_floats(dir, "torch.bin", (size_t)M * N);
  const char names[3] = {'P', 'H', 'S'};
  for (int p = 1; p <= pmax; p++)
    for (int kind = 0; kind < 3; kind++) {
      bool same = true;
      for (int i = 0; i < M && same; i++)
        for (int j = 0; j < N && same; j++) {
          const float *a = A + (size_t)i * K, *b = Bt + (size_t)j * K;
          float c;
          if (p == 1) c = part_sum(a, b, K, KINDS[kind], bias + j);
          else {
            float rest = 0.0f;
            for (int q = 1; q < p; q++) {
              const int k0 = part_start(K, p, q), k1 = part_start(K, p, q + 1);
              const float s = part_sum(a + k0, b + k0, k1 - k0, KINDS[kind], NULL);
              rest = q == 1 ? s : rest + s;
            }
            c = part_sum(a, b, part_start(K, p, 1), KINDS[kind], bias + j) + rest;
          }
          same = memcmp(&c, T + (size_t)i * N + j, sizeof c) == 0;
        }
      if (same) printf("%c%d ", names[kind], p);
      // grouped: rows in p balanced groups; group g adds part g right after part 0, then the rest.
      // r = 0: balanced parts; r = 1: parts of ceil(K / p) rounded up to a multiple of 4
      for (int rnd = 0; rnd < 2; rnd++) {
        int cut[65];
        const int len = ((K + p - 1) / p + 3) / 4 * 4;
        for (int q = 0; q <= p && q <= 64; q++) cut[q] = rnd ? (q * len < K ? q * len : K) : part_start(K, p, q);
        same = p > 1 && p <= 64;
        for (int i = 0; i < M && same; i++) {
          int g = 0;
          while (g + 1 < p && i >= part_start(M, p, g + 1)) g++;
          for (int j = 0; j < N && same; j++) {
            const float *a = A + (size_t)i * K, *b = Bt + (size_t)j * K;
            float c = part_sum(a, b, cut[1], KINDS[kind], bias + j);
            for (int r = 0; r < p; r++) {
              const int q = r == 0 ? g : r;
              if (q == 0 || (r > 0 && q == g) || cut[q + 1] <= cut[q]) continue;
              c = c + part_sum(a + cut[q], b + cut[q], cut[q + 1] - cut[q], KINDS[kind], NULL);
            }
            same = memcmp(&c, T + (size_t)i * N + j, sizeof c) == 0;
          }
        }
        if (same) printf("%c%d%s ", names[kind] + 32, p, rnd ? "r" : "");
      }
    }
  printf("\n");
  free(A);
  free(Bt);
  free(bias);
  free(T);
  return 0;
}
