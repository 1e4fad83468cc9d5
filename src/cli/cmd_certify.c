// gptmeg act certify: every input of a dtype (or a range) against the correctly rounded result.
#include "cli/cli.h"
#include "gptmeg/certify.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *help =
    "usage: gptmeg act certify SPEC --dtype f32|f16|bf16 [--range LO:HI] [--grad] [--threads N]\n"
    "                          [--checkpoint FILE] [--json]\n"
    "\n"
    "Runs every representable input of the dtype in [LO, HI] (default: all of them, -inf to +inf,\n"
    "NaNs excluded) through SPEC and compares it with the correctly rounded result (exact mode: a\n"
    "double evaluation with an error bound, then long double, then MPFR, until the rounding is\n"
    "decided). Prints the worst ULP\n"
    "error, where it occurs, and the histogram; --json gives max_ulp, worst_input, ulp_histogram, n\n"
    "(a worst input, result or exact value that is not finite is the string \"inf\", \"-inf\" or \"nan\").\n"
    "--grad certifies the backward with dy = 1. Progress and ETA go to stderr. With --checkpoint\n"
    "the state is saved after every chunk and a rerun with the same arguments resumes from it; a\n"
    "checkpoint made by a build whose outputs differ (the implementation fingerprint, printed at\n"
    "the end and in --json as implementation) is refused.\n";

static void progress(const gm_cert_job *job, const gm_cert_state *s, double t0, uint64_t done0) {
  if (!isatty(2)) return;
  double total = (double)(job->hi - job->lo) + 1, done = (double)(s->next - job->lo);
  double el = gm_now_s() - t0, rate = el > 0 ? (double)(done - (double)done0) / el : 0;
  double eta = rate > 0 ? (total - done) / rate : 0;
  int width = 30, fill = (int)(width * done / total);
  fprintf(stderr, "\r[%.*s%*s] %5.1f%% %.2e/s max_ulp %llu ETA %02d:%02d:%02d ", fill,
          "##############################", width - fill, "", 100 * done / total, rate,
          (unsigned long long)s->max_ulp, (int)(eta / 3600), (int)(eta / 60) % 60, (int)eta % 60);
}

