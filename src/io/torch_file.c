// PyTorch .bin checkpoints: torch.save's zip container and the legacy (pre-1.6) stream, each a
// pickled state dict read by the inert VM (torch_pickle.c); tensors are views into storages
// that stay in the mapping (contiguous views) or are copied out contiguously (strided views).
#include "torch_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct {
  const char *key;
  size_t key_len;
  const unsigned char *data;
  uint64_t nbytes;
} stor_rec;

typedef struct {
  const gm_zip *zip;              // zip: records prefix/data/KEY
  const stor_rec *recs;           // legacy: the storages after the pickles
  int n_recs;
} stor_src;

static int find_storage(const char *path, const stor_src *src, const gm_pk *s, const unsigned char **data, uint64_t *nbytes) {
  if (src->zip) {
    char rest[80];
    snprintf(rest, sizeof rest, "data/%.*s", (int)s->key_len, s->key);
    const gm_zip_entry *e = gm_zip_find(src->zip, rest);
    if (!e) return gm_fail("%s: storage '%.*s' has no zip record '%.*s%s'", path, (int)s->key_len, s->key,
                           (int)src->zip->prefix_len, src->zip->prefix, rest);
    *data = e->data;
    *nbytes = e->size;
    return 0;
  }
  for (int i = 0; i < src->n_recs; i++)
    if (src->recs[i].key_len == s->key_len && memcmp(src->recs[i].key, s->key, s->key_len) == 0) {
      *data = src->recs[i].data;
      *nbytes = src->recs[i].nbytes;
      return 0;
    }
  return gm_fail("%s: storage '%.*s' is not in the file's storage key list", path, (int)s->key_len, s->key);
}

static void dims_str(char *buf, size_t n, int nd, const int64_t *v) {
  size_t l = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < nd && l < n; i++) l += (size_t)snprintf(buf + l, n - l, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (l < n) snprintf(buf + l, n - l, "]");
}

// Copies the strided view out contiguously (row-major over its size).
static void copy_view(unsigned char *dst, const unsigned char *base, const gm_pk *t, size_t es) {
  int64_t idx[GM_ST_MAX_DIMS] = {0};
  uint64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= (uint64_t)t->size[d];
  for (uint64_t k = 0; k < n; k++) {
    uint64_t off = (uint64_t)t->i;
    for (int d = 0; d < t->ndim; d++) off += (uint64_t)idx[d] * (uint64_t)t->stride[d];
    memcpy(dst + k * es, base + off * es, es);
    for (int d = t->ndim - 1; d >= 0; d--) {
      if (++idx[d] < t->size[d]) break;
      idx[d] = 0;
    }
  }
}

