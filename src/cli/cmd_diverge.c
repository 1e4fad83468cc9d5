// gptmeg diverge: layer-by-layer divergence of two numerics profiles on one checkpoint, or of one
// run against a PyTorch activation dump (argument parsing and printing; the work is lab/diverge*.c).
#include "cli/cli.h"
#include "cli/cli_model.h"
#include "gptmeg/diverge.h"

#include <stdlib.h>
#include <string.h>

static const char *help =
    "usage: gptmeg diverge --model DIR --a PROFILE[:DTYPE] --b PROFILE[:DTYPE] (--tokens-npy T.npy | --prompt TEXT)\n"
    "                      [--a-knob NAME=VALUE]... [--b-knob NAME=VALUE]... [--rtol R --atol A | --ulp N]\n"
    "                      [--json] [--svg FILE] [--dump FILE.safetensors] [--no-added] [--threads N] [--tokenizer DIR]\n"
    "       gptmeg diverge --model DIR --a PROFILE[:DTYPE] --against FILE.safetensors --tokens-npy T.npy [...]\n"
    "\n"
    "Runs the checkpoint under two numerics profiles (PROFILE: hf, hf-legacy, meg, megatron; DTYPE: f32\n"
    "(default), f16, bf16) and compares every point of every layer (embed, ln_1, qkv, scores, probs, attn,\n"
    "attn_out, resid_attn, ln_2, fc, act, mlp, resid; ln_f, logits): max abs, max rel and RMS relative\n"
    "difference, max ULP and the fraction outside the tolerance, in the coarser dtype of the two runs.\n"
    "The tolerance is torch.testing.assert_close's default for that dtype unless --rtol/--atol (both) or\n"
    "--ulp N (N ULPs of that dtype) is given. The first point outside the tolerance is marked.\n"
    "added / inherited: B is run a second time forced onto A's values (each point overwritten with A's,\n"
    "rounded to B's dtype), so at each point 'added' is B's op on A's inputs against A (the error this op\n"
    "introduces) and 'inherited' is B against B's op on A's inputs (the error carried in). --no-added skips it.\n"
    "Top-1: positions whose argmax differs, split into near ties (A's top-2 margin within the tolerance)\n"
    "and flips.\n"
    "  --a-knob / --b-knob NAME=VALUE   change one knob of run A / B (repeatable), as the model commands'\n"
    "                  knob flags: ln native|fp32, scores matmul-div|baddbmm, mask finfo|-1e4|-inf,\n"
    "                  softmax dtype|fp32, act SPEC|config, qk-layer-scaling on|off, bias-act fused|separate\n"
    "  --tokens-npy    int32/int64 [B, T] or [T];  --prompt TEXT uses DIR's vocab.json/merges.txt (or --tokenizer)\n"
    "  --json          machine-readable result on stdout\n"
    "  --svg FILE      RMS relative difference (log scale) against depth, total and added\n"
    "  --dump FILE     streams run A's activations to a safetensors file (names as tools/ref/dump_activations.py)\n"
    "  --against FILE  compares run A with a dump (tools/ref/dump_activations.py, or --dump); no --b\n"
    "Outputs are written atomically. Exit: 0 ok (whatever the divergence), 1 failure, 2 usage error.\n";

typedef struct {
  const char *spec;
  int n;
  char *knob[CLI_MAX_KNOBS];
  const char *value[CLI_MAX_KNOBS];
} side;

// Builds the profile of one side: "PROFILE[:DTYPE]" plus knobs. Fails listing the valid values.
static int side_profile(const side *s, gm_profile *p) {
  char name[64];
  const char *colon = strchr(s->spec, ':');
  size_t nl = colon ? (size_t)(colon - s->spec) : strlen(s->spec);
  if (nl >= sizeof name) return gm_fail("unknown profile '%s' (valid: hf, hf-legacy, meg, megatron)", s->spec);
  memcpy(name, s->spec, nl);
  name[nl] = 0;
  gm_dtype dt = GM_F32;
  if (colon && (gm_dtype_parse(colon + 1, &dt) || !(dt == GM_F32 || dt == GM_F16 || dt == GM_BF16)))
    return gm_fail("unknown dtype '%s' in '%s' (valid: f32, f16, bf16)", colon + 1, s->spec);
  if (gm_profile_get(name, dt, p)) return -1;
  for (int k = 0; k < s->n; k++)
    if (gm_profile_set_knob(p, s->knob[k], s->value[k])) return -1;
  return 0;
}

