// gptmeg bench act: throughput of the GELU kernels against memcpy bandwidth measured in the same
// run. `bench model` lives in cmd_bench_model.c (cmd_bench_model, declared in cli.h).
#include "cli/cli.h"
#include "gptmeg/gelu.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *bench_act_help =
    "usage: gptmeg bench act [--n N] [--threads T] [--spec SPEC]... [--dtype DT]... [--all] [--rounds R]\n"
    "                        [--json]\n"
    "\n"
    "Times every variant:mode:dtype forward and backward at sizes from L1-resident to 2^26 elements\n"
    "(or only --n N), and memcpy of the same bytes in the same run, on one thread and on T (the\n"
    "faster counts). Bytes moved: forward reads x and writes y; backward reads x and dy and writes\n"
    "dx. ratio_to_memcpy = GB/s / memcpy GB/s.\n"
    "Default specs: gelu, gelu_new, gelu_pytorch_tanh, gelu_megatron in accurate and torch-cpu\n"
    "modes; --all runs every variant in eager, fused, torch-cpu and accurate (exact is not timed).\n"
    "--rounds R (default 1) times each case R times, interleaved with memcpy and the other specs of\n"
    "the same size, and keeps each one's best (on a shared machine a slow spell then hits one round\n"
    "of every case, not all the rounds of one).\n"
    "--json prints a list of records: spec, dtype, direction, n, threads, melem_per_s, gb_per_s,\n"
    "memcpy_gb_per_s, ratio_to_memcpy.\n";

// Best-of time of fn over enough repetitions to fill ~min_s seconds.
typedef int (*bench_fn)(void *ctx);
static double best_time(bench_fn fn, void *ctx, double min_s, int *err) {
  double best = 1e30, start = gm_now_s();
  int reps = 0;
  do {
    double t0 = gm_now_s();
    if (fn(ctx)) { *err = 1; return 0; }
    double dt = gm_now_s() - t0;
    if (dt < best) best = dt;
    reps++;
  } while ((gm_now_s() - start < min_s || reps < 3) && reps < 1000);
  return best;
}

typedef struct {
  gm_gelu_spec spec;
  gm_dtype dt;
  int backward, threads;
  size_t n;
  void *x, *dy, *out;
} act_ctx;

static int run_act(void *p) {
  act_ctx *c = p;
  return c->backward ? gm_gelu_bwd(c->spec, c->dt, c->x, c->dy, c->out, c->n, c->threads)
                     : gm_gelu_fwd(c->spec, c->dt, c->x, c->out, c->n, c->threads);
}

// memcpy on `threads` threads, each copying one contiguous share (whole cache lines), as the kernels
// split their work. The baseline of a T-thread kernel is the faster of 1-thread and T-thread memcpy
// (on small arrays the threads' start costs more than they save, and the kernels stay on one).
typedef struct { void *dst; const void *src; size_t bytes; int threads; } copy_ctx;
static int run_copy(void *p) {
  copy_ctx *c = p;
  int t = c->threads > 1 ? c->threads : 1;
  size_t share = (c->bytes / (size_t)t + 63) & ~(size_t)63;
#pragma omp parallel for schedule(static) num_threads(t) if (t > 1)
  for (int k = 0; k < t; k++) {
    size_t off = (size_t)k * share;
    if (off < c->bytes) memcpy((char *)c->dst + off, (const char *)c->src + off, c->bytes - off < share ? c->bytes - off : share);
  }
  return 0;
}

static void fill_inputs(gm_dtype dt, void *buf, size_t n, uint64_t seed) {
  gm_rng r;
  gm_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i++) gm_store_f64(dt, buf, i, 3.0 * gm_rng_normal(&r));
}

