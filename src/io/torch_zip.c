// The zip container torch.save writes (PyTorch >= 1.6): read from the end-of-central-directory
// record and the central directory, never from the local headers alone (torch writes them with
// flag 0x0808: sizes only in the data descriptor). Zip64 locator/record and extra fields are
// read; torch files accept stored (method 0) entries only; the NGC Megatron zip
// (megatron_zip.c) reads the same directory with deflated (method 8) entries allowed.
// Entries are pointers into the mapping.
#define _GNU_SOURCE // memrchr
#include "torch_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

void gm_zip_free(gm_zip *z) {
  free(z->e);
  memset(z, 0, sizeof *z);
}

const gm_zip_entry *gm_zip_find(const gm_zip *z, const char *rest) {
  size_t rl = strlen(rest);
  for (int i = 0; i < z->n; i++) {
    const gm_zip_entry *e = &z->e[i];
    if (e->name_len == z->prefix_len + rl && memcmp(e->name, z->prefix, z->prefix_len) == 0 &&
        memcmp(e->name + z->prefix_len, rest, rl) == 0)
      return e;
  }
  return NULL;
}

// Reads the zip64 extra field (id 1) of a central directory entry: the 64-bit values of the
// fields whose 32-bit slot is all ones, in the order usize, csize, local header offset.
static int zip64_extra(const char *path, const unsigned char *x, size_t xl, uint64_t at, uint64_t *usize, uint64_t *csize,
                       uint64_t *loff) {
  size_t i = 0;
  while (i + 4 <= xl) {
    unsigned id = (unsigned)le(x + i, 2);
    size_t n = (size_t)le(x + i + 2, 2);
    if (i + 4 + n > xl) return gm_fail("%s: zip central directory entry at offset %llu: extra field runs past its end", path, (unsigned long long)at);
    if (id == 1) {
      const unsigned char *q = x + i + 4;
      size_t k = 0;
      uint64_t *f[3] = {usize, csize, loff};
      for (int j = 0; j < 3; j++) {
        if (*f[j] != 0xffffffffu) continue;
        if (k + 8 > n) return gm_fail("%s: zip central directory entry at offset %llu: zip64 extra field too short", path, (unsigned long long)at);
        *f[j] = le(q + k, 8);
        k += 8;
      }
      return 0;
    }
    i += 4 + n;
  }
  return 0;
}

