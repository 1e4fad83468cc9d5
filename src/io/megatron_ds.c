// Megatron-DeepSpeed checkpoint directories (microsoft/Megatron-DeepSpeed save_checkpoint through
// DeepSpeed's engine): DIR/latest ("global_step10") -> DIR/global_step10/ holding
//   mp_rank_XX_model_states.pt   DeepSpeed's engine state + Megatron's client state (args,
//                                checkpoint_version, iteration); 'module' is None with pipeline
//                                parallelism, else Megatron's state dict (--no-pipeline-parallel);
//                                XX counts the model-parallel ranks (pipe * TP + tp).
//   layer_NN-model_TT-model_states.pt   one pipeline layer's state dict for TP rank TT, NN over the
//                                whole pipe; classified by the keys it holds, never by NN.
// The layer files are renamed into one Megatron-LM shard per TP rank (global layer numbers) and
// merged by megatron.c's gm_meg_build, so the layout is exactly transformers' converter's. Tensors
// are only renamed (their data stays in the mappings: a view into an older DeepSpeed's flat fp16
// buffer is read in place, never the whole buffer).
#include "torch_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { DS_MAX_TP = 64, DS_MAX_LAYER = 100000, DS_MAX_MP = 4096 };

static bool is_file(const char *p) { struct stat sb; return stat(p, &sb) == 0 && S_ISREG(sb.st_mode); }
static bool is_dir(const char *p) { struct stat sb; return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode); }

// A folder holding config.json is a HF model directory even with DIR/latest and global_stepN/
// beside it (transformers' Trainer with DeepSpeed saves its engine state there): not taken.
bool gm_megatron_ds_detect(const char *dir) {
  char p[4200];
  snprintf(p, sizeof p, "%s/config.json", dir);
  if (is_file(p)) return false;
  snprintf(p, sizeof p, "%s/latest", dir);
  if (is_file(p)) return true;
  snprintf(p, sizeof p, "%s/mp_rank_00_model_states.pt", dir);
  return is_file(p);
}

// DIR/latest names the tag folder (DeepSpeed writes the tag alone, e.g. "global_step10").
static int read_latest(const char *dir, char *folder, size_t cap, char *tag, size_t tcap) {
  char p[4200];
  snprintf(p, sizeof p, "%s/latest", dir);
  FILE *f = fopen(p, "r");
  if (!f) { // the tag folder itself
    snprintf(folder, cap, "%s", dir);
    const char *b = strrchr(dir, '/');
    b = b ? b + 1 : dir;
    if (!*b && b > dir) { // "DIR/": the name before the slash
      size_t n = strlen(dir);
      while (n && dir[n - 1] == '/') n--;
      size_t s = n;
      while (s && dir[s - 1] != '/') s--;
      snprintf(tag, tcap, "%.*s", (int)(n - s), dir + s);
    } else snprintf(tag, tcap, "%s", b);
    return 0;
  }
  char line[272] = {0};
  size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ')) line[--n] = 0;
  bool ok = n > 0 && n < 256 && strcmp(line, ".") != 0 && strcmp(line, "..") != 0;
  for (size_t i = 0; i < n && ok; i++) ok = line[i] > 0x20 && line[i] < 0x7f && line[i] != '/';
  if (!ok) return gm_fail("%s: not a tag folder name (1..255 printable bytes, no '/', '.' or '..')", p);
  snprintf(tag, tcap, "%s", line);
  snprintf(folder, cap, "%s/%s", dir, line);
  if (!is_dir(folder)) return gm_fail("%s names '%s' but %s is not a folder", p, line, folder);
  return 0;
}

typedef struct {
  int nn, tt;                    // layer index over the pipe, TP rank (-1: a file without -model_TT-)
} lfile;

typedef enum { K_EMBED, K_LAYER, K_NORM } lkind;

