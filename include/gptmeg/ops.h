// gptmeg ops: the layer between the kernels and the model (core < io < kernels < tok < ops < model).
//
// An op is one step of a transformer as eager PyTorch runs it: linear, layer norm, attention,
// activation, residual add, embedding, cross-entropy, each a forward and a backward in llm.c's
// shape (out first, then inputs, then sizes). An op
//   - takes one gm_op_ctx: the run's dtype, its numerics profile, threads, the CPU target, the probe;
//   - reads and writes f32 storage holding values of the dtype (widened exactly), and rounds its
//     own output to the dtype where eager PyTorch writes a dtype tensor, so a caller never rounds;
//   - picks the kernel itself (the dtype's matmul, a packed weight copy, ATen's layer-norm flavour);
//   - gives the same bits for any thread count.
// The GPT-2 forward (src/model/gpt2_forward.c) is a list of these calls. Each op's numerics
// contract is written above it here and at the top of its file (src/ops/ops_*.c); the rules op by
// op are in docs/numerics.md "GPT-2 numerics profiles".
// The backward ops are autograd's: each WRITES its gradients (never accumulates; a NULL output is
// not computed) in the dtype's values, rounded where eager PyTorch's backward writes a dtype
// tensor, so the model's backward (gm_gpt2_grad, src/model/gpt2_backward.c) is a list of these
// calls plus autograd's accumulation of two gradients of one tensor (gm_op_residual_bwd). Where
// torch's backward bits depend on the thread count (layer norm's dgamma/dbeta, the f32 softmax
// backward's tail), the op reproduces that dependence for c->threads and says so in its contract.
// Shapes: N rows (B*T), C input channels, OC output channels, NH heads, hd = C/NH, V vocab.
#ifndef GPTMEG_OPS_H
#define GPTMEG_OPS_H

#include "gptmeg/config.h"
#include "gptmeg/core.h"
#include "gptmeg/gelu.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---- numerics profile (docs/numerics.md, 'GPT-2 numerics profiles': the rules op by op) -------
// A profile is data: one setting of every knob. The ops ask it where to round. (The built-in
// profiles and the knob parser are the model's: gm_profile_get in gptmeg/model.h.)
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

// ---- probe points ----------------------------------------------------------------------------
// Probe points inside the forward, in execution order (diverge reads and rewrites them); also the
// index of the model's activation table (gm_acts in gptmeg/model.h).
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

// ---- the context every op takes ----------------------------------------------------------------
typedef struct {
  gm_dtype dtype;            // F32, F16 or BF16: the dtype every op's values are in (== profile->dtype)
  const gm_profile *profile; // the numerics knobs (layer norm, scores, mask, softmax, activation)
  int threads;               // > 0 (gm_op_ctx_init resolves <= 0 to the default); never changes the bits
  int cpu_target;            // placeholder for the CPU dispatcher's target: 0 = this host (the kernels
                             // pick their ISA themselves, GPTMEG_SIMD caps it); nothing reads it yet
  gm_probe_fn probe;         // NULL: none
  void *probe_ctx;
  bool bmm_slice;            // the products are slices of a batched one (attention's per-head bmm)
  int bmm_batch;             // with bmm_slice: that batched product's slices (batch x heads)
  int bmm_threads;           // with bmm_slice: torch's threads over that product (its blocking's)
  void *ws;                  // scratch an op may use for its temporaries instead of allocating them
  size_t ws_bytes;           // (NULL, 0: none; the backward lends the dead logits buffer)
} gm_op_ctx;

// c = {p->dtype, p, threads (<= 0: omp default), 0, probe, probe_ctx, false, NULL, 0}.
void gm_op_ctx_init(gm_op_ctx *c, const gm_profile *p, int threads, gm_probe_fn probe, void *probe_ctx);
// Calls c's probe (if any) on data with ndim dims `shape`; its failure becomes an error naming
// the layer and point. 0 when there is no probe.
int gm_op_probe(const gm_op_ctx *c, int layer, gm_point pt, float *data, int ndim, const int64_t *shape);
// x[i] = R(x[i]) for i < n: round to c->dtype in place (RNE; the identity in f32).
void gm_op_round(const gm_op_ctx *c, float *x, size_t n);
// C[M, N] (stride ldc) = alpha * A[M, K] (stride lda) @ op(B) (+ bias[N]), f32 accumulation in
// torch's order for c->dtype (gm_matmul_f32_torch_mt as torch computes it on c->threads threads,
// gm_matmul_f16_torch, gm_matmul_bf16), NOT rounded: the forward's raw product. op(B) = B [K, N] or, with trans_b, B^T for B [N, K]. A and B
// hold c->dtype values.
void gm_op_matmul(const gm_op_ctx *c, const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias,
                  float alpha, float *Cm, int ldc, int M, int N, int K);

