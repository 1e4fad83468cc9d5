// gptmeg model: GPT-2 (HF GPT2LMHeadModel) weights, numerics profiles, forward pass, KV cache.
// All tensors are row-major f32 in memory; shapes use B batch, T time, D n_embd, H n_head,
// hd = D/H, I n_inner, V vocab_size, P n_positions, L n_layer.
#ifndef GPTMEG_MODEL_H
#define GPTMEG_MODEL_H

#include "gptmeg/config.h"
#include "gptmeg/core.h"
#include "gptmeg/gelu.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- numerics profile (NUMERICS.md section 6): a struct of knobs the model asks --------------
typedef enum {
  GM_LN_IN_DTYPE = 0,   // torch layer_norm in the activation dtype (hf)
  GM_LN_F32_THEN_ROUND, // layer_norm(x.float(), w.float(), b.float()) then rounded (meg)
  GM_LN_FUSED_F32,      // f32 inside, output in gamma's dtype (megatron)
} gm_ln_rule;
typedef enum {
  GM_SCORES_DIVIDE_AFTER = 0, // w = q@k^T rounded, then w / sqrt(hd) rounded, then / (layer+1) (hf)
  GM_SCORES_ALPHA_IN_GEMM,    // alpha * (q@k^T) with alpha = 1/sqrt(hd)[/(layer+1)] before the one rounding (baddbmm)
} gm_scores_rule;
typedef enum {
  GM_MASK_FINFO_MIN = 0, // masked score = finfo(dtype).min (hf)
  GM_MASK_NEG_1E4,       // masked score = -1e4 (hf-legacy, megatron)
} gm_mask_rule;
typedef enum {
  GM_SOFTMAX_IN_DTYPE = 0, // softmax in the activation dtype (hf)
  GM_SOFTMAX_F32,          // softmax in f32, then cast (megatron, upcast option)
} gm_softmax_rule;

typedef struct {
  const char *name;          // "hf"
  gm_dtype dtype;            // activation / weight compute dtype (only GM_F32 is implemented)
  gm_ln_rule layer_norm;
  gm_scores_rule scores;
  gm_mask_rule mask;
  gm_softmax_rule softmax;
  bool act_from_config;      // use config.activation_function (else act_override)
  gm_activation act_override;
  gm_gelu_mode gelu_mode;    // mode passed to gm_gelu_fwd for GELU-family activations
  bool honor_upcast_option;  // config.reorder_and_upcast_attn switches scores to ALPHA_IN_GEMM
  // Set by gm_profile_get when gm_gelu_fwd cannot evaluate gelu_mode for dtype yet: the model then
  // uses its private f32 transcription of the transformers formulas (model/gpt2_act.c).
  bool private_gelu;
} gm_profile;

// Profiles by name: "hf" (f32). Others (hf-legacy, meg, megatron; f16/bf16) are not built yet.
int gm_profile_get(const char *name, gm_dtype dt, gm_profile *out);

// ---- weights ---------------------------------------------------------------------------------
typedef struct {
  float *ln1_w, *ln1_b;     // [D]
  float *attn_w, *attn_b;   // c_attn: [D, 3D] (Conv1D [in, out], columns q|k|v), [3D]
  float *aproj_w, *aproj_b; // attn.c_proj: [D, D], [D]
  float *ln2_w, *ln2_b;     // [D]
  float *fc_w, *fc_b;       // mlp.c_fc: [D, I], [I]
  float *mproj_w, *mproj_b; // mlp.c_proj: [I, D], [D]
} gm_gpt2_layer;

typedef struct {
  gm_gpt2_config cfg;
  float *wte;               // [V, D]
  float *wpe;               // [P, D]
  float *lnf_w, *lnf_b;     // [D]
  float *lm_head;           // [V, D]; == wte when tied
  bool tied;
  gm_gpt2_layer *layers;    // [L]
  float *storage;           // one allocation holding every tensor above
  uint64_t n_params;        // unique parameters (tied lm_head counted once)
  gm_dtype file_dtype;      // dtype of the checkpoint's tensors (the first one's, see mixed_dtypes)
  bool mixed_dtypes;
} gm_gpt2;

// Number of parameters of a config (unique; tied lm_head once).
uint64_t gm_gpt2_param_count(const gm_gpt2_config *c);
// Loads DIR/config.json + DIR/model.safetensors. Tensor names with or without 'transformer.';
// lm_head tied to wte unless the checkpoint has lm_head.weight and tie_word_embeddings is false.
// A missing, extra or mis-shaped tensor is an error naming it and the expected shape.
int gm_gpt2_load(gm_gpt2 *m, const char *dir);
// Same, from an explicit config and safetensors path.
int gm_gpt2_load_files(gm_gpt2 *m, const gm_gpt2_config *cfg, const char *st_path);
// Random init as transformers' GPT2PreTrainedModel._init_weights: N(0, initializer_range) for
// Linear/Conv1D/Embedding weights, c_proj weights N(0, initializer_range/sqrt(2*n_layer)),
// biases 0, LayerNorm weight 1 / bias 0. Deterministic in seed (gm_rng).
int gm_gpt2_init_random(gm_gpt2 *m, const gm_gpt2_config *cfg, uint64_t seed);
// Writes DIR/config.json + DIR/model.safetensors (names with 'transformer.' prefix, lm_head.weight
// only when untied) so that transformers' from_pretrained loads it without warnings.
int gm_gpt2_save(const gm_gpt2 *m, const char *dir);
void gm_gpt2_free(gm_gpt2 *m);

// ---- forward ---------------------------------------------------------------------------------
// KV cache for incremental decoding: k and v of every layer for B sequences, up to max_t steps.
typedef struct {
  int n_layer, B, H, hd, max_t;
  int len;                  // positions filled so far (the same for every sequence)
  float *k, *v;             // [L, B, H, max_t, hd]
} gm_kv_cache;

int gm_kv_init(gm_kv_cache *kv, const gm_gpt2 *m, int B, int max_t);
void gm_kv_reset(gm_kv_cache *kv);
void gm_kv_free(gm_kv_cache *kv);

// tokens [B, T] (int32, each in [0, V)), positions kv->len .. kv->len+T-1 (< n_positions, <= max_t);
// logits [B, T, V] f32. Appends the T new positions to the cache. threads <= 0: default.
// The bits do not depend on threads: OpenBLAS runs single-threaded, work is split into a fixed
// set of independent pieces (row blocks, (batch, head) pairs) whatever the thread count.
int gm_gpt2_forward_cached(const gm_gpt2 *m, const gm_profile *p, gm_kv_cache *kv, const int32_t *tokens, int B,
                           int T, float *logits, int threads);
// Full causal forward of tokens [B, T] -> logits [B, T, V] (a fresh cache of length T).
int gm_gpt2_forward(const gm_gpt2 *m, const gm_profile *p, const int32_t *tokens, int B, int T, float *logits,
                    int threads);

#ifdef __cplusplus
}
#endif
#endif