// Parses NAME=VALUE into the side's knob list (NAME is checked by gm_profile_set_knob later).
static int add_knob(side *s, const char *opt, const char *v) {
  const char *eq = strchr(v, '=');
  if (!eq || eq == v) return cli_usage_error("diverge", "%s wants NAME=VALUE, got '%s'", opt, v);
  if (s->n >= CLI_MAX_KNOBS) return cli_usage_error("diverge", "too many %s options", opt);
  s->knob[s->n] = strndup(v, (size_t)(eq - v));
  s->value[s->n] = eq + 1;
  s->n++;
  return 0;
}

// Loads the checkpoint and converts it to dt (gm_gpt2_to_dtype says why when it cannot).
static int load_model(const char *dir, gm_dtype dt, gm_gpt2 *m) {
  if (gm_gpt2_load(m, dir)) return -1;
  if (gm_gpt2_to_dtype(m, dt)) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gm_errmsg());
    gm_gpt2_free(m);
    return gm_fail("%s: cannot run in %s: %s", dir, gm_dtype_name(dt), msg);
  }
  return 0;
}

typedef struct {
  const char *dir, *tok_npy, *prompt, *svg, *dump, *against, *tokdir;
  bool json;
  side a, b;
  gm_dv_opts o;
  bool have_rtol, have_atol;
} args;

static int parse(int argc, char **argv, args *g) {
  const char *cmd = "diverge";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    double d;
    long n;
    if (!strcmp(a, "--json")) { g->json = true; continue; }
    if (!strcmp(a, "--no-added")) { g->o.no_added = true; continue; }
    if (strncmp(a, "--", 2) != 0) return cli_usage_error(cmd, "unexpected argument '%s'", a);
    if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
    if (!strcmp(a, "--model")) g->dir = v;
    else if (!strcmp(a, "--a")) g->a.spec = v;
    else if (!strcmp(a, "--b")) g->b.spec = v;
    else if (!strcmp(a, "--tokens-npy")) g->tok_npy = v;
    else if (!strcmp(a, "--prompt")) g->prompt = v;
    else if (!strcmp(a, "--svg")) g->svg = v;
    else if (!strcmp(a, "--dump")) g->dump = v;
    else if (!strcmp(a, "--against")) g->against = v;
    else if (!strcmp(a, "--tokenizer")) g->tokdir = v;
    else if (!strcmp(a, "--a-knob")) { if (add_knob(&g->a, a, v)) return CLI_USAGE; }
    else if (!strcmp(a, "--b-knob")) { if (add_knob(&g->b, a, v)) return CLI_USAGE; }
    else if (!strcmp(a, "--rtol") || !strcmp(a, "--atol")) {
      if (cli_parse_double(cmd, a, v, &d)) return CLI_USAGE;
      if (!(d >= 0)) return cli_usage_error(cmd, "%s must be >= 0", a);
      if (a[2] == 'r') { g->o.tol.rtol = d; g->have_rtol = true; }
      else { g->o.tol.atol = d; g->have_atol = true; }
    } else if (!strcmp(a, "--ulp")) {
      if (cli_parse_long(cmd, a, v, 0, 1L << 40, &n)) return CLI_USAGE;
      g->o.ulp = (uint64_t)n;
    } else if (!strcmp(a, "--threads")) {
      if (cli_parse_long(cmd, a, v, 1, 1024, &n)) return CLI_USAGE;
      g->o.threads = (int)n;
    } else return cli_usage_error(cmd, "unknown option '%s'", a);
  }
  if (!g->dir) return cli_usage_error(cmd, "--model DIR is required");
  if (!g->a.spec) return cli_usage_error(cmd, "--a PROFILE[:DTYPE] is required");
  if (g->against && (g->b.spec || g->b.n)) return cli_usage_error(cmd, "--against compares run A with a dump: no --b");
  if (!g->against && !g->b.spec) return cli_usage_error(cmd, "--b PROFILE[:DTYPE] (or --against FILE) is required");
  if (!g->tok_npy == !g->prompt) return cli_usage_error(cmd, "give exactly one of --tokens-npy and --prompt");
  if (g->have_rtol != g->have_atol) return cli_usage_error(cmd, "--rtol and --atol go together");
  if (g->have_rtol && g->o.ulp) return cli_usage_error(cmd, "--ulp replaces --rtol/--atol: give one or the other");
  g->o.have_tol = g->have_rtol;
  return 0;
}

