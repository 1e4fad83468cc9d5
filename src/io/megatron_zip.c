// NVIDIA NGC's Megatron-LM zip (megatron_lm_345m_v0.0.zip): one Megatron rank file inside an
// ordinary zip, the way transformers' convert_megatron_gpt2_checkpoint.py (4.47.1) reads it
// (zipfile, then torch.load of release/mp_rank_00/model_optim_rng.pt). The central directory is
// torch_zip.c's (zip64, every offset bounds-checked); the entry is read in place when stored and
// inflated with zlib when deflated, into a buffer no larger than its declared size, which may be
// at most GM_ZIP_MAX_RATIO times its compressed size; the CRC-32 and the size are checked.
#include "torch_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zlib.h>

static bool ends_with(const char *s, size_t n, const char *suf) {
  size_t k = strlen(suf);
  return n >= k && memcmp(s + n - k, suf, k) == 0;
}

bool gm_megatron_zip_detect(const char *path) {
  struct stat sb;
  size_t n = strlen(path);
  if (!ends_with(path, n, ".zip") || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return false;
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  unsigned char m[4] = {0};
  size_t got = fread(m, 1, 4, f);
  fclose(f);
  return got == 4 && memcmp(m, "PK\x03\x04", 4) == 0;
}

// The rank entry: the converter's exact name first, else the one entry ending in
// "mp_rank_00/model_optim_rng.pt" or ".../model_rng.pt" (at the top or under any folder).
static const gm_zip_entry *find_rank(const gm_zip *z, const char *path, bool *release) {
  static const char *const exact = "release/mp_rank_00/model_optim_rng.pt";
  static const char *const tails[2] = {"mp_rank_00/model_optim_rng.pt", "mp_rank_00/model_rng.pt"};
  const gm_zip_entry *hit = NULL;
  const char *tail = tails[0];
  int n_hits = 0;
  for (int i = 0; i < z->n && !hit; i++)
    if (z->e[i].name_len == strlen(exact) && memcmp(z->e[i].name, exact, z->e[i].name_len) == 0) { hit = &z->e[i]; n_hits = 1; }
  for (int pass = 0; pass < 2 && !n_hits; pass++) {
    tail = tails[pass];
    size_t tl = strlen(tail);
    for (int i = 0; i < z->n; i++) {
      const gm_zip_entry *e = &z->e[i];
      if (ends_with(e->name, e->name_len, tail) && (e->name_len == tl || e->name[e->name_len - tl - 1] == '/')) {
        if (!hit) hit = e;
        n_hits++;
      }
    }
  }
  if (n_hits > 1) {
    gm_fail("%s: %d entries end in %s (the first '%.*s'); a zip of one checkpoint holds one", path, n_hits, tail, (int)hit->name_len,
            hit->name);
    return NULL;
  }
  if (!hit) {
    gm_fail("%s: no zip entry release/mp_rank_00/model_optim_rng.pt, nor one named */mp_rank_00/model_optim_rng.pt or "
            "*/mp_rank_00/model_rng.pt (%d entries)",
            path, z->n);
    return NULL;
  }
  // Another rank folder beside mp_rank_00 (mp_rank_01, mp_rank_00_000, ...): a tensor- or
  // pipeline-parallel checkpoint, which this reader does not merge.
  size_t dir_len = hit->name_len - strlen(tail);
  for (int i = 0; i < z->n; i++) {
    const gm_zip_entry *e = &z->e[i];
    if (e->name_len > dir_len + 8 && memcmp(e->name, hit->name, dir_len) == 0 && memcmp(e->name + dir_len, "mp_rank_", 8) == 0 &&
        !(e->name_len > dir_len + 11 && memcmp(e->name + dir_len + 8, "00/", 3) == 0)) {
      gm_fail("%s: zip entry '%.*s' is another rank: tensor- and pipeline-parallel checkpoints are read from a directory, not a zip", path,
              (int)e->name_len, e->name);
      return NULL;
    }
  }
  *release = dir_len >= 8 && memcmp(hit->name + dir_len - 8, "release/", 8) == 0;
  return hit;
}

static uint32_t crc_of(const unsigned char *p, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t o = 0; o < n;) {
    uInt k = n - o > (1u << 30) ? (1u << 30) : (uInt)(n - o);
    crc = crc32(crc, p + o, k);
    o += k;
  }
  return (uint32_t)crc;
}

