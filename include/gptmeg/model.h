// gptmeg model: GPT-2 (HF GPT2LMHeadModel) weights, numerics profiles, forward pass, KV cache.
// All tensors are row-major f32 in memory; shapes use B batch, T time, D n_embd, H n_head,
// hd = D/H, I n_inner, V vocab_size, P n_positions, L n_layer.
#ifndef GPTMEG_MODEL_H
#define GPTMEG_MODEL_H

#include "gptmeg/config.h"
#include "gptmeg/core.h"
#include "gptmeg/gelu.h"
#include "gptmeg/ops.h"
#include "gptmeg/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- numerics profile ------------------------------------------------------------------------
// gm_profile (one setting of every numerics knob) is declared in gptmeg/ops.h: the ops read it.
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
  char file_format[96];     // the checkpoint format read (gm_ckpt.format): "safetensors", "pytorch zip", ...
  uint64_t file_bytes;      // bytes of every checkpoint file read
  gm_dtype dtype;           // dtype the weights are rounded to (their f32 storage holds such values)
  const uint32_t *lm_head_p; // bf16 runs: lm_head^T as pairs (gm_bf16_pack layout)
  uint32_t *packed;         // one allocation holding every pair table above (bf16 runs), else NULL
  const uint16_t *wte_bf16;  // bf16 working copies only (gm_gpt2_alloc_working): wte [V, D] as bf16
                             // bits, in `packed` (the embedding reads it)
  bool packed_only;         // gm_gpt2_alloc_working's bf16 copy: wte, lm_head and the layers' four
                             // matrices exist only as the pairs (and wte_bf16); their f32 pointers
                             // are NULL and `storage` holds the other tensors
  const uint16_t *lm_head_h; // f16 runs (as the layers' *_wh): lm_head [V, D] as f16 bits
  uint16_t *half;           // one allocation holding every f16 copy above, else NULL
  size_t copy_bytes;        // bytes of `packed` or `half` (0 without them)
  struct gm_grad_ws *grad_ws; // gradients only: gm_gpt2_grad's kept activations and logits, kept
                             // between calls of the same B and T (a training loop's steps do not
                             // fault them in again); NULL until the first call; gm_gpt2_free releases them
} gm_gpt2;

// Number of parameters of a config (unique; tied lm_head once).
uint64_t gm_gpt2_param_count(const gm_gpt2_config *c);
// Loads DIR/config.json + the first of DIR/model.safetensors, model.safetensors.index.json,
// pytorch_model.bin, pytorch_model.bin.index.json (gm_ckpt_open_dir). Tensor names with or without 'transformer.';
// lm_head tied to wte unless the checkpoint has lm_head.weight and tie_word_embeddings is false.
// A missing, extra or mis-shaped tensor is an error naming it and the expected shape.
int gm_gpt2_load(gm_gpt2 *m, const char *dir);
// Same, from an explicit config and a checkpoint path: a directory (as above), a .bin (zip or
// legacy torch.save) or a safetensors file.
int gm_gpt2_load_files(gm_gpt2 *m, const gm_gpt2_config *cfg, const char *st_path);
// Random init as transformers' GPT2PreTrainedModel._init_weights: N(0, initializer_range) for
// Linear/Conv1D/Embedding weights, c_proj weights N(0, initializer_range/sqrt(2*n_layer)),
// biases 0, LayerNorm weight 1 / bias 0. Deterministic in seed (gm_rng).
int gm_gpt2_init_random(gm_gpt2 *m, const gm_gpt2_config *cfg, uint64_t seed);
// Writes DIR/config.json + DIR/model.safetensors (names with 'transformer.' prefix, lm_head.weight
// only when untied) so that transformers' from_pretrained loads it without warnings.
int gm_gpt2_save(const gm_gpt2 *m, const char *dir);
void gm_gpt2_free(gm_gpt2 *m);
// A zeroed model of m's config, tying and dtype, without the fast copies: the layout of the
// gradients (gm_gpt2_grad) and of an optimizer's moments. Free with gm_gpt2_free.
int gm_gpt2_alloc_like(gm_gpt2 *g, const gm_gpt2 *m);
// One tensor of a model under its checkpoint name ("transformer.h.0.ln_1.weight", "lm_head.weight").
typedef struct {
  char name[80];
  float *data;      // into the model's storage
  int ndim;         // 1 or 2
  int64_t shape[2];
  size_t numel;
} gm_gpt2_tensor;
// Fills out (room for n_layer * 12 + 6) with every tensor of m in checkpoint order (wte, wpe, the
// layers, ln_f, then lm_head only when untied); returns their number, or -1 (out of memory).
int gm_gpt2_tensors(const gm_gpt2 *m, gm_gpt2_tensor *out);
// Writes every tensor of m under its checkpoint name ('transformer.' prefix; lm_head.weight only
// when untied) into one safetensors file, as dt (f32, or f16/bf16 when m's storage holds values of
// that dtype), after the n_extra entries `extra` (e.g. a loss). Atomic (gm_st_write).
int gm_gpt2_write_tensors(const gm_gpt2 *m, const char *path, gm_dtype dt, const gm_st_entry *extra, int n_extra);
// Rounds every weight to dt (f16/bf16, RNE: what model.half() / .bfloat16() do); the f32 storage
// then holds dt values exactly. For bf16 the matrices are also laid out once as bf16 pairs for
// the AVX512-BF16 kernels (half the f32 size more memory). f32 -> f16/bf16 is allowed; f16 <-> bf16 checkpoints are refused
// (either way would re-round the weights to a format with fewer exponent or fraction bits), as is
// going back to f32 after rounding.
int gm_gpt2_to_dtype(gm_gpt2 *m, gm_dtype dt);
// Training's copy back from f32 main weights (mixed-precision recipes): m's weights = main's f32
// values rounded to m->dtype (RNE: torch's p.data.copy_(main) into an f16/bf16 parameter; f32: a
// copy), and m's fast copies (bf16 pairs, f16 bits) rebuilt in place. m and main must have the same
// config and tying and must not share storage; main's file_dtype/dtype are not looked at. threads
// (<= 0: OpenMP's default) share the copying; the result does not depend on it.
int gm_gpt2_set_weights(gm_gpt2 *m, const gm_gpt2 *main, int threads);
// A mixed-precision recipe's working copy of main's weights in dt, for the forward and backward
// (gm_gpt2_grad, gm_gpt2_run; its weights are then filled by gm_gpt2_set_weights): for bf16 the
// layers' four matrices and lm_head exist only as the kernels' bf16 pairs and wte also as bf16 bits
// (packed_only: 2 bytes a parameter where the f32 storage plus the pairs took 6); the other
// tensors, and every tensor of other dtypes, as gm_gpt2_alloc_like + gm_gpt2_to_dtype make them.
// The same bits through every op (the linears' dX read the pairs transposed). Not for decoding
// (gm_gpt2_generate) or for writing checkpoints: main holds the weights.
int gm_gpt2_alloc_working(gm_gpt2 *w, const gm_gpt2 *main, gm_dtype dt);

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