static int tokens_of(const args *g, int32_t **tok, int *B, int *T) {
  size_t n_tokens;
  if (g->tok_npy) return cli_read_tokens_npy(g->tok_npy, false, tok, &n_tokens, B, T);
  gm_tokenizer *t;
  if (cli_load_tokenizer(g->dir, g->tokdir, &t)) return -1;
  size_t n = 0;
  int rc = gm_tok_encode(t, g->prompt, strlen(g->prompt), tok, &n);
  gm_tok_free(t);
  if (!rc && n == 0) { free(*tok); *tok = NULL; rc = gm_fail("the prompt encodes to no tokens"); }
  *B = 1;
  *T = (int)n;
  return rc;
}

static int run(const args *g) {
  gm_profile pa, pb;
  if (side_profile(&g->a, &pa)) return -1;
  if (!g->against && side_profile(&g->b, &pb)) return -1;
  int32_t *tok = NULL;
  int B = 0, T = 0;
  if (tokens_of(g, &tok, &B, &T)) return -1;
  gm_outfile svg = {0};
  if (g->svg && gm_outfile_open(&svg, g->svg)) { free(tok); return -1; } // fail before the work
  gm_gpt2 ma, mb;
  bool have_b = false;
  int rc = load_model(g->dir, pa.dtype, &ma);
  if (rc) { free(tok); if (g->svg) gm_outfile_abort(&svg); return rc; }
  if (!g->against && pb.dtype != pa.dtype) { rc = load_model(g->dir, pb.dtype, &mb); have_b = rc == 0; }
  gm_dv_opts o = g->o;
  o.dump_path = g->dump;
  gm_dv_result res;
  if (!rc) {
    if (g->against) rc = gm_diverge_against(&ma, &pa, tok, B, T, g->against, &o, &res);
    else rc = gm_diverge_run(&ma, &pa, have_b ? &mb : &ma, &pb, tok, B, T, &o, &res);
  }
  free(tok);
  gm_gpt2_free(&ma);
  if (have_b) gm_gpt2_free(&mb);
  if (rc) { if (g->svg) gm_outfile_abort(&svg); return rc; }
  if (g->svg) {
    gm_dv_svg(&res, svg.fp);
    rc = gm_outfile_commit(&svg);
  }
  if (!rc) {
    if (g->json) {
      char *s = gm_dv_json(&res);
      if (s) puts(s);
      else rc = gm_fail("out of memory");
      free(s);
    } else gm_dv_print(&res, stdout);
  }
  gm_dv_result_free(&res);
  return rc;
}

int cmd_diverge(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { fputs(help, stdout); return CLI_OK; }
  args g;
  memset(&g, 0, sizeof g);
  int rc = parse(argc, argv, &g);
  if (!rc && run(&g)) rc = cli_fail("%s", gm_errmsg());
  for (int k = 0; k < g.a.n; k++) free(g.a.knob[k]);
  for (int k = 0; k < g.b.n; k++) free(g.b.knob[k]);
  return rc;
}
