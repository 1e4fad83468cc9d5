// Mutated input files: every loader (safetensors, config.json, .npy, vocab.json + merges.txt,
// PyTorch .bin in the zip and the legacy format, a sharded .bin index)
// either loads the file or fails with one line that names the file, and never crashes or reads
// outside it (this test also runs under ASan/UBSan). Each starts from a valid file written here
// (the tokenizer from tests/fixtures/tok; a small random GPT-2 saved as config.json +
// model.safetensors) and applies seeded mutations: bit flips, bytes set to
// JSON/format punctuation, truncation, deleted and repeated ranges, digit runs replaced by huge or
// negative numbers, and for safetensors the 8-byte header length set to edge values. What loads is
// then used: every tensor read, every array element touched, text encoded and decoded, the
// model run forward.
#include "gptmeg/ckpt.h"
#include "gptmeg/config.h"
#include "gptmeg/model.h"
#include "gptmeg/npy.h"
#include "gptmeg/safetensors.h"
#include "gptmeg/tok.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void) { // xorshift64*
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t rng_below(size_t n) { return n ? (size_t)(rng_next() % n) : 0; }

static const char *path_of(const char *name) {
  static char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return p;
}

typedef struct {
  unsigned char *b;
  size_t len, cap;
} bytes;

static void bytes_reserve(bytes *s, size_t cap) {
  if (cap <= s->cap) return;
  s->b = realloc(s->b, cap);
  s->cap = cap;
}

static void bytes_set(bytes *s, const unsigned char *src, size_t len) {
  bytes_reserve(s, len + 64);
  memcpy(s->b, src, len);
  s->len = len;
}

// Replaces [at, at + del) with ins (ins_len bytes).
static void bytes_splice(bytes *s, size_t at, size_t del, const unsigned char *ins, size_t ins_len) {
  bytes_reserve(s, s->len - del + ins_len + 64);
  memmove(s->b + at + ins_len, s->b + at + del, s->len - at - del);
  if (ins_len) memcpy(s->b + at, ins, ins_len);
  s->len = s->len - del + ins_len;
}

static void replace_digit_run(bytes *s) {
  static const char *nums[] = {"99999999999999999999", "-1", "0", "18446744073709551616", "-9223372036854775809",
                               "1e308", "4294967296", "2147483648", "-0", "1.5"};
  size_t start = rng_below(s->len);
  size_t i = start;
  while (i < s->len && !(s->b[i] >= '0' && s->b[i] <= '9')) i++;
  if (i == s->len) return;
  size_t j = i;
  while (j < s->len && s->b[j] >= '0' && s->b[j] <= '9') j++;
  const char *n = nums[rng_below(sizeof nums / sizeof *nums)];
  bytes_splice(s, i, j - i, (const unsigned char *)n, strlen(n));
}

// One seeded mutation of s; header_len_field: s starts with a safetensors u64 header length.
static void mutate(bytes *s, bool header_len_field) {
  static const unsigned char punct[] = {0, 0xff, '"', '{', '}', '[', ']', ',', ':', '\n', ' ', '9', '-', 0x80, '\\', '.'};
  if (s->len == 0) return;
  switch (rng_below(header_len_field ? 7 : 6)) {
  case 0: // flip 1-4 bits
    for (int k = 1 + (int)rng_below(4); k > 0; k--) s->b[rng_below(s->len)] ^= (unsigned char)(1u << rng_below(8));
    break;
  case 1: // 1-3 bytes set to punctuation
    for (int k = 1 + (int)rng_below(3); k > 0; k--) s->b[rng_below(s->len)] = punct[rng_below(sizeof punct)];
    break;
  case 2: // truncate
    s->len = rng_below(s->len);
    break;
  case 3: { // delete a range
    size_t at = rng_below(s->len), n = 1 + rng_below(s->len - at < 64 ? s->len - at : 64);
    bytes_splice(s, at, n, NULL, 0);
    break;
  }
  case 4: { // repeat a range in place
    size_t at = rng_below(s->len), n = 1 + rng_below(s->len - at < 64 ? s->len - at : 64);
    unsigned char tmp[64];
    memcpy(tmp, s->b + at, n);
    bytes_splice(s, at, 0, tmp, n);
    break;
  }
  case 5:
    replace_digit_run(s);
    break;
  default: { // the header length field
    uint64_t hl = 0;
    for (int i = 0; i < 8 && i < (int)s->len; i++) hl |= (uint64_t)s->b[i] << (8 * i);
    uint64_t edge[] = {0, 1, hl - 1, hl + 1, hl + 8, (uint64_t)s->len, (uint64_t)s->len - 8, UINT64_MAX,
                       (uint64_t)1 << 63, GM_ST_MAX_HEADER + 1};
    uint64_t v = edge[rng_below(sizeof edge / sizeof *edge)];
    for (int i = 0; i < 8 && i < (int)s->len; i++) s->b[i] = (unsigned char)(v >> (8 * i));
    break;
  }
  }
}

