// GPT-2 weights: layout, load from any checkpoint format gm_ckpt reads (validated names and shapes), random init, save.
#include "gptmeg/model.h"
#include "gptmeg/ckpt.h"
#include "gptmeg/kernels.h"
#include "gptmeg/safetensors.h"
#include "model/gpt2_internal.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef enum { W_NORMAL, W_CPROJ, W_ZERO, W_ONE } w_init; // how _init_weights fills a tensor

typedef struct {
  char name[64];   // without the 'transformer.' prefix
  float **ptr;
  int ndim;
  int64_t shape[2];
  w_init init;
} w_desc;

// Every tensor of the model in checkpoint order; returns the count (n_layer*12 + 5, +1 if untied).
static int describe(gm_gpt2 *m, w_desc *d) {
  const gm_gpt2_config *c = &m->cfg;
  int64_t D = c->n_embd, I = c->n_inner;
  int n = 0;
#define ADD(nm, p, nd, s0, s1, how)                                        \
  do {                                                                     \
    snprintf(d[n].name, sizeof d[n].name, "%s", nm);                       \
    d[n].ptr = (p); d[n].ndim = (nd); d[n].shape[0] = (s0); d[n].shape[1] = (s1); \
    d[n].init = (how); n++;                                                \
  } while (0)
  ADD("wte.weight", &m->wte, 2, c->vocab_size, D, W_NORMAL);
  ADD("wpe.weight", &m->wpe, 2, c->n_positions, D, W_NORMAL);
  for (int l = 0; l < c->n_layer; l++) {
    gm_gpt2_layer *y = &m->layers[l];
    char b[64];
#define LADD(suffix, p, nd, s0, s1, how)                 \
  do {                                                   \
    snprintf(b, sizeof b, "h.%d.%s", l, suffix);         \
    ADD(b, p, nd, s0, s1, how);                          \
  } while (0)
    LADD("ln_1.weight", &y->ln1_w, 1, D, 0, W_ONE);
    LADD("ln_1.bias", &y->ln1_b, 1, D, 0, W_ZERO);
    LADD("attn.c_attn.weight", &y->attn_w, 2, D, 3 * D, W_NORMAL);
    LADD("attn.c_attn.bias", &y->attn_b, 1, 3 * D, 0, W_ZERO);
    LADD("attn.c_proj.weight", &y->aproj_w, 2, D, D, W_CPROJ);
    LADD("attn.c_proj.bias", &y->aproj_b, 1, D, 0, W_ZERO);
    LADD("ln_2.weight", &y->ln2_w, 1, D, 0, W_ONE);
    LADD("ln_2.bias", &y->ln2_b, 1, D, 0, W_ZERO);
    LADD("mlp.c_fc.weight", &y->fc_w, 2, D, I, W_NORMAL);
    LADD("mlp.c_fc.bias", &y->fc_b, 1, I, 0, W_ZERO);
    LADD("mlp.c_proj.weight", &y->mproj_w, 2, I, D, W_CPROJ);
    LADD("mlp.c_proj.bias", &y->mproj_b, 1, D, 0, W_ZERO);
#undef LADD
  }
  ADD("ln_f.weight", &m->lnf_w, 1, D, 0, W_ONE);
  ADD("ln_f.bias", &m->lnf_b, 1, D, 0, W_ZERO);
  if (!m->tied) ADD("lm_head.weight", &m->lm_head, 2, c->vocab_size, D, W_NORMAL);
#undef ADD
  return n;
}

static uint64_t numel(const w_desc *d) { return d->ndim == 1 ? (uint64_t)d->shape[0] : (uint64_t)(d->shape[0] * d->shape[1]); }

static void shape_str(char *buf, size_t n, int nd, const int64_t *s) {
  size_t l = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < nd && l < n; i++) l += (size_t)snprintf(buf + l, n - l, "%s%lld", i ? ", " : "", (long long)s[i]);
  if (l < n) snprintf(buf + l, n - l, "]");
}

