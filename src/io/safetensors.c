// safetensors reader (mmap + full validation) and writer.
#include "gptmeg/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int dtype_from_name(const char *s, gm_dtype *dt) {
  if (strcmp(s, "F32") == 0) { *dt = GM_F32; return 0; }
  if (strcmp(s, "F16") == 0) { *dt = GM_F16; return 0; }
  if (strcmp(s, "BF16") == 0) { *dt = GM_BF16; return 0; }
  return -1;
}

static const char *dtype_to_name(gm_dtype dt) {
  switch (dt) {
  case GM_F32: return "F32";
  case GM_F16: return "F16";
  case GM_BF16: return "BF16";
  default: return NULL;
  }
}

// A JSON number that is a non-negative integer below 2^53.
static bool json_u53(const cJSON *j, uint64_t *out) {
  if (!cJSON_IsNumber(j)) return false;
  double v = j->valuedouble;
  if (!(v >= 0 && v < 9007199254740992.0) || v != floor(v)) return false;
  *out = (uint64_t)v;
  return true;
}

void gm_st_close(gm_safetensors *st) {
  if (st->map && st->map != MAP_FAILED) munmap(st->map, st->map_len);
  for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
  free(st->tensors);
  free(st->path);
  free(st->metadata_format);
  memset(st, 0, sizeof *st);
}

