// gptmeg act: list the GELU variants, evaluate one on a .npy, compare two on the same inputs.
// `act certify` lives in cmd_certify.c (cmd_act_certify, declared in cli.h).
#include "cli/cli.h"
#include "gptmeg/lab.h"
#include "gptmeg/npy.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *help_act =
    "usage: gptmeg act SUBCOMMAND [OPTIONS]\n"
    "\n"
    "  list [--json]                 every GELU variant: formula, source, backward rule, modes\n"
    "  eval SPEC --dtype DT --in X.npy --out Y.npy [--grad --dy DY.npy] [--threads N]\n"
    "  compare SPEC_A SPEC_B --dtype DT (--n N | --exhaustive | --in X.npy) [...]\n"
    "  certify SPEC --dtype DT [...] every input against the correctly rounded result\n"
    "\n"
    "SPEC is VARIANT[:MODE] (gelu_new:eager); without :MODE the mode is 'accurate'.\n"
    "Modes: exact, eager, fused, torch-cpu, accurate. 'gptmeg act SUBCOMMAND --help' for details.\n";

static const char *help_list =
    "usage: gptmeg act list [--json]\n"
    "Lists every GELU variant with its formula as written at the source, where it comes from, its\n"
    "backward rule, and which modes run in f32, f16, bf16 and f64 in this build.\n";

static const char *help_eval =
    "usage: gptmeg act eval SPEC --dtype f32|f16|bf16|f64 --in X.npy --out Y.npy\n"
    "                       [--grad --dy DY.npy] [--threads N]\n"
    "\n"
    "Y = gelu(X) under SPEC; with --grad, Y = dX = backward(X, DY). X (and DY) must hold the\n"
    "dtype: f32 '<f4', f64 '<f8', f16 '<f2' (or '<u2' bit patterns), bf16 '<u2' bit patterns.\n"
    "X and DY must have the same shape; Y gets it too. Y is written only if everything succeeds.\n"
    "torch-cpu's bits depend on the tensor length and --threads, as PyTorch's do.\n";

static const char *help_compare =
    "usage: gptmeg act compare SPEC_A SPEC_B --dtype f32|f16|bf16|f64\n"
    "         (--n N [--dist normal|uniform:LO:HI|wide] [--seed S] | --exhaustive | --in X.npy)\n"
    "         [--len L --trials K] [--grad] [--rtol R --atol A] [--threads N] [--json]\n"
    "\n"
    "Runs A and B on the same inputs and compares B's outputs with A's (a against b as in\n"
    "assert_close(a, b): relative error |a-b|/|b|, signed error a-b), and each side with the exact\n"
    "mode of its variant (the correctly rounded ideal).\n"
    "  --n N           N inputs from --dist (default normal) with --seed (default 1), rounded to DT\n"
    "                  wide: |x| log-uniform from the smallest subnormal to the largest finite, both signs\n"
    "  --exhaustive    every finite f16/bf16 pattern (NaN and +-inf excluded, their count reported);\n"
    "                  f32 would be 2^32 inputs: refused unless --really-all-f32 is added\n"
    "  --in X.npy      the inputs of a file (dtype must match DT)\n"
    "  --len L --trials K  K separate tensors of L elements (torch-cpu bits depend on the length);\n"
    "                  also reports the fraction of tensors that are bitwise equal as a whole\n"
    "  --grad          compare the backward dx; dy[i] = +-(1+u) from the stream documented in lab.h\n"
    "                  (gm_dy_fill: gm_stream_u64(seed ^ GM_DY_SALT, i))\n"
    "  --rtol --atol   an extra tolerance (default torch.allclose's 1e-5, 1e-8); allclose_fraction\n"
    "                  always uses assert_close's default for DT\n"
    "Equal means bitwise identical (+0 and -0 differ). NaN against a number: not equal, ULP bucket\n"
    "'>256', counted in nan_mismatch, left out of max_ulp/max_abs/max_rel.\n"
    "--json keys: n, equal_fraction, allclose_fraction, user_close_fraction, max_abs, max_rel,\n"
    "max_ulp, ulp_histogram, mean_signed_error, worst, a_vs_exact, b_vs_exact, tensors,\n"
    "tensor_equal_fraction, excluded.\n";

// ---- act list --------------------------------------------------------------------------------

static bool mode_runs(gm_gelu_spec s, gm_dtype dt) {
  unsigned char x[8] = {0}, y[8];
  gm_store_f64(dt, x, 0, 0.5);
  return gm_gelu_fwd(s, dt, x, y, 1, 1) == 0;
}