// One tensor description -> a gm_ckpt tensor named name, its view checked against its storage.
static int resolve_tensor(gm_ckpt *c, const char *path, const char *file, const char *name, const gm_pk *t, const stor_src *src) {
  if (t->kind != PK_TENSOR) return gm_fail("%s: state dict entry '%s' is not a tensor (pickle byte %zu)", path, name, t->at);
  const gm_pk *s = t->storage;
  if (t->dt < 0) return gm_fail("%s: tensor '%s': an untyped storage without a dtype (pickle byte %zu)", path, name, t->at);
  const gm_torch_dtype *td = &gm_torch_dtypes[t->dt];
  uint64_t es = (uint64_t)td->size;
  uint64_t s_es = s->dt >= 0 ? (uint64_t)gm_torch_dtypes[s->dt].size : 1, s_bytes;
  if (__builtin_mul_overflow((uint64_t)s->numel, s_es, &s_bytes))
    return gm_fail("%s: tensor '%s': storage '%.*s' size %lld overflows", path, name, (int)s->key_len, s->key, (long long)s->numel);
  const unsigned char *data = NULL;
  uint64_t have = 0;
  if (find_storage(path, src, s, &data, &have)) return -1;
  if (have < s_bytes)
    return gm_fail("%s: tensor '%s': storage '%.*s' claims %llu bytes but its record holds %llu", path, name, (int)s->key_len,
                   s->key, (unsigned long long)s_bytes, (unsigned long long)have);
  uint64_t s_numel = s_bytes / es; // in the tensor's elements
  uint64_t numel = 1, last = (uint64_t)t->i;
  bool over = false;
  for (int d = 0; d < t->ndim; d++) {
    over |= __builtin_mul_overflow(numel, (uint64_t)t->size[d], &numel);
    uint64_t step;
    if (t->size[d] > 0) {
      over |= __builtin_mul_overflow((uint64_t)(t->size[d] - 1), (uint64_t)t->stride[d], &step);
      over |= __builtin_add_overflow(last, step, &last);
    }
  }
  char sz[160], sd[160];
  dims_str(sz, sizeof sz, t->ndim, t->size);
  dims_str(sd, sizeof sd, t->ndim, t->stride);
  if (over) return gm_fail("%s: tensor '%s': size %s stride %s overflows 64 bits (pickle byte %zu)", path, name, sz, sd, t->at);
  if (numel > 0 && last >= s_numel)
    return gm_fail("%s: tensor '%s': view (offset %lld, size %s, stride %s) reaches element %llu of storage '%.*s' of %llu elements",
                   path, name, (long long)t->i, sz, sd, (unsigned long long)last, (int)s->key_len, s->key, (unsigned long long)s_numel);
  if (numel > s_numel)
    return gm_fail("%s: tensor '%s': view of %llu elements over a storage of %llu (overlapping strides) is not read", path, name,
                   (unsigned long long)numel, (unsigned long long)s_numel);
  bool contig = true;
  uint64_t want = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->size[d] != 1 && (uint64_t)t->stride[d] != want) contig = false;
    want *= (uint64_t)t->size[d];
  }
  gm_ckpt_tensor *o = gm_ckpt_add_tensor(c);
  if (!o) return -1;
  o->name = strdup(name);
  if (!o->name) return gm_fail("out of memory");
  o->file = file;
  o->torch_dtype = td->dtype;
  o->readable = td->gm >= 0;
  o->dtype = td->gm >= 0 ? (gm_dtype)td->gm : GM_F32;
  o->ndim = t->ndim;
  memcpy(o->shape, t->size, sizeof o->shape);
  o->numel = numel;
  if (contig || numel == 0) {
    o->data = data + (numel ? (uint64_t)t->i * es : 0);
  } else {
    o->owned = malloc((size_t)(numel * es));
    if (!o->owned) return gm_fail("out of memory copying tensor '%s'", name);
    copy_view(o->owned, data, t, (size_t)es);
    o->data = o->owned;
  }
  return 0;
}

// A printable copy of a dict key (false: not a clean str of 1..499 bytes; name still printable).
static bool key_name(const gm_pk *kn, char *name, size_t cap) {
  if (kn->kind != PK_STR) { snprintf(name, cap, "(a %s)", kn->kind == PK_INT ? "int" : "non-str key"); return false; }
  snprintf(name, cap, "%.*s", (int)(kn->slen < 500 ? kn->slen : 500), kn->s);
  bool clean = kn->slen > 0 && kn->slen < 500 && kn->slen < cap;
  for (size_t i = 0; i < kn->slen && i + 1 < cap; i++)
    if ((unsigned char)kn->s[i] < 0x20 || kn->s[i] == 0x7f) { clean = false; name[i] = '?'; }
  return clean;
}

// Turns the state dict root into gm_ckpt tensors, checking every view against its storage.
static int resolve(gm_ckpt *c, const char *path, const char *file, const gm_pk *root, const stor_src *src) {
  if (root->kind != PK_DICT) return gm_fail("%s: the pickled object is not a dict (a state dict of tensors)", path);
  for (size_t k = 0; k < root->n; k++) {
    const gm_pk *kn = root->items[2 * k], *t = root->items[2 * k + 1];
    if (kn->kind != PK_STR) return gm_fail("%s: a state dict key is not a str (pickle byte %zu)", path, kn->at);
    char name[512];
    if (!key_name(kn, name, sizeof name))
      return gm_fail("%s: state dict key '%s' is empty, longer than 499 bytes or has a control byte (pickle byte %zu)", path, name, kn->at);
    if (resolve_tensor(c, path, file, name, t, src)) return -1;
  }
  return 0;
}

