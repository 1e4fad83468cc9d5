#define _GNU_SOURCE
// PyTorch checkpoints (gm_torch_open, gm_ckpt_open_dir): the goldens of
// tools/ref/gen_bin_goldens.py in every format give every tensor bit-identical to the safetensors
// twin and identical logits; zip files written here (zip64, a nested prefix, cuda:0 locations)
// load; and hostile files, built here by hand-written pickles or by editing bytes of a valid
// file, each fail with one line and no crash.
#include "gptmeg/ckpt.h"
#include "gptmeg/model.h"
#include "harness.h"
#include "io/torch_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];
static const char *const cases[] = {"zip", "legacy", "st_shards", "bin_shards"};
static const char *const formats[] = {"pytorch zip", "pytorch legacy", "safetensors (2 shards)", "pytorch zip (2 shards)"};

static const char *path_of(const char *name) {
  static char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return p;
}

static void write_file(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) { CHECK(0, "cannot write %s", path); return; }
  if (n) fwrite(b, 1, n, f);
  fclose(f);
}

// ---- every format against the safetensors twin ----
static void test_goldens(void) {
  gm_ckpt base;
  if (gm_ckpt_open_dir(&base, "tests/golden/model/base")) { CHECK(0, "base: %s", gm_errmsg()); return; }
  CHECK(strcmp(base.format, "safetensors") == 0, "base format '%s'", base.format);
  for (int c = 0; c < 4; c++) {
    char d[256];
    snprintf(d, sizeof d, "tests/golden/checkpoints/%s", cases[c]);
    gm_ckpt ck;
    if (gm_ckpt_open_dir(&ck, d)) { CHECK(0, "%s: %s", cases[c], gm_errmsg()); continue; }
    CHECK(strcmp(ck.format, formats[c]) == 0, "%s: format '%s'", cases[c], ck.format);
    int same = 0;
    for (int i = 0; i < base.n_tensors; i++) {
      const gm_ckpt_tensor *a = &base.tensors[i], *b = gm_ckpt_find(&ck, a->name);
      if (!b) { CHECK(0, "%s: missing %s", cases[c], a->name); continue; }
      bool ok = b->readable && b->dtype == a->dtype && b->ndim == a->ndim && b->numel == a->numel &&
                memcmp(a->shape, b->shape, sizeof a->shape) == 0 && memcmp(a->data, b->data, (size_t)a->numel * 4) == 0;
      CHECK(ok, "%s: tensor %s differs from the safetensors twin", cases[c], a->name);
      same += ok;
    }
    printf("  %-10s %-24s %d/%d tensors bit-identical\n", cases[c], ck.format, same, base.n_tensors);
    if (c == 0 || c == 1) {
      const gm_ckpt_tensor *h = gm_ckpt_find(&ck, "lm_head.weight"), *w = gm_ckpt_find(&ck, "transformer.wte.weight");
      CHECK(h && w && h->data == w->data, "%s: tied lm_head does not share wte's storage", cases[c]);
      const gm_ckpt_tensor *t = gm_ckpt_find(&ck, "transformer.h.0.attn.c_proj.weight");
      CHECK(t && t->owned, "%s: the transposed view was not copied out", cases[c]);
      const gm_ckpt_tensor *lw = gm_ckpt_find(&ck, "transformer.h.1.ln_1.weight"), *lb = gm_ckpt_find(&ck, "transformer.h.1.ln_1.bias");
      CHECK(lw && lb && (const char *)lb->data == (const char *)lw->data + 32 * 4, "%s: offset views not in place", cases[c]);
      if (c == 0 && w) { // zero copy, 64-byte aligned records
        const char *m = ck.maps[0];
        CHECK((const char *)w->data > m && (const char *)w->data < m + ck.map_lens[0], "zip: wte not in the mapping");
        CHECK(((const char *)w->data - m) % 64 == 0, "zip: record not 64-byte aligned");
      }
    }
    gm_ckpt_close(&ck);
  }
  gm_ckpt_close(&base);
}