static int act_list(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { fputs(help_list, stdout); return CLI_OK; }
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = true;
    else return cli_usage_error("act list", "unexpected argument '%s'", argv[i]);
  }
  static const gm_dtype dts[] = {GM_F32, GM_F16, GM_BF16, GM_F64};
  cJSON *root = json ? cJSON_CreateObject() : NULL, *arr = NULL;
  if (json) {
    cJSON *modes = cJSON_AddArrayToObject(root, "modes");
    for (int m = 0; m < GM_GELU_N_MODES; m++) cJSON_AddItemToArray(modes, cJSON_CreateString(gm_gelu_mode_name((gm_gelu_mode)m)));
    cJSON_AddStringToObject(root, "default_mode", "accurate");
    arr = cJSON_AddArrayToObject(root, "variants");
  } else {
    printf("GELU variants (SPEC = VARIANT[:MODE], default mode accurate)\n");
    printf("modes: exact eager fused torch-cpu accurate\n\n");
  }
  for (int v = 0; v < GM_GELU_N_VARIANTS; v++) {
    const gm_gelu_info *in = gm_gelu_variant_info((gm_gelu_variant)v);
    cJSON *o = NULL, *avail = NULL;
    if (json) {
      o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "name", in->name);
      cJSON_AddStringToObject(o, "formula", in->formula);
      cJSON_AddStringToObject(o, "source", in->source);
      cJSON_AddStringToObject(o, "backward", in->backward);
      avail = cJSON_AddObjectToObject(o, "modes");
      cJSON_AddItemToArray(arr, o);
    } else {
      printf("%s\n  formula:  %s\n  source:   %s\n  backward: %s\n  modes:   ", in->name, in->formula, in->source, in->backward);
    }
    for (int m = 0; m < GM_GELU_N_MODES; m++) {
      gm_gelu_spec s = {(gm_gelu_variant)v, (gm_gelu_mode)m};
      cJSON *list = json ? cJSON_AddArrayToObject(avail, gm_gelu_mode_name(s.mode)) : NULL;
      char buf[64] = "";
      for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        if (!mode_runs(s, dts[d])) continue;
        if (json) cJSON_AddItemToArray(list, cJSON_CreateString(gm_dtype_name(dts[d])));
        else { size_t l = strlen(buf); snprintf(buf + l, sizeof buf - l, "%s%s", l ? "," : "", gm_dtype_name(dts[d])); }
      }
      if (!json) printf(" %s(%s)", gm_gelu_mode_name(s.mode), buf[0] ? buf : "not built");
    }
    if (!json) printf("\n\n");
  }
  if (json) {
    char *s = cJSON_Print(root);
    puts(s);
    free(s);
    cJSON_Delete(root);
  }
  return CLI_OK;
}

// ---- act eval ---------------------------------------------------------------------------------

static int parse_dtype(const char *cmd, const char *v, gm_dtype *out) {
  if (gm_dtype_parse(v, out) || !gm_dtype_is_float(*out))
    return cli_usage_error(cmd, "--dtype must be f32, f16, bf16 or f64, got '%s'", v);
  return 0;
}

static int load_input(const char *path, gm_dtype dt, gm_npy *a) {
  if (gm_npy_read(path, dt == GM_F16 ? GM_F16 : GM_BF16, a)) return -1;
  if (a->dtype != dt) {
    int r = gm_fail("%s holds %s ('%s'), but --dtype is %s", path, gm_dtype_name(a->dtype), a->descr, gm_dtype_name(dt));
    gm_npy_free(a);
    return r;
  }
  return 0;
}