// Activations of a forward as a table indexed by gm_point (shapes as listed there; gm_point and
// the probe types are in gptmeg/ops.h). A forward asked to keep them (gm_gpt2_run_opts.acts) holds
// one slice per layer of every per-layer point, so training can read any layer's tensors, and
// layer norm's f32 row statistics (mean, rstd = 1/sqrt(var + eps), [N] each) of ln_1 and ln_2 of
// every layer and of ln_f. Without it, the forward's own table reuses one slice across layers
// and shares buffers between points (the residual stream in place; ln_1, attn_out, ln_2, mlp and
// ln_f one buffer; scores and probs one buffer, softmax in place) and keeps no statistics.
typedef struct {
  int n_layer, B, T, len, keep_rows;   // N = B*T rows; len = t0 + T keys; logits [B, keep_rows, V]
  bool per_layer;                      // one slice a layer (kept), or one slice reused
  float *pt[GM_N_POINTS];              // each point's first slice (layer 0's, or the only one)
  size_t numel[GM_N_POINTS];           // elements of one slice
  size_t stride[GM_N_POINTS];          // elements between two layers' slices (0: reused)
  float *mean[GM_N_POINTS], *rstd[GM_N_POINTS]; // GM_PT_LN1, LN2 ([L, N]), LNF ([N]) when per_layer, else NULL
  float *storage;                      // the one allocation behind a kept table (the logits are the caller's)
  float *shared[7];                    // the seven buffers of a table that keeps nothing (as before gm_acts)
} gm_acts;

// Point pt of layer `layer` (0-based; -1, or anything, for embed, ln_f and logits): numel[pt] floats.
float *gm_acts_at(const gm_acts *a, int layer, gm_point pt);
// Layer norm statistics of ln (GM_PT_LN1, GM_PT_LN2 or GM_PT_LNF) at `layer`: [N] f32, or NULL
// when they were not kept.
float *gm_acts_mean(const gm_acts *a, int layer, gm_point ln);
float *gm_acts_rstd(const gm_acts *a, int layer, gm_point ln);
void gm_acts_free(gm_acts *a); // frees the storage; a zeroed gm_acts is valid (frees nothing)

