// gm_ckpt: the tensors of a checkpoint file or model directory, whatever its format, with the
// mappings they point into. Directory precedence and shard indexes as transformers reads them.
#include "torch_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int gm_ckpt_map_file(const char *path, void **map, size_t *len) {
  *map = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY);
  if (fd < 0) return gm_fail("cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) { int r = gm_fail("cannot stat '%s': %s", path, strerror(errno)); close(fd); return r; }
  if (!S_ISREG(sb.st_mode)) { close(fd); return gm_fail("'%s' is not a regular file", path); }
  if (sb.st_size == 0) { close(fd); return 0; }
  void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return gm_fail("cannot mmap '%s': %s", path, strerror(errno));
  *map = m;
  *len = (size_t)sb.st_size;
  return 0;
}

const char *gm_ckpt_add_map(gm_ckpt *c, const char *path, void *map, size_t len) {
  int n = c->n_files + 1;
  char **f = realloc(c->files, (size_t)n * sizeof *f);
  if (f) c->files = f;
  void **m = realloc(c->maps, (size_t)n * sizeof *m);
  if (m) c->maps = m;
  size_t *l = realloc(c->map_lens, (size_t)n * sizeof *l);
  if (l) c->map_lens = l;
  char *p = strdup(path);
  if (!f || !m || !l || !p) {
    free(p);
    if (map) munmap(map, len);
    gm_fail("out of memory");
    return NULL;
  }
  c->files[c->n_files] = p;
  c->maps[c->n_files] = map;
  c->map_lens[c->n_files] = len;
  c->n_files = n;
  return p;
}

gm_ckpt_tensor *gm_ckpt_add_tensor(gm_ckpt *c) {
  gm_ckpt_tensor *t = realloc(c->tensors, (size_t)(c->n_tensors + 1) * sizeof *t);
  if (!t) { gm_fail("out of memory"); return NULL; }
  c->tensors = t;
  memset(&t[c->n_tensors], 0, sizeof *t);
  return &t[c->n_tensors++];
}

void gm_ckpt_close(gm_ckpt *c) {
  for (int i = 0; i < c->n_tensors; i++) { free(c->tensors[i].name); free(c->tensors[i].owned); }
  free(c->tensors);
  for (int i = 0; i < c->n_files; i++) {
    if (c->maps[i]) munmap(c->maps[i], c->map_lens[i]);
    free(c->files[i]);
  }
  free(c->files);
  free(c->maps);
  free(c->map_lens);
  free(c->path);
  memset(c, 0, sizeof *c);
}

const gm_ckpt_tensor *gm_ckpt_find(const gm_ckpt *c, const char *name) {
  for (int i = 0; i < c->n_tensors; i++)
    if (strcmp(c->tensors[i].name, name) == 0) return &c->tensors[i];
  return NULL;
}

void gm_ckpt_read_f32(const gm_ckpt_tensor *t, float *out) {
  const unsigned char *p = t->data;
  if (t->dtype == GM_F32) { if (t->numel) memcpy(out, p, (size_t)t->numel * 4); return; }
  for (uint64_t i = 0; i < t->numel; i++) {
    uint16_t h = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
    out[i] = t->dtype == GM_F16 ? gm_f16_to_f32(h) : gm_bf16_to_f32(h);
  }
}

int gm_ckpt_open_safetensors(gm_ckpt *c, const char *path) {
  memset(c, 0, sizeof *c);
  gm_safetensors st;
  if (gm_st_open(&st, path)) return -1;
  const char *file = gm_ckpt_add_map(c, path, st.map, st.map_len);
  st.map = NULL; // the gm_ckpt owns the mapping now
  int rc = file ? 0 : -1;
  c->path = strdup(path);
  for (int i = 0; i < st.n_tensors && rc == 0; i++) {
    const gm_st_tensor *s = &st.tensors[i];
    gm_ckpt_tensor *t = gm_ckpt_add_tensor(c);
    if (!t) { rc = -1; break; }
    t->name = strdup(s->name);
    t->dtype = s->dtype;
    t->readable = true;
    t->torch_dtype = s->dtype == GM_F32 ? "torch.float32" : s->dtype == GM_F16 ? "torch.float16" : "torch.bfloat16";
    t->ndim = s->ndim;
    memcpy(t->shape, s->shape, sizeof t->shape);
    t->numel = s->numel;
    t->data = s->data;
    t->file = file;
    if (!t->name) rc = gm_fail("out of memory");
  }
  gm_st_close(&st);
  if (!rc) snprintf(c->format, sizeof c->format, "safetensors");
  if (rc) gm_ckpt_close(c);
  return rc;
}

// Moves every tensor and mapping of src into dst (src is left empty).
static int merge(gm_ckpt *dst, gm_ckpt *src, const char *index) {
  for (int i = 0; i < src->n_tensors; i++)
    if (gm_ckpt_find(dst, src->tensors[i].name)) {
      const gm_ckpt_tensor *o = gm_ckpt_find(dst, src->tensors[i].name);
      return gm_fail("%s: tensor '%s' is in two shards ('%s' and '%s')", index, o->name, o->file, src->tensors[i].file);
    }
  for (int i = 0; i < src->n_files; i++) {
    if (!gm_ckpt_add_map(dst, src->files[i], src->maps[i], src->map_lens[i])) return -1;
    src->maps[i] = NULL;
    const char *nf = dst->files[dst->n_files - 1];
    for (int k = 0; k < src->n_tensors; k++)
      if (src->tensors[k].file == src->files[i]) src->tensors[k].file = nf;
  }
  for (int i = 0; i < src->n_tensors; i++) {
    gm_ckpt_tensor *t = gm_ckpt_add_tensor(dst);
    if (!t) return -1;
    *t = src->tensors[i];
    src->tensors[i].name = NULL;
    src->tensors[i].owned = NULL;
  }
  return 0;
}