static int act_eval(int argc, char **argv) {
  const char *cmd = "act eval";
  if (cli_wants_help(argc, argv)) { fputs(help_eval, stdout); return CLI_OK; }
  const char *spec_s = NULL, *in = NULL, *out = NULL, *dy_path = NULL;
  gm_dtype dt = GM_F32;
  bool have_dt = false, grad = false;
  int threads = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    long t;
    if (!strcmp(a, "--grad")) grad = true;
    else if (!strcmp(a, "--dtype")) { if (!(v = cli_value(cmd, argc, argv, &i)) || parse_dtype(cmd, v, &dt)) return CLI_USAGE; have_dt = true; }
    else if (!strcmp(a, "--in")) { if (!(in = cli_value(cmd, argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--out")) { if (!(out = cli_value(cmd, argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--dy")) { if (!(dy_path = cli_value(cmd, argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--threads")) {
      if (!(v = cli_value(cmd, argc, argv, &i)) || cli_parse_long(cmd, a, v, 1, 1024, &t)) return CLI_USAGE;
      threads = (int)t;
    } else if (a[0] == '-' && a[1] == '-') return cli_usage_error(cmd, "unknown option '%s'", a);
    else if (!spec_s) spec_s = a;
    else return cli_usage_error(cmd, "unexpected argument '%s'", a);
  }
  if (!spec_s) return cli_usage_error(cmd, "missing SPEC (e.g. gelu_new:eager)");
  gm_gelu_spec spec;
  if (gm_gelu_spec_parse(spec_s, &spec)) return cli_usage_error(cmd, "%s", gm_errmsg());
  if (!have_dt) return cli_usage_error(cmd, "missing --dtype");
  if (!in || !out) return cli_usage_error(cmd, "--in and --out are required");
  if (grad && !dy_path) return cli_usage_error(cmd, "--grad needs --dy DY.npy");
  if (!grad && dy_path) return cli_usage_error(cmd, "--dy is only used with --grad");
  gm_npy x, dy = {0};
  if (load_input(in, dt, &x)) return cli_fail("%s", gm_errmsg());
  if (grad) {
    if (load_input(dy_path, dt, &dy)) { gm_npy_free(&x); return cli_fail("%s", gm_errmsg()); }
    bool same = dy.ndim == x.ndim;
    for (int d = 0; same && d < x.ndim; d++) same = dy.shape[d] == x.shape[d];
    if (!same) {
      char sx[160] = "", sd[160] = "";
      for (int d = 0; d < x.ndim; d++) snprintf(sx + strlen(sx), sizeof sx - strlen(sx), "%s%zu", d ? "," : "", x.shape[d]);
      for (int d = 0; d < dy.ndim; d++) snprintf(sd + strlen(sd), sizeof sd - strlen(sd), "%s%zu", d ? "," : "", dy.shape[d]);
      gm_npy_free(&x); gm_npy_free(&dy);
      return cli_fail("shapes differ: %s is (%s), %s is (%s)", in, sx, dy_path, sd);
    }
  }
  void *y = malloc(x.count * gm_dtype_size(dt) + 1);
  int rc = y ? 0 : gm_fail("out of memory");
  if (!rc) rc = grad ? gm_gelu_bwd(spec, dt, x.data, dy.data, y, x.count, threads) : gm_gelu_fwd(spec, dt, x.data, y, x.count, threads);
  if (!rc) rc = gm_npy_write(out, dt, y, x.ndim, x.shape, dt == GM_F16 && strcmp(x.descr, "<u2") == 0);
  free(y);
  gm_npy_free(&x);
  gm_npy_free(&dy);
  return rc ? cli_fail("%s", gm_errmsg()) : CLI_OK;
}

// ---- act compare -------------------------------------------------------------------------------

static void print_stats(const char *title, const gm_cmp_stats *s, gm_dtype dt) {
  double n = s->n ? (double)s->n : 1;
  gm_tolerance t = gm_default_tolerance(dt);
  printf("%s\n", title);
  printf("  bitwise equal       %.6f  (%llu of %llu)\n", (double)s->equal / n, (unsigned long long)s->equal, (unsigned long long)s->n);
  printf("  assert_close %-5s  %.6f  (rtol %g, atol %g)\n", gm_dtype_name(dt), (double)s->close_default / n, t.rtol, t.atol);
  printf("  user tolerance      %.6f\n", (double)s->close_user / n);
  printf("  max ulp %llu   max abs %.6g   max rel %.6g   mean signed error %.6g\n", (unsigned long long)s->max_ulp, s->max_abs, s->max_rel, gm_cmp_mean_signed(s));
  printf("  ulp histogram");
  for (int b = 0; b < GM_LAB_BUCKETS; b++) printf("  %s: %llu", gm_lab_bucket_labels[b], (unsigned long long)s->hist[b]);
  printf("\n");
  if (s->nan_mismatch) printf("  NaN against a number: %llu\n", (unsigned long long)s->nan_mismatch);
  if (s->have_worst)
    printf("  worst x = %.9g: %.9g vs %.9g (%llu ulp)\n", s->worst_x, s->worst_a, s->worst_b, (unsigned long long)s->worst_ulp);
}

static int act_compare(int argc, char **argv) {
  const char *cmd = "act compare";
  if (cli_wants_help(argc, argv)) { fputs(help_compare, stdout); return CLI_OK; }
  const char *specs[2] = {NULL, NULL}, *in = NULL;
  gm_compare_job job = {.seed = 1, .user_tol = {1e-5, 1e-8}};
  bool have_dt = false, have_n = false, json = false, have_len = false, have_trials = false, have_dist = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    long t;
    double d;
    if (!strcmp(a, "--json")) json = true;
    else if (!strcmp(a, "--grad")) job.grad = true;
    else if (!strcmp(a, "--exhaustive")) job.src = GM_SRC_EXHAUSTIVE;
    else if (!strcmp(a, "--really-all-f32")) job.allow_f32_exhaustive = true;
    else if (!strcmp(a, "--dtype")) { if (!(v = cli_value(cmd, argc, argv, &i)) || parse_dtype(cmd, v, &job.dtype)) return CLI_USAGE; have_dt = true; }
    else if (!strcmp(a, "--in")) { if (!(in = cli_value(cmd, argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--dist")) {
      if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
      if (gm_dist_parse(v, &job.dist)) return cli_usage_error(cmd, "%s", gm_errmsg());
      have_dist = true;
    } else if (!strcmp(a, "--n") || !strcmp(a, "--len") || !strcmp(a, "--trials") || !strcmp(a, "--threads")) {
      if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
      char *end;
      d = strtod(v, &end); // accepts 1e6
      if (end == v || *end || !(d >= 1) || d > 9.2e18 || d != floor(d))
        return cli_usage_error(cmd, "%s expects a positive integer, got '%s'", a, v);
      if (!strcmp(a, "--n")) { job.n = (size_t)d; have_n = true; }
      else if (!strcmp(a, "--len")) { job.len = (size_t)d; have_len = true; }
      else if (!strcmp(a, "--trials")) { job.trials = (size_t)d; have_trials = true; }
      else { if (cli_parse_long(cmd, a, v, 1, 1024, &t)) return CLI_USAGE; job.threads = (int)t; }
    } else if (!strcmp(a, "--seed")) {
      if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
      char *end;
      unsigned long long s = strtoull(v, &end, 0);
      if (end == v || *end) return cli_usage_error(cmd, "--seed expects an integer, got '%s'", v);
      job.seed = s;
    } else if (!strcmp(a, "--rtol") || !strcmp(a, "--atol")) {
      if (!(v = cli_value(cmd, argc, argv, &i)) || cli_parse_double(cmd, a, v, &d)) return CLI_USAGE;
      if (!(d >= 0)) return cli_usage_error(cmd, "%s must be >= 0", a);
      if (a[2] == 'r') job.user_tol.rtol = d; else job.user_tol.atol = d;
    } else if (a[0] == '-' && a[1] == '-') return cli_usage_error(cmd, "unknown option '%s'", a);
    else if (!specs[0]) specs[0] = a;
    else if (!specs[1]) specs[1] = a;
    else return cli_usage_error(cmd, "unexpected argument '%s'", a);
  }
  if (!specs[1]) return cli_usage_error(cmd, "needs two SPECs (e.g. gelu_new:eager gelu_pytorch_tanh:torch-cpu)");
  if (gm_gelu_spec_parse(specs[0], &job.a) || gm_gelu_spec_parse(specs[1], &job.b)) return cli_usage_error(cmd, "%s", gm_errmsg());
  if (!have_dt) return cli_usage_error(cmd, "missing --dtype");
  int sources = (have_n ? 1 : 0) + (job.src == GM_SRC_EXHAUSTIVE ? 1 : 0) + (in ? 1 : 0);
  if (have_len != have_trials) return cli_usage_error(cmd, "--len and --trials go together");
  if (have_trials && job.src == GM_SRC_EXHAUSTIVE) return cli_usage_error(cmd, "--exhaustive cannot be combined with --len/--trials");
  if (have_trials && job.len > SIZE_MAX / job.trials)
    return cli_usage_error(cmd, "--len %zu x --trials %zu is more elements than a size_t can count", job.len, job.trials);
  if (have_trials && !have_n && !in && job.src != GM_SRC_EXHAUSTIVE) { job.n = job.len * job.trials; have_n = true; sources = 1; }
  if (sources != 1) return cli_usage_error(cmd, "give exactly one input source: --n N, --exhaustive or --in X.npy");
  if (have_dist && !have_n) return cli_usage_error(cmd, "--dist goes with --n");
  if (job.allow_f32_exhaustive && job.src != GM_SRC_EXHAUSTIVE) return cli_usage_error(cmd, "--really-all-f32 goes with --exhaustive");
  if (have_trials && have_n && !in && job.n != job.len * job.trials)
    return cli_usage_error(cmd, "--n %zu differs from --len x --trials = %zu (give one or the other)", job.n, job.len * job.trials);
  gm_npy x = {0};
  if (in) {
    if (load_input(in, job.dtype, &x)) return cli_fail("%s", gm_errmsg());
    job.src = GM_SRC_ARRAY;
    job.array = x.data;
    job.n = x.count;
    if (!job.n) { gm_npy_free(&x); return cli_fail("%s holds no elements", in); }
  }
  gm_compare_result r;
  int rc = gm_compare_run(&job, &r);
  gm_npy_free(&x);
  if (rc) return cli_fail("%s", gm_errmsg());
  char na[64], nb[64];
  gm_gelu_spec_format(job.a, na, sizeof na);
  gm_gelu_spec_format(job.b, nb, sizeof nb);
  if (json) {
    cJSON *root = gm_cmp_stats_json(&r.ab);
    cJSON_AddStringToObject(root, "a", na);
    cJSON_AddStringToObject(root, "b", nb);
    cJSON_AddStringToObject(root, "dtype", gm_dtype_name(job.dtype));
    cJSON_AddStringToObject(root, "direction", job.grad ? "backward" : "forward");
    cJSON *ut = cJSON_AddObjectToObject(root, "user_tolerance");
    cJSON_AddNumberToObject(ut, "rtol", job.user_tol.rtol);
    cJSON_AddNumberToObject(ut, "atol", job.user_tol.atol);
    gm_tolerance dtol = gm_default_tolerance(job.dtype);
    cJSON *dtj = cJSON_AddObjectToObject(root, "default_tolerance");
    cJSON_AddNumberToObject(dtj, "rtol", dtol.rtol);
    cJSON_AddNumberToObject(dtj, "atol", dtol.atol);
    if (r.have_exact) {
      cJSON_AddItemToObject(root, "a_vs_exact", gm_cmp_stats_json(&r.a_exact));
      cJSON_AddItemToObject(root, "b_vs_exact", gm_cmp_stats_json(&r.b_exact));
    } else {
      cJSON_AddNullToObject(root, "a_vs_exact");
      cJSON_AddNullToObject(root, "b_vs_exact");
      cJSON_AddStringToObject(root, "exact_error", r.exact_error);
    }
    cJSON_AddNumberToObject(root, "tensors", (double)r.tensors);
    cJSON_AddNumberToObject(root, "tensor_equal_fraction", r.tensors ? (double)r.tensors_equal / (double)r.tensors : 0);
    cJSON_AddNumberToObject(root, "excluded", (double)r.excluded);
    cJSON_AddNumberToObject(root, "seconds", r.seconds);
    char *s = cJSON_Print(root);
    puts(s);
    free(s);
    cJSON_Delete(root);
    return CLI_OK;
  }
  char title[200];
  printf("%s vs %s, %s %s, %llu inputs", na, nb, gm_dtype_name(job.dtype), job.grad ? "backward" : "forward", (unsigned long long)r.ab.n);
  if (r.excluded) printf(" (%llu non-finite patterns excluded)", (unsigned long long)r.excluded);
  printf(", %.2f s\n\n", r.seconds);
  snprintf(title, sizeof title, "%s against %s:", na, nb);
  print_stats(title, &r.ab, job.dtype);
  if (job.trials || r.tensors > 1)
    printf("  whole tensors bitwise equal (torch.equal on bits): %.6f (%llu of %llu)\n", (double)r.tensors_equal / (double)r.tensors,
           (unsigned long long)r.tensors_equal, (unsigned long long)r.tensors);
  if (r.have_exact) {
    snprintf(title, sizeof title, "\n%s against the exact %s:", na, gm_gelu_variant_info(job.a.variant)->name);
    print_stats(title, &r.a_exact, job.dtype);
    snprintf(title, sizeof title, "\n%s against the exact %s:", nb, gm_gelu_variant_info(job.b.variant)->name);
    print_stats(title, &r.b_exact, job.dtype);
  } else {
    printf("\n(no comparison with exact: %s)\n", r.exact_error);
  }
  return CLI_OK;
}

int cmd_act(int argc, char **argv) {
  if (argc < 2) { fputs(help_act, stderr); return CLI_USAGE; }
  const char *sub = argv[1];
  if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) { fputs(help_act, stdout); return CLI_OK; }
  if (!strcmp(sub, "list")) return act_list(argc - 1, argv + 1);
  if (!strcmp(sub, "eval")) return act_eval(argc - 1, argv + 1);
  if (!strcmp(sub, "compare")) return act_compare(argc - 1, argv + 1);
  if (!strcmp(sub, "certify")) return cmd_act_certify(argc - 1, argv + 1);
  return cli_usage_error("act", "unknown subcommand '%s' (valid: list, eval, compare, certify)", sub);
}