// Megatron: every tensor under root['model'] (nested dicts, dotted names; None and other values
// skipped), and the scalars of root['args'] (a Namespace) and root['checkpoint_version'].
static int walk_model(gm_ckpt *c, const char *path, const char *file, const gm_pk *d, const char *prefix, const stor_src *src) {
  for (size_t k = 0; k < d->n; k++) {
    const gm_pk *kn = d->items[2 * k], *v = d->items[2 * k + 1];
    char key[512], name[1024];
    if (!key_name(kn, key, sizeof key))
      return gm_fail("%s: model key '%s%s' is not a printable str of 1..499 bytes (pickle byte %zu)", path, prefix, key, kn->at);
    snprintf(name, sizeof name, "%s%s", prefix, key);
    if (strlen(name) >= 500) return gm_fail("%s: model key '%.80s...' is longer than 499 bytes", path, name);
    if (v->kind == PK_TENSOR) { if (resolve_tensor(c, path, file, name, v, src)) return -1; }
    else if (v->kind == PK_DICT) {
      strcat(name, ".");
      if (walk_model(c, path, file, v, name, src)) return -1;
    }
  }
  return 0;
}

static int resolve_megatron(gm_ckpt *c, const char *path, const char *file, const gm_pk *root, const stor_src *src, gm_meg_meta *meta) {
  if (root->kind != PK_DICT) return gm_fail("%s: the pickled object is not a dict (a Megatron checkpoint)", path);
  memset(meta, 0, sizeof *meta);
  const gm_pk *model = NULL, *module = NULL;
  for (size_t k = 0; k < root->n; k++) {
    const gm_pk *kn = root->items[2 * k], *v = root->items[2 * k + 1];
    if (kn->kind != PK_STR) continue;
    char key[64];
    if (!key_name(kn, key, sizeof key)) continue;
    if (strcmp(key, "model") == 0 && v->kind == PK_DICT) model = v;
    else if (strcmp(key, "module") == 0 && (v->kind == PK_DICT || v->kind == PK_NONE)) module = v; // DeepSpeed's engine
    else if (strcmp(key, "checkpoint_version") == 0 && (v->kind == PK_INT || v->kind == PK_FLOAT)) {
      meta->has_version = true;
      meta->version = v->kind == PK_INT ? (double)v->i : v->f;
    } else if (strcmp(key, "iteration") == 0 && v->kind == PK_INT) meta->iteration = v->i;
    else if (strcmp(key, "args") == 0 && v->kind == PK_NAMESPACE) {
      meta->has_args = true;
      for (size_t a = 0; a < v->n && meta->n_args < GM_MEG_MAX_ARGS; a++) {
        const gm_pk *an = v->items[2 * a], *av = v->items[2 * a + 1];
        gm_meg_arg *o = &meta->args[meta->n_args];
        if (!key_name(an, o->name, sizeof o->name)) continue;
        if (av->kind == PK_INT || av->kind == PK_BOOL) { o->kind = av->kind == PK_INT ? 'i' : 'b'; o->i = av->i; }
        else if (av->kind == PK_FLOAT) { o->kind = 'f'; o->f = av->f; }
        else if (av->kind == PK_STR) { o->kind = 's'; snprintf(o->s, sizeof o->s, "%.*s", (int)(av->slen < 63 ? av->slen : 63), av->s); }
        else if (av->kind == PK_NONE) o->kind = 'n';
        else continue; // lists, dtypes, ...: not read
        meta->n_args++;
      }
    }
  }
  // Megatron-DeepSpeed: DeepSpeed's 'module' (None with pipeline parallelism: the weights are in
  // the layer files) when there is no 'model'.
  if (!model && module) {
    meta->has_module = true;
    if (module->kind == PK_NONE) return 0;
    model = module;
  }
  if (!model) return gm_fail("%s: no 'model' dict (a Megatron checkpoint holds its weights under 'model')", path);
  return walk_model(c, path, file, model, "", src);
}

