// HF GPT-2 config.json <-> gm_gpt2_config.
#include "gptmeg/config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *name; gm_act_kind kind; gm_gelu_variant gelu; } act_names[] = {
    {"gelu", GM_ACT_GELU_FAMILY, GM_GELU_ERF},
    {"gelu_new", GM_ACT_GELU_FAMILY, GM_GELU_NEW},
    {"gelu_fast", GM_ACT_GELU_FAMILY, GM_GELU_FAST},
    {"gelu_pytorch_tanh", GM_ACT_GELU_FAMILY, GM_GELU_PYTORCH_TANH},
    {"gelu_python", GM_ACT_GELU_FAMILY, GM_GELU_PYTHON},
    {"gelu_accurate", GM_ACT_GELU_FAMILY, GM_GELU_ACCURATE},
    {"quick_gelu", GM_ACT_GELU_FAMILY, GM_QUICK_GELU},
    {"gelu_10", GM_ACT_GELU_FAMILY, GM_GELU_10},
    {"relu", GM_ACT_RELU, GM_GELU_ERF},
    {"silu", GM_ACT_SILU, GM_GELU_ERF},
    {"swish", GM_ACT_SILU, GM_GELU_ERF},
};
enum { N_ACT_NAMES = sizeof act_names / sizeof act_names[0] };

int gm_activation_parse(const char *hf_name, gm_activation *out) {
  for (int i = 0; i < N_ACT_NAMES; i++)
    if (strcmp(hf_name, act_names[i].name) == 0) {
      out->kind = act_names[i].kind;
      out->gelu = act_names[i].gelu;
      return 0;
    }
  char valid[256] = "";
  for (int i = 0; i < N_ACT_NAMES; i++) {
    size_t l = strlen(valid);
    snprintf(valid + l, sizeof valid - l, "%s%s", i ? ", " : "", act_names[i].name);
  }
  return gm_fail("unsupported activation_function '%s' (supported: %s)", hf_name, valid);
}

void gm_config_defaults(gm_gpt2_config *c) {
  memset(c, 0, sizeof *c);
  c->vocab_size = 50257;
  c->n_positions = 1024;
  c->n_embd = 768;
  c->n_layer = 12;
  c->n_head = 12;
  c->n_inner = 0;
  c->n_inner_null = true;
  snprintf(c->activation_function, sizeof c->activation_function, "gelu_new");
  c->layer_norm_epsilon = 1e-5;
  c->initializer_range = 0.02;
  c->scale_attn_weights = true;
  c->scale_attn_by_inverse_layer_idx = false;
  c->reorder_and_upcast_attn = false;
  c->tie_word_embeddings = true;
  c->bos_token_id = 50256;
  c->eos_token_id = 50256;
}

void gm_config_tiny(gm_gpt2_config *c) {
  gm_config_defaults(c);
  c->n_positions = 128;
  c->n_embd = 64;
  c->n_layer = 2;
  c->n_head = 4;
}

int gm_config_validate(gm_gpt2_config *c, const char *where) {
  const struct { const char *key; int v; } pos[] = {{"vocab_size", c->vocab_size}, {"n_positions", c->n_positions},
                                                    {"n_embd", c->n_embd}, {"n_layer", c->n_layer}, {"n_head", c->n_head}};
  for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
    if (pos[i].v <= 0) return gm_fail("%s: \"%s\" must be a positive integer, got %d", where, pos[i].key, pos[i].v);
  if (c->n_embd % c->n_head != 0)
    return gm_fail("%s: n_embd %d is not divisible by n_head %d", where, c->n_embd, c->n_head);
  if (c->n_inner_null) {
    if (c->n_embd > INT_MAX / 4) return gm_fail("%s: n_inner (4 * n_embd %d) does not fit an int", where, c->n_embd);
    c->n_inner = 4 * c->n_embd;
  }
  if (c->n_inner <= 0) return gm_fail("%s: \"n_inner\" must be a positive integer or null, got %d", where, c->n_inner);
  if (!(c->layer_norm_epsilon > 0)) return gm_fail("%s: \"layer_norm_epsilon\" must be > 0", where);
  if (gm_activation_parse(c->activation_function, &c->act)) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gm_errmsg());
    return gm_fail("%s: %s", where, msg);
  }
  return 0;
}

static int get_int(const char *path, const cJSON *root, const char *key, int *out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!j) return 0;
  // The range test comes first: converting a double outside int's range (or NaN) is undefined.
  if (!cJSON_IsNumber(j) || !(j->valuedouble >= INT_MIN && j->valuedouble <= INT_MAX) ||
      j->valuedouble != (double)(int)j->valuedouble)
    return gm_fail("%s: key \"%s\" must be an integer", path, key);
  *out = (int)j->valuedouble;
  return 0;
}

static int get_bool(const char *path, const cJSON *root, const char *key, bool *out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!j) return 0;
  if (!cJSON_IsBool(j)) return gm_fail("%s: key \"%s\" must be true or false", path, key);
  *out = cJSON_IsTrue(j);
  return 0;
}

static int get_double(const char *path, const cJSON *root, const char *key, double *out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!j) return 0;
  if (!cJSON_IsNumber(j)) return gm_fail("%s: key \"%s\" must be a number", path, key);
  *out = j->valuedouble;
  return 0;
}