uint64_t gm_gpt2_param_count(const gm_gpt2_config *c) {
  uint64_t D = (uint64_t)c->n_embd, I = (uint64_t)c->n_inner, V = (uint64_t)c->vocab_size;
  uint64_t per = 2 * D + D * 3 * D + 3 * D + D * D + D + 2 * D + D * I + I + I * D + D;
  return V * D + (uint64_t)c->n_positions * D + (uint64_t)c->n_layer * per + 2 * D + (c->tie_word_embeddings ? 0 : V * D);
}

void gm_gpt2_free(gm_gpt2 *m) {
  gm_gpt2_grad_ws_free(m);
  free(m->storage);
  free(m->layers);
  free(m->packed);
  free(m->half);
  memset(m, 0, sizeof *m);
}

// Allocates the storage and the descriptor table; *out_d must be freed by the caller.
// The tensors a packed_only working copy holds only as pairs (and wte as bits): every matrix but wpe.
static bool packed_away(const w_desc *d) { return d->ndim == 2 && strcmp(d->name, "wpe.weight") != 0; }

static int allocate_as(gm_gpt2 *m, const gm_gpt2_config *cfg, bool tied, bool packed_only, w_desc **out_d, int *out_n) {
  memset(m, 0, sizeof *m);
  m->cfg = *cfg;
  m->tied = tied;
  m->file_dtype = GM_F32;
  m->layers = calloc((size_t)cfg->n_layer, sizeof *m->layers);
  w_desc *d = calloc((size_t)cfg->n_layer * 12 + 6, sizeof *d);
  if (!m->layers || !d) { free(d); gm_gpt2_free(m); return gm_fail("out of memory"); }
  int n = describe(m, d);
  uint64_t total = 0, stored = 0;
  for (int i = 0; i < n; i++) {
    total += numel(&d[i]);
    if (!packed_only || !packed_away(&d[i])) stored += numel(&d[i]);
  }
  m->storage = malloc((size_t)stored * sizeof(float));
  if (!m->storage) { free(d); gm_gpt2_free(m); return gm_fail("out of memory for %llu parameters", (unsigned long long)stored); }
  uint64_t off = 0;
  for (int i = 0; i < n; i++) {
    if (packed_only && packed_away(&d[i])) continue; // the pointer stays NULL
    *d[i].ptr = m->storage + off;
    off += numel(&d[i]);
  }
  if (tied) m->lm_head = m->wte;
  m->n_params = total;
  m->packed_only = packed_only;
  *out_d = d;
  *out_n = n;
  return 0;
}

static int allocate(gm_gpt2 *m, const gm_gpt2_config *cfg, bool tied, w_desc **out_d, int *out_n) {
  return allocate_as(m, cfg, tied, false, out_d, out_n);
}

static bool is_known_buffer(const char *name) {
  // Causal-mask buffers older transformers saved with the weights: h.N.attn.bias / h.N.attn.masked_bias.
  int l, len = 0;
  if (sscanf(name, "h.%d.attn.%n", &l, &len) == 1 && len > 0)
    return strcmp(name + len, "bias") == 0 || strcmp(name + len, "masked_bias") == 0;
  return false;
}

