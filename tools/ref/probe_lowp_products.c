// The gptmeg side of tools/ref/check_lowp_products.py: reads DIR/a.bin (A [M, K], or A^T [K, M]
// with trans_a), DIR/b.bin (B [K, N], or B^T [N, K] with trans_b) and DIR/bias.bin (N floats, when
// bias is 1), all holding bf16 or f16 values as f32; runs the product under the torch CPU target
// TARGET as torch computes it on `threads` threads (bf16: gm_matmul_bf16, _ta, or _slice of a
// batch of `batch` slices when batch > 0; f16: gm_matmul_f16_torch, or gm_matmul_f16_onednn for
// A^T); writes DIR/gm_c.bin (M x N f32, not rounded).
//   probe_lowp_products DIR DTYPE M K N trans_a trans_b bias threads batch TARGET
// Build (from the repo root, after building gptmeg_lib in build/):
//   gcc -O2 -Iinclude -fopenmp tools/ref/probe_lowp_products.c build/libgptmeg.a -lsleef -lmpfr -lgmp
//       -lcjson -lpcre2-8 -lz -lm -ldl -o build/probe_lowp_products   (one line)
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"
#include "probe_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 12) {
    fprintf(stderr, "usage: probe_lowp_products DIR DTYPE M K N trans_a trans_b bias threads batch TARGET\n");
    return 2;
  }
  const char *d = argv[1];
  const bool f16 = !strcmp(argv[2], "f16");
  if (!f16 && strcmp(argv[2], "bf16")) {
    fprintf(stderr, "probe_lowp_products: dtype %s is not bf16 or f16\n", argv[2]);
    return 2;
  }
  const int M = atoi(argv[3]), K = atoi(argv[4]), N = atoi(argv[5]), ta = atoi(argv[6]), tb = atoi(argv[7]);
  const int hb = atoi(argv[8]), th = atoi(argv[9]), batch = atoi(argv[10]);
  gm_torch_target t;
  if (gm_torch_target_parse(argv[11], &t)) {
    fprintf(stderr, "probe_lowp_products: unknown target %s\n", argv[11]);
    return 2;
  }
  gm_torch_target_set(t);
  float *a = probe_read_floats(d, "a.bin", (size_t)M * K), *b = probe_read_floats(d, "b.bin", (size_t)K * N), *bias = hb ? probe_read_floats(d, "bias.bin", N) : NULL;
  float *c = malloc((size_t)M * N * 4);
  if (!c) return 1;
  const int lda = ta ? M : K, ldb = tb ? K : N;
  if (f16 && ta) gm_matmul_f16_onednn(a, lda, true, b, ldb, tb, bias, 1.0f, c, N, M, N, K, th);
  else if (f16) gm_matmul_f16_torch(a, lda, b, ldb, tb, bias, 1.0f, c, N, M, N, K, th);
  else if (batch > 0) gm_matmul_bf16_slice(a, lda, ta, b, ldb, tb, bias, 1.0f, c, N, M, N, K, 1, batch, th);
  else if (ta) gm_matmul_bf16_ta(a, lda, b, ldb, tb, bias, 1.0f, c, N, M, N, K, th);
  else gm_matmul_bf16(a, lda, b, ldb, tb, bias, 1.0f, c, N, M, N, K, th);
  probe_write_floats(d, "gm_c.bin", c, (size_t)M * N);
  free(a);
  free(b);
  free(bias);
  free(c);
  return 0;
}