static int cmp_begin(const void *a, const void *b) {
  const gm_st_tensor *x = *(const gm_st_tensor *const *)a, *y = *(const gm_st_tensor *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_name(const void *a, const void *b) {
  const gm_st_tensor *x = *(const gm_st_tensor *const *)a, *y = *(const gm_st_tensor *const *)b;
  return strcmp(x->name, y->name);
}

// Parses one tensor entry of the header into t. hdr_off: where the header starts in the file.
static int parse_entry(const char *path, const cJSON *item, gm_st_tensor *t, uint64_t data_len, uint64_t data_start) {
  const char *name = item->string;
  if (!cJSON_IsObject(item)) return gm_fail("%s: tensor '%s': header entry is not an object", path, name);
  const cJSON *jd = cJSON_GetObjectItemCaseSensitive(item, "dtype");
  const cJSON *js = cJSON_GetObjectItemCaseSensitive(item, "shape");
  const cJSON *jo = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
  if (!cJSON_IsString(jd)) return gm_fail("%s: tensor '%s': missing or non-string \"dtype\"", path, name);
  if (!cJSON_IsArray(js)) return gm_fail("%s: tensor '%s': missing or non-array \"shape\"", path, name);
  if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2)
    return gm_fail("%s: tensor '%s': \"data_offsets\" must be [begin, end]", path, name);
  if (dtype_from_name(jd->valuestring, &t->dtype))
    return gm_fail("%s: tensor '%s': unsupported dtype '%s' (gptmeg reads F32, F16, BF16)", path, name, jd->valuestring);
  int nd = cJSON_GetArraySize(js);
  if (nd > GM_ST_MAX_DIMS) return gm_fail("%s: tensor '%s': %d dimensions (at most %d)", path, name, nd, GM_ST_MAX_DIMS);
  t->ndim = nd;
  uint64_t numel = 1;
  for (int d = 0; d < nd; d++) {
    uint64_t v;
    if (!json_u53(cJSON_GetArrayItem(js, d), &v))
      return gm_fail("%s: tensor '%s': shape[%d] is not a non-negative integer", path, name, d);
    t->shape[d] = (int64_t)v;
    if (v != 0 && numel > UINT64_MAX / 8 / v) return gm_fail("%s: tensor '%s': shape product overflows", path, name);
    numel *= v;
  }
  uint64_t b, e;
  if (!json_u53(cJSON_GetArrayItem(jo, 0), &b) || !json_u53(cJSON_GetArrayItem(jo, 1), &e))
    return gm_fail("%s: tensor '%s': data_offsets are not non-negative integers", path, name);
  if (e < b) return gm_fail("%s: tensor '%s': data_offsets [%llu, %llu] end before begin (file offset %llu)", path, name,
                            (unsigned long long)b, (unsigned long long)e, (unsigned long long)(data_start + b));
  uint64_t want = numel * gm_dtype_size(t->dtype);
  if (e - b != want)
    return gm_fail("%s: tensor '%s': shape needs %llu bytes of %s but data_offsets [%llu, %llu] hold %llu (file offset %llu)",
                   path, name, (unsigned long long)want, jd->valuestring, (unsigned long long)b, (unsigned long long)e,
                   (unsigned long long)(e - b), (unsigned long long)(data_start + b));
  if (e > data_len)
    return gm_fail("%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the data (%llu bytes; file offset %llu, file size %llu)",
                   path, name, (unsigned long long)b, (unsigned long long)e, (unsigned long long)data_len,
                   (unsigned long long)(data_start + b), (unsigned long long)(data_start + data_len));
  t->numel = numel;
  t->begin = b;
  t->end = e;
  return 0;
}

int gm_st_open(gm_safetensors *st, const char *path) {
  memset(st, 0, sizeof *st);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return gm_fail("cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) { int r = gm_fail("cannot stat '%s': %s", path, strerror(errno)); close(fd); return r; }
  if (!S_ISREG(sb.st_mode)) { close(fd); return gm_fail("'%s' is not a regular file", path); }
  uint64_t fsize = (uint64_t)sb.st_size;
  if (fsize < 8) { close(fd); return gm_fail("%s: file is %llu bytes, too short for the 8-byte header length (offset 0)", path, (unsigned long long)fsize); }
  st->path = strdup(path);
  st->map_len = (size_t)fsize;
  st->map = mmap(NULL, st->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (st->map == MAP_FAILED) { st->map = NULL; int r = gm_fail("cannot mmap '%s': %s", path, strerror(errno)); gm_st_close(st); return r; }
  const unsigned char *p = st->map;
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | p[i];
  if (hlen == 0 || hlen > GM_ST_MAX_HEADER) {
    gm_st_close(st);
    return gm_fail("%s: header length %llu at offset 0 is not in [1, %llu]", path, (unsigned long long)hlen, (unsigned long long)GM_ST_MAX_HEADER);
  }
  if (hlen > fsize - 8) {
    gm_st_close(st);
    return gm_fail("%s: header length %llu at offset 0 runs past the end of the file (%llu bytes): truncated?", path,
                   (unsigned long long)hlen, (unsigned long long)fsize);
  }
  st->data_start = 8 + hlen;
  uint64_t data_len = fsize - st->data_start;
  cJSON *root = cJSON_ParseWithLength((const char *)p + 8, (size_t)hlen);
  if (!root || !cJSON_IsObject(root)) {
    const char *at = cJSON_GetErrorPtr();
    long off = at ? (long)(at - (const char *)p) : 8;
    cJSON_Delete(root);
    gm_st_close(st);
    return gm_fail("%s: header is not a JSON object (parse error near file offset %ld)", path, off);
  }
  int n = 0;
  for (cJSON *it = root->child; it; it = it->next)
    if (strcmp(it->string, "__metadata__") != 0) n++;
  st->tensors = calloc(n ? (size_t)n : 1, sizeof *st->tensors);
  gm_st_tensor **order = calloc(n ? (size_t)n : 1, sizeof *order);
  int rc = 0;
  if (!st->tensors || !order) rc = gm_fail("out of memory reading '%s'", path);
  bool seen_metadata = false;
  for (cJSON *it = root->child; it && rc == 0; it = it->next) {
    if (strcmp(it->string, "__metadata__") == 0) {
      // twice would keep only one of them (found by fuzz_safetensors: the first's format leaked)
      if (seen_metadata) { rc = gm_fail("%s: \"__metadata__\" appears twice in the header", path); break; }
      seen_metadata = true;
      if (!cJSON_IsObject(it)) { rc = gm_fail("%s: \"__metadata__\" is not an object", path); break; }
      for (cJSON *m = it->child; m; m = m->next)
        if (!cJSON_IsString(m)) { rc = gm_fail("%s: __metadata__ key '%s' is not a string", path, m->string); break; }
      const cJSON *f = cJSON_GetObjectItemCaseSensitive(it, "format");
      if (rc == 0 && cJSON_IsString(f)) st->metadata_format = strdup(f->valuestring);
      continue;
    }
    gm_st_tensor *t = &st->tensors[st->n_tensors];
    t->name = strdup(it->string);
    st->n_tensors++;
    rc = parse_entry(path, it, t, data_len, st->data_start);
    if (rc == 0) t->data = p + st->data_start + t->begin;
  }
  cJSON_Delete(root);
  if (rc == 0) {
    for (int i = 0; i < n; i++) order[i] = &st->tensors[i];
    qsort(order, (size_t)n, sizeof *order, cmp_name);
    for (int i = 1; i < n && rc == 0; i++)
      if (strcmp(order[i]->name, order[i - 1]->name) == 0) rc = gm_fail("%s: tensor name '%s' appears twice in the header", path, order[i]->name);
  }
  if (rc == 0) {
    qsort(order, (size_t)n, sizeof *order, cmp_begin);
    const gm_st_tensor *prev = NULL; // the non-empty tensor reaching furthest so far
    for (int i = 0; i < n && rc == 0; i++) {
      const gm_st_tensor *b = order[i];
      if (b->end == b->begin) continue;
      if (prev && b->begin < prev->end)
        rc = gm_fail("%s: tensor '%s' bytes [%llu, %llu) overlap tensor '%s' bytes [%llu, %llu) (file offset %llu)", path, b->name,
                     (unsigned long long)b->begin, (unsigned long long)b->end, prev->name, (unsigned long long)prev->begin,
                     (unsigned long long)prev->end, (unsigned long long)(st->data_start + b->begin));
      if (!prev || b->end > prev->end) prev = b;
    }
  }
  free(order);
  if (rc) { gm_st_close(st); return rc; }
  return 0;
}

const gm_st_tensor *gm_st_find(const gm_safetensors *st, const char *name) {
  for (int i = 0; i < st->n_tensors; i++)
    if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
  return NULL;
}

void gm_st_read_f32(const gm_st_tensor *t, float *out) {
  const unsigned char *p = t->data;
  if (t->dtype == GM_F32) { memcpy(out, p, (size_t)t->numel * 4); return; }
  for (uint64_t i = 0; i < t->numel; i++) {
    uint16_t h = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
    out[i] = t->dtype == GM_F16 ? gm_f16_to_f32(h) : gm_bf16_to_f32(h);
  }
}

int gm_st_write(const char *path, const gm_st_entry *entries, int n) {
  cJSON *root = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
  cJSON_AddStringToObject(meta, "format", "pt");
  uint64_t off = 0;
  for (int i = 0; i < n; i++) {
    const gm_st_entry *e = &entries[i];
    const char *dn = dtype_to_name(e->dtype);
    if (!dn) { cJSON_Delete(root); return gm_fail("%s: tensor '%s': cannot write dtype %s", path, e->name, gm_dtype_name(e->dtype)); }
    uint64_t numel = 1;
    cJSON *t = cJSON_AddObjectToObject(root, e->name);
    cJSON_AddStringToObject(t, "dtype", dn);
    cJSON *shape = cJSON_AddArrayToObject(t, "shape");
    for (int d = 0; d < e->ndim; d++) {
      cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)e->shape[d]));
      numel *= (uint64_t)e->shape[d];
    }
    uint64_t bytes = numel * gm_dtype_size(e->dtype);
    cJSON *offs = cJSON_AddArrayToObject(t, "data_offsets");
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + bytes)));
    off += bytes;
  }
  char *json = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!json) return gm_fail("out of memory writing '%s'", path);
  size_t jl = strlen(json);
  size_t padded = (jl + 7) / 8 * 8;
  gm_outfile o;
  if (gm_outfile_open(&o, path)) { free(json); return -1; }
  FILE *f = o.fp;
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  fwrite(len8, 1, 8, f);
  fwrite(json, 1, jl, f);
  for (size_t i = jl; i < padded; i++) fputc(' ', f);
  free(json);
  for (int i = 0; i < n; i++) {
    uint64_t numel = 1;
    for (int d = 0; d < entries[i].ndim; d++) numel *= (uint64_t)entries[i].shape[d];
    size_t bytes = (size_t)(numel * gm_dtype_size(entries[i].dtype));
    if (bytes && fwrite(entries[i].data, 1, bytes, f) != bytes) {
      gm_outfile_abort(&o);
      return gm_fail("write to '%s' failed at tensor '%s': %s", path, entries[i].name, strerror(errno));
    }
  }
  return gm_outfile_commit(&o);
}