static int open_zip(gm_ckpt *c, const char *path, const char *file, const unsigned char *p, size_t len, gm_meg_meta *meta) {
  gm_zip z;
  if (gm_zip_read(&z, path, p, len)) return -1;
  int rc = 0;
  const gm_zip_entry *bo = gm_zip_find(&z, "byteorder");
  if (bo && !(bo->size == 6 && memcmp(bo->data, "little", 6) == 0)) {
    if (bo->size == 3 && memcmp(bo->data, "big", 3) == 0)
      rc = gm_fail("%s: byteorder record says 'big': a big-endian checkpoint (gptmeg reads little-endian storages only)", path);
    else
      rc = gm_fail("%s: byteorder record is neither 'little' nor 'big'", path);
  }
  const gm_zip_entry *pk = gm_zip_find(&z, "data.pkl");
  char where[600];
  snprintf(where, sizeof where, "%s:%.*sdata.pkl", path, (int)z.prefix_len, z.prefix);
  gm_pkvm vm = {.megatron = meta != NULL};
  gm_pk *root = NULL;
  size_t end;
  if (!rc) rc = gm_pk_run(&vm, where, pk->data, (size_t)pk->size, 0, 0, false, &end, &root);
  stor_src src = {.zip = &z};
  if (!rc) rc = meta ? resolve_megatron(c, path, file, root, &src, meta) : resolve(c, path, file, root, &src);
  gm_pkvm_free(&vm);
  gm_zip_free(&z);
  if (!rc) snprintf(c->format, sizeof c->format, "pytorch zip");
  return rc;
}

static const unsigned char legacy_magic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19}; // 0x1950a86a20f9469cfc6c LE

static int open_legacy(gm_ckpt *c, const char *path, const char *file, const unsigned char *p, size_t len, gm_meg_meta *meta) {
  gm_pkvm vm = {.megatron = meta != NULL};
  gm_pk *v = NULL, *root = NULL, *keys = NULL;
  size_t pos = 0, end = 0;
  stor_rec *recs = NULL;
  int rc = gm_pk_run(&vm, path, p, len, pos, 0, false, &end, &v);
  if (!rc && !(v->kind == PK_BIGINT && v->slen == 10 && memcmp(v->s, legacy_magic, 10) == 0))
    rc = gm_fail("%s: byte 0: not the legacy torch.save magic number 0x1950a86a20f9469cfc6c", path);
  if (!rc) { pos = end; rc = gm_pk_run(&vm, path, p, len, pos, 0, false, &end, &v); }
  if (!rc && !(v->kind == PK_INT && v->i == 1001))
    rc = gm_fail("%s: byte %zu: legacy protocol version is not 1001", path, pos);
  if (!rc) { pos = end; rc = gm_pk_run(&vm, path, p, len, pos, 0, false, &end, &v); }
  if (!rc) {
    if (v->kind != PK_DICT) rc = gm_fail("%s: byte %zu: legacy sys_info is not a dict", path, pos);
    for (size_t i = 0; !rc && i < v->n; i++) {
      const gm_pk *k = v->items[2 * i], *x = v->items[2 * i + 1];
      if (k->kind == PK_STR && k->slen == 13 && memcmp(k->s, "little_endian", 13) == 0 && !(x->kind == PK_BOOL && x->i == 1))
        rc = gm_fail("%s: byte %zu: sys_info says little_endian=False: a big-endian checkpoint (gptmeg reads little-endian storages only)", path, pos);
    }
  }
  if (!rc) { pos = end; rc = gm_pk_run(&vm, path, p, len, pos, 0, true, &end, &root); }
  if (!rc) { pos = end; rc = gm_pk_run(&vm, path, p, len, pos, 0, false, &end, &keys); }
  if (!rc && keys->kind != PK_LIST) rc = gm_fail("%s: byte %zu: the legacy storage key list is not a list", path, pos);
  if (!rc && !(recs = calloc(keys->n ? keys->n : 1, sizeof *recs))) rc = gm_fail("out of memory");
  pos = end;
  for (size_t i = 0; !rc && i < keys->n; i++) {
    const gm_pk *k = keys->items[i];
    if (k->kind != PK_STR) { rc = gm_fail("%s: legacy storage key %zu is not a str", path, i); break; }
    const gm_pk *s = NULL; // the storage this key names, for its element size
    for (size_t j = 0; j < vm.n_all && !s; j++)
      if (vm.all[j]->kind == PK_STORAGE && vm.all[j]->key_len == k->slen && memcmp(vm.all[j]->key, k->s, k->slen) == 0) s = vm.all[j];
    if (!s) { rc = gm_fail("%s: legacy storage key '%.*s' is used by no tensor", path, (int)(k->slen > 64 ? 64 : k->slen), k->s); break; }
    for (size_t j = 0; j < i; j++)
      if (recs[j].key_len == k->slen && memcmp(recs[j].key, k->s, k->slen) == 0) { rc = gm_fail("%s: legacy storage key '%.*s' listed twice", path, (int)k->slen, k->s); break; }
    if (rc) break;
    uint64_t es = s->dt >= 0 ? (uint64_t)gm_torch_dtypes[s->dt].size : 1, nb;
    if (len - pos < 8) { rc = gm_fail("%s: byte %zu: storage '%.*s' size runs past the end of the file", path, pos, (int)k->slen, k->s); break; }
    uint64_t n = 0;
    for (int b = 7; b >= 0; b--) n = (n << 8) | p[pos + b];
    if (n != (uint64_t)s->numel) { rc = gm_fail("%s: byte %zu: storage '%.*s' holds %llu elements but the pickle says %lld", path, pos, (int)k->slen, k->s, (unsigned long long)n, (long long)s->numel); break; }
    pos += 8;
    if (__builtin_mul_overflow(n, es, &nb) || nb > len - pos) {
      rc = gm_fail("%s: byte %zu: storage '%.*s' (%llu elements of %llu bytes) runs past the end of the file (%zu bytes)", path, pos,
                   (int)k->slen, k->s, (unsigned long long)n, (unsigned long long)es, len);
      break;
    }
    recs[i] = (stor_rec){k->s, k->slen, p + pos, nb};
    pos += (size_t)nb;
  }
  stor_src src = {.recs = recs, .n_recs = keys ? (int)keys->n : 0};
  if (!rc) rc = meta ? resolve_megatron(c, path, file, root, &src, meta) : resolve(c, path, file, root, &src);
  free(recs);
  gm_pkvm_free(&vm);
  if (!rc) snprintf(c->format, sizeof c->format, "pytorch legacy");
  return rc;
}

