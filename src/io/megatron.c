// Megatron-LM checkpoint directories -> a gm_ckpt under HF GPT-2 names, as transformers'
// convert_megatron_gpt2_checkpoint.py lays them out (fused QKV reordered to [3, heads, head_dim],
// [out, in] linears transposed to Conv1D's [in, out]), tensor-parallel shards merged and
// pipeline stages' layers renumbered. Every value is moved bit for bit (no arithmetic).
// gm_meg_build (the merge) is shared with megatron_ds.c (Megatron-DeepSpeed), which renames its
// layer files into Megatron-LM shards first; gm_megatron_detect/open dispatch to it.
#include "torch_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_TP = 64, MAX_PP = 64 };

static bool is_file(const char *p) { struct stat sb; return stat(p, &sb) == 0 && S_ISREG(sb.st_mode); }
static bool is_dir(const char *p) { struct stat sb; return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode); }

// Reads latest_checkpointed_iteration.txt: "release" or a non-negative iteration number.
static int tracker(const char *dir, char *folder, size_t cap, gm_megatron_info *info) {
  char p[4096];
  snprintf(p, sizeof p, "%s/latest_checkpointed_iteration.txt", dir);
  FILE *f = fopen(p, "r");
  if (!f) { // a checkpoint folder itself (iter_NNNNNNN/, release/)
    snprintf(folder, cap, "%s", dir);
    return 0;
  }
  char line[64] = {0};
  size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) line[--n] = 0;
  if (strcmp(line, "release") == 0) { info->release = true; snprintf(folder, cap, "%s/release", dir); return 0; }
  char *end;
  errno = 0;
  long long it = strtoll(line, &end, 10);
  if (!n || *end || errno || it < 0 || it > 9999999999LL)
    return gm_fail("%s: neither 'release' nor an iteration number", p);
  info->iteration = it;
  snprintf(folder, cap, "%s/iter_%07lld", dir, it);
  return 0;
}

bool gm_megatron_detect(const char *dir) {
  if (gm_megatron_ds_detect(dir)) return true;
  if (gm_megatron_zip_detect(dir)) return true; // NGC's zip (megatron_zip.c)
  char p[4096];
  snprintf(p, sizeof p, "%s/latest_checkpointed_iteration.txt", dir);
  if (is_file(p)) return true;
  snprintf(p, sizeof p, "%s/mp_rank_00", dir);
  if (is_dir(p)) return true;
  snprintf(p, sizeof p, "%s/mp_rank_00_000", dir);
  return is_dir(p);
}

static const gm_meg_arg *arg(const gm_meg_meta *m, const char *name) {
  for (int i = 0; i < m->n_args; i++)
    if (strcmp(m->args[i].name, name) == 0) return &m->args[i];
  return NULL;
}
bool gm_meg_arg_int(const gm_meg_meta *m, const char *name, int64_t *v) {
  const gm_meg_arg *a = arg(m, name);
  if (!a || a->kind != 'i') return false;
  *v = a->i;
  return true;
}
static bool arg_true(const gm_meg_meta *m, const char *name) {
  const gm_meg_arg *a = arg(m, name);
  return a && (a->kind == 'b' || a->kind == 'i') && a->i;
}

typedef struct {
  int tp, pp;
  gm_ckpt *shard;                     // [p * tp + t]
  const char *stack;                  // "transformer" or "encoder"
  int layer_base[MAX_PP + 1];         // the first global layer of each stage
} meg;

static const gm_ckpt_tensor *get(const meg *g, int t, int p, const char *fmt, int layer, bool need) {
  char nm[256], full[300];
  snprintf(nm, sizeof nm, fmt, layer);
  snprintf(full, sizeof full, "language_model.%s", nm);
  if (strncmp(nm, "layers.", 7) == 0 || strncmp(nm, "final_", 6) == 0) snprintf(full, sizeof full, "language_model.%s.%s", g->stack, nm);
  const gm_ckpt_tensor *x = gm_ckpt_find(&g->shard[p * g->tp + t], full);
  if (!x && need) gm_fail("%s: no tensor '%s'", g->shard[p * g->tp + t].path, full);
  return x;
}

static size_t esize(gm_dtype d) { return d == GM_F32 ? 4 : 2; }