static const char *const layer_keys[] = {
    "input_layernorm.weight", "input_layernorm.bias", "#.query_key_value.weight", "#.query_key_value.bias",
    "#.dense.weight", "#.dense.bias", "post_attention_layernorm.weight", "post_attention_layernorm.bias",
    "mlp.dense_h_to_4h.weight", "mlp.dense_h_to_4h.bias", "mlp.dense_4h_to_h.weight", "mlp.dense_4h_to_h.bias"};
enum { N_LAYER_KEYS = (int)(sizeof layer_keys / sizeof layer_keys[0]) };

// The kind of layer file c is, from its key set; *attn: "self_attention" or "attention".
static int classify(const gm_ckpt *c, const char *path, lkind *kind, const char **attn) {
  if (gm_ckpt_find(c, "word_embeddings.weight")) {
    for (int i = 0; i < c->n_tensors; i++)
      if (strcmp(c->tensors[i].name, "word_embeddings.weight") && strcmp(c->tensors[i].name, "position_embeddings.weight"))
        return gm_fail("%s: an embedding layer file with an unknown key '%s' (read: word_embeddings.weight, position_embeddings.weight)",
                       path, c->tensors[i].name);
    *kind = K_EMBED;
    return 0;
  }
  if (gm_ckpt_find(c, "input_layernorm.weight")) {
    *attn = gm_ckpt_find(c, "self_attention.query_key_value.weight") ? "self_attention" : "attention";
    for (int i = 0; i < c->n_tensors; i++) {
      const char *n = c->tensors[i].name;
      bool known = false;
      for (int k = 0; k < N_LAYER_KEYS && !known; k++) {
        const char *w = layer_keys[k];
        if (w[0] == '#') {
          size_t al = strlen(*attn);
          known = strncmp(n, *attn, al) == 0 && strcmp(n + al, w + 1) == 0;
        } else known = strcmp(n, w) == 0;
      }
      if (!known) return gm_fail("%s: a transformer layer file with an unknown key '%s'", path, n);
    }
    if (c->n_tensors != N_LAYER_KEYS)
      return gm_fail("%s: a transformer layer file with %d of its %d tensors", path, c->n_tensors, N_LAYER_KEYS);
    *kind = K_LAYER;
    return 0;
  }
  if (c->n_tensors == 2 && gm_ckpt_find(c, "weight") && gm_ckpt_find(c, "bias")) { *kind = K_NORM; return 0; }
  return gm_fail("%s: a layer file with an unknown key set (first key '%s'; read: an embedding, a transformer layer, the final "
                 "layer norm)", path, c->n_tensors ? c->tensors[0].name : "(none)");
}

// Adds a borrowed copy of x (data stays in its file's mapping) to out under name.
static int borrow(gm_ckpt *out, const gm_ckpt_tensor *x, const char *name) {
  gm_ckpt_tensor *o = gm_ckpt_add_tensor(out);
  if (!o) return -1;
  *o = *x;
  o->owned = NULL;
  o->name = strdup(name);
  return o->name ? 0 : gm_fail("out of memory");
}

static int cmp_lfile(const void *a, const void *b) {
  const lfile *x = a, *y = b;
  return x->nn != y->nn ? (x->nn < y->nn ? -1 : 1) : (x->tt < y->tt ? -1 : x->tt > y->tt);
}

// The bytes of the folder's *model_states.pt files (mp_rank and layer files).
static uint64_t pt_bytes(const char *folder) {
  uint64_t n = 0;
  DIR *d = opendir(folder);
  if (!d) return 0;
  struct dirent *e;
  char p[4400];
  struct stat sb;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 15 || strcmp(e->d_name + len - 15, "model_states.pt") != 0) continue;
    snprintf(p, sizeof p, "%s/%s", folder, e->d_name);
    if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) n += (uint64_t)sb.st_size;
  }
  closedir(d);
  return n;
}

