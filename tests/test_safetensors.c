// safetensors reader/writer: round trip, and every validation error on files written here.
#include "gptmeg/safetensors.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

static const char *path_of(const char *name) {
  static char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return p;
}

// Writes a raw safetensors file: u64 length of header, header, then data_len bytes (0x11...).
static void write_raw(const char *path, const char *header, size_t data_len) {
  FILE *f = fopen(path, "wb");
  uint64_t n = strlen(header);
  unsigned char l8[8];
  for (int i = 0; i < 8; i++) l8[i] = (unsigned char)(n >> (8 * i));
  fwrite(l8, 1, 8, f);
  fwrite(header, 1, n, f);
  for (size_t i = 0; i < data_len; i++) fputc(0x11, f);
  fclose(f);
}

// Opens path expecting failure whose message contains every fragment (NULL-terminated list).
static void expect_error(const char *what, const char *path, const char *frag1, const char *frag2) {
  gm_safetensors st;
  int rc = gm_st_open(&st, path);
  CHECK(rc != 0, "%s: expected an error", what);
  if (rc == 0) { gm_st_close(&st); return; }
  const char *msg = gm_errmsg();
  CHECK(strstr(msg, path) != NULL, "%s: message does not name the file: %s", what, msg);
  CHECK(!frag1 || strstr(msg, frag1), "%s: message lacks '%s': %s", what, frag1, msg);
  CHECK(!frag2 || strstr(msg, frag2), "%s: message lacks '%s': %s", what, frag2, msg);
}

static void test_roundtrip(void) {
  float a[6] = {1, -2, 3.5f, 0, 1e-3f, -7};
  uint16_t h[4] = {0x3c00, 0xc000, 0x0001, 0x7bff}; // f16 1, -2, min subnormal, 65504
  uint16_t b[3] = {0x3f80, 0x4049, 0xff80};         // bf16 1, ~3.14, -inf
  gm_st_entry e[4] = {
      {"a", GM_F32, 2, {2, 3}, a}, {"half", GM_F16, 1, {4}, h}, {"bf", GM_BF16, 1, {3}, b}, {"empty", GM_F32, 2, {0, 5}, a}};
  const char *p = path_of("rt.safetensors");
  CHECK(gm_st_write(p, e, 4) == 0, "write: %s", gm_errmsg());
  gm_safetensors st;
  CHECK(gm_st_open(&st, p) == 0, "open: %s", gm_errmsg());
  CHECK(st.n_tensors == 4, "n_tensors %d", st.n_tensors);
  CHECK(st.metadata_format && strcmp(st.metadata_format, "pt") == 0, "metadata format");
  CHECK(st.data_start % 8 == 0, "header padded to 8: data_start %llu", (unsigned long long)st.data_start);
  const gm_st_tensor *t = gm_st_find(&st, "a");
  CHECK(t && t->dtype == GM_F32 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3 && t->numel == 6, "a meta");
  float buf[6];
  if (t) { gm_st_read_f32(t, buf); CHECK(memcmp(buf, a, sizeof a) == 0, "a data"); }
  t = gm_st_find(&st, "half");
  if (t) {
    gm_st_read_f32(t, buf);
    CHECK(buf[0] == 1.0f && buf[1] == -2.0f && buf[2] == 0x1p-24f && buf[3] == 65504.0f, "f16 widened: %g %g %g %g", buf[0], buf[1], buf[2], buf[3]);
  }
  t = gm_st_find(&st, "bf");
  if (t) { gm_st_read_f32(t, buf); CHECK(buf[0] == 1.0f && buf[1] == 3.140625f && buf[2] < -3e38f, "bf16 widened"); }
  t = gm_st_find(&st, "empty");
  CHECK(t && t->numel == 0 && t->begin == t->end, "empty tensor");
  CHECK(gm_st_find(&st, "nope") == NULL, "find missing");
  gm_st_close(&st);
  // the python reference format: metadata allowed, offsets relative to the data
  write_raw(path_of("meta.safetensors"), "{\"__metadata__\":{\"x\":\"y\"},\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4);
  CHECK(gm_st_open(&st, path_of("meta.safetensors")) == 0, "metadata without format: %s", gm_errmsg());
  if (st.map) { CHECK(st.metadata_format == NULL, "no format"); gm_st_close(&st); }
}

static void test_errors(void) {
  char *p;
  // header length larger than the file
  p = strdup(path_of("trunc.safetensors"));
  write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16);
  CHECK(truncate(p, 40) == 0, "truncate");
  expect_error("truncated header", p, "header length", "offset 0");
  // data truncated: tensor runs past the end
  write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 10);
  expect_error("truncated data", p, "'w'", "past the end");
  free(p);
  p = strdup(path_of("bad.safetensors"));
  FILE *f = fopen(p, "wb");
  fwrite("\x01\x02", 1, 2, f);
  fclose(f);
  expect_error("tiny file", p, "too short", NULL);
  f = fopen(p, "wb");
  fwrite("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 1, 10, f);
  fclose(f);
  expect_error("huge header length", p, "header length", NULL);
  write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]", 16);
  expect_error("bad json", p, "JSON", NULL);
  write_raw(p, "{\"w\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16);
  expect_error("bad dtype", p, "'w'", "I64");
  // two __metadata__ objects (fuzz_safetensors, 2026-12-05: the first one's format string leaked)
  write_raw(p, "{\"__metadata__\":{\"format\":\"pt\"},\"__metadata__\":{\"format\":\"pt\"},"
               "\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16);
  expect_error("__metadata__ twice", p, "__metadata__", "twice");
  write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", 16);
  expect_error("size mismatch", p, "'w'", "file offset");
  write_raw(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16);
  expect_error("overlap", p, "overlap", "'a'");
  write_raw(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8);
  expect_error("duplicate", p, "'a'", "twice");
  write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4);
  expect_error("negative dim", p, "'w'", "shape");
  write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8);
  expect_error("end before begin", p, "'w'", "end before begin");
  write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 8);
  expect_error("no offsets", p, "'w'", "data_offsets");
  write_raw(p, "[1,2]", 0);
  expect_error("not an object", p, "JSON object", NULL);
  write_raw(p, "{\"__metadata__\":{\"k\":3}}", 0);
  expect_error("metadata non-string", p, "__metadata__", NULL);
  expect_error("missing file", path_of("does_not_exist"), "cannot open", NULL);
  free(p);
  // the writer refuses non-storage dtypes and never leaves a file behind
  int32_t i4[2] = {1, 2};
  gm_st_entry e = {"i", GM_I32, 1, {2}, i4};
  CHECK(gm_st_write(path_of("w.safetensors"), &e, 1) != 0, "writer accepted I32");
  CHECK(access(path_of("w.safetensors"), F_OK) != 0, "writer left a file behind");
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/gptmeg_test_st.%ld", (long)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  if (system(cmd) != 0) return 1;
  test_roundtrip();
  test_errors();
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return test_done("test_safetensors");
}
