// gptmeg init / info / logits (generate: cmd_generate.c, eval: cmd_eval.c).
#include "cli/cli.h"
#include "cli/cli_model.h"
#include "gptmeg/config.h"
#include "gptmeg/core.h"
#include "gptmeg/model.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// ---- minimal .npy (private until include/gptmeg/npy.h exists) ---------------------------------
// Reads a C-order little-endian int32/int64 2-D array [B, T] into int32 (values must fit).
static int npy_read_tokens(const char *path, int32_t **out, int *B, int *T) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return gm_fail("cannot open '%s': %s", path, strerror(errno));
  unsigned char pre[12];
  int rc = 0;
  char *hdr = NULL;
  void *raw = NULL;
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) { rc = gm_fail("%s: not a .npy file (bad magic at offset 0)", path); goto done; }
  uint32_t hlen;
  long data_off;
  if (pre[6] == 1) { hlen = (uint32_t)(pre[8] | pre[9] << 8); data_off = 10; }
  else if (pre[6] == 2 || pre[6] == 3) {
    if (fread(pre + 10, 1, 2, f) != 2) { rc = gm_fail("%s: truncated .npy header", path); goto done; }
    hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
    data_off = 12;
  } else { rc = gm_fail("%s: unsupported .npy version %d", path, pre[6]); goto done; }
  if (hlen > 1 << 20) { rc = gm_fail("%s: .npy header length %u is not sane", path, hlen); goto done; }
  hdr = calloc(hlen + 1, 1);
  if (!hdr || fread(hdr, 1, hlen, f) != hlen) { rc = gm_fail("%s: truncated .npy header (%u bytes announced)", path, hlen); goto done; }
  data_off += hlen;
  size_t es;
  bool i64;
  if (strstr(hdr, "'descr': '<i8'")) { es = 8; i64 = true; }
  else if (strstr(hdr, "'descr': '<i4'")) { es = 4; i64 = false; }
  else { rc = gm_fail("%s: tokens must be int32 or int64 little-endian .npy (header: %.80s)", path, hdr); goto done; }
  if (!strstr(hdr, "'fortran_order': False")) { rc = gm_fail("%s: Fortran-order .npy is not supported", path); goto done; }
  const char *sh = strstr(hdr, "'shape': (");
  long b = -1, t = -1;
  if (!sh || sscanf(sh, "'shape': (%ld, %ld)", &b, &t) != 2 || b <= 0 || t <= 0 || b > (1 << 20) || t > (1 << 20)) {
    rc = gm_fail("%s: tokens must be a 2-D [B, T] array with B, T > 0 (header: %.80s)", path, hdr);
    goto done;
  }
  fseek(f, 0, SEEK_END);
  long fsize = ftell(f);
  size_t want = (size_t)b * (size_t)t * es;
  if (fsize < 0 || (size_t)(fsize - data_off) != want) {
    rc = gm_fail("%s: header announces [%ld, %ld] x %zu bytes = %zu data bytes but the file holds %ld after offset %ld", path, b, t,
                 es, want, fsize - data_off, data_off);
    goto done;
  }
  fseek(f, data_off, SEEK_SET);
  raw = malloc(want);
  *out = malloc((size_t)b * t * sizeof(int32_t));
  if (!raw || !*out || fread(raw, 1, want, f) != want) { rc = gm_fail("%s: read failed", path); goto done; }
  for (size_t i = 0; i < (size_t)b * t; i++) {
    int64_t v;
    if (i64) { int64_t x; memcpy(&x, (char *)raw + 8 * i, 8); v = x; }
    else { int32_t x; memcpy(&x, (char *)raw + 4 * i, 4); v = x; }
    if (v < INT32_MIN || v > INT32_MAX) { rc = gm_fail("%s: token %lld at index %zu does not fit int32", path, (long long)v, i); goto done; }
    (*out)[i] = (int32_t)v;
  }
  *B = (int)b;
  *T = (int)t;
done:
  fclose(f);
  free(hdr);
  free(raw);
  if (rc) { free(*out); *out = NULL; }
  return rc;
}