// A new output tensor (owned buffer) named name, dtype and shape as given.
static gm_ckpt_tensor *out_tensor(gm_ckpt *c, const char *name, gm_dtype dt, const char *tdt, int nd, int64_t s0, int64_t s1) {
  gm_ckpt_tensor *o = gm_ckpt_add_tensor(c);
  if (!o) return NULL;
  o->name = strdup(name);
  o->dtype = dt;
  o->readable = true;
  o->torch_dtype = tdt;
  o->ndim = nd;
  o->shape[0] = s0;
  o->shape[1] = nd == 2 ? s1 : 0;
  o->numel = (uint64_t)s0 * (uint64_t)(nd == 2 ? s1 : 1);
  o->owned = malloc(o->numel * esize(dt) + 1);
  o->data = o->owned;
  o->file = c->path;
  if (!o->name || !o->owned) { gm_fail("out of memory"); return NULL; }
  return o;
}

static int check(const gm_ckpt_tensor *x, int nd, int64_t s0, int64_t s1, gm_dtype dt) {
  if (!x->readable) return gm_fail("%s: tensor '%s' is %s (gptmeg reads float32, float16, bfloat16)", x->file, x->name, x->torch_dtype);
  if (x->dtype != dt) return gm_fail("%s: tensor '%s' is %s, the checkpoint's embedding is another dtype", x->file, x->name, x->torch_dtype);
  if (x->ndim != nd || x->shape[0] != s0 || (nd == 2 && x->shape[1] != s1))
    return gm_fail("%s: tensor '%s' has shape [%lld%s%lld], expected [%lld%s%lld]", x->file, x->name, (long long)x->shape[0],
                   nd == 2 ? ", " : "", nd == 2 ? (long long)x->shape[1] : 0LL, (long long)s0, nd == 2 ? ", " : "", nd == 2 ? (long long)s1 : 0LL);
  return 0;
}

typedef enum { REPL, COL, ROW, QKV } split;

// Merges one Megatron tensor over the TP ranks of stage p into out (Megatron's [out, in] order,
// QKV rows in HF's [3, heads, head_dim] order), then writes it transposed when 2-D.
static int merge(meg *g, gm_ckpt *c, int p, const char *fmt, int layer, const char *hf, split how, int nd, int64_t rows,
                 int64_t cols, gm_dtype dt, int heads, double ver, bool tr) {
  int T = how == REPL ? 1 : g->tp;
  int64_t r_rows = (how == COL || how == QKV) ? rows / g->tp : rows, r_cols = how == ROW ? cols / g->tp : cols;
  size_t es = esize(dt);
  unsigned char *m = malloc((size_t)(rows * (nd == 2 ? cols : 1)) * es + 1);
  if (!m) return gm_fail("out of memory");
  int64_t W = nd == 2 ? cols : 1, rw = nd == 2 ? r_cols : 1;
  for (int t = 0; t < T; t++) {
    const gm_ckpt_tensor *x = get(g, t, p, fmt, layer, true);
    if (!x || check(x, nd, r_rows, r_cols, dt)) { free(m); return -1; }
    const unsigned char *src = x->data;
    for (int64_t lr = 0; lr < r_rows; lr++) {
      int64_t gr = lr, gc = 0;
      if (how == COL) gr = t * r_rows + lr;
      if (how == ROW) gc = t * r_cols;
      if (how == QKV) { // rank t holds heads [t*hr, (t+1)*hr) in its own checkpoint_version layout
        int64_t hr = heads / g->tp, hd = rows / 3 / heads, s, h, d;
        if (ver < 1) { s = lr / (hr * hd); h = lr / hd % hr; d = lr % hd; }          // [3, heads, hd]
        else if (ver < 2) { h = lr / (hd * 3); d = lr / 3 % hd; s = lr % 3; }      // [heads, hd, 3]
        else { h = lr / (3 * hd); s = lr / hd % 3; d = lr % hd; }                   // [heads, 3, hd]
        gr = s * heads * hd + (t * hr + h) * hd + d;
      }
      memcpy(m + ((size_t)(gr * W + gc)) * es, src + (size_t)(lr * rw) * es, (size_t)rw * es);
    }
  }
  gm_ckpt_tensor *o = out_tensor(c, hf, dt, dt == GM_F32 ? "torch.float32" : dt == GM_F16 ? "torch.float16" : "torch.bfloat16", nd,
                                 tr ? cols : rows, tr ? rows : cols);
  if (!o) { free(m); return -1; }
  if (!tr) memcpy(o->owned, m, (size_t)(rows * W) * es);
  else
    for (int64_t r = 0; r < rows; r++)
      for (int64_t k = 0; k < cols; k++) memcpy((unsigned char *)o->owned + (size_t)(k * rows + r) * es, m + (size_t)(r * cols + k) * es, es);
  free(m);
  return 0;
}

