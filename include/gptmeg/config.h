// gptmeg io: HF GPT-2 config.json (transformers GPT2Config), with GPT2Config's defaults for
// every key the file leaves out.
#ifndef GPTMEG_CONFIG_H
#define GPTMEG_CONFIG_H

#include "gptmeg/core.h"

#ifdef __cplusplus
extern "C" {
#endif

// The MLP activation, as transformers' ACT2FN maps config.activation_function.
typedef enum { GM_ACT_GELU_FAMILY = 0, GM_ACT_RELU, GM_ACT_SILU } gm_act_kind;
typedef struct {
  gm_act_kind kind;
  gm_gelu_variant gelu;   // when kind == GM_ACT_GELU_FAMILY
} gm_activation;
// HF names: gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, gelu_python, gelu_accurate, quick_gelu,
// gelu_10, relu, silu, swish. Anything else is an error listing these.
int gm_activation_parse(const char *hf_name, gm_activation *out);

typedef struct {
  int vocab_size;                       // 50257
  int n_positions;                      // 1024
  int n_embd;                           // 768
  int n_layer;                          // 12
  int n_head;                           // 12
  int n_inner;                          // resolved: null/absent -> 4 * n_embd
  bool n_inner_null;                    // the file said null (or nothing)
  char activation_function[32];         // "gelu_new"
  gm_activation act;                    // parsed activation_function
  double layer_norm_epsilon;            // 1e-5
  double initializer_range;             // 0.02
  bool scale_attn_weights;              // true
  bool scale_attn_by_inverse_layer_idx; // false
  bool reorder_and_upcast_attn;         // false
  bool tie_word_embeddings;             // true
  int bos_token_id, eos_token_id;       // 50256
} gm_gpt2_config;

// GPT2Config() defaults (the 124M shape).
void gm_config_defaults(gm_gpt2_config *c);
// The "tiny" shape of `gptmeg init --config tiny`: 2 layers, n_embd 64, 4 heads, n_positions 128,
// vocab 50257 (so the real GPT-2 tokenizer works).
void gm_config_tiny(gm_gpt2_config *c);
// Checks ranges (positive sizes, n_embd % n_head == 0, eps > 0) and resolves n_inner / act.
int gm_config_validate(gm_gpt2_config *c, const char *where);
// Reads config.json; missing keys take GPT2Config defaults; wrong types are errors naming the key.
int gm_config_load(const char *path, gm_gpt2_config *c);
// Writes a config.json that transformers reads as this GPT2Config (atomic).
int gm_config_write(const char *path, const gm_gpt2_config *c);
// Heap string of the config as JSON (caller frees).
char *gm_config_to_json(const gm_gpt2_config *c);

#ifdef __cplusplus
}
#endif
#endif
