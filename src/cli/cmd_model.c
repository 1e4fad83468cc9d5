// gptmeg init / info / logits (generate: cmd_generate.c, eval: cmd_eval.c).
#include "cli/cli.h"
#include "cli/cli_model.h"
#include "gptmeg/config.h"
#include "gptmeg/core.h"
#include "gptmeg/cpu.h"
#include "gptmeg/model.h"
#include "gptmeg/npy.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// ---- init ------------------------------------------------------------------------------------
static void init_help(FILE *f) {
  fprintf(f,
          "usage: gptmeg init --config tiny|gpt2|FILE.json --seed S --out DIR [--tokenizer TDIR]\n"
          "  Writes DIR/config.json + DIR/model.safetensors, initialised as transformers does\n"
          "  (N(0, 0.02) weights, c_proj N(0, 0.02/sqrt(2*n_layer)), biases 0, LayerNorm 1/0).\n"
          "  tiny: 2 layers, n_embd 64, 4 heads, n_positions 128, vocab 50257; gpt2: the 124M shape.\n"
          "  --tokenizer TDIR copies TDIR/vocab.json and TDIR/merges.txt into DIR (for generate / eval).\n");
}

int cmd_init(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { init_help(stdout); return CLI_OK; }
  const char *cfg_s = NULL, *out = NULL, *tokdir = NULL;
  long seed = 0;
  bool have_seed = false;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (strcmp(argv[i], "--config") == 0) { if (!(v = cli_value("init", argc, argv, &i))) return CLI_USAGE; cfg_s = v; }
    else if (strcmp(argv[i], "--out") == 0) { if (!(v = cli_value("init", argc, argv, &i))) return CLI_USAGE; out = v; }
    else if (strcmp(argv[i], "--tokenizer") == 0) { if (!(tokdir = cli_value("init", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--seed") == 0) {
      if (!(v = cli_value("init", argc, argv, &i))) return CLI_USAGE;
      if (cli_parse_long("init", "--seed", v, 0, 0x7fffffffffffffffL, &seed)) return CLI_USAGE;
      have_seed = true;
    } else return cli_usage_error("init", "unknown option '%s'", argv[i]);
  }
  if (!cfg_s || !out) return cli_usage_error("init", "--config and --out are required");
  if (!have_seed) seed = 0;
  gm_gpt2_config cfg;
  if (strcmp(cfg_s, "tiny") == 0) gm_config_tiny(&cfg);
  else if (strcmp(cfg_s, "gpt2") == 0) gm_config_defaults(&cfg);
  else if (gm_config_load(cfg_s, &cfg)) return cli_fail("%s", gm_errmsg());
  if (tokdir) { // check the tokenizer before writing anything
    gm_tokenizer *t;
    if (cli_load_tokenizer(NULL, tokdir, &t)) return cli_fail("%s", gm_errmsg());
    int32_t tv = gm_tok_vocab_size(t);
    gm_tok_free(t);
    if (tv > cfg.vocab_size)
      return cli_fail("the tokenizer in %s has %d tokens, more than the config's vocab_size %d", tokdir, tv, cfg.vocab_size);
  }
  gm_gpt2 m;
  if (gm_gpt2_init_random(&m, &cfg, (uint64_t)seed)) return cli_fail("%s", gm_errmsg());
  int rc = gm_gpt2_save(&m, out);
  if (!rc && tokdir) rc = cli_copy_tokenizer(tokdir, out);
  uint64_t np = m.n_params;
  gm_gpt2_free(&m);
  if (rc) return cli_fail("%s", gm_errmsg());
  printf("wrote %s/config.json and %s/model.safetensors (%llu parameters, seed %ld)%s\n", out, out, (unsigned long long)np, seed,
         tokdir ? ", vocab.json and merges.txt" : "");
  return CLI_OK;
}

// ---- info ------------------------------------------------------------------------------------
int cmd_info(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: gptmeg info --model DIR [--json]\n"
           "       gptmeg info --profile P [--dtype f32|f16|bf16] [KNOB OPTIONS]\n"
           "       gptmeg info --cpu [--torch-target NAME]\n"
           "  Config, parameter count, dtypes and memory of a checkpoint; or the knobs of a numerics profile;\n"
           "  or this CPU (vendor, model, instruction sets, OS register state) and the SIMD level the kernels\n"
           "  run (the CPU's, capped by GPTMEG_SIMD=scalar|avx2|avx512), then the torch CPU target (this CPU's,\n"
           "  GPTMEG_TORCH_TARGET's or --torch-target's): the kernel PyTorch runs for each op and dtype there,\n"
           "  and whether gptmeg reproduces its bits.\n%s",
           cli_profile_help);
    return CLI_OK;
  }
  const char *dir = NULL, *dts = "f32";
  bool json = false, cpu = false;
  cli_profile_opts po = {0};
  for (int i = 1; i < argc; i++) {
    int k = cli_profile_option("info", argc, argv, &i, &po);
    if (k < 0) return CLI_USAGE;
    if (k > 0) continue;
    if (strcmp(argv[i], "--dtype") == 0) { if (!(dts = cli_value("info", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--model") == 0) { if (!(dir = cli_value("info", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--json") == 0) json = true;
    else if (strcmp(argv[i], "--cpu") == 0) cpu = true;
    else return cli_usage_error("info", "unknown option '%s'", argv[i]);
  }
  if (cpu) {
    if (dir || po.profile || po.n_knobs || json) return cli_usage_error("info", "--cpu takes no other option");
    char buf[1024];
    gm_cpu_describe(buf, sizeof buf);
    fputs(buf, stdout);
    cli_print_target(stdout);
    return CLI_OK;
  }
  if (!dir && (po.profile || po.n_knobs)) { // describe a profile
    gm_dtype dt;
    gm_profile p;
    char buf[2048];
    if (gm_dtype_parse(dts, &dt)) return cli_usage_error("info", "%s", gm_errmsg());
    if (cli_profile_build(&po, dt, &p)) return cli_fail("%s", gm_errmsg());
    gm_profile_describe(&p, buf, sizeof buf);
    fputs(buf, stdout);
    char tl[256];
    cli_target_line(dt, tl, sizeof tl);
    printf("%s\n", tl);
    return CLI_OK;
  }
  if (!dir) return cli_usage_error("info", "--model DIR or --profile P is required");
  char prof[32], prof_from[4400];
  int recorded = cli_profile_of_model(dir, prof, sizeof prof, prof_from, sizeof prof_from);
  if (recorded < 0) return cli_fail("%s", gm_errmsg());
  if (!recorded) { snprintf(prof, sizeof prof, "hf"); snprintf(prof_from, sizeof prof_from, "the default: none recorded"); }
  gm_gpt2 m;
  if (gm_gpt2_load(&m, dir)) return cli_fail("%s", gm_errmsg());
  long long fsize = (long long)m.file_bytes;
  const gm_gpt2_config *c = &m.cfg;
  long long mem = (long long)m.n_params * 4;
  const char *fdt = m.mixed_dtypes ? "mixed" : gm_dtype_name(m.file_dtype);
  if (json) {
    char *cs = gm_config_to_json(c);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "config", cJSON_Parse(cs));
    free(cs);
    cJSON_AddNumberToObject(root, "n_inner_resolved", c->n_inner);
    cJSON_AddNumberToObject(root, "parameters", (double)m.n_params);
    cJSON_AddBoolToObject(root, "tied_lm_head", m.tied);
    cJSON_AddStringToObject(root, "file_dtype", fdt);
    cJSON_AddNumberToObject(root, "file_bytes", (double)fsize);
    cJSON_AddStringToObject(root, "file_format", m.file_format);
    cJSON_AddStringToObject(root, "profile", prof);
    cJSON_AddBoolToObject(root, "profile_recorded", recorded > 0);
    cJSON_AddStringToObject(root, "compute_dtype", "f32");
    cJSON_AddNumberToObject(root, "weights_bytes_f32", (double)mem);
    cJSON_AddNumberToObject(root, "kv_cache_bytes_per_token", (double)2 * c->n_layer * c->n_embd * 4);
    char *s = cJSON_Print(root);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(root);
  } else {
    printf("model:        %s\n", dir);
    printf("shape:        n_layer %d, n_embd %d, n_head %d (head dim %d), n_inner %d%s\n", c->n_layer, c->n_embd, c->n_head,
           c->n_embd / c->n_head, c->n_inner, c->n_inner_null ? " (null -> 4*n_embd)" : "");
    printf("vocab:        %d, n_positions %d\n", c->vocab_size, c->n_positions);
    printf("activation:   %s\n", c->activation_function);
    printf("layer norm:   eps %g\n", c->layer_norm_epsilon);
    printf("attention:    scale_attn_weights %s, scale_attn_by_inverse_layer_idx %s, reorder_and_upcast_attn %s\n",
           c->scale_attn_weights ? "true" : "false", c->scale_attn_by_inverse_layer_idx ? "true" : "false",
           c->reorder_and_upcast_attn ? "true" : "false");
    printf("lm_head:      %s\n", m.tied ? "tied to wte" : "separate lm_head.weight");
    printf("parameters:   %llu (%.2f M)\n", (unsigned long long)m.n_params, (double)m.n_params / 1e6);
    printf("file:         %s, %s, %lld bytes\n", m.file_format, fdt, fsize);
    printf("profile:      %s (%s; the model commands' default, --profile overrides it)\n", prof, prof_from);
    printf("memory:       %.1f MiB of f32 weights, KV cache %.1f KiB per token\n", (double)mem / 1048576.0,
           2.0 * c->n_layer * c->n_embd * 4 / 1024.0);
    printf("kernels:      %s (this cpu %s; gptmeg info --cpu)\n", gm_simd_level_name(gm_cpu_simd()),
           gm_simd_level_name(gm_cpu_host()->simd));
    char tl[256];
    cli_target_line(m.dtype, tl, sizeof tl);
    printf("target:       %s (%s)\n", tl, gm_dtype_name(m.dtype));
  }
  gm_gpt2_free(&m);
  return CLI_OK;
}

// ---- logits ----------------------------------------------------------------------------------
int cmd_logits(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: gptmeg logits --model DIR --tokens-npy T.npy --out L.npy [--dtype f32|f16|bf16] [--profile P]\n"
           "                     [KNOB OPTIONS] [--threads N]\n"
           "  T: int32 or int64 [B, T] .npy ([T]: B = 1); L: f32 [B, T, V] .npy (f16/bf16 logits widened).\n"
           "  The weights are rounded to --dtype (as model.half() does). Bits do not depend on --threads.\n%s",
           cli_profile_help);
    return CLI_OK;
  }
  const char *dir = NULL, *tok = NULL, *out = NULL, *dts = "f32";
  cli_profile_opts po = {0};
  long threads = 0;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int k = cli_profile_option("logits", argc, argv, &i, &po);
    if (k < 0) return CLI_USAGE;
    if (k > 0) continue;
    if (strcmp(argv[i], "--model") == 0) { if (!(dir = cli_value("logits", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--tokens-npy") == 0) { if (!(tok = cli_value("logits", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--out") == 0) { if (!(out = cli_value("logits", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--dtype") == 0) { if (!(dts = cli_value("logits", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--threads") == 0) {
      if (!(v = cli_value("logits", argc, argv, &i))) return CLI_USAGE;
      if (cli_parse_long("logits", "--threads", v, 1, 1024, &threads)) return CLI_USAGE;
    } else return cli_usage_error("logits", "unknown option '%s'", argv[i]);
  }
  if (!dir || !tok || !out) return cli_usage_error("logits", "--model, --tokens-npy and --out are required");
  gm_dtype dt;
  if (gm_dtype_parse(dts, &dt)) return cli_usage_error("logits", "%s", gm_errmsg());
  if (cli_profile_recorded(&po, dir)) return cli_fail("%s", gm_errmsg());
  gm_profile p;
  if (cli_profile_build(&po, dt, &p)) return cli_fail("%s", gm_errmsg());
  int32_t *tokens;
  size_t n_tokens;
  int B = 0, T = 0;
  if (cli_read_tokens_npy(tok, false, &tokens, &n_tokens, &B, &T)) return cli_fail("%s", gm_errmsg());
  gm_gpt2 m;
  if (gm_gpt2_load(&m, dir)) { free(tokens); return cli_fail("%s", gm_errmsg()); }
  int rc = gm_gpt2_to_dtype(&m, dt);
  if (rc == 0 && T > m.cfg.n_positions) rc = gm_fail("%s: sequence length %d exceeds n_positions %d", tok, T, m.cfg.n_positions);
  for (long i = 0; rc == 0 && i < (long)B * T; i++)
    if (tokens[i] < 0 || tokens[i] >= m.cfg.vocab_size)
      rc = gm_fail("%s: token id %d at [%ld, %ld] is outside the vocabulary [0, %d)", tok, tokens[i], i / T, i % T, m.cfg.vocab_size);
  float *logits = NULL;
  if (!rc) {
    logits = malloc((size_t)B * T * m.cfg.vocab_size * sizeof(float));
    if (!logits) rc = gm_fail("out of memory for logits [%d, %d, %d]", B, T, m.cfg.vocab_size);
  }
  if (!rc) rc = gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = tokens, .B = B, .T = T, .logits = logits,
                                                         .threads = (int)threads});
  size_t shape[3] = {(size_t)B, (size_t)T, (size_t)m.cfg.vocab_size};
  if (!rc) rc = gm_npy_write(out, GM_F32, logits, 3, shape, false);
  free(logits);
  free(tokens);
  gm_gpt2_free(&m);
  return rc ? cli_fail("%s", gm_errmsg()) : CLI_OK;
}