// C[M, N] (stride ldc) = alpha * op(A) @ op(B) (+ bias[N]), not rounded: op(A) = A [M, K] (stride lda)
// or, with trans_a, A^T for A stored [K, M] (stride lda); op(B) as for gm_op_matmul. The product
// torch's mm/addmm issues for these strides (ATen's addmm_impl_cpu_ swaps the operands for its
// column-major BLAS: trans_b is the BLAS call's transa, trans_a its transb), in torch's order for
// c->dtype and the active target, as torch computes it on c->threads threads:
//   f32: gm_matmul_f32_torch_mt (MKL's order, with the Intel AVX-512 sgemm's K split
//        on 2 threads: gptmeg/kernels.h); with trans_a (MKL's transb = T), op(A) is copied
//        contiguous and that order runs, the packed schedule's short K halved (measured: the same
//        bits as torch for the linear backward's dW shapes on intel-amx, K = rows up to 8192, 1
//        and 2 threads);
//   f16: on intel-amx torch's mm runs oneDNN: gm_matmul_f16_onednn (K-blocked chains, A^T read in
//        place); on other targets gm_op_matmul on op(A) (ATen's orders, unverified for trans_a);
//   bf16: gm_op_matmul on op(A) (the forward's oneDNN order; see ops_linear.c for what that
//        reproduces of the backward's products).
// bias and alpha != 1 are passed through (the backward's products have neither; the K split is
// not applied with them). For bmm-shaped products call it per batch (whether torch's bmm takes
// the same order per batch is not verified here). 0, or gm_fail on out of memory (scratch: M x K
// floats with trans_a for f32/bf16, M x N floats for the f32 K split). Cm must not alias A or B.
int gm_op_matmul_t(const gm_op_ctx *c, const float *A, int lda, bool trans_a, const float *B, int ldb, bool trans_b,
                   const float *bias, float alpha, float *Cm, int ldc, int M, int N, int K);

// ---- linear (ops_linear.c) ---------------------------------------------------------------------
// A weight matrix as the model holds it: f32 storage of dtype values, plus the optional copies the
// fast kernels read instead (same bits).
typedef struct {
  const float *w;        // [C, OC] (Conv1D, as stored) or, with trans, [OC, C] (lm_head, wte); NULL
                         // in bf16 when bf16p is given (a training working copy: the ops read the pairs)
  bool trans;
  const uint32_t *bf16p; // bf16 runs: op(w) as bf16 pairs (gm_bf16_pack layout) or NULL
  const uint16_t *f16h;  // f16 runs: w as f16 bits, same layout, or NULL (read for one row, or trans)
} gm_op_weight;

// inp is (N, C) f32 storage holding dtype values; out is (N, OC); bias (OC) or NULL; one rounding,
// bias included: out = R(inp @ op(w) + bias), f32 accumulation in torch's order for the dtype.
// out must not alias inp.
int gm_op_linear_fwd(const gm_op_ctx *c, float *out, const float *inp, const gm_op_weight *w, const float *bias, int N,
                     int C, int OC);
// Autograd of addmm/linear: dinp (N, C) = R(dout @ op(w)^T), dweight (like w->w: [C, OC], or [OC, C]
// with trans) = R(inp^T @ dout) (or R(dout^T @ inp)), dbias (OC) = R(sum over rows of dout), each
// in torch's order for the dtype and target; any of the three may be NULL. dout (N, OC), inp (N, C)
// hold dtype values; w->w is read, except in bf16 with w->bf16p (dinp from the pairs transposed,
// gm_matmul_bf16_packed_t_rounded: the same bits). Conv1D (w->trans false): torch's
// mm(dout, W^T), mm(x^T, dout) and dout.sum(0); lm_head (trans, no bias: pass dbias NULL):
// mm(dout, W), mm(dout^T, x). f32 on the Intel targets: torch's bits on c->threads = 1 or 2, except
// the lm_head's dinp of one row (N = 1; MKL's one-row kernel, not reproduced); dbias is ATen's sum
// order on every target. f16/bf16: see ops_linear.c (not all bits). Outputs must not alias inputs
// or each other. 0, or gm_fail on out of memory.
int gm_op_linear_bwd(const gm_op_ctx *c, float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const gm_op_weight *w, int N, int C, int OC);