static void test_logits(void) {
  int32_t tok[16];
  for (int i = 0; i < 16; i++) tok[i] = (i * 37 + 5) % 400;
  gm_profile p;
  gm_profile_get("hf", GM_F32, &p);
  float ref[16 * 400], out[16 * 400];
  gm_gpt2 m;
  if (gm_gpt2_load(&m, "tests/golden/model/base")) { CHECK(0, "base: %s", gm_errmsg()); return; }
  CHECK(gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = tok, .B = 1, .T = 16, .logits = ref, .threads = 1}) == 0, "run");
  gm_gpt2_free(&m);
  for (int c = 0; c < 4; c++) {
    char d[256];
    snprintf(d, sizeof d, "tests/golden/checkpoints/%s", cases[c]);
    if (gm_gpt2_load(&m, d)) { CHECK(0, "%s: %s", cases[c], gm_errmsg()); continue; }
    CHECK(strcmp(m.file_format, formats[c]) == 0, "%s: file_format '%s'", cases[c], m.file_format);
    CHECK(m.tied, "%s: not tied", cases[c]);
    CHECK(gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = tok, .B = 1, .T = 16, .logits = out, .threads = 1}) == 0, "run");
    CHECK(memcmp(ref, out, sizeof ref) == 0, "%s: logits differ from safetensors'", cases[c]);
    gm_gpt2_free(&m);
  }
}

// ---- a small stored-zip writer (optionally zip64) and pickle builder ----
typedef struct { unsigned char *b; size_t n, cap; } buf;
static void put(buf *s, const void *p, size_t n) {
  if (s->n + n > s->cap) { s->cap = (s->n + n) * 2 + 64; s->b = realloc(s->b, s->cap); }
  memcpy(s->b + s->n, p, n);
  s->n += n;
}
static void putle(buf *s, uint64_t v, int n) { for (int i = 0; i < n; i++) { unsigned char c = (unsigned char)(v >> (8 * i)); put(s, &c, 1); } }
static void puts_(buf *s, const char *str) { put(s, str, strlen(str)); }

typedef struct { const char *name; const void *data; size_t n; } zent;

static void write_zip(const char *path, const zent *e, int n, bool zip64, unsigned method) {
  buf z = {0};
  uint64_t off[16];
  for (int i = 0; i < n; i++) {
    size_t x = (64 - (z.n + 30 + strlen(e[i].name)) % 64) % 64; // extra field padding: data 64-aligned, as torch
    if (x && x < 4) x += 64;
    off[i] = z.n;
    putle(&z, 0x04034b50, 4); putle(&z, 20, 2); putle(&z, 0x0808, 2); putle(&z, method, 2); putle(&z, 0, 4);
    putle(&z, 0, 4); putle(&z, 0, 4); putle(&z, 0, 4); putle(&z, strlen(e[i].name), 2); putle(&z, x, 2);
    puts_(&z, e[i].name);
    if (x) { putle(&z, 0x4647, 2); putle(&z, x - 4, 2); for (size_t k = 4; k < x; k++) put(&z, "Z", 1); }
    put(&z, e[i].data, e[i].n);
  }
  uint64_t cd = z.n;
  for (int i = 0; i < n; i++) {
    putle(&z, 0x02014b50, 4); putle(&z, 45, 2); putle(&z, 45, 2); putle(&z, 0x0808, 2); putle(&z, method, 2);
    putle(&z, 0, 4); putle(&z, 0, 4);
    putle(&z, zip64 ? 0xffffffffu : e[i].n, 4); putle(&z, zip64 ? 0xffffffffu : e[i].n, 4);
    putle(&z, strlen(e[i].name), 2); putle(&z, zip64 ? 28 : 0, 2); putle(&z, 0, 2); putle(&z, 0, 2); putle(&z, 0, 2);
    putle(&z, 0, 4); putle(&z, zip64 ? 0xffffffffu : off[i], 4);
    puts_(&z, e[i].name);
    if (zip64) { putle(&z, 1, 2); putle(&z, 24, 2); putle(&z, e[i].n, 8); putle(&z, e[i].n, 8); putle(&z, off[i], 8); }
  }
  uint64_t cds = z.n - cd;
  if (zip64) {
    uint64_t r = z.n;
    putle(&z, 0x06064b50, 4); putle(&z, 44, 8); putle(&z, 45, 2); putle(&z, 45, 2); putle(&z, 0, 4); putle(&z, 0, 4);
    putle(&z, n, 8); putle(&z, n, 8); putle(&z, cds, 8); putle(&z, cd, 8);
    putle(&z, 0x07064b50, 4); putle(&z, 0, 4); putle(&z, r, 8); putle(&z, 1, 4);
  }
  putle(&z, 0x06054b50, 4); putle(&z, 0, 2); putle(&z, 0, 2);
  putle(&z, zip64 ? 0xffff : n, 2); putle(&z, zip64 ? 0xffff : n, 2);
  putle(&z, zip64 ? 0xffffffffu : cds, 4); putle(&z, zip64 ? 0xffffffffu : cd, 4); putle(&z, 0, 2);
  write_file(path, z.b, z.n);
  free(z.b);
}