static int rank_file(char *out, size_t cap, const char *folder, int t, int p, int pp) {
  char d[4200];
  if (pp > 1) snprintf(d, sizeof d, "%s/mp_rank_%02d_%03d", folder, t, p);
  else snprintf(d, sizeof d, "%s/mp_rank_%02d", folder, t);
  snprintf(out, cap, "%s/model_optim_rng.pt", d);
  if (is_file(out)) return 0;
  snprintf(out, cap, "%s/model_rng.pt", d);
  if (is_file(out)) return 0;
  return gm_fail("%s: neither model_optim_rng.pt nor model_rng.pt", d);
}

int gm_meg_build(gm_ckpt *c, gm_gpt2_config *cfg, gm_megatron_info *info, gm_ckpt *shards, const gm_meg_meta *m0, int tp,
                 int pp, const char *folder, bool trim_vocab) {
  memset(c, 0, sizeof *c);
  if (tp < 1 || pp < 1 || pp > MAX_PP) return gm_fail("%s: %d tensor-parallel ranks x %d stages", folder, tp, pp);
  meg gg = {.tp = tp, .pp = pp, .shard = shards}, *g = &gg;
  const char *f0 = shards[0].path;
  int rc = 0;
  int64_t v;
  // The layer stack's name and each stage's layers.
  g->stack = "transformer";
  if (!rc && !get(g, 0, 0, "layers.%d.input_layernorm.weight", 0, false)) g->stack = "encoder";
  for (int p = 0; p < pp && !rc; p++) {
    int n = 0;
    while (get(g, 0, p, "layers.%d.input_layernorm.weight", n, false)) n++;
    if (!n) rc = gm_fail("%s: no language_model.transformer/encoder.layers.0.input_layernorm.weight", g->shard[p * tp].path);
    g->layer_base[p + 1] = g->layer_base[p] + n;
  }
  // The config: args where present, else the tensors' shapes.
  const gm_ckpt_tensor *we = rc ? NULL : get(g, 0, 0, "embedding.word_embeddings.weight", 0, true),
                       *pe = we ? get(g, 0, 0, "embedding.position_embeddings.weight", 0, true) : NULL,
                       *fc = pe ? get(g, 0, 0, "layers.%d.mlp.dense_h_to_4h.weight", 0, true) : NULL;
  if (!rc && !fc) rc = -1;
  if (!rc && (we->ndim != 2 || pe->ndim != 2 || fc->ndim != 2)) rc = gm_fail("%s: embeddings or dense_h_to_4h are not matrices", f0);
  if (!rc) {
    gm_config_defaults(cfg);
    cfg->n_embd = (int)we->shape[1];
    cfg->vocab_size = (int)(we->shape[0] * tp);
    cfg->n_positions = (int)pe->shape[0];
    cfg->n_layer = g->layer_base[pp];
    cfg->n_inner = (int)(fc->shape[0] * tp);
    cfg->n_inner_null = false;
    cfg->n_head = cfg->n_embd / 64; // no args: the converter's 345M default (head_dim 64)
    snprintf(cfg->activation_function, sizeof cfg->activation_function, "gelu_new");
    if (m0->has_args) {
      if (gm_meg_arg_int(m0, "num_attention_heads", &v)) cfg->n_head = (int)v;
      struct { const char *a; int *dst; } chk[] = {{"hidden_size", &cfg->n_embd}, {"num_layers", &cfg->n_layer},
                                                   {"padded_vocab_size", &cfg->vocab_size}, {"max_position_embeddings", &cfg->n_positions},
                                                   {"ffn_hidden_size", &cfg->n_inner}};
      for (size_t i = 0; i < sizeof chk / sizeof chk[0] && !rc; i++)
        if (gm_meg_arg_int(m0, chk[i].a, &v) && v != *chk[i].dst)
          rc = gm_fail("%s: args.%s is %lld but the tensors say %d", f0, chk[i].a, (long long)v, *chk[i].dst);
      const gm_meg_arg *eps = arg(m0, "layernorm_epsilon");
      if (eps && eps->kind == 'f') cfg->layer_norm_epsilon = eps->f;
      // The activation transformers' converter records: bias_gelu_fusion -> gelu_fast, openai_gelu -> gelu_new, else gelu.
      const char *act = arg_true(m0, "bias_gelu_fusion") ? "gelu_fast" : arg_true(m0, "openai_gelu") ? "gelu_new" : "gelu";
      snprintf(cfg->activation_function, sizeof cfg->activation_function, "%s", act);
    }
  }
  if (!rc && (cfg->n_head <= 0 || cfg->n_embd % cfg->n_head || cfg->n_head % tp || cfg->vocab_size % tp))
    rc = gm_fail("%s: %d heads do not divide hidden size %d over %d tensor-parallel ranks", f0, cfg->n_head, cfg->n_embd, tp);
  if (!rc) rc = gm_config_validate(cfg, f0);
  if (!rc) {
    info->tp = tp;
    info->pp = pp;
    info->checkpoint_version = m0->has_version ? m0->version : 0;
    info->has_args = m0->has_args;
    if (!info->release && !info->iteration) info->iteration = m0->iteration;
    snprintf(info->stack, sizeof info->stack, "%s", g->stack);
    c->path = strdup(folder);
    if (!c->path) rc = gm_fail("out of memory");
  }
  // The HF state dict.
  gm_dtype dt = rc ? GM_F32 : we->dtype;
  int64_t D = cfg->n_embd, I = cfg->n_inner, V = cfg->vocab_size;
  double ver = info->checkpoint_version;
  int H = cfg->n_head;
  if (!rc) rc = merge(g, c, 0, "embedding.word_embeddings.weight", 0, "transformer.wte.weight", COL, 2, V, D, dt, H, ver, false);
  // The GPT-2 tokenizer's 50257 rows, the padding rows dropped: on request, and without args, where
  // transformers' converter slices word_embeddings[:config.vocab_size] with its default 50257
  // (NGC's 345M checkpoint of 2019 has no args).
  if (!rc && (trim_vocab || !m0->has_args) && V > 50257) {
    gm_ckpt_tensor *o = &c->tensors[c->n_tensors - 1];
    o->shape[0] = 50257;
    o->numel = (uint64_t)50257 * (uint64_t)D;
    cfg->vocab_size = 50257;
  }
  if (!rc) rc = merge(g, c, 0, "embedding.position_embeddings.weight", 0, "transformer.wpe.weight", REPL, 2, cfg->n_positions, D, dt, H, ver, false);
  const char *att = get(g, 0, 0, "layers.%d.self_attention.query_key_value.weight", 0, false) ? "self_attention" : "attention";
  for (int p = 0; p < pp && !rc; p++)
    for (int l = g->layer_base[p]; l < g->layer_base[p + 1] && !rc; l++) {
      int ll = l - g->layer_base[p];
      char hf[128], mf[160];
      struct { const char *mg, *hf; split how; int nd; int64_t rows, cols; bool tr; } w[] = {
          {"input_layernorm.weight", "ln_1.weight", REPL, 1, D, 0, false},
          {"input_layernorm.bias", "ln_1.bias", REPL, 1, D, 0, false},
          {"#.query_key_value.weight", "attn.c_attn.weight", QKV, 2, 3 * D, D, true},
          {"#.query_key_value.bias", "attn.c_attn.bias", QKV, 1, 3 * D, 0, false},
          {"#.dense.weight", "attn.c_proj.weight", ROW, 2, D, D, true},
          {"#.dense.bias", "attn.c_proj.bias", REPL, 1, D, 0, false},
          {"post_attention_layernorm.weight", "ln_2.weight", REPL, 1, D, 0, false},
          {"post_attention_layernorm.bias", "ln_2.bias", REPL, 1, D, 0, false},
          {"mlp.dense_h_to_4h.weight", "mlp.c_fc.weight", COL, 2, I, D, true},
          {"mlp.dense_h_to_4h.bias", "mlp.c_fc.bias", COL, 1, I, 0, false},
          {"mlp.dense_4h_to_h.weight", "mlp.c_proj.weight", ROW, 2, D, I, true},
          {"mlp.dense_4h_to_h.bias", "mlp.c_proj.bias", REPL, 1, D, 0, false}};
      for (size_t k = 0; k < sizeof w / sizeof w[0] && !rc; k++) {
        if (w[k].mg[0] == '#') snprintf(mf, sizeof mf, "layers.%%d.%s%s", att, w[k].mg + 1);
        else snprintf(mf, sizeof mf, "layers.%%d.%s", w[k].mg);
        snprintf(hf, sizeof hf, "transformer.h.%d.%s", l, w[k].hf);
        rc = merge(g, c, p, mf, ll, hf, w[k].how, w[k].nd, w[k].rows, w[k].cols, dt, H, ver, w[k].tr);
      }
    }
  if (!rc) rc = merge(g, c, pp - 1, "final_layernorm.weight", 0, "transformer.ln_f.weight", REPL, 1, D, 0, dt, H, ver, false);
  if (!rc) rc = merge(g, c, pp - 1, "final_layernorm.bias", 0, "transformer.ln_f.bias", REPL, 1, D, 0, dt, H, ver, false);
  if (rc) gm_ckpt_close(c);
  return rc;
}