// Reads the torch file p[0, len) (zip or legacy, told apart by the first bytes) into c, whose
// mapping is already registered; path names it in errors.
static int torch_parse(gm_ckpt *c, const char *path, const char *file, const unsigned char *p, size_t len, gm_meg_meta *meta) {
  if (len >= 4 && memcmp(p, "PK\x03\x04", 4) == 0) return open_zip(c, path, file, p, len, meta);
  if (len >= 2 && p[0] == 0x80 && p[1] == 0x02) return open_legacy(c, path, file, p, len, meta);
  return gm_fail("%s: neither a zip (torch.save >= 1.6) nor a legacy torch.save stream (byte 0 is 0x%02x)", path, len ? p[0] : 0);
}

static int torch_open(gm_ckpt *c, const char *path, gm_meg_meta *meta) {
  memset(c, 0, sizeof *c);
  void *map;
  size_t len;
  if (gm_ckpt_map_file(path, &map, &len)) return -1;
  const char *file = gm_ckpt_add_map(c, path, map, len);
  if (!file) { gm_ckpt_close(c); return -1; }
  c->path = strdup(path);
  int rc = torch_parse(c, path, file, map, len, meta);
  if (rc) gm_ckpt_close(c);
  return rc;
}

int gm_torch_open(gm_ckpt *c, const char *path) { return torch_open(c, path, NULL); }

int gm_torch_open_megatron(gm_ckpt *c, const char *path, gm_meg_meta *meta) { return torch_open(c, path, meta); }

int gm_torch_open_range(gm_ckpt *c, const char *name, void *map, size_t map_len, size_t off, size_t len, gm_meg_meta *meta) {
  memset(c, 0, sizeof *c);
  if (off > map_len || len > map_len - off) {
    if (map) munmap(map, map_len);
    return gm_fail("%s: range [%zu, +%zu) lies outside its %zu-byte mapping", name, off, len, map_len);
  }
  const char *file = gm_ckpt_add_map(c, name, map, map_len);
  if (!file) { gm_ckpt_close(c); return -1; }
  c->path = strdup(name);
  int rc = c->path ? torch_parse(c, name, file, (const unsigned char *)map + off, len, meta) : gm_fail("out of memory");
  if (rc) gm_ckpt_close(c);
  return rc;
}
