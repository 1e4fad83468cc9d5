// gptmeg bench gemm: GFLOP/s of gptmeg's f32 matmul (torch's order, gm_matmul_f32_torch) on the
// products of one GPT-2 124M training step, against the FMA peak of the same cores measured in the
// same run. torch's rate on the same shapes: bench/gemm_vs_torch.py (it runs this command).
#include "cli/cli.h"
#include "gptmeg/kernels.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *bench_gemm_help =
    "usage: gptmeg bench gemm [--tokens M] [--square N] [--threads T] [--rounds R] [--drivers] [--json]\n"
    "\n"
    "Times gptmeg's f32 matmul (torch's summation order under the active torch CPU target) on the\n"
    "products of a GPT-2 124M training step at M tokens (default 256: batch x sequence): the\n"
    "forward's linears (A [M, K] @ W, the lm_head against wte^T), the backward's dX (dY @ W^T) and\n"
    "dW (x^T @ dY, with x^T contiguous), and a square N x N x N product (default 2048; 0: none).\n"
    "Prints GFLOP/s (2 M N K per product, best of R rounds, default 3, each at least 0.2 s,\n"
    "interleaved across shapes) and its share of the f32 FMA peak of T cores (default 1) measured in\n"
    "the same run (gm_f32_fma_peak_gflops).\n"
    "--drivers also times the other AVX-512 driver (GPTMEG_F32_GEMM=strip beside the default; same\n"
    "bits) in the same rounds.\n"
    "--json prints one record per shape: name, m, n, k, trans_b, threads, gflops, peak_gflops,\n"
    "pct_of_peak (and strip_gflops with --drivers).\n";

typedef struct {
  const char *name;
  int m, n, k; // m or k < 0: the token count
  bool trans_b;
} gemm_shape;

// One training step's f32 products (GPT-2 124M: n_embd 768, 3 x 768, 4 x 768, vocabulary 50257; the
// tied lm_head's dX is dlogits @ wte, its dW dlogits^T @ x).
static const gemm_shape SHAPES[] = {
    {"c_attn fwd", -1, 2304, 768, false},  {"attn c_proj fwd", -1, 768, 768, false}, {"c_fc fwd", -1, 3072, 768, false},
    {"mlp c_proj fwd", -1, 768, 3072, false}, {"lm_head fwd", -1, 50257, 768, true}, {"c_attn dX", -1, 768, 2304, true},
    {"mlp c_proj dX", -1, 3072, 768, true}, {"c_fc dX", -1, 768, 3072, true},     {"c_attn dW", 768, 2304, -1, false},
    {"mlp c_proj dW", 3072, 768, -1, false}, {"c_fc dW", 768, 3072, -1, false},
    {"lm_head dX", -1, 768, 50257, false},   {"lm_head dW", 50257, 768, -1, false}};
enum { N_SHAPES = sizeof SHAPES / sizeof SHAPES[0] };

typedef struct {
  const float *A, *B;
  float *C;
  int m, n, k, threads;
  bool trans_b;
} gemm_ctx;

// Best time of one product over at least 3 runs and min_s seconds (under the driver in force).
static double time_product(const gemm_ctx *c, double min_s) {
  double best = 1e30, start = gm_now_s();
  int reps = 0;
  do {
    double t0 = gm_now_s();
    gm_matmul_f32_torch(c->A, c->k, c->B, c->trans_b ? c->k : c->n, c->trans_b, NULL, 1.0f, c->C, c->n, c->m, c->n, c->k,
                        c->threads);
    double dt = gm_now_s() - t0;
    if (dt < best) best = dt;
    reps++;
  } while ((gm_now_s() - start < min_s || reps < 3) && reps < 10000);
  return best;
}

static void fill(float *x, size_t n, uint64_t seed) {
  gm_rng r;
  gm_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i++) x[i] = (float)(0.5 * gm_rng_normal(&r));
}

