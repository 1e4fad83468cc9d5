// .npy reader and writer. The header is a Python dict literal with the keys 'descr',
// 'fortran_order' and 'shape'; it is parsed with a small tokenizer, not by searching substrings.
#include "gptmeg/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct { const char *p, *end; } cursor;

static void skip_ws(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static bool eat(cursor *c, char ch) {
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) { c->p++; return true; }
  return false;
}

// A quoted Python string without escapes, into buf.
static bool read_str(cursor *c, char *buf, size_t n) {
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
  char q = *c->p++;
  size_t len = 0;
  while (c->p < c->end && *c->p != q) {
    if (len + 1 >= n || *c->p == '\\') return false;
    buf[len++] = *c->p++;
  }
  if (c->p >= c->end) return false;
  c->p++;
  buf[len] = 0;
  return true;
}

static bool read_word(cursor *c, const char *w) {
  skip_ws(c);
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return false;
  c->p += n;
  return true;
}

static const char *parse_shape(cursor *c, gm_npy *a) {
  if (!eat(c, '(')) return "'shape' is not a tuple";
  a->ndim = 0;
  for (;;) {
    if (eat(c, ')')) return NULL;
    skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return "'shape' holds something other than non-negative integers";
    unsigned long long v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
      if (v > (~0ull - 9) / 10) return "a dimension in 'shape' is too large";
      v = v * 10 + (unsigned)(*c->p++ - '0');
    }
    if (c->p < c->end && *c->p == 'L') c->p++; // Python 2 longs
    if (a->ndim >= GM_NPY_MAX_DIMS) return "more than 8 dimensions";
    a->shape[a->ndim++] = (size_t)v;
    if (!eat(c, ',')) { if (!eat(c, ')')) return "'shape' tuple is malformed"; return NULL; }
  }
}

static int dtype_of_descr(const char *path, const char *d, gm_dtype u16_as, gm_dtype *out) {
  static const struct { const char *descr; gm_dtype dt; } known[] = {
      {"<f8", GM_F64}, {"<f4", GM_F32}, {"<f2", GM_F16}, {"<i4", GM_I32}, {"<i8", GM_I64}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(d, known[i].descr) == 0) { *out = known[i].dt; return 0; }
  if (strcmp(d, "<u2") == 0) { *out = u16_as == GM_F16 ? GM_F16 : GM_BF16; return 0; }
  if (d[0] == '>') return gm_fail("%s: unsupported dtype '%s' (big-endian; only little-endian '<' is read)", path, d);
  return gm_fail("%s: unsupported dtype '%s' (supported: <f8 <f4 <f2 <u2 <i4 <i8)", path, d);
}