static void write_bytes(const char *path, const bytes *s) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  if (s->len) fwrite(s->b, 1, s->len, f);
  fclose(f);
}

// A failure must be one non-empty line of printable characters naming the file (or, for the
// tokenizer, one of its two files: a token cut from the vocab fails the merges line using it).
static void check_failure(const char *what, int iter, const char *path, const char *other_path) {
  const char *msg = gm_errmsg();
  CHECK(msg && msg[0], "%s mutation %d: failed without a message", what, iter);
  if (!msg) return;
  bool control = false;
  for (const unsigned char *c = (const unsigned char *)msg; *c; c++) control |= *c < 0x20 || *c == 0x7f;
  CHECK(!control, "%s mutation %d: message has a control character: %s", what, iter, msg);
  CHECK(strstr(msg, path) != NULL || (other_path && strstr(msg, other_path) != NULL),
        "%s mutation %d: message does not name the file: %s", what, iter, msg);
}

static volatile float sink;

// Loads path and uses what it gets (0), or fails (non-zero, gm_errmsg set). it: the mutation.
typedef int (*load_and_use_fn)(const char *path, int it);

// iters mutations of the file at seed_path, each written to path and given to load; prints how
// many loaded. header_len_field: the file starts with a safetensors header length.
static void fuzz_file(const char *what, const char *seed_path, const char *path, bool header_len_field, int iters,
                      load_and_use_fn load) {
  size_t seed_len = 0;
  unsigned char *seed = (unsigned char *)test_slurp_len(seed_path, &seed_len);
  CHECK(seed != NULL, "%s: no seed file %s", what, seed_path);
  if (!seed) return;
  bytes s = {0};
  int loaded = 0;
  for (int it = 0; it < iters; it++) {
    bytes_set(&s, seed, seed_len);
    for (int k = 1 + (int)rng_below(3); k > 0; k--) mutate(&s, header_len_field);
    write_bytes(path, &s);
    if (load(path, it) == 0) loaded++;
    else check_failure(what, it, path, NULL);
  }
  printf("%s: %d mutated files, %d loaded\n", what, iters, loaded);
  free(s.b);
  free(seed);
}

// Every tensor read back in f32.
static int load_safetensors(const char *path, int it) {
  gm_safetensors st;
  if (gm_st_open(&st, path) != 0) return -1;
  for (int t = 0; t < st.n_tensors; t++) {
    const gm_st_tensor *tt = &st.tensors[t];
    CHECK(st.data_start + tt->end <= st.map_len, "mutation %d: tensor %s ends past the file", it, tt->name);
    float *out = malloc((tt->numel ? tt->numel : 1) * sizeof(float));
    if (!out) continue;
    gm_st_read_f32(tt, out);
    for (uint64_t j = 0; j < tt->numel; j++) sink += out[j];
    free(out);
  }
  gm_st_close(&st);
  return 0;
}

// A config that loads has a shape that validates.
static int load_config(const char *path, int it) {
  gm_gpt2_config got;
  if (gm_config_load(path, &got) != 0) return -1;
  CHECK(got.n_embd > 0 && got.n_head > 0 && got.n_embd % got.n_head == 0 && got.n_layer > 0 && got.vocab_size > 0 &&
            got.n_positions > 0 && got.n_inner > 0,
        "config mutation %d loaded a shape that does not validate", it);
  return 0;
}