static void pk_str(buf *s, const char *str) { puts_(s, "X"); putle(s, strlen(str), 4); puts_(s, str); }
static void pk_int(buf *s, int64_t v) { puts_(s, "\x8a\x08"); putle(s, (uint64_t)v, 8); }

// {name: _rebuild_tensor_v2(storage('0', FloatStorage, loc, numel), offset, size, stride, False, OrderedDict())}
static void pk_state_dict(buf *s, const char *name, const char *loc, int64_t numel, int64_t offset, int nd,
                          const int64_t *size, const int64_t *stride) {
  puts_(s, "\x80\x02}(");
  pk_str(s, name);
  puts_(s, "ctorch._utils\n_rebuild_tensor_v2\n((");
  pk_str(s, "storage");
  puts_(s, "ctorch\nFloatStorage\n");
  pk_str(s, "0");
  pk_str(s, loc);
  pk_int(s, numel);
  puts_(s, "tQ");
  pk_int(s, offset);
  puts_(s, "(");
  for (int d = 0; d < nd; d++) pk_int(s, size[d]);
  puts_(s, "t(");
  for (int d = 0; d < nd; d++) pk_int(s, stride[d]);
  puts_(s, "t\x89" "ccollections\nOrderedDict\n)RtRu.");
}

static const float vals[6] = {1, 2, 3, 4, 5, 6};

static int open_zip_pickle(const char *file, const buf *pkl, const char *prefix, bool zip64, const char *byteorder) {
  char n0[64], n1[64], n2[64];
  snprintf(n0, sizeof n0, "%sdata.pkl", prefix);
  snprintf(n1, sizeof n1, "%sbyteorder", prefix);
  snprintf(n2, sizeof n2, "%sdata/0", prefix);
  zent e[3] = {{n0, pkl->b, pkl->n}, {n1, byteorder, strlen(byteorder)}, {n2, vals, sizeof vals}};
  write_zip(path_of(file), e, 3, zip64, 0);
  gm_ckpt c;
  int rc = gm_torch_open(&c, path_of(file));
  if (rc == 0) gm_ckpt_close(&c);
  return rc;
}

// Fails with one line containing frag (and the file's path).
static void expect_fail(const char *what, int rc, const char *frag) {
  CHECK(rc != 0, "%s: accepted", what);
  if (rc == 0) return;
  const char *m = gm_errmsg();
  CHECK(strstr(m, frag) != NULL, "%s: message lacks '%s': %s", what, frag, m);
  CHECK(strchr(m, '\n') == NULL, "%s: more than one line: %s", what, m);
  CHECK(strstr(m, dir) != NULL || strstr(m, "tests/golden") != NULL, "%s: message does not name the file: %s", what, m);
  printf("  refused %-28s %s\n", what, m);
}