static int parse_header(const char *path, const char *hdr, size_t len, gm_dtype u16_as, gm_npy *a) {
  cursor c = {hdr, hdr + len};
  bool have_descr = false, have_order = false, have_shape = false;
  char key[32], descr[32];
  if (!eat(&c, '{')) return gm_fail("%s: .npy header is not a dict (at byte %zu)", path, (size_t)(c.p - hdr));
  while (!eat(&c, '}')) {
    if (!read_str(&c, key, sizeof key) || !eat(&c, ':'))
      return gm_fail("%s: malformed .npy header near byte %zu", path, (size_t)(c.p - hdr));
    if (strcmp(key, "descr") == 0) {
      if (!read_str(&c, descr, sizeof descr)) return gm_fail("%s: 'descr' is not a simple dtype string (structured dtypes are not supported)", path);
      if (dtype_of_descr(path, descr, u16_as, &a->dtype)) return -1;
      memcpy(a->descr, descr, 4); // validated: 3 chars + NUL
      have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (read_word(&c, "True")) return gm_fail("%s: fortran_order arrays are not supported (write it C-contiguous)", path);
      if (!read_word(&c, "False")) return gm_fail("%s: 'fortran_order' is neither True nor False", path);
      have_order = true;
    } else if (strcmp(key, "shape") == 0) {
      const char *why = parse_shape(&c, a);
      if (why) return gm_fail("%s: bad .npy shape: %s", path, why);
      have_shape = true;
    } else {
      return gm_fail("%s: unexpected key '%s' in .npy header", path, key);
    }
    if (!eat(&c, ',')) { if (!eat(&c, '}')) return gm_fail("%s: malformed .npy header near byte %zu", path, (size_t)(c.p - hdr)); break; }
  }
  if (!have_descr || !have_order || !have_shape)
    return gm_fail("%s: .npy header lacks '%s'", path, !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
  return 0;
}

int gm_npy_read(const char *path, gm_dtype u16_as, gm_npy *out) {
  memset(out, 0, sizeof *out);
  gm_npy a;
  memset(&a, 0, sizeof a);
  FILE *f = fopen(path, "rb");
  if (!f) return gm_fail("cannot open '%s': %s", path, strerror(errno));
  int rc = -1;
  char *hdr = NULL;
  unsigned char pre[12];
  struct stat st;
  if (fstat(fileno(f), &st) != 0) { rc = gm_fail("%s: cannot stat: %s", path, strerror(errno)); goto done; }
  if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    rc = gm_fail("%s: not a .npy file (bad magic at byte 0)", path);
    goto done;
  }
  size_t hlen, hstart;
  if (pre[6] == 1) {
    if (fread(pre + 8, 1, 2, f) != 2) { rc = gm_fail("%s: truncated .npy header (file ends at byte %ld)", path, (long)st.st_size); goto done; }
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    hstart = 10;
  } else if (pre[6] == 2 || pre[6] == 3) {
    if (fread(pre + 8, 1, 4, f) != 4) { rc = gm_fail("%s: truncated .npy header (file ends at byte %ld)", path, (long)st.st_size); goto done; }
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    hstart = 12;
  } else {
    rc = gm_fail("%s: unsupported .npy format version %d.%d", path, pre[6], pre[7]);
    goto done;
  }
  if (hlen > ((size_t)1 << 24)) { rc = gm_fail("%s: .npy header length %zu is not sane", path, hlen); goto done; }
  if ((size_t)st.st_size < hstart + hlen) {
    rc = gm_fail("%s: truncated .npy header (%zu bytes announced at byte 8, file has %ld)", path, hlen, (long)st.st_size);
    goto done;
  }
  hdr = malloc(hlen + 1);
  if (!hdr) { rc = gm_fail("out of memory"); goto done; }
  if (fread(hdr, 1, hlen, f) != hlen) { rc = gm_fail("%s: read error in .npy header", path); goto done; }
  hdr[hlen] = 0;
  if (parse_header(path, hdr, hlen, u16_as, &a)) goto done;
  size_t es = gm_dtype_size(a.dtype), count = 1;
  for (int d = 0; d < a.ndim; d++) {
    if (a.shape[d] && count > SIZE_MAX / a.shape[d] / es) { rc = gm_fail("%s: shape is too large", path); goto done; }
    count *= a.shape[d];
  }
  a.count = count;
  size_t want = count * es, have = (size_t)st.st_size - hstart - hlen;
  if (have < want) {
    rc = gm_fail("%s: truncated data: shape needs %zu bytes of %s, file has %zu after the header", path, want, a.descr, have);
    goto done;
  }
  if (have > want) {
    rc = gm_fail("%s: shape/size mismatch: shape needs %zu bytes of %s, file has %zu after the header", path, want, a.descr, have);
    goto done;
  }
  a.data = malloc(want ? want : 1);
  if (!a.data) { rc = gm_fail("%s: out of memory for %zu bytes", path, want); goto done; }
  if (fread(a.data, 1, want, f) != want) { rc = gm_fail("%s: read error in the data", path); goto done; }
  *out = a;
  a.data = NULL;
  rc = 0;
done:
  free(a.data);
  free(hdr);
  fclose(f);
  return rc;
}

void gm_npy_free(gm_npy *a) {
  free(a->data);
  memset(a, 0, sizeof *a);
}

int gm_npy_write(const char *path, gm_dtype dt, const void *data, int ndim, const size_t *shape, bool f16_as_u2) {
  const char *descr;
  switch (dt) {
  case GM_F64: descr = "<f8"; break;
  case GM_F32: descr = "<f4"; break;
  case GM_F16: descr = f16_as_u2 ? "<u2" : "<f2"; break;
  case GM_BF16: descr = "<u2"; break;
  case GM_I32: descr = "<i4"; break;
  case GM_I64: descr = "<i8"; break;
  default: return gm_fail("%s: cannot write dtype %d to .npy", path, (int)dt);
  }
  if (ndim < 0 || ndim > GM_NPY_MAX_DIMS) return gm_fail("%s: cannot write %d dimensions (at most 8)", path, ndim);
  char dict[512];
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  size_t count = 1;
  for (int d = 0; d < ndim; d++) {
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%zu%s", shape[d], ndim == 1 ? "," : d + 1 < ndim ? ", " : "");
    count *= shape[d];
  }
  len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
  // magic(6) + version(2) + hlen(2 or 4) + dict + padding + '\n', total a multiple of 64.
  int v2 = 0;
  size_t pre = 10, total = (pre + (size_t)len + 1 + 63) / 64 * 64;
  if (total - pre > 65535) { v2 = 1; pre = 12; total = (pre + (size_t)len + 1 + 63) / 64 * 64; }
  size_t hlen = total - pre;
  gm_outfile o;
  if (gm_outfile_open(&o, path)) return -1;
  FILE *f = o.fp;
  unsigned char head[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)(v2 ? 2 : 1), 0,
                            (unsigned char)(hlen & 255), (unsigned char)(hlen >> 8 & 255),
                            (unsigned char)(hlen >> 16 & 255), (unsigned char)(hlen >> 24 & 255)};
  fwrite(head, 1, pre, f);
  fwrite(dict, 1, (size_t)len, f);
  for (size_t i = (size_t)len; i + 1 < hlen; i++) fputc(' ', f);
  fputc('\n', f);
  size_t bytes = count * gm_dtype_size(dt);
  if (bytes && fwrite(data, 1, bytes, f) != bytes) {
    int r = gm_fail("write to '%s' failed: %s", path, strerror(errno));
    gm_outfile_abort(&o);
    return r;
  }
  return gm_outfile_commit(&o);
}