// Every byte of the array touched; the count is the shape's product.
static int load_npy(const char *path, int it) {
  gm_npy arr;
  if (gm_npy_read(path, GM_BF16, &arr) != 0) return -1;
  size_t count = 1;
  for (int d = 0; d < arr.ndim; d++) count *= arr.shape[d];
  CHECK(count == arr.count, "npy mutation %d: count %zu, shape product %zu", it, arr.count, count);
  const unsigned char *p = arr.data;
  size_t nbytes = arr.count * gm_dtype_size(arr.dtype);
  unsigned acc = 0;
  for (size_t j = 0; j < nbytes; j++) acc += p[j];
  sink += (float)acc;
  gm_npy_free(&arr);
  return 0;
}

static void fuzz_safetensors(int iters) {
  float a[12];
  uint16_t h[5] = {0x3c00, 0xc000, 0x0001, 0x7bff, 0x7c00}, b16[3] = {0x3f80, 0x4049, 0xff80};
  for (int i = 0; i < 12; i++) a[i] = (float)i - 5.5f;
  gm_st_entry e[4] = {{"wte.weight", GM_F32, 2, {3, 4}, a},
                      {"h.0.ln_1.bias", GM_F16, 1, {5}, h},
                      {"h.0.attn.c_attn.weight", GM_BF16, 1, {3}, b16},
                      {"empty", GM_F32, 2, {0, 4}, a}};
  char seed_path[512];
  snprintf(seed_path, sizeof seed_path, "%s", path_of("seed.safetensors"));
  CHECK(gm_st_write(seed_path, e, 4) == 0, "writing the seed file: %s", gm_errmsg());
  fuzz_file("safetensors", seed_path, path_of("m.safetensors"), true, iters, load_safetensors);
}

static void fuzz_config(int iters) {
  gm_gpt2_config c;
  gm_config_tiny(&c);
  char seed_path[512];
  snprintf(seed_path, sizeof seed_path, "%s", path_of("seed_config.json"));
  CHECK(gm_config_write(seed_path, &c) == 0, "writing the seed config: %s", gm_errmsg());
  fuzz_file("config.json", seed_path, path_of("config.json"), false, iters, load_config);
}

static void fuzz_npy(int iters) {
  float a[2 * 3 * 4];
  for (int i = 0; i < 24; i++) a[i] = (float)i * 0.25f;
  size_t shape[3] = {2, 3, 4};
  char seed_path[512];
  snprintf(seed_path, sizeof seed_path, "%s", path_of("seed.npy"));
  CHECK(gm_npy_write(seed_path, GM_F32, a, 3, shape, false) == 0, "writing the seed npy: %s", gm_errmsg());
  fuzz_file("npy", seed_path, path_of("m.npy"), false, iters, load_npy);
}

static void fuzz_tokenizer(int iters) {
  size_t vlen = 0, mlen = 0;
  unsigned char *vocab = (unsigned char *)test_slurp_len("tests/fixtures/tok/vocab.json", &vlen);
  unsigned char *merges = (unsigned char *)test_slurp_len("tests/fixtures/tok/merges.txt", &mlen);
  CHECK(vocab && merges, "tests/fixtures/tok missing");
  if (!vocab || !merges) {
    free(vocab);
    free(merges);
    return;
  }
  bytes v = {0}, m = {0};
  char vpath[512], mpath[512];
  snprintf(vpath, sizeof vpath, "%s", path_of("vocab.json"));
  snprintf(mpath, sizeof mpath, "%s", path_of("merges.txt"));
  const char *text = "Hello world, it's 2026!\n  The quick brown fox; caf\xc3\xa9 \xf0\x9f\x98\x80 tabs\tand 123456";
  int loaded = 0;
  for (int it = 0; it < iters; it++) {
    bytes_set(&v, vocab, vlen);
    bytes_set(&m, merges, mlen);
    bytes *target = rng_below(2) == 0 ? &v : &m;
    for (int k = 1 + (int)rng_below(3); k > 0; k--) mutate(target, false);
    write_bytes(vpath, &v);
    write_bytes(mpath, &m);
    gm_tokenizer *tok = NULL;
    if (gm_tok_load_files(vpath, mpath, &tok) != 0) {
      check_failure("tokenizer", it, vpath, mpath);
      continue;
    }
    loaded++;
    int32_t *ids = NULL;
    size_t n = 0;
    if (gm_tok_encode(tok, text, strlen(text), &ids, &n) == 0) {
      for (size_t j = 0; j < n; j++)
        CHECK(ids[j] >= 0 && ids[j] < gm_tok_vocab_size(tok), "tokenizer mutation %d: id %d out of range", it, ids[j]);
      char *back = NULL;
      size_t blen = 0;
      if (gm_tok_decode(tok, ids, n, &back, &blen) == 0) free(back);
      free(ids);
    }
    gm_tok_free(tok);
  }
  printf("tokenizer: %d mutated file pairs, %d loaded\n", iters, loaded);
  free(v.b);
  free(m.b);
  free(vocab);
  free(merges);
}