// Writes f32 C-order [d0, d1, d2] .npy (version 1) atomically.
static int npy_write_f32_3d(const char *path, const float *x, long d0, long d1, long d2) {
  char h[128];
  int n = snprintf(h, sizeof h, "{'descr': '<f4', 'fortran_order': False, 'shape': (%ld, %ld, %ld), }", d0, d1, d2);
  int total = 10 + n + 1;
  int pad = (64 - total % 64) % 64;
  gm_outfile o;
  if (gm_outfile_open(&o, path)) return -1;
  FILE *f = o.fp;
  uint16_t hl = (uint16_t)(n + pad + 1);
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  unsigned char l2[2] = {(unsigned char)(hl & 0xff), (unsigned char)(hl >> 8)};
  fwrite(l2, 1, 2, f);
  fwrite(h, 1, (size_t)n, f);
  for (int i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
  size_t cnt = (size_t)d0 * d1 * d2;
  if (fwrite(x, sizeof(float), cnt, f) != cnt) { gm_outfile_abort(&o); return gm_fail("write to '%s' failed: %s", path, strerror(errno)); }
  return gm_outfile_commit(&o);
}

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
           "  Config, parameter count, dtypes and memory of a checkpoint; or the knobs of a numerics profile.\n%s",
           cli_profile_help);
    return CLI_OK;
  }
  const char *dir = NULL, *dts = "f32";
  bool json = false;
  cli_profile_opts po = {0};
  for (int i = 1; i < argc; i++) {
    int k = cli_profile_option("info", argc, argv, &i, &po);
    if (k < 0) return CLI_USAGE;
    if (k > 0) continue;
    if (strcmp(argv[i], "--dtype") == 0) { if (!(dts = cli_value("info", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--model") == 0) { if (!(dir = cli_value("info", argc, argv, &i))) return CLI_USAGE; }
    else if (strcmp(argv[i], "--json") == 0) json = true;
    else return cli_usage_error("info", "unknown option '%s'", argv[i]);
  }
  if (!dir && (po.profile || po.n_knobs)) { // describe a profile
    gm_dtype dt;
    gm_profile p;
    char buf[2048];
    if (gm_dtype_parse(dts, &dt)) return cli_usage_error("info", "%s", gm_errmsg());
    if (cli_profile_build(&po, dt, &p)) return cli_fail("%s", gm_errmsg());
    gm_profile_describe(&p, buf, sizeof buf);
    fputs(buf, stdout);
    return CLI_OK;
  }
  if (!dir) return cli_usage_error("info", "--model DIR or --profile P is required");
  gm_gpt2 m;
  if (gm_gpt2_load(&m, dir)) return cli_fail("%s", gm_errmsg());
  char sp[4096];
  snprintf(sp, sizeof sp, "%s/model.safetensors", dir);
  struct stat sb;
  long long fsize = stat(sp, &sb) == 0 ? (long long)sb.st_size : -1;
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
    printf("file:         %s, %lld bytes\n", fdt, fsize);
    printf("memory:       %.1f MiB of f32 weights, KV cache %.1f KiB per token\n", (double)mem / 1048576.0,
           2.0 * c->n_layer * c->n_embd * 4 / 1024.0);
  }
  gm_gpt2_free(&m);
  return CLI_OK;
}

// ---- logits ----------------------------------------------------------------------------------
int cmd_logits(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    printf("usage: gptmeg logits --model DIR --tokens-npy T.npy --out L.npy [--dtype f32|f16|bf16] [--profile P]\n"
           "                     [KNOB OPTIONS] [--threads N]\n"
           "  T: int32 or int64 [B, T] .npy; L: f32 [B, T, V] .npy (f16/bf16 logits widened exactly).\n"
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
  gm_profile p;
  if (cli_profile_build(&po, dt, &p)) return cli_fail("%s", gm_errmsg());
  int32_t *tokens;
  int B = 0, T = 0;
  if (npy_read_tokens(tok, &tokens, &B, &T)) return cli_fail("%s", gm_errmsg());
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
  if (!rc) rc = gm_gpt2_forward(&m, &p, tokens, B, T, logits, (int)threads);
  if (!rc) rc = npy_write_f32_3d(out, logits, B, T, m.cfg.vocab_size);
  free(logits);
  free(tokens);
  gm_gpt2_free(&m);
  return rc ? cli_fail("%s", gm_errmsg()) : CLI_OK;
}