// ---- layer norm (ops_norm.c) -------------------------------------------------------------------
// inp is (N, C) f32 storage holding dtype values; out is (N, C); weight, bias (C); mean, rstd (N)
// f32 or NULL (not computed). out = R(layer_norm_f32(inp) * weight + bias), one rounding, in
// ATen's order: its reduced-type kernel for f16/bf16 rows under the native rule, its f32 kernel
// for f32 rows and the fp32 rule. mean and rstd = 1/sqrt(var + (float)eps) are that kernel's f32
// values (what torch.native_layer_norm saves for the backward). out may alias inp.
int gm_op_layernorm_fwd(const gm_op_ctx *c, float *out, float *mean, float *rstd, const float *inp, const float *weight,
                        const float *bias, int N, int C, double eps);
// Autograd of native_layer_norm (and of the fp32 rule's casts), bit-identical to torch 2.15's CPU
// backward (ATen's LayerNormBackwardKernel, its AVX2 build: gm_layernorm_bwd_f32): dinp (N, C),
// dweight, dbias (C) written, any may be NULL; dout, inp (N, C) and weight (C) hold dtype values;
// mean, rstd (N) are gm_op_layernorm_fwd's f32 statistics of the same inp. Native rule, f16/bf16:
// ATen's kernel for dtype x, w, b (mean/rstd read rounded to the dtype, as torch saves them; the
// per-thread dgamma/dbeta buffers rounded to the dtype at each row; every output rounded once).
// f32 runs and the fp32 rule: ATen's f32 kernel, each gradient then rounded once to the dtype (the
// casts' backward). dweight/dbias depend on c->threads exactly as torch's on its thread count
// (ATen's split of the rows into min(threads, N) chunks); dinp does not. No output may alias an input.
int gm_op_layernorm_bwd(const gm_op_ctx *c, float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean, const float *rstd, int N, int C);

// ---- attention (ops_attention.c) -----------------------------------------------------------------
// One layer's causal self-attention over the T new positions t0 .. t0+T-1 of B sequences, the
// keys and values of positions < t0 read from the layer's cache.
typedef struct {
  int B, T, t0;                // len = t0 + T keys
  int C, NH;                   // channels, heads: hd = C / NH
  int layer;                   // 0-based: the inverse-layer scale and qk-layer-scaling coefficient, the probes' layer
  bool scale_attn_weights;     // the model config's flags (gm_gpt2_config)
  bool scale_by_inverse_layer; // scale_attn_by_inverse_layer_idx
  bool reorder_and_upcast;     // reorder_and_upcast_attn (run only when the profile honours it)
  float *k_cache, *v_cache;    // this layer's (B, NH, max_t, hd): positions t0..t0+T-1 are written
  int max_t;
} gm_op_attn;

// qkv is (N, 3C) f32 storage holding dtype values (q|k|v, heads hd wide); out is (N, C), heads
// merged; scores and probs are (B, NH, T, len), masked entries 0, and may be the same buffer
// (softmax in place). Scores per the profile's scores/mask/softmax rules (rounded where eager
// torch rounds: see ops_attention.c), probs = R(softmax(scores)), out = R(probs @ v), f32
// accumulation in torch's order. Probes GM_PT_SCORES and GM_PT_PROBS (layer a->layer), which may
// rewrite them; the caller probes out. Appends k, v of the new positions to the cache.
int gm_op_attention_fwd(const gm_op_ctx *c, const gm_op_attn *a, float *out, float *scores, float *probs,
                        const float *qkv);