// A GPT-2 of 1 layer, n_embd 8, vocab 64 saved to a directory; one of its two files mutated.
static void fuzz_model(int iters) {
  gm_gpt2_config c;
  gm_config_tiny(&c);
  c.vocab_size = 64;
  c.n_positions = 16;
  c.n_embd = 8;
  c.n_head = 2;
  c.n_layer = 1;
  c.n_inner = 0;
  c.n_inner_null = true;
  gm_gpt2 m;
  char seed_dir[512], mdir[512], cpath[600], spath[600];
  snprintf(seed_dir, sizeof seed_dir, "%s", path_of("seed_model"));
  snprintf(mdir, sizeof mdir, "%s", path_of("model"));
  CHECK(gm_config_validate(&c, "fuzz") == 0 && gm_gpt2_init_random(&m, &c, 7) == 0 && gm_gpt2_save(&m, seed_dir) == 0,
        "writing the seed model: %s", gm_errmsg());
  gm_gpt2_free(&m);
  char cmd[1300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", mdir);
  if (system(cmd) != 0) return;
  size_t clen = 0, slen = 0;
  snprintf(cpath, sizeof cpath, "%s/config.json", seed_dir);
  snprintf(spath, sizeof spath, "%s/model.safetensors", seed_dir);
  unsigned char *cfg = (unsigned char *)test_slurp_len(cpath, &clen), *st = (unsigned char *)test_slurp_len(spath, &slen);
  snprintf(cpath, sizeof cpath, "%s/config.json", mdir);
  snprintf(spath, sizeof spath, "%s/model.safetensors", mdir);
  gm_profile prof;
  CHECK(gm_profile_get("hf", GM_F32, &prof) == 0, "profile hf: %s", gm_errmsg());
  bytes cb = {0}, sb = {0};
  int loaded = 0;
  for (int it = 0; cfg && st && it < iters; it++) {
    bytes_set(&cb, cfg, clen);
    bytes_set(&sb, st, slen);
    bool in_st = rng_below(2) == 0;
    for (int k = 1 + (int)rng_below(3); k > 0; k--) mutate(in_st ? &sb : &cb, in_st);
    write_bytes(cpath, &cb);
    write_bytes(spath, &sb);
    if (gm_gpt2_load(&m, mdir) != 0) {
      check_failure("model", it, mdir, NULL);
      continue;
    }
    loaded++;
    int32_t tokens[4] = {1, 5, 9, 63};
    int T = m.cfg.n_positions < 4 ? m.cfg.n_positions : 4;
    float *logits = malloc((size_t)T * (size_t)m.cfg.vocab_size * sizeof(float));
    for (int t = 0; t < T; t++) tokens[t] %= m.cfg.vocab_size;
    if (logits && gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &prof, .tokens = tokens, .B = 1, .T = T, .logits = logits, .threads = 1}) != 0) check_failure("model forward", it, "", NULL);
    free(logits);
    gm_gpt2_free(&m);
  }
  printf("model: %d mutated checkpoints, %d loaded\n", iters, loaded);
  free(cb.b);
  free(sb.b);
  free(cfg);
  free(st);
}