int gm_config_load(const char *path, gm_gpt2_config *c) {
  gm_config_defaults(c);
  FILE *f = fopen(path, "rb");
  if (!f) return gm_fail("cannot open '%s': %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (len < 0 || len > 16 * 1024 * 1024) { fclose(f); return gm_fail("%s: not a config file (size %ld)", path, len); }
  char *buf = malloc((size_t)len + 1);
  if (!buf) { fclose(f); return gm_fail("out of memory"); }
  size_t got = fread(buf, 1, (size_t)len, f);
  fclose(f);
  buf[got] = 0;
  cJSON *root = cJSON_ParseWithLength(buf, got);
  if (!root || !cJSON_IsObject(root)) {
    const char *at = cJSON_GetErrorPtr();
    long off = (root == NULL && at) ? (long)(at - buf) : 0;
    cJSON_Delete(root);
    free(buf);
    return gm_fail("%s: not a JSON object (parse error near byte %ld)", path, off);
  }
  int rc = 0;
  const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
  if (mt && (!cJSON_IsString(mt) || strcmp(mt->valuestring, "gpt2") != 0))
    rc = gm_fail("%s: model_type is '%s', gptmeg reads GPT-2 ('gpt2') checkpoints", path, cJSON_IsString(mt) ? mt->valuestring : "?");
  if (!rc) rc = get_int(path, root, "vocab_size", &c->vocab_size);
  if (!rc) rc = get_int(path, root, "n_positions", &c->n_positions);
  if (!rc) rc = get_int(path, root, "n_embd", &c->n_embd);
  if (!rc) rc = get_int(path, root, "n_layer", &c->n_layer);
  if (!rc) rc = get_int(path, root, "n_head", &c->n_head);
  if (!rc) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "n_inner");
    if (j && !cJSON_IsNull(j)) {
      c->n_inner_null = false;
      rc = get_int(path, root, "n_inner", &c->n_inner);
    }
  }
  if (!rc) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "activation_function");
    if (j) {
      if (!cJSON_IsString(j) || strlen(j->valuestring) >= sizeof c->activation_function)
        rc = gm_fail("%s: key \"activation_function\" must be a short string", path);
      else
        snprintf(c->activation_function, sizeof c->activation_function, "%s", j->valuestring);
    }
  }
  if (!rc) rc = get_double(path, root, "layer_norm_epsilon", &c->layer_norm_epsilon);
  if (!rc) rc = get_double(path, root, "initializer_range", &c->initializer_range);
  if (!rc) rc = get_bool(path, root, "scale_attn_weights", &c->scale_attn_weights);
  if (!rc) rc = get_bool(path, root, "scale_attn_by_inverse_layer_idx", &c->scale_attn_by_inverse_layer_idx);
  if (!rc) rc = get_bool(path, root, "reorder_and_upcast_attn", &c->reorder_and_upcast_attn);
  if (!rc) rc = get_bool(path, root, "tie_word_embeddings", &c->tie_word_embeddings);
  if (!rc) rc = get_int(path, root, "bos_token_id", &c->bos_token_id);
  if (!rc) rc = get_int(path, root, "eos_token_id", &c->eos_token_id);
  cJSON_Delete(root);
  free(buf);
  if (!rc) rc = gm_config_validate(c, path);
  return rc;
}

char *gm_config_to_json(const gm_gpt2_config *c) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "activation_function", c->activation_function);
  cJSON *arch = cJSON_AddArrayToObject(r, "architectures");
  cJSON_AddItemToArray(arch, cJSON_CreateString("GPT2LMHeadModel"));
  cJSON_AddNumberToObject(r, "attn_pdrop", 0.1);
  cJSON_AddNumberToObject(r, "bos_token_id", c->bos_token_id);
  cJSON_AddStringToObject(r, "dtype", "float32");
  cJSON_AddNumberToObject(r, "embd_pdrop", 0.1);
  cJSON_AddNumberToObject(r, "eos_token_id", c->eos_token_id);
  cJSON_AddNumberToObject(r, "initializer_range", c->initializer_range);
  cJSON_AddNumberToObject(r, "layer_norm_epsilon", c->layer_norm_epsilon);
  cJSON_AddStringToObject(r, "model_type", "gpt2");
  cJSON_AddNumberToObject(r, "n_embd", c->n_embd);
  cJSON_AddNumberToObject(r, "n_head", c->n_head);
  if (c->n_inner_null) cJSON_AddNullToObject(r, "n_inner");
  else cJSON_AddNumberToObject(r, "n_inner", c->n_inner);
  cJSON_AddNumberToObject(r, "n_layer", c->n_layer);
  cJSON_AddNumberToObject(r, "n_positions", c->n_positions);
  cJSON_AddBoolToObject(r, "reorder_and_upcast_attn", c->reorder_and_upcast_attn);
  cJSON_AddNumberToObject(r, "resid_pdrop", 0.1);
  cJSON_AddBoolToObject(r, "scale_attn_by_inverse_layer_idx", c->scale_attn_by_inverse_layer_idx);
  cJSON_AddBoolToObject(r, "scale_attn_weights", c->scale_attn_weights);
  cJSON_AddBoolToObject(r, "tie_word_embeddings", c->tie_word_embeddings);
  cJSON_AddBoolToObject(r, "use_cache", true);
  cJSON_AddNumberToObject(r, "vocab_size", c->vocab_size);
  char *s = cJSON_Print(r);
  cJSON_Delete(r);
  return s;
}

int gm_config_write(const char *path, const gm_gpt2_config *c) {
  char *s = gm_config_to_json(c);
  if (!s) return gm_fail("out of memory");
  gm_outfile o;
  if (gm_outfile_open(&o, path)) { free(s); return -1; }
  fputs(s, (FILE *)o.fp);
  fputc('\n', (FILE *)o.fp);
  free(s);
  return gm_outfile_commit(&o);
}