static int load_ckpt(gm_gpt2 *m, const gm_gpt2_config *cfg, const gm_ckpt *ck) {
  const char *src = ck->path;
  bool has_head = gm_ckpt_find(ck, "lm_head.weight") != NULL;
  bool tied = !(has_head && !cfg->tie_word_embeddings);
  w_desc *d;
  int n;
  if (allocate(m, cfg, tied, &d, &n)) return -1;
  const gm_ckpt_tensor **found = calloc((size_t)n, sizeof *found);
  int rc = found ? 0 : gm_fail("out of memory");
  for (int i = 0; i < ck->n_tensors && rc == 0; i++) {
    const gm_ckpt_tensor *t = &ck->tensors[i];
    const char *nm = t->name;
    if (strncmp(nm, "transformer.", 12) == 0) nm += 12;
    if (tied && strcmp(t->name, "lm_head.weight") == 0) continue; // tied: transformers ignores it too
    if (is_known_buffer(nm)) continue;
    int k = -1;
    for (int j = 0; j < n; j++)
      if (strcmp(d[j].name, nm) == 0) { k = j; break; }
    if (k < 0) { rc = gm_fail("%s: unexpected tensor '%s' (not part of a GPT-2 with this config)", t->file, t->name); break; }
    if (found[k]) { rc = gm_fail("%s: tensor '%s' given twice ('%s' and '%s')", t->file, d[k].name, found[k]->name, t->name); break; }
    char want[64], got[96];
    shape_str(want, sizeof want, d[k].ndim, d[k].shape);
    shape_str(got, sizeof got, t->ndim, t->shape);
    bool ok = t->ndim == d[k].ndim;
    for (int a = 0; ok && a < d[k].ndim; a++) ok = t->shape[a] == d[k].shape[a];
    if (!ok) { rc = gm_fail("%s: tensor '%s' has shape %s, expected %s", t->file, t->name, got, want); break; }
    if (!t->readable) {
      rc = gm_fail("%s: tensor '%s' has dtype %s (gptmeg reads float32, float16 and bfloat16)", t->file, t->name, t->torch_dtype);
      break;
    }
    found[k] = t;
  }
  for (int j = 0; j < n && rc == 0; j++)
    if (!found[j]) {
      char want[64];
      shape_str(want, sizeof want, d[j].ndim, d[j].shape);
      rc = gm_fail("%s: missing tensor '%s' (expected shape %s)", src, d[j].name, want);
    }
  for (int j = 0; j < n && rc == 0; j++) {
    gm_ckpt_read_f32(found[j], *d[j].ptr);
    if (j == 0) m->file_dtype = found[j]->dtype;
    else if (found[j]->dtype != m->file_dtype) m->mixed_dtypes = true;
  }
  free(found);
  free(d);
  if (rc) { gm_gpt2_free(m); return rc; }
  snprintf(m->file_format, sizeof m->file_format, "%s", ck->format);
  for (int i = 0; i < ck->n_files; i++) m->file_bytes += ck->map_lens[i];
  if (ck->file_bytes) m->file_bytes = ck->file_bytes;
  return 0;
}

static bool ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

int gm_gpt2_load_files(gm_gpt2 *m, const gm_gpt2_config *cfg, const char *path) {
  gm_ckpt ck;
  struct stat sb;
  int rc;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) rc = gm_ckpt_open_dir(&ck, path);
  else if (ends_with(path, ".bin") || ends_with(path, ".pt") || ends_with(path, ".pth")) rc = gm_torch_open(&ck, path);
  else rc = gm_ckpt_open_safetensors(&ck, path);
  if (rc) return rc;
  rc = load_ckpt(m, cfg, &ck);
  gm_ckpt_close(&ck);
  return rc;
}

int gm_gpt2_load(gm_gpt2 *m, const char *dir) {
  if (gm_megatron_detect(dir)) { // a Megatron-LM checkpoint: merged and renamed in io, config from its args
    gm_ckpt ck;
    gm_gpt2_config cfg;
    gm_megatron_info info;
    if (gm_megatron_open(&ck, &cfg, &info, dir, false)) return -1;
    int rc = load_ckpt(m, &cfg, &ck);
    gm_ckpt_close(&ck);
    return rc;
  }
  size_t n = strlen(dir) + 32;
  char *cp = malloc(n);
  if (!cp) return gm_fail("out of memory");
  snprintf(cp, n, "%s/config.json", dir);
  gm_gpt2_config cfg;
  int rc = gm_config_load(cp, &cfg);
  free(cp);
  if (rc) return rc;
  gm_ckpt ck;
  if (gm_ckpt_open_dir(&ck, dir)) return -1;
  rc = load_ckpt(m, &cfg, &ck);
  gm_ckpt_close(&ck);
  return rc;
}