static int open_index(gm_ckpt *c, const char *dir, const char *index_path, bool st) {
  void *map;
  size_t len;
  if (gm_ckpt_map_file(index_path, &map, &len)) return -1;
  cJSON *root = map ? cJSON_ParseWithLength(map, len) : NULL;
  if (map) munmap(map, len);
  const cJSON *wm = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
  if (!cJSON_IsObject(wm)) { cJSON_Delete(root); return gm_fail("%s: not a JSON object with a \"weight_map\" object", index_path); }
  int rc = 0, n_shards = 0;
  for (const cJSON *e = wm->child; e && !rc; e = e->next) {
    for (const char *q = e->string; *q && !rc; q++)
      if ((unsigned char)*q < 0x20 || *q == 0x7f) rc = gm_fail("%s: a weight_map name has a control byte", index_path);
    for (const char *q = cJSON_IsString(e) ? e->valuestring : ""; *q && !rc; q++)
      if ((unsigned char)*q < 0x20 || *q == 0x7f) rc = gm_fail("%s: a weight_map file name has a control byte", index_path);
    if (rc) break;
    if (!cJSON_IsString(e)) { rc = gm_fail("%s: weight_map[\"%s\"] is not a file name", index_path, e->string); break; }
    const char *fn = e->valuestring;
    if (!*fn || strchr(fn, '/') || strcmp(fn, ".") == 0 || strcmp(fn, "..") == 0) {
      rc = gm_fail("%s: weight_map[\"%s\"] = '%s' is not a file name inside the directory", index_path, e->string, fn);
      break;
    }
    bool seen = false; // the shard was opened for an earlier entry
    for (const cJSON *p = wm->child; p != e && !seen; p = p->next) seen = strcmp(p->valuestring, fn) == 0;
    if (seen) continue;
    if (++n_shards > GM_CKPT_MAX_SHARDS) { rc = gm_fail("%s: more than %d shards", index_path, GM_CKPT_MAX_SHARDS); break; }
    size_t pl = strlen(dir) + strlen(fn) + 2;
    char *sp = malloc(pl);
    if (!sp) { rc = gm_fail("out of memory"); break; }
    snprintf(sp, pl, "%s/%s", dir, fn);
    gm_ckpt sh;
    rc = st ? gm_ckpt_open_safetensors(&sh, sp) : gm_torch_open(&sh, sp);
    if (!rc) {
      const char *fmt = sh.format;
      if (n_shards == 1) snprintf(c->format, sizeof c->format, "%s", fmt);
      rc = merge(c, &sh, index_path);
      gm_ckpt_close(&sh);
    }
    free(sp);
  }
  for (const cJSON *e = wm->child; e && !rc; e = e->next) {
    const gm_ckpt_tensor *t = gm_ckpt_find(c, e->string);
    if (!t) { rc = gm_fail("%s: weight_map names '%s' in '%s' but that shard has no such tensor", index_path, e->string, e->valuestring); break; }
    const char *base = strrchr(t->file, '/');
    base = base ? base + 1 : t->file;
    if (strcmp(base, e->valuestring) != 0)
      rc = gm_fail("%s: weight_map puts '%s' in '%s' but it is in '%s'", index_path, e->string, e->valuestring, base);
  }
  if (!rc) {
    const char *kind = strncmp(c->format, "pytorch", 7) == 0 ? c->format : "safetensors";
    if (!c->format[0]) kind = st ? "safetensors" : "pytorch";
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.40s (%d shards)", kind, n_shards);
    memcpy(c->format, tmp, sizeof tmp);
  }
  cJSON_Delete(root);
  return rc;
}

int gm_ckpt_open_dir(gm_ckpt *c, const char *dir) {
  memset(c, 0, sizeof *c);
  static const char *const names[] = {"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                                      "pytorch_model.bin.index.json"};
  size_t pl = strlen(dir) + 40;
  char *p = malloc(pl);
  if (!p) return gm_fail("out of memory");
  int rc = 1;
  for (int i = 0; i < 4 && rc == 1; i++) {
    snprintf(p, pl, "%s/%s", dir, names[i]);
    struct stat sb;
    if (stat(p, &sb) != 0) continue;
    if (i == 0) rc = gm_ckpt_open_safetensors(c, p);
    else if (i == 2) rc = gm_torch_open(c, p);
    else {
      rc = open_index(c, dir, p, i == 1);
      if (!rc) c->path = strdup(p);
      else gm_ckpt_close(c);
    }
  }
  free(p);
  if (rc == 1)
    return gm_fail("%s: no checkpoint (model.safetensors, model.safetensors.index.json, pytorch_model.bin or pytorch_model.bin.index.json)", dir);
  return rc;
}
