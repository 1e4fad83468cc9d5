// gptmeg report: the compatibility report of every GELU variant:mode (HTML + JSON).
#include "cli/cli.h"
#include "gptmeg/diverge.h"
#include "gptmeg/lab.h"
#include "gptmeg/traincmp.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "usage: gptmeg report [--out DIR] [--n N] [--seed S] [--threads N] [--json] [--model DIR] [--train-steps N]\n"
    "                     [--profile P [--dtype f32|f16|bf16] [KNOB OPTIONS]]\n"
    "\n"
    "Compares every GELU variant:mode with every other and with the exact (correctly rounded) result\n"
    "in f32, f16 and bf16: f16/bf16 on every finite input, f32 on N sampled inputs (default 200000,\n"
    "special values included). Writes DIR/index.html (default DIR: report) and DIR/report.json,\n"
    "atomically: a failed run leaves no half report. The page opens with the verdict on replacing\n"
    "gelu_new by gelu_pytorch_tanh. Prints a short summary; --json prints the verdict (and the paths) as JSON.\n"
    "The section 'GPT-2 numerics divergence' compares the profiles hf, meg and megatron layer by layer\n"
    "(gptmeg diverge) on the checkpoint --model DIR, or without it on a tiny random model (init --config tiny --seed 1);\n"
    "with --profile (and knobs) it also compares hf against that profile in --dtype (default f16).\n"
    "The section 'Does a change of GELU change training?' trains the tiny random model --train-steps steps\n"
    "(default 16; 0 leaves the section out) with gelu_new and with gelu_pytorch_tanh in lockstep, against the\n"
    "noise of a batch-order change (gptmeg train-compare).\n";

int cmd_report(int argc, char **argv) {
  const char *cmd = "report";
  if (cli_wants_help(argc, argv)) { fputs(help, stdout); fputs(cli_profile_help, stdout); return CLI_OK; }
  const char *dir = "report", *model = NULL, *dts = "f16";
  gm_report_opts o = {.n_f32 = 200000, .threads = 0, .seed = 1};
  bool json = false;
  long train_steps = 16;
  cli_profile_opts po = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    long t;
    int k = cli_profile_option(cmd, argc, argv, &i, &po);
    if (k < 0) return CLI_USAGE;
    if (k > 0) continue;
    if (!strcmp(a, "--json")) json = true;
    else if (!strcmp(a, "--dtype")) { if (!(dts = cli_value(cmd, argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--out")) { if (!(dir = cli_value(cmd, argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--model")) { if (!(model = cli_value(cmd, argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--n")) {
      if (!(v = cli_value(cmd, argc, argv, &i)) || cli_parse_long(cmd, a, v, 1, 50000000, &t)) return CLI_USAGE;
      o.n_f32 = (size_t)t;
    } else if (!strcmp(a, "--seed")) {
      if (!(v = cli_value(cmd, argc, argv, &i)) || cli_parse_long(cmd, a, v, 0, 0x7fffffffffffffffL, &t)) return CLI_USAGE;
      o.seed = (uint64_t)t;
    } else if (!strcmp(a, "--train-steps")) {
      if (!(v = cli_value(cmd, argc, argv, &i)) || cli_parse_long(cmd, a, v, 0, 10000, &train_steps)) return CLI_USAGE;
    } else if (!strcmp(a, "--threads")) {
      if (!(v = cli_value(cmd, argc, argv, &i)) || cli_parse_long(cmd, a, v, 1, 1024, &t)) return CLI_USAGE;
      o.threads = (int)t;
    } else return cli_usage_error(cmd, "unexpected argument '%s'", a);
  }
  o.quiet = json;
  if (cli_profile_recorded(&po, model)) return cli_fail("%s", gm_errmsg());
  gm_profile user;
  bool have_user = po.profile || po.n_knobs;
  if (have_user) {
    gm_dtype dt;
    if (gm_dtype_parse(dts, &dt)) return cli_usage_error(cmd, "%s", gm_errmsg());
    if (cli_profile_build(&po, dt, &user)) return cli_fail("%s", gm_errmsg());
  }
  if (gm_report_check_dir(dir)) return cli_fail("%s", gm_errmsg());
  gm_report *r;
  if (gm_report_compute(&o, &r)) return cli_fail("%s", gm_errmsg());
  gm_dv_section *dv = NULL; // the divergence section (diverge.h), freed after the report
  gm_tc_section *tc = NULL; // the training section (traincmp.h), freed after the report
  int rc = gm_report_add_diverge(r, model, o.threads, have_user ? &user : NULL, &dv);
  if (!rc && train_steps > 0) {
    if (!json) fprintf(stderr, "gptmeg report: training (%ld steps, twice, and the noise run) ...\n", train_steps);
    rc = gm_report_add_traincmp(r, train_steps, o.threads, &tc);
  }
  if (!rc) rc = gm_report_write(r, dir);
  if (rc) { gm_report_free(r); gm_report_diverge_free(dv); gm_report_traincmp_free(tc); return cli_fail("%s", gm_errmsg()); }
  if (json) {
    // the verdict part of report.json, plus where the report is
    char *v = gm_report_verdict_json(r);
    cJSON *o = v ? cJSON_Parse(v) : NULL;
    free(v);
    if (!o) { gm_report_free(r); gm_report_diverge_free(dv); gm_report_traincmp_free(tc); return cli_fail("out of memory"); }
    char path[4200];
    snprintf(path, sizeof path, "%.4000s/index.html", dir);
    cJSON_AddStringToObject(o, "report", path);
    snprintf(path, sizeof path, "%.4000s/report.json", dir);
    cJSON_AddStringToObject(o, "json", path);
    char *s = cJSON_Print(o);
    if (s) puts(s);
    free(s);
    cJSON_Delete(o);
  } else {
    gm_report_print_summary(r, stdout);
    printf("report: %s/index.html\n", dir);
  }
  gm_report_free(r);
  gm_report_diverge_free(dv);
  gm_report_traincmp_free(tc);
  return CLI_OK;
}