static void test_written_zips(void) {
  int64_t sz[2] = {2, 3}, st[2] = {3, 1}, tr[2] = {1, 2};
  buf p = {0};
  pk_state_dict(&p, "w", "cuda:0", 6, 0, 2, sz, st);
  CHECK(open_zip_pickle("a.bin", &p, "archive/", false, "little") == 0, "plain zip: %s", gm_errmsg());
  CHECK(open_zip_pickle("b.bin", &p, "model/sub/", true, "little") == 0, "zip64 + nested prefix: %s", gm_errmsg());
  gm_ckpt c;
  if (gm_torch_open(&c, path_of("b.bin")) == 0) {
    const gm_ckpt_tensor *t = gm_ckpt_find(&c, "w");
    CHECK(t && t->ndim == 2 && t->numel == 6 && memcmp(t->data, vals, sizeof vals) == 0, "zip64 tensor values");
    gm_ckpt_close(&c);
  }
  p.n = 0; // transposed view [3, 2] with strides (1, 3), offset 0 -> copied out
  int64_t sz2[2] = {3, 2}, st2[2] = {1, 3};
  (void)tr;
  pk_state_dict(&p, "t", "cpu", 6, 0, 2, sz2, st2);
  CHECK(open_zip_pickle("c.bin", &p, "archive/", false, "little") == 0, "strided: %s", gm_errmsg());
  if (gm_torch_open(&c, path_of("c.bin")) == 0) {
    const gm_ckpt_tensor *t = gm_ckpt_find(&c, "t");
    const float want[6] = {1, 4, 2, 5, 3, 6};
    CHECK(t && t->owned && memcmp(t->data, want, sizeof want) == 0, "transposed view values");
    gm_ckpt_close(&c);
  }
  p.n = 0;
  pk_state_dict(&p, "w", "cpu", 6, 0, 2, sz, st);
  expect_fail("big byteorder", open_zip_pickle("d.bin", &p, "archive/", false, "big"), "big-endian");
  // hostile views
  p.n = 0;
  int64_t huge[1] = {(int64_t)1 << 62}, one[1] = {1};
  pk_state_dict(&p, "huge", "cpu", 6, 0, 1, huge, one);
  expect_fail("2^62-element size", open_zip_pickle("e.bin", &p, "archive/", false, "little"), "'huge'");
  p.n = 0;
  int64_t five[1] = {5};
  pk_state_dict(&p, "short", "cpu", 6, 2, 1, five, one);
  expect_fail("storage smaller than view", open_zip_pickle("f.bin", &p, "archive/", false, "little"), "'short': view");
  p.n = 0;
  pk_state_dict(&p, "big", "cpu", 7, 0, 1, five, one);
  expect_fail("storage past its record", open_zip_pickle("g.bin", &p, "archive/", false, "little"), "record holds");
  // hand-written hostile pickles
  #define BAD(w, p, f) {w, p, f, sizeof(p) - 1}
  static const struct { const char *what, *pkl, *frag; size_t n; } bad[] = {
      BAD("posix.system global", "\x80\x02" "cposix\nsystem\n(X\x02\x00\x00\x00lstR.", "GLOBAL posix.system"),
      BAD("builtins.eval global", "\x80\x02" "c__builtin__\neval\n.", "GLOBAL builtins.eval"),
      BAD("REDUCE on storage type", "\x80\x02" "ctorch\nFloatStorage\n)R.", "REDUCE on a storage type"),
      BAD("REDUCE on a str", "\x80\x02X\x01\x00\x00\x00" "a)R.", "REDUCE on a str"),
      BAD("memo index out of range", "\x80\x02h\x05.", "memo index 5"),
      BAD("LONG_BINPUT huge index", "\x80\x02Nr\xff\xff\xff\x7f.", "memo index"),
      BAD("MARK underflow", "\x80\x02Nt.", "MARK underflow"),
      BAD("stack underflow", "\x80\x02s.", "underflow"),
      BAD("unknown opcode", "\x80\x02" "cos\nsystem\n.", "GLOBAL os.system"),
      BAD("INST opcode", "\x80\x02i__main__\nX\n.", "opcode 'i'"),
      BAD("truncated", "\x80\x02X\xff\x00\x00\x00ab", "truncated"),
      BAD("no STOP", "\x80\x02N", "without STOP"),
      BAD("persid not storage", "\x80\x02X\x01\x00\x00\x00xQ.", "BINPERSID"),
      BAD("allowed but unread", "\x80\x02" "ctorch\ndevice\n.", "not read by gptmeg"),
      BAD("not a dict", "\x80\x02]." , "not a dict"),
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    buf q = {0};
    put(&q, bad[i].pkl, bad[i].n);
    expect_fail(bad[i].what, open_zip_pickle("h.bin", &q, "archive/", false, "little"), bad[i].frag);
    free(q.b);
  }
  // deep nesting: tuples of tuples, and MARKs
  buf q = {0};
  puts_(&q, "\x80\x02N");
  for (int i = 0; i < 80; i++) puts_(&q, "\x85");
  puts_(&q, ".");
  expect_fail("deep nesting (tuples)", open_zip_pickle("i.bin", &q, "archive/", false, "little"), "nesting deeper");
  q.n = 0;
  puts_(&q, "\x80\x02");
  for (int i = 0; i < 80; i++) puts_(&q, "(");
  puts_(&q, "N.");
  expect_fail("deep nesting (MARKs)", open_zip_pickle("j.bin", &q, "archive/", false, "little"), "MARK nested deeper");
  q.n = 0; // a list holding itself, appended repeatedly
  put(&q, "\x80\x02]q\x00", 5);
  for (int i = 0; i < 80; i++) put(&q, "h\x00" "a", 3);
  puts_(&q, ".");
  expect_fail("self-nested list", open_zip_pickle("k.bin", &q, "archive/", false, "little"), "nesting deeper");
  free(q.b);
  free(p.b);
}