// Inflates a raw deflate stream src[0, csize) into exactly usize bytes of an anonymous mapping.
static int inflate_entry(const char *path, const gm_zip_entry *e, void **out, size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  char nm[300];
  snprintf(nm, sizeof nm, "%.*s", (int)(e->name_len < 280 ? e->name_len : 280), e->name);
  if (e->size == 0) return gm_fail("%s: zip entry '%s' declares 0 bytes", path, nm);
  if (e->csize == 0 || e->size / e->csize >= GM_ZIP_MAX_RATIO)
    return gm_fail("%s: zip entry '%s' declares %llu bytes from %llu compressed (more than %d:1): refused as a zip bomb", path, nm,
                   (unsigned long long)e->size, (unsigned long long)e->csize, GM_ZIP_MAX_RATIO);
  if (e->size > (uint64_t)SIZE_MAX / 2) return gm_fail("%s: zip entry '%s' declares %llu bytes", path, nm, (unsigned long long)e->size);
  size_t n = (size_t)e->size;
  void *buf = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) return gm_fail("%s: out of memory inflating zip entry '%s' (%zu bytes)", path, nm, n);
  z_stream s;
  memset(&s, 0, sizeof s);
  if (inflateInit2(&s, -MAX_WBITS) != Z_OK) { munmap(buf, n); return gm_fail("%s: zlib inflateInit2 failed", path); }
  const unsigned char *src = e->data;
  uint64_t in_left = e->csize;
  unsigned char *dst = buf, spill[64];
  size_t out_pos = 0;
  bool in_spill = false, over = false;
  int zr;
  for (;;) {
    if (s.avail_in == 0 && in_left) {
      uInt k = in_left > (1u << 30) ? (1u << 30) : (uInt)in_left;
      s.next_in = (unsigned char *)(uintptr_t)src;
      s.avail_in = k;
      src += k;
      in_left -= k;
    }
    if (s.avail_out == 0) {
      if (out_pos < n) {
        size_t k = n - out_pos > (1u << 30) ? (1u << 30) : n - out_pos;
        s.next_out = dst + out_pos;
        s.avail_out = (uInt)k;
        out_pos += k;
      } else { // the declared size is filled: one more byte means the size lies
        s.next_out = spill;
        s.avail_out = sizeof spill;
        in_spill = true;
      }
    }
    zr = inflate(&s, Z_NO_FLUSH);
    if (in_spill && s.avail_out < sizeof spill) { over = true; break; }
    if (zr != Z_OK) break; // Z_STREAM_END; Z_BUF_ERROR: the input ran out; Z_DATA_ERROR ...
  }
  size_t out_done = in_spill ? n : (size_t)s.total_out;
  inflateEnd(&s);
  int rc = 0;
  if (over) rc = gm_fail("%s: zip entry '%s' inflates to more than its declared %zu bytes", path, nm, n);
  else if (zr == Z_STREAM_END && out_done != n)
    rc = gm_fail("%s: zip entry '%s' inflates to %zu bytes, not its declared %zu", path, nm, out_done, n);
  else if (zr != Z_STREAM_END)
    rc = gm_fail("%s: zip entry '%s': the deflate stream is corrupt or truncated after %zu of %zu bytes (zlib %d)", path, nm, out_done,
                 n, zr);
  if (!rc) {
    uint32_t crc = crc_of(dst, n);
    if (crc != e->crc)
      rc = gm_fail("%s: zip entry '%s': CRC-32 %08x of the inflated bytes is not the declared %08x", path, nm, (unsigned)crc,
                   (unsigned)e->crc);
  }
  if (rc) { munmap(buf, n); return rc; }
  mprotect(buf, n, PROT_READ);
  *out = buf;
  *out_len = n;
  return 0;
}

int gm_megatron_zip_rank(gm_ckpt *c, const char *zip_path, gm_meg_meta *meta, bool *release, char *entry, size_t entry_cap) {
  memset(c, 0, sizeof *c);
  *release = false;
  void *map;
  size_t len;
  if (gm_ckpt_map_file(zip_path, &map, &len)) return -1;
  gm_zip z;
  if (gm_zip_read_entries(&z, zip_path, map, len, true)) { if (map) munmap(map, len); return -1; }
  const gm_zip_entry *e = find_rank(&z, zip_path, release);
  if (!e) { gm_zip_free(&z); munmap(map, len); return -1; }
  char name[4400];
  snprintf(name, sizeof name, "%s:%.*s", zip_path, (int)(e->name_len < 300 ? e->name_len : 300), e->name);
  if (entry) snprintf(entry, entry_cap, "%.*s", (int)e->name_len, e->name);
  int rc;
  if (e->method == 0) { // stored: the torch file is a range of the zip's mapping
    size_t off = (size_t)(e->data - (const unsigned char *)map), n = (size_t)e->size;
    uint32_t crc = crc_of((const unsigned char *)map + off, n), want = e->crc;
    gm_zip_free(&z);
    if (crc != want) { // as zipfile checks it: the bytes are not the ones the directory describes
      munmap(map, len);
      return gm_fail("%s: stored zip entry: CRC-32 %08x of its bytes is not the declared %08x", name, (unsigned)crc, (unsigned)want);
    }
    rc = gm_torch_open_range(c, name, map, len, off, n, meta);
  } else {
    void *buf;
    size_t n;
    rc = inflate_entry(zip_path, e, &buf, &n);
    gm_zip_free(&z);
    munmap(map, len);
    if (!rc) rc = gm_torch_open_range(c, name, buf, n, 0, n, meta);
  }
  return rc;
}