int gm_gpt2_init_random(gm_gpt2 *m, const gm_gpt2_config *cfg_in, uint64_t seed) {
  gm_gpt2_config cfg = *cfg_in;
  if (gm_config_validate(&cfg, "config")) return -1;
  w_desc *d;
  int n;
  if (allocate(m, &cfg, cfg.tie_word_embeddings, &d, &n)) return -1;
  gm_rng rng;
  gm_rng_seed(&rng, seed);
  double std = cfg.initializer_range, std_proj = cfg.initializer_range / sqrt(2.0 * cfg.n_layer);
  for (int i = 0; i < n; i++) {
    float *p = *d[i].ptr;
    uint64_t k = numel(&d[i]);
    for (uint64_t j = 0; j < k; j++) {
      switch (d[i].init) {
      case W_NORMAL: p[j] = (float)(std * gm_rng_normal(&rng)); break;
      case W_CPROJ: p[j] = (float)(std_proj * gm_rng_normal(&rng)); break;
      case W_ZERO: p[j] = 0.0f; break;
      case W_ONE: p[j] = 1.0f; break;
      }
    }
  }
  free(d);
  return 0;
}

int gm_gpt2_alloc_like(gm_gpt2 *g, const gm_gpt2 *m) {
  w_desc *d;
  int n;
  if (allocate(g, &m->cfg, m->tied, &d, &n)) return -1;
  free(d);
  memset(g->storage, 0, (size_t)g->n_params * sizeof(float));
  g->dtype = g->file_dtype = m->dtype;
  return 0;
}

int gm_gpt2_tensors(const gm_gpt2 *m_in, gm_gpt2_tensor *out) {
  gm_gpt2 m = *m_in; // describe() only reads the pointers through this copy
  w_desc *d = calloc((size_t)m.cfg.n_layer * 12 + 6, sizeof *d);
  if (!d) return gm_fail("out of memory");
  int n = describe(&m, d);
  for (int i = 0; i < n; i++) {
    bool top = strcmp(d[i].name, "lm_head.weight") == 0;
    snprintf(out[i].name, sizeof out[i].name, "%s%s", top ? "" : "transformer.", d[i].name);
    out[i].data = *d[i].ptr;
    out[i].ndim = d[i].ndim;
    out[i].shape[0] = d[i].shape[0];
    out[i].shape[1] = d[i].shape[1];
    out[i].numel = (size_t)numel(&d[i]);
  }
  free(d);
  return n;
}

int gm_gpt2_write_tensors(const gm_gpt2 *m, const char *path, gm_dtype dt, const gm_st_entry *extra, int n_extra) {
  if (dt != GM_F32 && dt != GM_F16 && dt != GM_BF16) return gm_fail("tensors are written as f32, f16 or bf16, not %s", gm_dtype_name(dt));
  if (m->packed_only) return gm_fail("a bf16 working copy holds its matrices as pairs only: write the f32 main weights");
  const size_t cap = (size_t)m->cfg.n_layer * 12 + 6;
  gm_gpt2_tensor *t = calloc(cap, sizeof *t);
  gm_st_entry *e = calloc(cap + (size_t)n_extra, sizeof *e);
  uint16_t *half = dt == GM_F32 ? NULL : malloc((size_t)m->n_params * sizeof(uint16_t));
  int n = t && e && (dt == GM_F32 || half) ? gm_gpt2_tensors(m, t) : gm_fail("out of memory");
  if (n < 0) {
    free(t), free(e), free(half);
    return -1;
  }
  for (int i = 0; i < n_extra; i++) e[i] = extra[i];
  uint16_t *at = half;
  for (int i = 0; i < n; i++) {
    gm_st_entry *o = &e[n_extra + i];
    *o = (gm_st_entry){t[i].name, dt, t[i].ndim, {t[i].shape[0], t[i].shape[1]}, t[i].data};
    if (half) { // the dtype's bits of values the f32 storage holds exactly
      gm_f32_to_dtype_buf(dt, t[i].data, at, t[i].numel);
      o->data = at;
      at += t[i].numel;
    }
  }
  int rc = gm_st_write(path, e, n_extra + n);
  free(t);
  free(e);
  free(half);
  return rc;
}