// Every tensor of a PyTorch checkpoint (or a directory) read back: readable ones in f32, the
// bytes of the others touched.
static int use_ckpt(gm_ckpt *c) {
  for (int t = 0; t < c->n_tensors; t++) {
    const gm_ckpt_tensor *tt = &c->tensors[t];
    if (tt->readable) {
      float *out = malloc((tt->numel ? tt->numel : 1) * sizeof(float));
      if (!out) continue;
      gm_ckpt_read_f32(tt, out);
      for (uint64_t j = 0; j < tt->numel; j++) sink += out[j];
      free(out);
    } else {
      const unsigned char *p = tt->data;
      for (uint64_t j = 0; j < tt->numel; j++) sink += p[j];
    }
  }
  gm_ckpt_close(c);
  return 0;
}

static int load_torch(const char *path, int it) {
  (void)it;
  gm_ckpt c;
  if (gm_torch_open(&c, path) != 0) return -1;
  return use_ckpt(&c);
}

// NGC's Megatron zip (gm_megatron_open on a .zip path), the merged model read back.
static int load_megatron_zip(const char *path, int it) {
  gm_ckpt c;
  gm_gpt2_config cfg;
  gm_megatron_info info;
  if (gm_megatron_open(&c, &cfg, &info, path, it & 1) != 0) return -1;
  return use_ckpt(&c);
}

// Mutations land anywhere, or (half the time) inside the pickle / zip directory windows where
// most of the format's structure is: the first 4 KiB and the last 3 KiB of the file.
static void fuzz_torch(const char *what, const char *seed_path, const char *name, int iters, load_and_use_fn load) {
  size_t seed_len = 0;
  unsigned char *seed = (unsigned char *)test_slurp_len(seed_path, &seed_len);
  CHECK(seed != NULL, "%s: no seed file %s", what, seed_path);
  if (!seed) return;
  char path[600];
  snprintf(path, sizeof path, "%s", path_of(name));
  bytes s = {0}, w = {0};
  int loaded = 0;
  for (int it = 0; it < iters; it++) {
    bytes_set(&s, seed, seed_len);
    int mode = (int)rng_below(4);
    size_t at = mode == 1 ? 0 : mode == 2 && seed_len > 3072 ? seed_len - 3072 : 0;
    size_t n = mode == 1 ? 4096 : mode == 2 ? 3072 : seed_len;
    if (mode == 3 || at + n > seed_len) { at = 0; n = seed_len; }
    bytes_set(&w, s.b + at, n);
    for (int k = 1 + (int)rng_below(3); k > 0; k--) mutate(&w, false);
    bytes_splice(&s, at, n, w.b, w.len);
    write_bytes(path, &s);
    if (load(path, it) == 0) loaded++;
    else check_failure(what, it, path, NULL);
  }
  printf("%s: %d mutated files, %d loaded\n", what, iters, loaded);
  free(s.b);
  free(w.b);
  free(seed);
}

// The 2-shard .bin directory with its index mutated.
static void fuzz_index(int iters) {
  char d[600], cmd[1400], ip[700];
  snprintf(d, sizeof d, "%s", path_of("shards"));
  snprintf(cmd, sizeof cmd, "mkdir -p %s && cp tests/golden/checkpoints/bin_shards/* %s/", d, d);
  if (system(cmd) != 0) { CHECK(0, "copying the shards"); return; }
  size_t len = 0;
  unsigned char *seed = (unsigned char *)test_slurp_len("tests/golden/checkpoints/bin_shards/pytorch_model.bin.index.json", &len);
  CHECK(seed != NULL, "no index seed");
  if (!seed) return;
  snprintf(ip, sizeof ip, "%s/pytorch_model.bin.index.json", d);
  bytes s = {0};
  int loaded = 0;
  gm_ckpt c0;
  CHECK(gm_ckpt_open_dir(&c0, d) == 0 && c0.n_tensors == 28, "the unmutated shard directory: %s", gm_errmsg());
  if (c0.n_tensors) use_ckpt(&c0);
  for (int it = 0; it < iters; it++) {
    bytes_set(&s, seed, len);
    for (int k = 1 + (int)rng_below(3); k > 0; k--) mutate(&s, false);
    write_bytes(ip, &s);
    gm_ckpt c;
    if (gm_ckpt_open_dir(&c, d) == 0) { loaded++; use_ckpt(&c); }
    else check_failure("bin index", it, ip, d);
  }
  printf("bin index: %d mutated files, %d loaded\n", iters, loaded);
  free(s.b);
  free(seed);
}