// Autograd of the forward above (t0 == 0: training runs no cache), as torch 2.15 autograd runs the
// profile's attention in GPT2LMHeadModel (transformers' eager_attention_forward for hf,
// tools/ref/gm_profiles.py's for the others; k, v the DynamicCache's contiguous copies, the
// model's default): dqkv (N, 3C) written (dq|dk|dv, heads hd wide); dout (N, C), the gradient of
// the merged heads; qkv (N, 3C) and probs (B, NH, T, len) from the forward; scores (B, NH, T, len)
// the forward's softmax input, read only by megatron's f32 softmax in an f16/bf16 run (torch
// saves the f32 softmax output: recomputed from it; then it must not share the forward's probs
// buffer), else may be NULL; dscores (B, NH, T, len) scratch, written (the gradient of the scores
// product: q@k^T, or baddbmm's output).
// dP = R(dO @ v^T), dv = R(P^T @ dO), dS = the softmax backward (ATen's kernel, f32 opmath),
// masked entries 0, then each forward scaling's backward rounded as torch rounds it,
// dq = R(dS @ k), dk = R(dS^T @ q) (times alpha, rounded, for baddbmm); each bmm in torch's order
// for the dtype, target and operand layout (ATen's small kernel below 400 multiply-adds). The f32
// softmax backward's tail depends on c->threads (1 vs more), as torch's does. No output may alias
// an input. reorder_and_upcast_attn is not reproduced (an error); so is t0 > 0.
int gm_op_attention_bwd(const gm_op_ctx *c, const gm_op_attn *a, float *dqkv, float *dscores, const float *dout,
                        const float *qkv, const float *probs, const float *scores);

// ---- activation (ops_act.c) ----------------------------------------------------------------------
// inp is (N, OC) f32 storage holding dtype values; out is (N, OC); bias (OC) or NULL. The
// activation is the profile's override, else `act` (the config's) in the profile's GELU mode.
// Without bias: out = act(inp) in the dtype (GELU family through gm_gelu_fwd: its own rounding
// contract; relu exact; silu f32 opmath, one rounding). With bias (Megatron's fused bias_gelu):
// inp + bias in f32, the activation in f32, one rounding at the end. out must not alias inp.
int gm_op_act_fwd(const gm_op_ctx *c, gm_activation act, float *out, const float *inp, const float *bias, int N, int OC);
// Autograd of the forward above as eager torch 2.15 CPU computes it on c->threads threads (its
// split of each elementwise op, grain 32768, and of the bias sum is reproduced, so the bits depend
// on c->threads exactly where torch's do: never for N*OC < 32768 or chunks that are whole vector
// steps, e.g. OC = 3072). dinp (N, OC) written in the dtype; dout, inp (N, OC) the forward's input
// (for the fused path: c_fc's output without its bias). Without bias: the GELU family through
// gm_gelu_bwd in the profile's mode (torch-cpu: autograd of the written ops / ATen's and oneDNN's
// GELU backward); relu = threshold_backward (inp <= 0 ? 0 : dout); silu = ATen's silu_backward
// in f32, one rounding. With bias (Megatron's GeLUFunction): x = R(bias + inp) in the dtype, then
// bias_gelu_back op by op in the dtype (the gelu_megatron variant's backward), the same tensor for
// input and bias; dbias (OC) = R(sum over rows of it) in ATen's sum(dim=0) order (f32
// accumulation; one rounding), or NULL; dinp may be NULL when dbias is wanted. dinp must not
// alias dout or inp.
int gm_op_act_bwd(const gm_op_ctx *c, gm_activation act, float *dinp, float *dbias, const float *dout, const float *inp,
                  const float *bias, int N, int OC);

// ---- residual (ops_residual.c) -------------------------------------------------------------------
// resid, branch, out are (n) f32 storage holding dtype values; out = R(branch + resid), one
// rounding (that operand order: x86 keeps the first NaN operand's payload). out may alias either.
int gm_op_residual_fwd(const gm_op_ctx *c, float *out, const float *resid, const float *branch, size_t n);
// Autograd's accumulation of the two gradients of the residual input: dresid = R(dresid + dout)
// (dresid holds the gradient that arrived first); the branch's gradient is dout itself.
int gm_op_residual_bwd(const gm_op_ctx *c, float *dresid, const float *dout, size_t n);

// ---- embedding (ops_embed.c) ---------------------------------------------------------------------
// tokens (B, T) int32 in [0, V) (checked by the caller); wte (V, C), wpe (P, C) f32 storage of dtype
// values, or with wte NULL, wte_bf16 (V, C) as bf16 bits (a bf16 training working copy); out
// (B*T, C): out[b, t] = R(wte[tok] + wpe[t0 + t]), one rounding.
int gm_op_embedding_fwd(const gm_op_ctx *c, float *out, const int32_t *tokens, const float *wte, const uint16_t *wte_bf16,
                        const float *wpe, int B, int T, int t0, int C);