int gm_gpt2_save(const gm_gpt2 *m, const char *dir) {
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) return gm_fail("cannot create directory '%s': %s", dir, strerror(errno));
  size_t pl = strlen(dir) + 32;
  char *path = malloc(pl);
  int rc = path ? 0 : gm_fail("out of memory");
  if (!rc) { snprintf(path, pl, "%s/model.safetensors", dir); rc = gm_gpt2_write_tensors(m, path, GM_F32, NULL, 0); }
  if (!rc) { snprintf(path, pl, "%s/config.json", dir); rc = gm_config_write(path, &m->cfg); }
  free(path);
  return rc;
}

// The fast copies of the matrices: the four of every layer and lm_head, each one job (lm_head, the
// largest, first, so threads taking jobs in turn stay balanced). Pure data movement: the bits do not
// depend on the thread count.
typedef struct {
  const float *w;
  int rows, cols; // w is [rows, cols]
  bool trans;     // the product reads w^T (lm_head)
  void *out;      // where its copy goes
} weight_job;

// The jobs for the matrices of src (m itself, or for a packed_only copy the f32 main weights).
static int weight_jobs(const gm_gpt2 *src, weight_job *j) {
  const gm_gpt2_config *c = &src->cfg;
  int D = c->n_embd, I = c->n_inner, V = c->vocab_size, n = 0;
  j[n++] = (weight_job){src->lm_head, V, D, true, NULL};
  for (int l = 0; l < c->n_layer; l++) {
    const gm_gpt2_layer *y = &src->layers[l];
    j[n++] = (weight_job){y->attn_w, D, 3 * D, false, NULL};
    j[n++] = (weight_job){y->aproj_w, D, D, false, NULL};
    j[n++] = (weight_job){y->fc_w, D, I, false, NULL};
    j[n++] = (weight_job){y->mproj_w, I, D, false, NULL};
  }
  return n;
}

static weight_job *alloc_jobs(const gm_gpt2 *m) { return malloc(((size_t)m->cfg.n_layer * 4 + 1) * sizeof(weight_job)); }