int gm_zip_read_entries(gm_zip *z, const char *path, const unsigned char *p, uint64_t len, bool deflate_ok) {
  memset(z, 0, sizeof *z);
  if (len < 22) return gm_fail("%s: %llu bytes, too short for a zip end-of-central-directory record", path, (unsigned long long)len);
  uint64_t eocd = UINT64_MAX;
  uint64_t lo = len > 22 + 65535 ? len - 22 - 65535 : 0;
  // backwards from the last place a record fits, 'P' by 'P' (memrchr: one libc scan, not a
  // comparison per byte; the end record is usually the file's last 22 bytes)
  for (uint64_t hi = len - 22 + 1; hi > lo;) {
    const unsigned char *q = memrchr(p + lo, 0x50, (size_t)(hi - lo));
    if (!q) break;
    uint64_t i = (uint64_t)(q - p);
    if (le(p + i, 4) == 0x06054b50 && i + 22 + le(p + i + 20, 2) == len) { eocd = i; break; }
    hi = i;
  }
  if (eocd == UINT64_MAX) return gm_fail("%s: no zip end-of-central-directory record in the last 64 KiB", path);
  uint64_t n_ent = le(p + eocd + 10, 2), cd_size = le(p + eocd + 12, 4), cd_off = le(p + eocd + 16, 4);
  uint64_t cd_end_limit = eocd;
  if (le(p + eocd + 4, 2) != 0 || le(p + eocd + 6, 2) != 0) {
    if (!(le(p + eocd + 4, 2) == 0xffff || le(p + eocd + 6, 2) == 0xffff))
      return gm_fail("%s: zip end record at offset %llu: multi-disk archives are not read", path, (unsigned long long)eocd);
  }
  if (n_ent == 0xffff || cd_size == 0xffffffffu || cd_off == 0xffffffffu) {
    if (eocd < 20 || le(p + eocd - 20, 4) != 0x07064b50)
      return gm_fail("%s: zip end record at offset %llu asks for zip64 but no zip64 locator precedes it", path, (unsigned long long)eocd);
    uint64_t r = le(p + eocd - 20 + 8, 8);
    if (r > eocd - 20 || eocd - 20 - r < 56 || le(p + r, 4) != 0x06064b50)
      return gm_fail("%s: zip64 locator at offset %llu points to %llu, not to a zip64 end record", path,
                     (unsigned long long)(eocd - 20), (unsigned long long)r);
    n_ent = le(p + r + 32, 8);
    cd_size = le(p + r + 40, 8);
    cd_off = le(p + r + 48, 8);
    cd_end_limit = r;
  }
  if (cd_off > cd_end_limit || cd_size > cd_end_limit - cd_off)
    return gm_fail("%s: zip central directory [%llu, +%llu) runs outside the file (end records at %llu)", path,
                   (unsigned long long)cd_off, (unsigned long long)cd_size, (unsigned long long)cd_end_limit);
  if (n_ent > cd_size / 46)
    return gm_fail("%s: zip end record claims %llu entries in a %llu-byte central directory", path, (unsigned long long)n_ent,
                   (unsigned long long)cd_size);
  z->e = calloc(n_ent ? (size_t)n_ent : 1, sizeof *z->e);
  if (!z->e) return gm_fail("out of memory reading '%s'", path);
  uint64_t at = cd_off, cd_end = cd_off + cd_size;
  for (uint64_t k = 0; k < n_ent; k++) {
    if (cd_end - at < 46 || le(p + at, 4) != 0x02014b50) {
      gm_zip_free(z);
      return gm_fail("%s: zip central directory entry %llu at offset %llu: bad signature or truncated", path, (unsigned long long)k,
                     (unsigned long long)at);
    }
    const unsigned char *c = p + at;
    unsigned flags = (unsigned)le(c + 8, 2), method = (unsigned)le(c + 10, 2);
    uint64_t csize = le(c + 20, 4), usize = le(c + 24, 4), loff = le(c + 42, 4);
    size_t nl = (size_t)le(c + 28, 2), xl = (size_t)le(c + 30, 2), ml = (size_t)le(c + 32, 2);
    if (46 + (uint64_t)nl + xl + ml > cd_end - at) {
      gm_zip_free(z);
      return gm_fail("%s: zip central directory entry %llu at offset %llu: name/extra/comment run past the directory", path,
                     (unsigned long long)k, (unsigned long long)at);
    }
    const char *name = (const char *)c + 46;
    for (size_t i = 0; i < nl; i++)
      if (c[46 + i] < 0x20 || c[46 + i] >= 0x7f) {
        gm_zip_free(z);
        return gm_fail("%s: zip central directory entry %llu at offset %llu: name has a byte 0x%02x", path, (unsigned long long)k,
                       (unsigned long long)at, c[46 + i]);
      }
    if (zip64_extra(path, c + 46 + nl, xl, at, &usize, &csize, &loff)) { gm_zip_free(z); return -1; }
    if (flags & 1) { gm_zip_free(z); return gm_fail("%s: zip entry '%.*s' is encrypted", path, (int)nl, name); }
    if (method != 0 && !(deflate_ok && method == 8)) {
      gm_zip_free(z);
      if (deflate_ok)
        return gm_fail("%s: zip entry '%.*s' uses compression method %u; gptmeg reads stored (0) and deflated (8) entries",
                       path, (int)nl, name, method);
      return gm_fail("%s: zip entry '%.*s' is compressed (method %u); torch.save stores entries, gptmeg reads stored (method 0) only",
                     path, (int)nl, name, method);
    }
    if (method == 0 && csize != usize) {
      gm_zip_free(z);
      return gm_fail("%s: zip entry '%.*s' is stored but its sizes differ (%llu vs %llu)", path, (int)nl, name,
                     (unsigned long long)csize, (unsigned long long)usize);
    }
    if (loff > len || len - loff < 30 || le(p + loff, 4) != 0x04034b50) {
      gm_zip_free(z);
      return gm_fail("%s: zip entry '%.*s': local header offset %llu is outside the file or not a local header", path, (int)nl, name,
                     (unsigned long long)loff);
    }
    uint64_t data = loff + 30 + le(p + loff + 26, 2) + le(p + loff + 28, 2);
    if (data > len || csize > len - data) {
      gm_zip_free(z);
      return gm_fail("%s: zip entry '%.*s': data [%llu, +%llu) runs outside the file (%llu bytes)", path, (int)nl, name,
                     (unsigned long long)data, (unsigned long long)csize, (unsigned long long)len);
    }
    gm_zip_entry *e = &z->e[z->n++];
    e->name = name;
    e->name_len = nl;
    e->data = p + data;
    e->size = usize;
    e->csize = csize;
    e->method = method;
    e->crc = (uint32_t)le(c + 16, 4);
    at += 46 + nl + xl + ml;
  }
  return 0;
}

int gm_zip_read(gm_zip *z, const char *path, const unsigned char *p, uint64_t len) {
  if (gm_zip_read_entries(z, path, p, len, false)) return -1;
  // The archive's folder: the shortest name ending in "data.pkl" (torch: "<archive>/data.pkl").
  const gm_zip_entry *pkl = NULL;
  for (int i = 0; i < z->n; i++) {
    const gm_zip_entry *e = &z->e[i];
    if (e->name_len >= 8 && memcmp(e->name + e->name_len - 8, "data.pkl", 8) == 0 &&
        (e->name_len == 8 || e->name[e->name_len - 9] == '/') && (!pkl || e->name_len < pkl->name_len))
      pkl = e;
  }
  if (!pkl) { gm_zip_free(z); return gm_fail("%s: a zip file without a data.pkl entry: not a torch.save checkpoint", path); }
  z->prefix = pkl->name;
  z->prefix_len = pkl->name_len - 8;
  return 0;
}