// A Megatron checkpoint directory (Megatron-LM or Megatron-DeepSpeed) copied from a golden, one of
// its files mutated at a time (the tracker, a rank file or a layer file, chosen at random), read by
// gm_megatron_open and the merged model read back; the file is restored after each try.
static void fuzz_megatron_dir(const char *what, const char *golden, const char *name, const char *const *files, int n_files,
                              int iters) {
  char d[600], cmd[4000];
  snprintf(d, sizeof d, "%s", path_of(name));
  snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s && cp -r %s/. %s/ && rm -rf %s/ref %s/ref_reshaping", d, d, golden, d, d, d);
  if (system(cmd) != 0) { CHECK(0, "%s: copying %s", what, golden); return; }
  gm_ckpt c;
  gm_gpt2_config cfg;
  gm_megatron_info info;
  CHECK(gm_megatron_open(&c, &cfg, &info, d, false) == 0, "%s: the unmutated copy: %s", what, gm_errmsg());
  if (c.n_tensors) use_ckpt(&c);
  bytes s = {0};
  int loaded = 0;
  for (int it = 0; it < iters; it++) {
    const char *f = files[rng_below((size_t)n_files)];
    char src[1200], dst[1200];
    snprintf(src, sizeof src, "%s/%s", golden, f);
    snprintf(dst, sizeof dst, "%s/%s", d, f);
    size_t len = 0;
    unsigned char *seed = (unsigned char *)test_slurp_len(src, &len);
    if (!seed) { CHECK(0, "%s: no %s", what, src); break; }
    bytes_set(&s, seed, len);
    for (int k = 1 + (int)rng_below(3); k > 0; k--) mutate(&s, false);
    write_bytes(dst, &s);
    if (gm_megatron_open(&c, &cfg, &info, d, it & 1) == 0) { loaded++; use_ckpt(&c); }
    else check_failure(what, it, dst, d);
    bytes_set(&s, seed, len);
    write_bytes(dst, &s);
    free(seed);
  }
  printf("%s: %d mutated files, %d loaded\n", what, iters, loaded);
  free(s.b);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/gptmeg_test_fuzz.%ld", (long)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  if (system(cmd) != 0) return 1;
  int iters = test_quick() ? 300 : 1500;
  fuzz_safetensors(iters);
  fuzz_config(iters);
  fuzz_npy(iters);
  fuzz_tokenizer(test_quick() ? 150 : 600);
  fuzz_model(test_quick() ? 150 : 600);
  fuzz_torch("pytorch zip", "tests/golden/checkpoints/zip/pytorch_model.bin", "m_zip.bin", test_quick() ? 200 : 800, load_torch);
  fuzz_torch("pytorch legacy", "tests/golden/checkpoints/legacy/pytorch_model.bin", "m_legacy.bin", test_quick() ? 200 : 800, load_torch);
  fuzz_torch("megatron zip (stored)", "tests/golden/megatron_zip/stored.zip", "m_ngc_s.zip", test_quick() ? 100 : 400, load_megatron_zip);
  fuzz_torch("megatron zip (deflated)", "tests/golden/megatron_zip/deflated.zip", "m_ngc_d.zip", test_quick() ? 100 : 400,
             load_megatron_zip);
  fuzz_index(test_quick() ? 60 : 200);
  static const char *const lm_files[] = {"latest_checkpointed_iteration.txt", "iter_0000010/mp_rank_00/model_optim_rng.pt"};
  fuzz_megatron_dir("megatron-lm directory", "tests/golden/megatron/v2_tp1", "meg_lm", lm_files, 2, test_quick() ? 100 : 400);
  static const char *const ds_files[] = {"latest", "global_step10/mp_rank_00_model_states.pt",
                                         "global_step10/layer_01-model_00-model_states.pt",
                                         "global_step10/layer_02-model_00-model_states.pt",
                                         "global_step10/layer_03-model_00-model_states.pt",
                                         "global_step10/layer_04-model_00-model_states.pt"};
  fuzz_megatron_dir("megatron-deepspeed directory", "tests/golden/megatron/ds_tp1_pp1", "meg_ds", ds_files, 6,
                    test_quick() ? 100 : 400);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return test_done("test_fuzz_inputs");
}