// Lays out the four matrices of every layer and lm_head^T as bf16 pairs (gm_bf16_pack) from m's own
// rounded weights; for a packed_only copy from src's f32 weights, rounded on the way
// (gm_bf16_pack_rounded: the same words), and wte's bits after the pairs.
static int pack_bf16(gm_gpt2 *m, const gm_gpt2 *src, int threads) {
  const gm_gpt2_config *c = &m->cfg;
  int D = c->n_embd, I = c->n_inner, V = c->vocab_size;
  size_t s_attn = gm_bf16_packed_size(D, 3 * D), s_aproj = gm_bf16_packed_size(D, D), s_fc = gm_bf16_packed_size(D, I),
         s_mproj = gm_bf16_packed_size(I, D);
  size_t pairs = (s_attn + s_aproj + s_fc + s_mproj) * c->n_layer + gm_bf16_packed_size(D, V);
  size_t bits = m->packed_only ? ((size_t)V * D + 31) / 32 * 16 : 0; // wte's bits in whole cache lines of words
  size_t total = pairs + bits;
  // 64-byte aligned: every matrix's strips are whole cache lines, so AMX tile rows load from one line each.
  // (gm_gpt2_set_weights refills an existing table in place: same config, same layout)
  if (!m->packed) m->packed = aligned_alloc(64, (total * sizeof(uint32_t) + 63) / 64 * 64);
  weight_job *j = alloc_jobs(m);
  if (!m->packed || !j) { free(j); return gm_fail("out of memory for the bf16 weight layout (%zu MiB)", total * 4 >> 20); }
  m->copy_bytes = total * sizeof(uint32_t);
  int n = weight_jobs(m->packed_only ? src : m, j);
  uint32_t *at = m->packed;
  for (int l = 0; l < c->n_layer; l++) { // the layers' matrices in order, then lm_head^T
    gm_gpt2_layer *y = &m->layers[l];
    y->attn_wp = at; j[1 + 4 * l].out = at; at += s_attn;
    y->aproj_wp = at; j[2 + 4 * l].out = at; at += s_aproj;
    y->fc_wp = at; j[3 + 4 * l].out = at; at += s_fc;
    y->mproj_wp = at; j[4 + 4 * l].out = at; at += s_mproj;
  }
  m->lm_head_p = at;
  j[0].out = at;
  at += gm_bf16_packed_size(D, V);
  const int nt = threads > 1 ? threads : 1;
  int failed = 0;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1) reduction(| : failed)
  for (int k = 0; k < n; k++) { // op(B) [K, N]: w as stored, or w^T
    const weight_job *b = &j[k];
    const int K = b->trans ? b->cols : b->rows, N = b->trans ? b->rows : b->cols;
    if (m->packed_only) failed |= gm_bf16_pack_rounded(b->w, b->cols, b->trans, K, N, b->out) != 0;
    else gm_bf16_pack(b->w, b->cols, b->trans, K, N, b->out);
  }
  free(j);
  if (failed) return gm_fail("out of memory packing the bf16 weights");
  if (m->packed_only) { // wte's bits, in row blocks shared among the threads
    uint16_t *wb = (uint16_t *)at;
    m->wte_bf16 = wb;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int r = 0; r < V; r += 256)
      gm_f32_to_dtype_buf(GM_BF16, src->wte + (size_t)r * D, wb + (size_t)r * D, (size_t)(V - r < 256 ? V - r : 256) * D);
  }
  return 0;
}

// f16 runs: the four matrices of every layer and lm_head as f16 bits for the one-row (decode)
// kernels, when this CPU runs them (gm_matmul_f16_row_fast); the f32 copies stay for the rest.
static int copy_f16(gm_gpt2 *m, int threads) {
  if (!gm_matmul_f16_row_fast()) return 0;
  const gm_gpt2_config *c = &m->cfg;
  size_t D = (size_t)c->n_embd, I = (size_t)c->n_inner, V = (size_t)c->vocab_size;
  size_t per = D * 3 * D + D * D + D * I + I * D, total = per * (size_t)c->n_layer + V * D;
  if (!m->half) m->half = malloc(total * sizeof(uint16_t)); // refilled in place by gm_gpt2_set_weights
  weight_job *j = alloc_jobs(m);
  if (!m->half || !j) { free(j); return gm_fail("out of memory for the f16 copy of the weights (%zu MiB)", total * 2 >> 20); }
  m->copy_bytes = total * sizeof(uint16_t);
  int n = weight_jobs(m, j);
  uint16_t *at = m->half;
  for (int l = 0; l < c->n_layer; l++) {
    gm_gpt2_layer *y = &m->layers[l];
    y->attn_wh = at; j[1 + 4 * l].out = at; at += D * 3 * D;
    y->aproj_wh = at; j[2 + 4 * l].out = at; at += D * D;
    y->fc_wh = at; j[3 + 4 * l].out = at; at += D * I;
    y->mproj_wh = at; j[4 + 4 * l].out = at; at += I * D;
  }
  m->lm_head_h = at;
  j[0].out = at;
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) schedule(dynamic, 1) if (threads > 1)
  for (int k = 0; k < n; k++) gm_f32_to_dtype_buf(GM_F16, j[k].w, j[k].out, (size_t)j[k].rows * j[k].cols);
  free(j);
  return 0;
}