int cmd_act_certify(int argc, char **argv) {
  const char *cmd = "act certify";
  if (cli_wants_help(argc, argv)) { fputs(help, stdout); return CLI_OK; }
  const char *spec_s = NULL, *range = NULL, *ckpt = NULL;
  gm_cert_job job = {.dtype = GM_F32, .threads = gm_threads_default()};
  bool json = false, have_dtype = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    long t;
    if (!strcmp(a, "--json")) json = true;
    else if (!strcmp(a, "--grad")) job.backward = 1;
    else if (!strcmp(a, "--dtype")) {
      if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
      if (gm_dtype_parse(v, &job.dtype) || job.dtype == GM_F64)
        return cli_usage_error(cmd, "--dtype must be f32, f16 or bf16, got '%s'", v);
      have_dtype = true;
    } else if (!strcmp(a, "--range")) {
      if (!(range = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
    } else if (!strcmp(a, "--checkpoint")) {
      if (!(ckpt = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
    } else if (!strcmp(a, "--threads")) {
      if (!(v = cli_value(cmd, argc, argv, &i)) || cli_parse_long(cmd, a, v, 1, 1024, &t)) return CLI_USAGE;
      job.threads = (int)t;
    } else if (a[0] == '-' && a[1] == '-') return cli_usage_error(cmd, "unknown option '%s'", a);
    else if (!spec_s) spec_s = a;
    else return cli_usage_error(cmd, "unexpected argument '%s'", a);
  }
  if (!spec_s) return cli_usage_error(cmd, "missing SPEC (e.g. gelu_new:accurate)");
  if (!have_dtype) return cli_usage_error(cmd, "missing --dtype");
  if (gm_gelu_spec_parse(spec_s, &job.spec)) return cli_usage_error(cmd, "%s", gm_errmsg());
  job.lo = gm_cert_key_min(job.dtype);
  job.hi = gm_cert_key_max(job.dtype);
  if (range) {
    char *end;
    double lo = strtod(range, &end);
    if (end == range || *end != ':') return cli_usage_error(cmd, "--range expects LO:HI, got '%s'", range);
    const char *h = end + 1;
    double hi = strtod(h, &end);
    if (end == h || *end || !(lo <= hi)) return cli_usage_error(cmd, "--range expects LO:HI with LO <= HI, got '%s'", range);
    job.lo = gm_cert_key_from_value(job.dtype, lo, 1);
    job.hi = gm_cert_key_from_value(job.dtype, hi, 0);
    if (job.lo > job.hi) return cli_usage_error(cmd, "--range %s holds no %s value", range, gm_dtype_name(job.dtype));
  }
  gm_cert_state s;
  gm_cert_state_init(&s, &job);
  if (ckpt) {
    int r = gm_cert_load(ckpt, &job, &s);
    if (r < 0) return cli_fail("%s", gm_errmsg());
    if (r == 1) fprintf(stderr, "gptmeg act certify: resuming from '%s' at %llu inputs done\n", ckpt, (unsigned long long)s.n);
  }
  uint64_t chunk = job.dtype == GM_F32 ? (1u << 22) : 65536;
  double t0 = gm_now_s(), last_save = t0;
  uint64_t done0 = (uint64_t)(s.next - job.lo);
  while (s.next <= job.hi) {
    if (gm_cert_step(&job, &s, chunk)) return cli_fail("%s", gm_errmsg());
    progress(&job, &s, t0, done0);
    if (ckpt && gm_now_s() - last_save > 10) {
      if (gm_cert_save(ckpt, &job, &s)) return cli_fail("%s", gm_errmsg());
      last_save = gm_now_s();
    }
  }
  if (isatty(2)) fputc('\n', stderr);
  if (ckpt && gm_cert_save(ckpt, &job, &s)) return cli_fail("%s", gm_errmsg());
  char spec_name[64];
  gm_gelu_spec_format(job.spec, spec_name, sizeof spec_name);
  const char *fps = gm_cert_implementation(&job, &s);
  if (!fps) return cli_fail("%s", gm_errmsg());
  if (json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "spec", spec_name);
    cJSON_AddStringToObject(j, "dtype", gm_dtype_name(job.dtype));
    cJSON_AddStringToObject(j, "direction", job.backward ? "bwd" : "fwd");
    cJSON_AddNumberToObject(j, "n", (double)s.n);
    cJSON_AddNumberToObject(j, "max_ulp", (double)s.max_ulp);
    gm_cert_json_add_value(j, "worst_input", s.worst_input);
    gm_cert_json_add_value(j, "worst_got", s.worst_got);
    gm_cert_json_add_value(j, "worst_exact", s.worst_exact);
    cJSON *h = cJSON_AddObjectToObject(j, "ulp_histogram");
    for (int b = 0; b < GM_CERT_BUCKETS; b++) cJSON_AddNumberToObject(h, gm_cert_bucket_labels[b], (double)s.hist[b]);
    cJSON_AddNumberToObject(j, "seconds", gm_now_s() - t0);
    cJSON_AddStringToObject(j, "implementation", fps);
    char *txt = cJSON_Print(j);
    puts(txt);
    free(txt);
    cJSON_Delete(j);
  } else {
    printf("%s %s %s: %llu inputs, max %llu ULP at x = %.9g (got %.9g, exact %.9g)\n", spec_name,
           gm_dtype_name(job.dtype), job.backward ? "backward" : "forward", (unsigned long long)s.n,
           (unsigned long long)s.max_ulp, s.worst_input, s.worst_got, s.worst_exact);
    for (int b = 0; b < GM_CERT_BUCKETS; b++)
      printf("  %-7s %llu\n", gm_cert_bucket_labels[b], (unsigned long long)s.hist[b]);
    printf("implementation fingerprint %s\n", fps);
  }
  return CLI_OK;
}
