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

// ---- numerics profile (docs/numerics.md, 'GPT-2 numerics profiles': the rules op by op) -------
// A profile is data: one setting of every knob. The forward asks it where to round.
typedef enum {
  GM_LN_NATIVE = 0, // torch layer_norm in the activation dtype (hf): f32 inside, one rounding
  GM_LN_F32,        // layer_norm(x.float(), w.float(), b.float()) cast back (meg; Megatron's fused LN)
} gm_ln_rule;
typedef enum {
  GM_SCORES_MATMUL_DIV = 0, // w = q@k^T rounded, w / sqrt(hd) rounded, then / (layer+1) rounded (hf)
  GM_SCORES_BADDBMM,        // baddbmm(beta=0, alpha=1/sqrt(hd)[/(layer+1)]): scale before the one rounding
} gm_scores_rule;
typedef enum {
  GM_MASK_FINFO = 0, // masked score = finfo(dtype).min (hf)
  GM_MASK_NEG_1E4,   // -1e4 (hf-legacy masked_bias, Megatron's -10000.0)
  GM_MASK_NEG_INF,   // -inf
} gm_mask_rule;
typedef enum {
  GM_SOFTMAX_DTYPE = 0, // softmax of the dtype's scores (f32 inside, one rounding) (hf)
  GM_SOFTMAX_F32,       // scores widened to f32 (scaled there by the layer coefficient), softmax, cast (megatron)
} gm_softmax_rule;

typedef struct {
  char name[64];             // "hf", or the base name plus the changed knobs: "hf+ln=fp32"
  gm_dtype dtype;            // weights and activations are stored in this dtype (f32, f16, bf16)
  gm_ln_rule layer_norm;
  gm_scores_rule scores;
  bool qk_layer_scaling;     // Megatron: alpha /= L in the scores, then * L in f32 before softmax
  gm_mask_rule mask;
  gm_softmax_rule softmax;
  bool act_from_config;      // config.activation_function evaluated in gelu_mode ...
  gm_gelu_mode gelu_mode;
  gm_gelu_spec act_override; // ... else this GELU (variant:mode), whatever the config says
  bool act_bias_fused;       // Megatron bias_gelu: c_fc without bias, x = y + b in f32 inside the act
  bool honor_upcast_option;  // config.reorder_and_upcast_attn runs transformers' upcast path
} gm_profile;

// The profiles: "hf", "hf-legacy", "meg", "megatron"; dt is F32, F16 or BF16. Unknown names or
// dtypes are errors listing the valid ones.
int gm_profile_get(const char *name, gm_dtype dt, gm_profile *out);
// One knob by its CLI name and value: ln native|fp32, scores matmul-div|baddbmm,
// mask finfo|-1e4|-inf, softmax dtype|fp32, act SPEC (VARIANT[:MODE], or "config"),
// qk-layer-scaling on|off, bias-act fused|separate. Appends "+knob=value" to the name.
int gm_profile_set_knob(gm_profile *p, const char *knob, const char *value);
// Writes a one-knob-per-line description into buf (for `gptmeg info --profile`).
void gm_profile_describe(const gm_profile *p, char *buf, size_t n);
// Names of the knobs and of the built-in profiles, NULL-terminated.
extern const char *const gm_profile_names[];
extern const char *const gm_profile_knobs[];