// One forward call. Zero-initialise, then set what is needed; profile, tokens, B, T and logits are
// required.
typedef struct {
  const gm_profile *profile; // the numerics profile; its dtype must be the weights' (gm_gpt2_to_dtype)
  const int32_t *tokens;     // [B, T], each in [0, V)
  int B, T;
  gm_kv_cache *kv;           // NULL: a fresh cache of length T (positions 0 .. T-1). Else positions
                             // kv->len .. kv->len+T-1 (< n_positions, <= max_t), appended to the cache
  float *logits;             // out: [B, K, V] f32 (values of the dtype widened exactly)
  int logits_to_keep;        // K: 0 (or > T) = all T positions; else the last K of each sequence
                             // (transformers' logits_to_keep as an int; a generation prefill: 1)
  int threads;               // <= 0: the default
  gm_probe_fn probe;         // NULL: none; sees every gm_point of every layer (the logits as [B*K, V])
  void *probe_ctx;
  gm_acts *acts;             // NULL: not kept; else filled with every layer's activations (zeroed, or
                             // a table of an earlier run: reused when its shape is this run's, else
                             // freed first; the caller frees it with gm_acts_free)
  const gm_gpt2 *autocast;   // NULL: off. Else torch.autocast('cpu', dtype=torch.bfloat16) over f32
                             // weights: m holds the f32 parameters (m->dtype F32), this the bf16 working
                             // copy of the same weights (gm_gpt2_to_dtype + gm_gpt2_set_weights from m:
                             // autocast's cached cast of each weight), profile a bf16 profile. The
                             // embeddings, layer norms and residual adds run in f32 on m's weights (the
                             // stream stays f32); each linear (c_attn, c_proj, c_fc, lm_head) reads its
                             // input rounded to bf16 (the cast autocast inserts) and this copy's weight
                             // and bias, writing bf16 (addmm/mm on autocast's lower-precision list);
                             // attention, activation in bf16 under the profile's knobs, except that
                             // under hf's attention rules (matmul-div, finfo mask) the softmax runs in
                             // f32 (transformers adds the model's f32 causal mask to the bf16 scores:
                             // type promotion), rounded to bf16 after; logits bf16. Checked for hf,
                             // hf-legacy and meg (not megatron: its fused bias-GELU meets an f32 bias)
} gm_gpt2_run_opts;

// The GPT-2 forward: a list of ops (gptmeg/ops.h) over the layers.
// The bits do not depend on threads, nor on logits_to_keep, nor on whether activations are kept:
// every kept logits row is bit-identical to the same row of the all-logits forward, and a cached
// decode step to the same row of a full forward. Nothing of size [B, T, V] is allocated beyond
// the caller's logits. Returns 0, or fails (bad arguments, out of memory, a probe's refusal).
int gm_gpt2_run(const gm_gpt2 *m, const gm_gpt2_run_opts *o);

// ---- backward ----------------------------------------------------------------------------------
// One training step's loss and gradients, as `loss = model(tokens, labels=labels).loss;
// loss.backward()` of transformers' GPT2LMHeadModel (eager attention, dropout off) with the
// profile's pieces swapped in (tools/ref/gm_profiles.py): the loss is transformers' causal-LM
// cross-entropy (logits.float(), labels shifted by one, mean over the counted tokens, f32), and
// every gradient is autograd's, in the dtype, op by op (gptmeg/ops.h backward ops, in reverse).
typedef struct {
  const gm_profile *profile; // its dtype must be the weights'
  const int32_t *tokens;     // [B, T], each in [0, V)
  const int32_t *labels;     // [B, T] in [0, V) or GM_IGNORE_INDEX, or NULL: the tokens (labels = input_ids)
  int B, T;                  // T <= n_positions
  int threads;               // <= 0: the default; the bits depend on it only where torch's do (ops.h)
  float dloss;               // the loss's gradient: 0 means 1 (loss.backward()); a loss scale S gives
                             // (loss * S).backward() (S an f32 tensor: the loss's gradient is S exactly)
  const gm_gpt2 *autocast;   // NULL: off. Else the forward under torch.autocast('cpu', bf16) as
                             // gm_gpt2_run_opts.autocast (m f32, this m's bf16 working copy, a bf16
                             // profile) and autograd's backward outside it: each cast's backward casts
                             // the gradient back (a bf16 gradient widened to f32 exactly, an f32 one
                             // arriving at a bf16 tensor rounded), so g (gm_gpt2_alloc_like(m)) gets
                             // f32 gradients: the linears' weights and biases bf16 values widened, the
                             // layer norms', wpe's and the embedding part of wte's from f32 ops (tied:
                             // wte's = lm_head's widened + the embedding's, added in f32)
} gm_gpt2_grad_opts;

// *loss = the f32 loss; g (gm_gpt2_alloc_like(m)) receives every parameter's gradient (f32 storage
// of dtype values; tied: wte's holds lm_head's plus the embedding's, as autograd accumulates them).
// *n_scored (may be NULL) = the number of labels counted. Fails on bad arguments, out of memory,
// or an op whose backward is not available under the profile.
int gm_gpt2_grad(const gm_gpt2 *m, const gm_gpt2_grad_opts *o, gm_gpt2 *g, float *loss, int64_t *n_scored);

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

// Called with each new token as soon as it is drawn, and the logits [V] (f32, valid during the
// call) it was drawn from: the prompt's last position for the first token, then each decode step's;
// non-zero stops the generation (no error).
typedef int (*gm_token_fn)(void *ctx, int32_t token, const float *logits);

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