// Edits of the golden zip and legacy files.
static void test_edited_goldens(void) {
  size_t n;
  unsigned char *z = (unsigned char *)test_slurp_len("tests/golden/checkpoints/zip/pytorch_model.bin", &n);
  if (!z) { CHECK(0, "cannot read the zip golden"); return; }
  size_t cd = 0;
  for (size_t i = n - 4; i-- > 0;)
    if (z[i] == 0x50 && z[i + 1] == 0x4b && z[i + 2] == 1 && z[i + 3] == 2) cd = i; // first central entry (scan down)
  CHECK(cd > 0, "no central directory in the golden");
  unsigned char *e = malloc(n);
  gm_ckpt c;
  memcpy(e, z, n);
  e[cd + 10] = 8; // method deflate
  write_file(path_of("comp.bin"), e, n);
  expect_fail("compressed entry", gm_torch_open(&c, path_of("comp.bin")), "compressed (method 8)");
  memcpy(e, z, n);
  e[cd + 42] = 0xf0; e[cd + 43] = 0xff; e[cd + 44] = 0xff; e[cd + 45] = 0x7f; // local header offset
  write_file(path_of("outside.bin"), e, n);
  expect_fail("zip entry outside the file", gm_torch_open(&c, path_of("outside.bin")), "outside the file");
  memcpy(e, z, n);
  for (int k = 0; k < 4; k++) e[cd + 20 + k] = e[cd + 24 + k] = k == 3 ? 0x7f : 0xff; // stored size 2^31 - 1
  write_file(path_of("size.bin"), e, n);
  expect_fail("zip entry size past the end", gm_torch_open(&c, path_of("size.bin")), "runs outside the file");
  write_file(path_of("trunc.bin"), z, n / 2);
  expect_fail("truncated zip", gm_torch_open(&c, path_of("trunc.bin")), "end-of-central-directory");
  free(z);
  z = (unsigned char *)test_slurp_len("tests/golden/checkpoints/legacy/pytorch_model.bin", &n);
  if (!z) { CHECK(0, "cannot read the legacy golden"); free(e); return; }
  e = realloc(e, n);
  memcpy(e, z, n);
  unsigned char *le = memmem(e, n, "little_endian", 13);
  int at = -1; // NEWTRUE right after the key (past a BINPUT)
  for (int k = 13; le && k < 16 && at < 0; k++) if (le[k] == 0x88) at = k;
  CHECK(at >= 0, "legacy golden: little_endian True not found");
  if (at >= 0) le[at] = 0x89;
  write_file(path_of("legacy_big.bin"), e, n);
  expect_fail("legacy big-endian", gm_torch_open(&c, path_of("legacy_big.bin")), "big-endian");
  memcpy(e, z, n);
  e[5] ^= 1; // magic number
  write_file(path_of("legacy_magic.bin"), e, n);
  expect_fail("legacy magic", gm_torch_open(&c, path_of("legacy_magic.bin")), "magic number");
  write_file(path_of("legacy_trunc.bin"), z, n - 100);
  expect_fail("legacy truncated", gm_torch_open(&c, path_of("legacy_trunc.bin")), "past the end of the file");
  free(z);
  free(e);
}