// ---- weights ---------------------------------------------------------------------------------
typedef struct {
  float *ln1_w, *ln1_b;     // [D]
  float *attn_w, *attn_b;   // c_attn: [D, 3D] (Conv1D [in, out], columns q|k|v), [3D]
  float *aproj_w, *aproj_b; // attn.c_proj: [D, D], [D]
  float *ln2_w, *ln2_b;     // [D]
  float *fc_w, *fc_b;       // mlp.c_fc: [D, I], [I]
  float *mproj_w, *mproj_b; // mlp.c_proj: [I, D], [D]
  // bf16 runs only (gm_gpt2_to_dtype): the four matrices as AVX512-BF16 pairs (gm_bf16_pack layout)
  const uint32_t *attn_wp, *aproj_wp, *fc_wp, *mproj_wp;
  // f16 runs on CPUs with the AVX-512 one-row kernels: the four matrices as f16 bits, same layout
  // (decode reads these: half the bytes of the f32 copy, same bits)
  const uint16_t *attn_wh, *aproj_wh, *fc_wh, *mproj_wh;
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
  gm_dtype dtype;           // dtype the weights are rounded to (their f32 storage holds such values)
  const uint32_t *lm_head_p; // bf16 runs: lm_head^T as pairs (gm_bf16_pack layout)
  uint32_t *packed;         // one allocation holding every pair table above (bf16 runs), else NULL
  const uint16_t *lm_head_h; // f16 runs (as the layers' *_wh): lm_head [V, D] as f16 bits
  uint16_t *half;           // one allocation holding every f16 copy above, else NULL
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
// Rounds every weight to dt (f16/bf16, RNE: what model.half() / .bfloat16() do); the f32 storage
// then holds dt values exactly. For bf16 the matrices are also laid out once as bf16 pairs for
// the AVX512-BF16 kernels (half the f32 size more memory). f32 -> f16/bf16 is allowed; f16 <-> bf16 checkpoints are refused
// (either way would re-round the weights to a format with fewer exponent or fraction bits), as is
// going back to f32 after rounding.
int gm_gpt2_to_dtype(gm_gpt2 *m, gm_dtype dt);

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
// logits [B, T, V] f32 (values of p->dtype widened exactly). The weights must be in p->dtype
// (gm_gpt2_to_dtype). Appends the T new positions to the cache. threads <= 0: default.
// The bits do not depend on threads: OpenBLAS runs single-threaded, work is split into a fixed
// set of independent pieces (row blocks, (batch, head) pairs) whatever the thread count.
int gm_gpt2_forward_cached(const gm_gpt2 *m, const gm_profile *p, gm_kv_cache *kv, const int32_t *tokens, int B,
                           int T, float *logits, int threads);
// Probe points inside the forward, in execution order (diverge reads and rewrites them).
typedef enum {
  GM_PT_EMBED = 0, // wte[tok] + wpe[pos]                         [N, D]   (layer -1)
  GM_PT_LN1,       // ln_1(h)                                     [N, D]
  GM_PT_QKV,       // c_attn: q|k|v                               [N, 3D]
  GM_PT_SCORES,    // scaled scores, masked entries 0             [B, H, T, t0+T]
  GM_PT_PROBS,     // softmax probabilities (masked entries 0)    [B, H, T, t0+T]
  GM_PT_ATTN,      // probs @ v, heads merged                     [N, D]
  GM_PT_ATTN_OUT,  // attn.c_proj                                 [N, D]
  GM_PT_RESID_ATTN,// h + attention output                        [N, D]
  GM_PT_LN2,       // ln_2(h)                                     [N, D]
  GM_PT_FC,        // mlp.c_fc (without its bias when act_bias_fused) [N, I]
  GM_PT_ACT,       // activation                                  [N, I]
  GM_PT_MLP,       // mlp.c_proj                                  [N, D]
  GM_PT_RESID,     // h + mlp output: the block's output          [N, D]
  GM_PT_LNF,       // ln_f(h)                                     [N, D]   (layer -1)
  GM_PT_LOGITS,    // h @ wte^T                                   [N, V]   (layer -1)
  GM_N_POINTS
} gm_point;
const char *gm_point_name(gm_point pt); // "embed", "ln_1", "qkv", "scores", ... "logits"

// A probe sees each point's tensor (f32 holding values of the run's dtype, row-major `shape`)
// right after it is computed and may rewrite it in place with values of the same dtype: the rest
// of the forward then runs on the rewritten values. Non-zero return aborts the forward.
typedef struct {
  int layer;                // 0-based; -1 for embed, ln_f, logits
  gm_point point;
  float *data;
  int ndim;
  int64_t shape[4];
  size_t numel;
} gm_probe_tensor;
typedef int (*gm_probe_fn)(void *ctx, const gm_probe_tensor *t);

// gm_gpt2_forward_cached with a probe (NULL: none).
int gm_gpt2_forward_probed(const gm_gpt2 *m, const gm_profile *p, gm_kv_cache *kv, const int32_t *tokens, int B,
                           int T, float *logits, int threads, gm_probe_fn probe, void *probe_ctx);
// gm_gpt2_forward_cached computing only the logits of the last K positions of each sequence
// (transformers' logits_to_keep as an int): logits [B, K, V], K = logits_to_keep, or T when it is
// 0 or larger than T (as transformers slices). The lm_head projects only those rows and nothing of
// size [B, T, V] is allocated; every kept row is bit-identical to the same row of the all-logits
// forward (any dtype, any thread count). A generation prefill needs logits_to_keep = 1. The
// logits probe sees [B * K, V].
int gm_gpt2_forward_keep(const gm_gpt2 *m, const gm_profile *p, gm_kv_cache *kv, const int32_t *tokens, int B, int T,
                         int logits_to_keep, float *logits, int threads);
int gm_gpt2_forward_keep_probed(const gm_gpt2 *m, const gm_profile *p, gm_kv_cache *kv, const int32_t *tokens, int B,
                                int T, int logits_to_keep, float *logits, int threads, gm_probe_fn probe,
                                void *probe_ctx);
// Full causal forward of tokens [B, T] -> logits [B, T, V] (a fresh cache of length T).
int gm_gpt2_forward(const gm_gpt2 *m, const gm_profile *p, const int32_t *tokens, int B, int T, float *logits,
                    int threads);

// ---- generation and evaluation ----------------------------------------------------------------
// Sampling of the next token from one row of logits [V], in HF transformers' warper order:
// temperature, then top-k, then top-p. temperature 0 is greedy: argmax, the lowest id on ties.
typedef struct {
  double temperature; // 0: greedy; > 0: logits / temperature
  int top_k;          // 0: off; else keep the k largest (exactly k: ties at the k-th value by lower id)
  double top_p;       // 1: off; else keep the smallest set, largest first, whose probability sum >= top_p
  uint64_t seed;      // gm_rng seed for the draws (greedy draws nothing)
} gm_sample_params;

typedef struct {
  gm_sample_params p;
  gm_rng rng;
  int V;
  double *prob;       // scratch [2V]
  int32_t *idx;       // scratch [V]
} gm_sampler;

// Checks p (temperature >= 0 and finite, top_k >= 0, 0 < top_p <= 1) and allocates scratch for V.
int gm_sampler_init(gm_sampler *s, const gm_sample_params *p, int V);
// The next token id for logits [V] (f32; NaN logits are an error). Advances the sampler's rng by
// one draw when temperature > 0. Returns 0 and sets *token, or fails.
int gm_sampler_next(gm_sampler *s, const float *logits, int32_t *token);
void gm_sampler_free(gm_sampler *s);

typedef enum {
  GM_STOP_MAX_NEW = 0, // max_new tokens produced
  GM_STOP_POSITIONS,   // the sequence reached n_positions
  GM_STOP_EOT,         // the end-of-text token was drawn (not passed to the callback)
  GM_STOP_CALLBACK,    // the callback returned non-zero
} gm_stop_reason;

typedef struct {
  int n_prompt, n_new;         // prompt tokens, tokens produced (passed to the callback)
  gm_stop_reason stop;
  double prefill_s, decode_s;  // wall time of the prompt's forward, of the decode steps
} gm_generate_stats;

// Called with each new token as soon as it is drawn; non-zero stops the generation (no error).
typedef int (*gm_token_fn)(void *ctx, int32_t token);

// Runs prompt [n_prompt] (1 <= n_prompt <= n_positions) through a KV cache (logits_to_keep = 1: the
// prefill projects only the last position, bit-identical to the all-logits row), then draws up to
// max_new (>= 0) tokens one at a time with the sampler, feeding each back through the cache.
// Stops at max_new, when the sequence holds n_positions tokens, or when eot_id (< 0: none) is
// drawn. The weights must be in p->dtype. Bits do not depend on threads.
int gm_gpt2_generate(const gm_gpt2 *m, const gm_profile *p, const int32_t *prompt, int n_prompt, int max_new,
                     gm_sampler *s, int32_t eot_id, int threads, gm_token_fn on_token, void *ctx,
                     gm_generate_stats *stats);

// Perplexity by transformers' sliding-window recipe (docs "Perplexity of fixed-length models"):
// windows [begin, min(begin + ctx, n)) for begin = 0, stride, 2*stride, ... up to the window that
// reaches n. Each window's targets are its last trg_len = end - prev_end tokens; the model's label
// shift then scores the positions j >= max(1, len - trg_len) of the window, and the window's nll is
// the mean of -log_softmax(logits[j-1])[x_j] over them. Like the recipe, the window counts
// trg_len - 1 tokens (one fewer than it scores, except in the first window):
// nll = sum(nll_w * (trg_len_w - 1)) / sum(trg_len_w - 1), ppl = exp(nll). Log-softmax in double
// over the f32 logits, sums in double.
typedef struct {
  double ppl, nll;
  int64_t n_tokens;  // sum of trg_len - 1: the recipe's token count (the divisor of nll)
  int64_t n_scored;  // positions whose log-probability was computed
  int n_windows, ctx, stride;
} gm_ppl_result;

// Called after each window with the tokens covered so far (end of the window) and the total.
typedef void (*gm_progress_fn)(void *ctx, int64_t done, int64_t total);

// tokens [n] (each in [0, V)), 2 <= ctx <= n_positions, 1 <= stride <= ctx, n >= 2. progress may
// be NULL. The weights must be in p->dtype. Bits do not depend on threads.
int gm_gpt2_perplexity(const gm_gpt2 *m, const gm_profile *p, const int32_t *tokens, int64_t n, int ctx, int stride,
                       int threads, gm_progress_fn progress, void *progress_ctx, gm_ppl_result *out);

#ifdef __cplusplus
}
#endif
#endif