int gm_megatron_open(gm_ckpt *c, gm_gpt2_config *cfg, gm_megatron_info *info, const char *dir, bool trim_vocab) {
  if (gm_megatron_ds_detect(dir)) return gm_megatron_ds_open(c, cfg, info, dir, trim_vocab);
  memset(c, 0, sizeof *c);
  memset(info, 0, sizeof *info);
  char folder[4096];
  const bool zip = gm_megatron_zip_detect(dir); // NGC's zip: one rank, read by megatron_zip.c
  int tp = 0, pp = 0;
  bool with_pp = false;
  if (zip) {
    snprintf(folder, sizeof folder, "%s", dir);
    tp = pp = 1;
  } else {
    if (tracker(dir, folder, sizeof folder, info)) return -1;
    if (!is_dir(folder)) return gm_fail("%s: the checkpoint folder the tracker names does not exist", folder);
    // TP x PP from the mp_rank_TT[_PPP] folders.
    DIR *dd = opendir(folder);
    if (!dd) return gm_fail("cannot list '%s': %s", folder, strerror(errno));
    struct dirent *e;
    while ((e = readdir(dd))) {
      int t, p, n = 0;
      if (sscanf(e->d_name, "mp_rank_%2d_%3d%n", &t, &p, &n) == 2 && e->d_name[n] == 0) with_pp = true;
      else if (sscanf(e->d_name, "mp_rank_%2d%n", &t, &n) == 1 && e->d_name[n] == 0) p = 0;
      else continue;
      if (t < 0 || t >= MAX_TP || p < 0 || p >= MAX_PP) continue;
      if (t + 1 > tp) tp = t + 1;
      if (p + 1 > pp) pp = p + 1;
    }
    closedir(dd);
    if (!tp) return gm_fail("%s: no mp_rank_* folder (a Megatron-LM checkpoint folder holds mp_rank_TT or mp_rank_TT_PPP)", folder);
    if (!with_pp) pp = 1;
  }
  gm_ckpt *shard = calloc((size_t)(tp * pp), sizeof *shard);
  gm_meg_meta *meta = calloc((size_t)(tp * pp), sizeof *meta);
  if (!shard || !meta) { free(shard); free(meta); return gm_fail("out of memory"); }
  int rc = 0;
  uint64_t bytes = 0; // what info reports: the rank files' sizes (a zip's own size: the inflated entry may be larger)
  struct stat sb;
  if (zip) {
    rc = gm_megatron_zip_rank(&shard[0], dir, &meta[0], &info->release, NULL, 0);
    if (!rc && stat(dir, &sb) == 0) bytes = (uint64_t)sb.st_size;
  }
  for (int p = 0; p < pp && !rc && !zip; p++)
    for (int t = 0; t < tp && !rc; t++) {
      char f[4400];
      rc = rank_file(f, sizeof f, folder, t, p, with_pp ? 2 : 1);
      if (!rc) rc = gm_torch_open_megatron(&shard[p * tp + t], f, &meta[p * tp + t]);
      if (!rc && stat(f, &sb) == 0) bytes += (uint64_t)sb.st_size;
    }
  const gm_meg_meta *m0 = &meta[0];
  const char *f0 = shard[0].path;
  int64_t v;
  if (!rc && m0->has_args) {
    int64_t a_tp = 0;
    if (gm_meg_arg_int(m0, "tensor_model_parallel_size", &v) || gm_meg_arg_int(m0, "model_parallel_size", &v)) a_tp = v;
    if (a_tp && a_tp != tp) rc = gm_fail("%s: args say tensor parallel size %lld but the folder holds %d mp_rank ranks", f0, (long long)a_tp, tp);
    if (!rc && gm_meg_arg_int(m0, "pipeline_model_parallel_size", &v) && v != pp)
      rc = gm_fail("%s: args say pipeline parallel size %lld but the folder holds %d stages", f0, (long long)v, pp);
  }
  if (!rc) rc = gm_meg_build(c, cfg, info, shard, m0, tp, pp, folder, trim_vocab);
  if (!rc) {
    c->file_bytes = bytes;
    snprintf(c->format, sizeof c->format, "megatron-lm%s (TP %d, PP %d, checkpoint_version %g)", zip ? " zip" : "", tp, pp,
             info->checkpoint_version);
  }
  for (int i = 0; i < tp * pp; i++) gm_ckpt_close(&shard[i]);
  free(shard);
  free(meta);
  return rc;
}