// Directory precedence and index validation.
static void test_dirs(void) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s/both %s/bad && cp tests/golden/checkpoints/zip/* %s/both/ && cp tests/golden/model/base/model.safetensors %s/both/ && "
           "cp tests/golden/checkpoints/st_shards/* %s/bad/",
           dir, dir, dir, dir, dir);
  CHECK(system(cmd) == 0, "setup");
  gm_ckpt c;
  CHECK(gm_ckpt_open_dir(&c, path_of("both")) == 0 && strcmp(c.format, "safetensors") == 0, "safetensors first: %s", c.format);
  gm_ckpt_close(&c);
  write_file(path_of("bad/model.safetensors.index.json"), "{\"weight_map\": {\"x\": \"../../etc/passwd\"}}", 41);
  expect_fail("index path escape", gm_ckpt_open_dir(&c, path_of("bad")), "not a file name inside");
  const char *j = "{\"weight_map\": {\"transformer.wte.weight\": \"model-00001-of-00002.safetensors\"}}";
  write_file(path_of("bad/model.safetensors.index.json"), j, strlen(j));
  expect_fail("index wrong shard", gm_ckpt_open_dir(&c, path_of("bad")), "has no such tensor");
  expect_fail("empty dir", gm_ckpt_open_dir(&c, path_of("nothing")), "no checkpoint");
}

// The pickle VM straight on bytes: an empty tuple (MARK TUPLE) as the very first value, while the
// VM's stack is not yet allocated. It computed NULL + 0 (undefined; fuzz/fuzz_pickle.c found it
// under clang's UBSan).
static void test_pickle_empty_stack(void) {
  static const unsigned char mark_tuple[] = {0x80, 0x02, '(', 't', '.'};
  gm_pkvm vm;
  memset(&vm, 0, sizeof vm);
  size_t end = 0;
  gm_pk *v = NULL;
  int rc = gm_pk_run(&vm, "mark_tuple.pkl", mark_tuple, sizeof mark_tuple, 0, 0, false, &end, &v);
  CHECK(rc == 0 && v && v->kind == PK_TUPLE && v->n == 0 && end == sizeof mark_tuple,
        "PROTO MARK TUPLE STOP: an empty tuple (%s)", rc ? gm_errmsg() : "");
  gm_pkvm_free(&vm);
  // TUPLE with no MARK on an empty stack fails with a message, never reads the stack.
  static const unsigned char bare_tuple[] = {0x80, 0x02, 't', '.'};
  memset(&vm, 0, sizeof vm);
  rc = gm_pk_run(&vm, "bare_tuple.pkl", bare_tuple, sizeof bare_tuple, 0, 0, false, &end, &v);
  CHECK(rc != 0 && strstr(gm_errmsg(), "MARK") != NULL, "TUPLE without MARK: %s", gm_errmsg());
  gm_pkvm_free(&vm);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/gptmeg_test_torch.%ld", (long)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  if (system(cmd) != 0) return 1;
  test_goldens();
  test_logits();
  test_written_zips();
  test_edited_goldens();
  test_dirs();
  test_pickle_empty_stack();
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return test_done("test_torchfile");
}
