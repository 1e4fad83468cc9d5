// The gptmeg side of tools/ref/probe_f32_mt.py --gm: reads DIR/a.bin (M x K), DIR/b.bin (K x N, or
// N x K with trans), DIR/bias.bin (N floats, when bias is 1), runs gm_matmul_f32_torch_mt under the
// torch CPU target TARGET as torch computes it on torch_threads threads (the work on 2 threads),
// writes DIR/gm_c.bin (M x N).
//   probe_f32_mt DIR M K N trans bias torch_threads TARGET
// Build (from the repo root, after building gptmeg_lib in build-h):
//   gcc -O2 -Iinclude -fopenmp tools/ref/probe_f32_mt.c build-h/libgptmeg.a -lsleef -lmpfr -lgmp
//       -lcjson -lpcre2-8 -lm -o build-h/probe_f32_mt   (one line)
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"
#include "probe_io.h"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  if (argc != 9) { fprintf(stderr, "usage: probe_f32_mt DIR M K N trans bias torch_threads TARGET\n"); return 2; }
  const char *d = argv[1];
  int M = atoi(argv[2]), K = atoi(argv[3]), N = atoi(argv[4]), tr = atoi(argv[5]), hb = atoi(argv[6]);
  int tt = atoi(argv[7]);
  gm_torch_target t;
  if (gm_torch_target_parse(argv[8], &t)) { fprintf(stderr, "unknown target %s\n", argv[8]); return 2; }
  gm_torch_target_set(t);
  float *a = probe_read_floats(d, "a.bin", (size_t)M * K), *b = probe_read_floats(d, "b.bin", (size_t)K * N), *bias = hb ? probe_read_floats(d, "bias.bin", N) : NULL;
  float *c = malloc((size_t)M * N * 4);
  if (!c || gm_matmul_f32_torch_mt(a, K, false, b, tr ? K : N, tr, bias, 1.0f, c, N, M, N, K, 2, tt)) return 1;
  probe_write_floats(d, "gm_c.bin", c, (size_t)M * N);
  free(a); free(b); free(bias); free(c);
  return 0;
}