// Autograd of the embedding sum (GPT2Model: wte(input_ids) + wpe(position_ids), position_ids
// [1, T] broadcast over the batch): dwte (V, C) and dwpe (P, C) written, zero where no token or
// position; either may be NULL. dout (B*T, C). dwte[tok] = R(dwte[tok] + dout[b, t]) in (b, t)
// order, one rounding per add (ATen's embedding_dense_backward on a dtype tensor); dwpe[t0 + t] =
// R(sum over b of dout[b, t]) (ATen's cascade sum over the batch in f32, one rounding). V and P
// are wte's and wpe's rows (t0 + T <= P, else an error). Bit-identical to torch for any thread
// count (torch's bits do not depend on it). The tied lm_head's gradient is not added here.
int gm_op_embedding_bwd(const gm_op_ctx *c, float *dwte, float *dwpe, const float *dout, const int32_t *tokens, int B,
                        int T, int t0, int C, int V, int P);
// The tied case: dwte (V, C) already holds the lm_head's gradient; the embedding's (as
// gm_op_embedding_bwd computes it) is added as autograd's InputBuffer adds the second gradient,
// dwte = R(dwte + emb), without a (V, C) scratch: the rows no token touches add +0 (-0 becomes +0),
// the touched rows are accumulated in a (distinct tokens, C) buffer first. Bits as
// gm_op_embedding_bwd into a scratch followed by gm_op_residual_bwd, for any thread count.
int gm_op_embedding_bwd_tied(const gm_op_ctx *c, float *dwte, const float *dout, const int32_t *tokens, int B, int T,
                             int C, int V);

// ---- cross-entropy (ops_loss.c) ------------------------------------------------------------------
enum { GM_IGNORE_INDEX = -100 }; // a label that is not scored (torch's ignore_index)

// logits (B, T, V) f32 (dtype values widened); labels (B, T) int32 in [0, V) or GM_IGNORE_INDEX.
// Labels are shifted as transformers' causal-LM loss does: logits[b, t] is scored against
// labels[b, t + 1]. losses (B, T) double or NULL: losses[b, t+1] = -log_softmax(logits[b, t])[label]
// (log-softmax in double over the f32 row: max + log(sum exp(x - max)) - x[label]), 0 where not
// scored; *loss = their sum in (b, t) order / the number scored (double); *n_scored is that number
// (may be NULL). No label scored: *loss = NaN. A label outside [0, V) that is not the ignore index
// is an error. Rows in parallel, sum in order: the bits do not depend on threads.
int gm_op_crossentropy_fwd(const gm_op_ctx *c, double *loss, int64_t *n_scored, double *losses, const float *logits,
                           const int32_t *labels, int B, int T, int V);

// The training loss: transformers 4.57.3 GPT2LMHeadModel's ForCausalLMLoss as torch 2.15 CPU
// computes it (contract in ops_loss.c), bit for bit for f32/f16/bf16 logits. logits (B, T, V) f32
// storage of dtype values; labels (B, T) int32 in [0, V) or GM_IGNORE_INDEX, shifted as above
// (row (b, t) scored against labels[b, t+1]). *loss = the f32 mean of -log_softmax(row)[label] over
// the scored rows (NaN when none); *n_scored their number (may be NULL); logp (B*T, V) f32 = the
// log_softmax output torch saves for the backward, or NULL (not kept: then only a row a thread is
// held). logp may alias logits.
int gm_op_lmloss_fwd(const gm_op_ctx *c, float *loss, int64_t *n_scored, float *logp, const float *logits,
                     const int32_t *labels, int B, int T, int V);
// dlogits (B, T, V) = the gradient of dloss * loss (dloss = 1.0f for loss.backward()) rounded to the
// dtype: nll_loss_backward, log_softmax_backward, the .float() cast's backward. Reads logp from the
// forward, or, when logp is NULL, recomputes it from logits (then the same bits). dlogits may alias
// logp or logits.
int gm_op_lmloss_bwd(const gm_op_ctx *c, float *dlogits, float dloss, const float *logp, const float *logits,
                     const int32_t *labels, int B, int T, int V);

#ifdef __cplusplus
}
#endif
#endif