int cmd_bench_gemm(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { fputs(bench_gemm_help, stdout); return CLI_OK; }
  long tokens = 256, square = 2048, threads = 1, rounds = 3;
  bool json = false, drivers = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    long *dst = !strcmp(a, "--tokens") ? &tokens : !strcmp(a, "--square") ? &square : !strcmp(a, "--threads") ? &threads
              : !strcmp(a, "--rounds") ? &rounds : NULL;
    if (dst) {
      long lo = dst == &square ? 0 : 1, hi = dst == &threads ? 1024 : dst == &rounds ? 100 : 8192;
      if (!(v = cli_value("bench gemm", argc, argv, &i)) || cli_parse_long("bench gemm", a, v, lo, hi, dst)) return CLI_USAGE;
    } else if (!strcmp(a, "--json")) json = true;
    else if (!strcmp(a, "--drivers")) drivers = true;
    else return cli_usage_error("bench gemm", "unknown option '%s'", a);
  }
  int n_shapes = N_SHAPES + (square > 0);
  gemm_shape shapes[N_SHAPES + 1];
  size_t max_a = 0, max_b = 0, max_c = 0;
  for (int s = 0; s < n_shapes; s++) {
    shapes[s] = s < N_SHAPES ? SHAPES[s] : (gemm_shape){"square", (int)square, (int)square, (int)square, false};
    if (shapes[s].m < 0) shapes[s].m = (int)tokens;
    if (shapes[s].k < 0) shapes[s].k = (int)tokens;
    size_t m = (size_t)shapes[s].m, n = (size_t)shapes[s].n, k = (size_t)shapes[s].k;
    if (m * k > max_a) max_a = m * k;
    if (n * k > max_b) max_b = n * k;
    if (m * n > max_c) max_c = m * n;
  }
  float *A = malloc(max_a * sizeof(float)), *B = malloc(max_b * sizeof(float)), *C = malloc(max_c * sizeof(float));
  if (!A || !B || !C) { free(A); free(B); free(C); return cli_fail("out of memory for the benchmark's matrices"); }
  fill(A, max_a, 1);
  fill(B, max_b, 2);
  const char *env = getenv("GPTMEG_F32_GEMM");
  char *saved = env ? strdup(env) : NULL;
  double peak = gm_f32_fma_peak_gflops((int)threads);
  double best[N_SHAPES + 1][2];
  for (int s = 0; s < n_shapes; s++) best[s][0] = best[s][1] = 1e30;
  for (int r = 0; r < rounds; r++)
    for (int s = 0; s < n_shapes; s++) {
      gemm_ctx c = {A, B, C, shapes[s].m, shapes[s].n, shapes[s].k, (int)threads, shapes[s].trans_b};
      for (int d = 0; d < (drivers ? 2 : 1); d++) {
        if (d == 1) setenv("GPTMEG_F32_GEMM", "strip", 1);
        double t = time_product(&c, 0.2);
        if (d == 1) {
          if (saved) setenv("GPTMEG_F32_GEMM", saved, 1);
          else unsetenv("GPTMEG_F32_GEMM");
        }
        if (t < best[s][d]) best[s][d] = t;
      }
    }
  free(saved);
  cJSON *records = json ? cJSON_CreateArray() : NULL;
  if (!json) {
    printf("f32 GEMM, gptmeg (torch's order), %ld thread%s; FMA peak of %ld core%s measured in this run: %.1f GF/s\n",
           threads, threads > 1 ? "s" : "", threads, threads > 1 ? "s" : "", peak);
    printf("%-16s %6s %6s %6s %-4s %9s %7s%s\n", "product", "M", "N", "K", "B", "GF/s", "% peak", drivers ? "  strip GF/s" : "");
  }
  double sum_flops = 0, sum_t = 0;
  for (int s = 0; s < n_shapes; s++) {
    double flops = 2.0 * shapes[s].m * shapes[s].n * shapes[s].k, gf = flops / best[s][0] * 1e-9;
    double gf_strip = drivers ? flops / best[s][1] * 1e-9 : 0;
    if (s < N_SHAPES) sum_flops += flops, sum_t += best[s][0];
    if (json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "name", shapes[s].name);
      cJSON_AddNumberToObject(o, "m", shapes[s].m);
      cJSON_AddNumberToObject(o, "n", shapes[s].n);
      cJSON_AddNumberToObject(o, "k", shapes[s].k);
      cJSON_AddBoolToObject(o, "trans_b", shapes[s].trans_b);
      cJSON_AddNumberToObject(o, "threads", (double)threads);
      cJSON_AddNumberToObject(o, "gflops", gf);
      cJSON_AddNumberToObject(o, "peak_gflops", peak);
      cJSON_AddNumberToObject(o, "pct_of_peak", peak > 0 ? 100 * gf / peak : 0);
      if (drivers) cJSON_AddNumberToObject(o, "strip_gflops", gf_strip);
      cJSON_AddItemToArray(records, o);
    } else {
      printf("%-16s %6d %6d %6d %-4s %9.1f %6.1f%%", shapes[s].name, shapes[s].m, shapes[s].n, shapes[s].k,
             shapes[s].trans_b ? "B^T" : "B", gf, peak > 0 ? 100 * gf / peak : 0);
      if (drivers) printf("  %10.1f", gf_strip);
      printf("\n");
    }
  }
  if (json) {
    char *p = cJSON_Print(records);
    puts(p);
    free(p);
    cJSON_Delete(records);
  } else {
    printf("training step's products together: %.1f GF/s (%.1f%% of peak)\n", sum_flops / sum_t * 1e-9,
           peak > 0 ? 100 * sum_flops / sum_t * 1e-9 / peak : 0);
  }
  free(A); free(B); free(C);
  return CLI_OK;
}