int gm_megatron_ds_open(gm_ckpt *c, gm_gpt2_config *cfg, gm_megatron_info *info, const char *dir, bool trim_vocab) {
  memset(c, 0, sizeof *c);
  memset(info, 0, sizeof *info);
  char folder[4096], tag[272];
  if (read_latest(dir, folder, sizeof folder, tag, sizeof tag)) return -1;
  info->deepspeed = true;
  long long gs;
  int gn = 0;
  info->global_step = sscanf(tag, "global_step%lld%n", &gs, &gn) == 1 && tag[gn] == 0 && gs >= 0 ? gs : -1;
  // The files: mp_rank_XX_model_states.pt and layer_NN[-model_TT]-model_states.pt.
  DIR *dd = opendir(folder);
  if (!dd) return gm_fail("cannot list '%s': %s", folder, strerror(errno));
  int n_mp = 0, max_mp = -1, n_lf = 0, cap_lf = 0, rc = 0;
  lfile *lf = NULL;
  struct dirent *e;
  while ((e = readdir(dd)) && !rc) {
    int a, b, n = 0;
    const char *nm = e->d_name;
    if (strncmp(nm, "mp_rank_", 8) == 0 && isdigit((unsigned char)nm[8]) && sscanf(nm, "mp_rank_%4d_model_states.pt%n", &a, &n) == 1 &&
        nm[n] == 0 && a < DS_MAX_MP) {
      char canon[64];
      snprintf(canon, sizeof canon, "mp_rank_%02d_model_states.pt", a);
      if (strcmp(canon, nm)) { rc = gm_fail("%s/%s: not DeepSpeed's name for rank %d ('%s')", folder, nm, a, canon); break; }
      n_mp++;
      if (a > max_mp) max_mp = a;
      continue;
    }
    lfile x = {-1, -1};
    n = 0;
    if (strncmp(nm, "layer_", 6) || !isdigit((unsigned char)nm[6])) continue;
    const char *mt = strstr(nm, "-model_");
    if (mt && mt[7] && !isdigit((unsigned char)mt[7])) continue;
    if (sscanf(nm, "layer_%6d-model_%4d-model_states.pt%n", &a, &b, &n) == 2 && nm[n] == 0) x = (lfile){a, b};
    else if ((n = 0, sscanf(nm, "layer_%6d-model_states.pt%n", &a, &n) == 1 && nm[n] == 0)) x = (lfile){a, -1};
    else continue;
    if (x.nn < 0 || x.nn >= DS_MAX_LAYER || x.tt < -1 || x.tt >= DS_MAX_TP) {
      rc = gm_fail("%s/%s: layer index or TP rank out of range (layers < %d, TP ranks < %d)", folder, nm, DS_MAX_LAYER, DS_MAX_TP);
      break;
    }
    char canon[96]; // the name the file is opened by below
    if (x.tt >= 0) snprintf(canon, sizeof canon, "layer_%02d-model_%02d-model_states.pt", x.nn, x.tt);
    else snprintf(canon, sizeof canon, "layer_%02d-model_states.pt", x.nn);
    if (strcmp(canon, nm)) { rc = gm_fail("%s/%s: not DeepSpeed's name for this layer file ('%s')", folder, nm, canon); break; }
    if (n_lf == cap_lf) {
      cap_lf = cap_lf ? 2 * cap_lf : 64;
      lfile *t = realloc(lf, (size_t)cap_lf * sizeof *t);
      if (!t) { rc = gm_fail("out of memory"); break; }
      lf = t;
    }
    lf[n_lf++] = x;
  }
  closedir(dd);
  if (rc) { free(lf); return rc; }
  if (!n_mp) { free(lf); return gm_fail("%s: no mp_rank_00_model_states.pt (a Megatron-DeepSpeed checkpoint folder)", folder); }
  if (n_lf) qsort(lf, (size_t)n_lf, sizeof *lf, cmp_lfile);
  // Rank 0's engine state: args, checkpoint_version, iteration (and 'module' without pipeline parallelism).
  gm_ckpt *sh = NULL, *lc = NULL;
  gm_meg_meta *meta = calloc(2, sizeof *meta); // [0]: rank 0's; [1]: each other TP rank's in turn (70 KB each)
  int tp = 0, pp = 1;
  char p[4400];
  if (!meta) rc = gm_fail("out of memory");
  snprintf(p, sizeof p, "%s/mp_rank_00_model_states.pt", folder);
  if (!rc && !is_file(p)) rc = gm_fail("%s: no mp_rank_00_model_states.pt", folder);
  gm_ckpt m0c;
  memset(&m0c, 0, sizeof m0c);
  if (!rc) rc = gm_torch_open_megatron(&m0c, p, &meta[0]);
  const gm_meg_meta *m0 = &meta[0];
  int64_t v;
  if (!rc) {
    int64_t a_tp = 0, a_pp = 0;
    if (gm_meg_arg_int(m0, "tensor_model_parallel_size", &v) || gm_meg_arg_int(m0, "model_parallel_size", &v)) a_tp = v;
    if (gm_meg_arg_int(m0, "pipeline_model_parallel_size", &v)) a_pp = v;
    else if (!m0->has_args) a_pp = -1; // no args: PP from the mp_rank files below
    if (!a_pp) a_pp = 1;
    if (a_tp < 0 || a_tp > DS_MAX_TP || (a_pp < 1 && a_pp != -1) || a_pp > DS_MAX_MP)
      rc = gm_fail("%s: args say tensor parallel size %lld and pipeline parallel size %lld", p, (long long)a_tp, (long long)a_pp);
    int f_tp = 0; // from the layer files' -model_TT-
    for (int i = 0; i < n_lf; i++) if (lf[i].tt + 1 > f_tp) f_tp = lf[i].tt + 1;
    if (!f_tp && n_lf) f_tp = 1;
    if (!rc && a_tp && n_lf && f_tp != a_tp)
      rc = gm_fail("%s: args say tensor parallel size %lld but the layer files hold %d TP ranks (-model_00- .. -model_%02d-)", folder,
                   (long long)a_tp, f_tp, f_tp - 1);
    tp = a_tp ? (int)a_tp : n_lf ? f_tp : n_mp;
    if (!rc && tp > DS_MAX_TP) rc = gm_fail("%s: %d tensor-parallel ranks (at most %d are read)", folder, tp, DS_MAX_TP);
    pp = !n_lf ? 1 : a_pp > 0 ? (int)a_pp : tp > 0 && n_mp % tp == 0 ? n_mp / tp : 1;
    if (!rc && !n_lf && a_pp > 1 && !m0c.n_tensors)
      rc = gm_fail("%s: args say pipeline parallel size %lld but the folder holds no layer_NN-model_TT-model_states.pt", folder, (long long)a_pp);
    if (!rc && (n_mp != tp * pp || max_mp != n_mp - 1))
      rc = gm_fail("%s: %d mp_rank_XX_model_states.pt files (up to mp_rank_%02d) but TP %d x PP %d model-parallel ranks", folder, n_mp,
                   max_mp, tp, pp);
  }
  if (!rc && !n_lf) { // --no-pipeline-parallel: Megatron's state dict in each TP rank's 'module'
    info->ds_layer_files = false;
    if (!m0c.n_tensors) rc = gm_fail("%s: no layer files and no weights under 'module'", p);
    sh = calloc((size_t)tp, sizeof *sh);
    if (!rc && !sh) rc = gm_fail("out of memory");
    if (!rc) { sh[0] = m0c; memset(&m0c, 0, sizeof m0c); }
    for (int t = 1; t < tp && !rc; t++) {
      snprintf(p, sizeof p, "%s/mp_rank_%02d_model_states.pt", folder, t);
      memset(&meta[1], 0, sizeof meta[1]);
      rc = gm_torch_open_megatron(&sh[t], p, &meta[1]);
      if (!rc && !meta[1].has_module) rc = gm_fail("%s: no 'module' (DeepSpeed's model state)", p);
    }
    if (!rc) rc = gm_meg_build(c, cfg, info, sh, m0, tp, 1, folder, trim_vocab);
    for (int t = 0; sh && t < tp; t++) gm_ckpt_close(&sh[t]);
  } else if (!rc) { // pipeline layer files: one Megatron-LM shard per TP rank, layers numbered over the pipe
    info->ds_layer_files = true;
    // Every layer index must have one file per TP rank.
    for (int i = 0; i < n_lf && !rc;) {
      int j = i;
      while (j < n_lf && lf[j].nn == lf[i].nn) j++;
      bool untagged = lf[i].tt < 0;
      if (untagged && (tp != 1 || j - i != 1))
        rc = gm_fail("%s/layer_%02d-model_states.pt: a layer file without -model_TT- beside TP %d", folder, lf[i].nn, tp);
      for (int t = 0; t < tp && !rc && !untagged; t++)
        if (i + t >= j || lf[i + t].tt != t)
          rc = gm_fail("%s: layer_%02d has no -model_%02d- file (TP %d)", folder, lf[i].nn, t, tp);
      if (!rc && !untagged && j - i != tp) rc = gm_fail("%s: layer_%02d has %d files for TP %d", folder, lf[i].nn, j - i, tp);
      i = j;
    }
    int n_idx = tp ? n_lf / tp : 0;
    lc = calloc((size_t)(n_lf ? n_lf : 1), sizeof *lc);
    sh = calloc((size_t)tp, sizeof *sh);
    if (!rc && (!lc || !sh)) rc = gm_fail("out of memory");
    int n_layers = 0, embed_at = -1, norm_at = -1, prev_layer_nn = -1;
    const char *attn = NULL;
    for (int i = 0; i < n_idx && !rc; i++) {
      lkind kind = K_EMBED, k0 = K_EMBED;
      const char *at = NULL;
      for (int t = 0; t < tp && !rc; t++) {
        const lfile *x = &lf[i * tp + t];
        if (x->tt < 0) snprintf(p, sizeof p, "%s/layer_%02d-model_states.pt", folder, x->nn);
        else snprintf(p, sizeof p, "%s/layer_%02d-model_%02d-model_states.pt", folder, x->nn, x->tt);
        rc = gm_torch_open(&lc[i * tp + t], p);
        if (!rc) rc = classify(&lc[i * tp + t], p, &kind, &at);
        if (!rc && t == 0) k0 = kind;
        if (!rc && kind != k0) rc = gm_fail("%s: holds another kind of layer than TP rank 0's file", p);
      }
      if (rc) break;
      int nn = lf[i * tp].nn;
      if (k0 == K_EMBED) {
        for (int t = 0; t < tp && !rc; t++) {
          gm_ckpt *lt = &lc[i * tp + t];
          const gm_ckpt_tensor *we = gm_ckpt_find(lt, "word_embeddings.weight"), *pe = gm_ckpt_find(lt, "position_embeddings.weight");
          if (embed_at < 0) {
            if (!pe) rc = gm_fail("%s: the first embedding layer file (layer_%02d) has no position_embeddings.weight", lt->path, nn);
            if (!rc) rc = borrow(&sh[t], we, "language_model.embedding.word_embeddings.weight");
            if (!rc) rc = borrow(&sh[t], pe, "language_model.embedding.position_embeddings.weight");
          } else { // the tied copy at the end of the pipe: the same tensor
            const gm_ckpt_tensor *w0 = gm_ckpt_find(&lc[embed_at * tp + t], "word_embeddings.weight");
            size_t es = w0->dtype == GM_F32 ? 4 : 2;
            if (we->dtype != w0->dtype || we->readable != w0->readable || we->ndim != w0->ndim ||
                memcmp(we->shape, w0->shape, sizeof we->shape) || (we->readable && memcmp(we->data, w0->data, (size_t)we->numel * es)))
              rc = gm_fail("%s: the tied word_embeddings.weight (layer_%02d) differs from layer_%02d's", lt->path, nn, lf[embed_at * tp].nn);
          }
        }
        if (embed_at < 0) embed_at = i;
      } else if (k0 == K_LAYER) {
        if (embed_at < 0) rc = gm_fail("%s/layer_%02d: a transformer layer before the embedding", folder, nn);
        else if (norm_at >= 0) rc = gm_fail("%s/layer_%02d: a transformer layer after the final layer norm", folder, nn);
        else if (prev_layer_nn >= 0 && nn != prev_layer_nn + 1)
          rc = gm_fail("%s: no layer_%02d between transformer layers layer_%02d and layer_%02d (a missing layer)", folder,
                       prev_layer_nn + 1, prev_layer_nn, nn);
        else if (attn && strcmp(attn, at)) rc = gm_fail("%s/layer_%02d: '%s' here, '%s' in the layers before", folder, nn, at, attn);
        attn = at;
        for (int t = 0; t < tp && !rc; t++) {
          gm_ckpt *lt = &lc[i * tp + t];
          for (int k = 0; k < lt->n_tensors && !rc; k++) {
            char nm[600];
            snprintf(nm, sizeof nm, "language_model.encoder.layers.%d.%s", n_layers, lt->tensors[k].name);
            rc = borrow(&sh[t], &lt->tensors[k], nm);
          }
        }
        prev_layer_nn = nn;
        n_layers++;
      } else {
        if (norm_at >= 0) rc = gm_fail("%s/layer_%02d: a second final layer norm (the first is layer_%02d)", folder, nn, lf[norm_at * tp].nn);
        else if (!n_layers) rc = gm_fail("%s/layer_%02d: a layer norm before any transformer layer", folder, nn);
        for (int t = 0; t < tp && !rc; t++) {
          gm_ckpt *lt = &lc[i * tp + t];
          rc = borrow(&sh[t], gm_ckpt_find(lt, "weight"), "language_model.encoder.final_layernorm.weight");
          if (!rc) rc = borrow(&sh[t], gm_ckpt_find(lt, "bias"), "language_model.encoder.final_layernorm.bias");
        }
        norm_at = i;
      }
    }
    if (!rc && embed_at < 0) rc = gm_fail("%s: no embedding layer file (word_embeddings.weight)", folder);
    if (!rc && !n_layers) rc = gm_fail("%s: no transformer layer file", folder);
    if (!rc && norm_at < 0) rc = gm_fail("%s: no final layer norm file (weight, bias)", folder);
    if (!rc && gm_meg_arg_int(m0, "num_layers", &v) && v != n_layers)
      rc = gm_fail("%s: args say %lld layers but the layer files hold %d (a missing layer)", folder, (long long)v, n_layers);
    for (int t = 0; t < tp && !rc; t++) {
      sh[t].path = strdup(lc[t].path); // errors name rank t's first layer file
      if (!sh[t].path) rc = gm_fail("out of memory");
    }
    if (!rc) rc = gm_meg_build(c, cfg, info, sh, m0, tp, 1, folder, trim_vocab);
    for (int t = 0; sh && t < tp; t++) gm_ckpt_close(&sh[t]); // borrowed: names only
    for (int i = 0; lc && i < n_lf; i++) gm_ckpt_close(&lc[i]);
  }
  if (!rc) {
    c->file_bytes = pt_bytes(folder); // what info reports: the folder's model files
    info->pp = pp;
    info->deepspeed = true;
    info->iteration = m0->iteration;
    char gsn[300];
    if (info->global_step >= 0) snprintf(gsn, sizeof gsn, "global_step%lld", info->global_step);
    else snprintf(gsn, sizeof gsn, "tag %.200s", tag);
    char fm[400];
    snprintf(fm, sizeof fm, "megatron-deepspeed (%.40s, TP %d, PP %d, checkpoint_version %g)", gsn, tp, pp, info->checkpoint_version);
    snprintf(c->format, sizeof c->format, "%.95s", fm);
  }
  gm_ckpt_close(&m0c);
  free(sh);
  free(lc);
  free(meta);
  free(lf);
  return rc;
}