int gm_gpt2_to_dtype(gm_gpt2 *m, gm_dtype dt) {
  if (dt == m->dtype) return 0;
  if (dt != GM_F16 && dt != GM_BF16 && dt != GM_F32)
    return gm_fail("a model runs in f32, f16 or bf16, not %s", gm_dtype_name(dt));
  if (m->dtype != GM_F32)
    return gm_fail("the weights were already rounded to %s; reload the checkpoint to run it in %s", gm_dtype_name(m->dtype),
                   gm_dtype_name(dt));
  if ((m->file_dtype == GM_F16 && dt == GM_BF16) || (m->file_dtype == GM_BF16 && dt == GM_F16))
    return gm_fail("the checkpoint is %s and cannot run in %s: %s", gm_dtype_name(m->file_dtype), gm_dtype_name(dt),
                   m->file_dtype == GM_BF16 ? "f16 has 5 exponent bits, so bf16 weights would overflow or lose range"
                                            : "bf16 has 8 significand bits, so f16 weights would be rounded again");
  gm_round_inplace(dt, m->storage, (size_t)m->n_params);
  m->dtype = dt;
  return dt == GM_BF16 ? pack_bf16(m, m, 1) : copy_f16(m, 1);
}

// gm_gpt2_set_weights into a packed_only copy: the tensors it stores (layer norms, biases, wpe)
// rounded one by one, the matrices and wte from main's f32 weights straight into pairs and bits.
static int set_packed_only(gm_gpt2 *m, const gm_gpt2 *main, int threads) {
  const size_t cap = (size_t)m->cfg.n_layer * 12 + 6;
  w_desc *dm = calloc(2 * cap, sizeof *dm);
  if (!dm) return gm_fail("out of memory");
  w_desc *ds = dm + cap;
  gm_gpt2 mc = *m, sc = *main; // describe() takes the pointers' addresses: copies, not written through
  int n = describe(&mc, dm);
  describe(&sc, ds);
  for (int i = 0; i < n; i++)
    if (*dm[i].ptr) gm_round_copy(m->dtype, *ds[i].ptr, *dm[i].ptr, (size_t)numel(&dm[i]), threads);
  free(dm);
  return pack_bf16(m, main, threads);
}

int gm_gpt2_alloc_working(gm_gpt2 *w, const gm_gpt2 *main, gm_dtype dt) {
  if (dt != GM_BF16 && dt != GM_F16) return gm_gpt2_alloc_like(w, main) || gm_gpt2_to_dtype(w, dt) ? -1 : 0;
  if (dt == GM_F16) { // f32 storage of f16 values, without the decode kernels' f16 copy (training does not decode)
    if (gm_gpt2_alloc_like(w, main)) return -1;
    w->dtype = w->file_dtype = GM_F16;
    return 0;
  }
  w_desc *d;
  int n;
  if (allocate_as(w, &main->cfg, main->tied, true, &d, &n)) return -1;
  free(d);
  w->dtype = w->file_dtype = GM_BF16;
  return 0;
}

int gm_gpt2_set_weights(gm_gpt2 *m, const gm_gpt2 *main, int threads) {
  if (!m->storage || !main->storage || m->n_params != main->n_params || m->tied != main->tied ||
      m->cfg.n_layer != main->cfg.n_layer || m->cfg.n_embd != main->cfg.n_embd || m->cfg.n_inner != main->cfg.n_inner ||
      m->cfg.vocab_size != main->cfg.vocab_size || m->cfg.n_positions != main->cfg.n_positions)
    return gm_fail("gm_gpt2_set_weights: the two models differ in layout");
  if (m == main || m->storage == main->storage) return gm_fail("gm_gpt2_set_weights: the models must not share storage");
  if (threads <= 0) threads = omp_get_max_threads();
  if (m->packed_only) return set_packed_only(m, main, threads);
  // both storages are laid out by allocate() in describe() order, so one copy covers every tensor
  gm_round_copy(m->dtype, main->storage, m->storage, (size_t)m->n_params, threads);
  if (m->packed) return pack_bf16(m, m, threads);
  if (m->half) return copy_f16(m, threads);
  return 0;
}