static int bench_act(int argc, char **argv) {
  long n_only = 0, threads = gm_threads_default(), rounds = 1;
  bool json = false, all = false;
  gm_gelu_spec specs[GM_GELU_N_VARIANTS * GM_GELU_N_MODES];
  int nspecs = 0;
  gm_dtype dts[3];
  int ndts = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (!strcmp(a, "--json")) json = true;
    else if (!strcmp(a, "--all")) all = true;
    else if (!strcmp(a, "--n")) {
      if (!(v = cli_value("bench act", argc, argv, &i)) || cli_parse_long("bench act", a, v, 1, 1L << 30, &n_only)) return CLI_USAGE;
    } else if (!strcmp(a, "--threads")) {
      if (!(v = cli_value("bench act", argc, argv, &i)) || cli_parse_long("bench act", a, v, 1, 1024, &threads)) return CLI_USAGE;
    } else if (!strcmp(a, "--rounds")) {
      if (!(v = cli_value("bench act", argc, argv, &i)) || cli_parse_long("bench act", a, v, 1, 100, &rounds)) return CLI_USAGE;
    } else if (!strcmp(a, "--spec")) {
      if (!(v = cli_value("bench act", argc, argv, &i))) return CLI_USAGE;
      if (nspecs >= (int)(sizeof specs / sizeof specs[0])) return cli_usage_error("bench act", "too many --spec");
      if (gm_gelu_spec_parse(v, &specs[nspecs])) return cli_usage_error("bench act", "%s", gm_errmsg());
      nspecs++;
    } else if (!strcmp(a, "--dtype")) {
      if (!(v = cli_value("bench act", argc, argv, &i))) return CLI_USAGE;
      if (ndts >= 3) return cli_usage_error("bench act", "at most 3 --dtype");
      if (gm_dtype_parse(v, &dts[ndts]) || dts[ndts] == GM_F64) return cli_usage_error("bench act", "--dtype must be f32, f16 or bf16");
      ndts++;
    } else return cli_usage_error("bench act", "unknown option '%s'", a);
  }
  if (nspecs == 0) {
    if (all) {
      gm_gelu_mode modes[] = {GM_MODE_EAGER, GM_MODE_FUSED, GM_MODE_TORCH_CPU, GM_MODE_ACCURATE};
      for (int v = 0; v < GM_GELU_N_VARIANTS; v++)
        for (int m = 0; m < 4; m++) specs[nspecs++] = (gm_gelu_spec){(gm_gelu_variant)v, modes[m]};
    } else {
      gm_gelu_variant vs[] = {GM_GELU_ERF, GM_GELU_NEW, GM_GELU_PYTORCH_TANH, GM_GELU_MEGATRON};
      for (int v = 0; v < 4; v++) {
        specs[nspecs++] = (gm_gelu_spec){vs[v], GM_MODE_ACCURATE};
        specs[nspecs++] = (gm_gelu_spec){vs[v], GM_MODE_TORCH_CPU};
      }
    }
  }
  if (ndts == 0) { dts[0] = GM_F32; dts[1] = GM_F16; dts[2] = GM_BF16; ndts = 3; }
  size_t sizes_default[] = {4096, 1u << 16, 1u << 20, 1u << 25, 1u << 26};
  size_t sizes[5];
  int nsizes = 0;
  if (n_only) sizes[nsizes++] = (size_t)n_only;
  else for (int i = 0; i < 5; i++) sizes[nsizes++] = sizes_default[i];
  size_t nmax = 0;
  for (int i = 0; i < nsizes; i++) if (sizes[i] > nmax) nmax = sizes[i];

  // One set of buffers sized for the largest case (4-byte elements cover every dtype timed).
  size_t bytes_max = nmax * 4;
  void *x = aligned_alloc(64, bytes_max), *dy = aligned_alloc(64, bytes_max), *out = aligned_alloc(64, bytes_max);
  if (!x || !dy || !out) { free(x); free(dy); free(out); return cli_fail("bench act: cannot allocate 3 x %zu bytes", bytes_max); }
  memset(out, 0, bytes_max);

  cJSON *records = cJSON_CreateArray();
  if (!json)
    printf("%-28s %-5s %-4s %10s %3s %10s %8s %8s %7s\n", "spec", "dtype", "dir", "n", "thr", "Melem/s", "GB/s",
           "memcpy", "ratio");
  int rc = CLI_OK;
  for (int di = 0; di < ndts && rc == CLI_OK; di++) {
    gm_dtype dt = dts[di];
    size_t es = gm_dtype_size(dt);
    fill_inputs(dt, x, nmax, 1);
    fill_inputs(dt, dy, nmax, 2);
    for (int si = 0; si < nsizes && rc == CLI_OK; si++) {
      size_t n = sizes[si];
      double min_s = n >= (1u << 24) ? 0.5 : 0.15;
      for (int dir = 0; dir < 2 && rc == CLI_OK; dir++) {
        // memcpy of the bytes this direction moves: read (1 or 2 arrays), write one.
        size_t read_bytes = n * es * (dir ? 2 : 1), write_bytes = n * es;
        copy_ctx cc = {out, x, write_bytes, (int)threads}, cc1 = {out, x, write_bytes, 1};
        double tcopy = 1e30, t_of[GM_GELU_N_VARIANTS * GM_GELU_N_MODES];
        bool failed[GM_GELU_N_VARIANTS * GM_GELU_N_MODES] = {false};
        for (int k = 0; k < nspecs; k++) t_of[k] = 1e30;
        for (long r = 0; r < rounds; r++) {
          int err = 0;
          double tc = best_time(run_copy, &cc, min_s, &err);
          if (tc < tcopy) tcopy = tc;
          if (threads > 1 && (tc = best_time(run_copy, &cc1, min_s, &err)) < tcopy) tcopy = tc;
          for (int k = 0; k < nspecs; k++) {
            if (failed[k]) continue;
            act_ctx c = {specs[k], dt, dir, (int)threads, n, x, dy, out};
            double t = best_time(run_act, &c, min_s, &err);
            if (err) {
              char name[64];
              gm_gelu_spec_format(specs[k], name, sizeof name);
              fprintf(stderr, "gptmeg bench act: %s %s: %s\n", name, gm_dtype_name(dt), gm_errmsg());
              failed[k] = true;
              err = 0;
            } else if (t < t_of[k]) {
              t_of[k] = t;
            }
          }
        }
        double memcpy_gbs = 2.0 * (double)write_bytes / tcopy * 1e-9; // read + write of one array
        for (int k = 0; k < nspecs; k++) {
          if (failed[k]) continue;
          double t = t_of[k];
          char name[64];
          gm_gelu_spec_format(specs[k], name, sizeof name);
          double melem = (double)n / t * 1e-6, gbs = (double)(read_bytes + write_bytes) / t * 1e-9;
          const char *dirn = dir ? "bwd" : "fwd";
          if (json) {
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "spec", name);
            cJSON_AddStringToObject(r, "dtype", gm_dtype_name(dt));
            cJSON_AddStringToObject(r, "direction", dirn);
            cJSON_AddNumberToObject(r, "n", (double)n);
            cJSON_AddNumberToObject(r, "threads", (double)threads);
            cJSON_AddNumberToObject(r, "melem_per_s", melem);
            cJSON_AddNumberToObject(r, "gb_per_s", gbs);
            cJSON_AddNumberToObject(r, "memcpy_gb_per_s", memcpy_gbs);
            cJSON_AddNumberToObject(r, "ratio_to_memcpy", gbs / memcpy_gbs);
            cJSON_AddItemToArray(records, r);
          } else {
            printf("%-28s %-5s %-4s %10zu %3ld %10.1f %8.2f %8.2f %7.3f\n", name, gm_dtype_name(dt), dirn, n, threads,
                   melem, gbs, memcpy_gbs, gbs / memcpy_gbs);
            fflush(stdout);
          }
        }
      }
    }
  }
  if (json) {
    char *s = cJSON_Print(records);
    puts(s);
    free(s);
  }
  cJSON_Delete(records);
  free(x); free(dy); free(out);
  return rc;
}

int cmd_bench(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    printf("usage: gptmeg bench act|model|train|load|gemm [OPTIONS]   (gptmeg bench act --help)\n");
    return argc < 2 ? CLI_USAGE : CLI_OK;
  }
  if (!strcmp(argv[1], "act")) {
    if (cli_wants_help(argc - 1, argv + 1)) { fputs(bench_act_help, stdout); return CLI_OK; }
    return bench_act(argc - 1, argv + 1);
  }
  if (!strcmp(argv[1], "model")) return cmd_bench_model(argc - 1, argv + 1);
  if (!strcmp(argv[1], "train")) return cmd_bench_train(argc - 1, argv + 1);
  if (!strcmp(argv[1], "load")) return cmd_bench_load(argc - 1, argv + 1);
  if (!strcmp(argv[1], "gemm")) return cmd_bench_gemm(argc - 1, argv + 1);
  return cli_usage_error("bench", "unknown benchmark '%s' (valid: act, model, train, load, gemm)", argv[1]);
}
