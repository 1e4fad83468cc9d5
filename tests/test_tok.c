// Tokenizer tests: the project's own fixture (tests/fixtures/tok) always; the real GPT-2 files from
// ../shared/data/gpt2-bpe when present. Expected ids come from transformers (gen_tok_goldens.py).
#include "harness.h"

#include "gptmeg/core.h"
#include "gptmeg/inputs.h"
#include "gptmeg/tok.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cJSON *load_json(const char *path) {
  char *s = test_slurp_len(path, NULL);
  cJSON *j = s ? cJSON_Parse(s) : NULL;
  free(s);
  return j;
}

// Encodes text and compares with the JSON array of expected ids.
static void check_ids(gm_tokenizer *tok, const char *text, size_t len, const cJSON *want, const char *what) {
  int32_t *ids;
  size_t n;
  CHECK(gm_tok_encode(tok, text, len, &ids, &n) == 0, "%s: encode failed: %s", what, gm_errmsg());
  size_t wn = (size_t)cJSON_GetArraySize(want), bad = SIZE_MAX;
  for (size_t i = 0; i < n && i < wn && bad == SIZE_MAX; i++)
    if (ids[i] != (int32_t)cJSON_GetArrayItem(want, (int)i)->valuedouble) bad = i;
  CHECK(n == wn && bad == SIZE_MAX, "%s: %zu ids (want %zu), first difference at %zu", what, n, wn, bad);
  free(ids);
}

// decode(encode(s)) == s for random byte strings: uniform bytes (mostly invalid UTF-8) and
// strings glued from fragments (valid multi-byte characters, spaces, stray continuation bytes).
static void check_round_trips(gm_tokenizer *tok, int count, const char *what) {
  static const char *frags[] = {" ", "  ", "\t", "\n", "\r\n", "a", "Z", "7", "'s", "'LL", "é", "你", "😀", "\xcc\x81",
                                "\x80", "\xff", "\xc3", "\xe4\xbd", "\xf0\x9f\x98", "<|endoftext|>", "<|", "!?", "\xed\xa0\x80", "\xc0\xaf"};
  gm_rng r;
  gm_rng_seed(&r, 6);
  char buf[600];
  int fails = 0;
  for (int t = 0; t < count; t++) {
    size_t len = 0;
    if (t % 2 == 0) {
      len = gm_rng_u64(&r) % 300;
      for (size_t i = 0; i < len; i++) buf[i] = (char)(gm_rng_u64(&r) & 0xFF);
    } else {
      size_t k = gm_rng_u64(&r) % 40;
      for (size_t i = 0; i < k; i++) {
        const char *f = frags[gm_rng_u64(&r) % (sizeof frags / sizeof *frags)];
        memcpy(buf + len, f, strlen(f));
        len += strlen(f);
      }
    }
    int32_t *ids = NULL;
    char *back = NULL;
    size_t n = 0, blen = 0;
    bool ok = gm_tok_encode(tok, buf, len, &ids, &n) == 0 && gm_tok_decode(tok, ids, n, &back, &blen) == 0 && blen == len &&
              memcmp(back, buf, len) == 0;
    if (!ok && fails++ < 3) CHECK(ok, "%s: round trip %d (%zu bytes) failed: %s", what, t, len, gm_errmsg());
    free(ids);
    free(back);
  }
  CHECK(fails == 0, "%s: %d of %d round trips failed", what, fails, count);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (f) { fputs(text, f); fclose(f); }
}

// Loading must fail, with a message containing each of the given fragments.
static void expect_load_error(const char *dir, const char *vocab, const char *merges, const char *frag1, const char *frag2) {
  char vp[512], mp[512];
  snprintf(vp, sizeof vp, "%s/vocab.json", dir);
  snprintf(mp, sizeof mp, "%s/merges.txt", dir);
  write_file(vp, vocab);
  write_file(mp, merges);
  gm_tokenizer *tok = NULL;
  int rc = gm_tok_load(dir, &tok);
  CHECK(rc != 0 && tok == NULL, "load of a bad tokenizer (%s) succeeded", frag1);
  if (rc) {
    CHECK(strstr(gm_errmsg(), frag1) != NULL, "message '%s' lacks '%s'", gm_errmsg(), frag1);
    CHECK(!frag2 || strstr(gm_errmsg(), frag2) != NULL, "message '%s' lacks '%s'", gm_errmsg(), frag2);
  }
  gm_tok_free(tok);
}

// A valid 256-byte-token vocab in GPT-2's alphabet plus "extra" entries, as JSON text.
static char *byte_vocab_json(const char *extra) {
  size_t cap = 8192 + strlen(extra);
  char *s = malloc(cap);
  size_t o = (size_t)snprintf(s, cap, "{");
  int next = 256;
  for (int b = 0; b < 256; b++) {
    bool self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    unsigned cp = self ? (unsigned)b : (unsigned)next++;
    char u[8];
    if (cp == '"' || cp == '\\') snprintf(u, sizeof u, "\\%c", (char)cp);
    else if (cp < 0x80) snprintf(u, sizeof u, "%c", (char)cp);
    else snprintf(u, sizeof u, "%c%c", (char)(0xC0 | cp >> 6), (char)(0x80 | (cp & 0x3F)));
    o += (size_t)snprintf(s + o, cap - o, "%s\"%s\": %d", b ? ", " : "", u, b);
  }
  snprintf(s + o, cap - o, "%s}", extra);
  return s;
}

static void test_errors(void) {
  char dir[] = "/tmp/gptmeg_test_tok.XXXXXX";
  if (!mkdtemp(dir)) { CHECK(0, "mkdtemp failed"); return; }
  char *good = byte_vocab_json(", \"ab\": 256, \"abc\": 257");
  const char *merges = "#version: 0.2\na b\nab c\n";
  char vp[512], mp[512];
  snprintf(vp, sizeof vp, "%s/vocab.json", dir);
  snprintf(mp, sizeof mp, "%s/merges.txt", dir);
  write_file(vp, good);
  write_file(mp, merges);
  gm_tokenizer *tok = NULL;
  CHECK(gm_tok_load(dir, &tok) == 0, "hand-made vocab should load: %s", gm_errmsg());
  if (tok) {
    int32_t *ids;
    size_t n;
    CHECK(gm_tok_encode(tok, "xabcab", 6, &ids, &n) == 0 && n == 3 && ids[1] == 257 && ids[2] == 256, "merges by rank: xabcab -> x abc ab");
    free(ids);
    CHECK(gm_tok_eot_id(tok) == -1, "no '<|endoftext|>' in this vocab");
    CHECK(gm_tok_encode(tok, "<|endoftext|>", 13, &ids, &n) == 0 && n == 13, "without the token, '<|endoftext|>' is plain text");
    free(ids);
    gm_tok_free(tok);
  }
  char *dup_id = byte_vocab_json(", \"ab\": 256, \"abc\": 256");
  char *dup_tok = byte_vocab_json(", \"ab\": 256, \"ab\": 257");
  char *bad_id = byte_vocab_json(", \"ab\": -3");
  expect_load_error(dir, "{\"a\": 0,\n \"b\": }", merges, "vocab.json", "line 2");
  expect_load_error(dir, "[1, 2]", merges, "vocab.json", "object");
  expect_load_error(dir, dup_id, merges, "duplicate id 256", NULL);
  expect_load_error(dir, dup_tok, merges, "duplicate token", NULL);
  expect_load_error(dir, bad_id, merges, "vocab.json", "integer");
  // Ids far outside long's range were cast to long before the range test (undefined behaviour,
  // UBSan's float-cast-overflow under clang; fuzz/fuzz_tok_load.c found it).
  static const char *huge_ids[] = {"2.5e88", "-1e300", "9223372036854775808"};
  for (size_t i = 0; i < sizeof huge_ids / sizeof *huge_ids; i++) {
    char extra[64];
    snprintf(extra, sizeof extra, ", \"zz\": %s", huge_ids[i]);
    char *v = byte_vocab_json(extra);
    expect_load_error(dir, v, merges, "vocab.json", "integer");
    free(v);
  }
  expect_load_error(dir, "{\"a\": 0}", merges, "no token for byte", NULL);
  expect_load_error(dir, good, "a b\n", "line 1", "#version");
  expect_load_error(dir, good, "#version: 0.2\na b\nabc\n", "merges.txt: line 3", "two tokens");
  expect_load_error(dir, good, "#version: 0.2\na  b\n", "line 2", "two tokens");
  expect_load_error(dir, good, "#version: 0.2\na b\nab c d\n", "line 3", NULL);
  expect_load_error(dir, good, "#version: 0.2\na b\nabq c\n", "line 3", "'abq' is not in the vocab");
  expect_load_error(dir, good, "#version: 0.2\nb c\n", "line 2", "merged token 'bc' is not in the vocab");
  expect_load_error(dir, good, "#version: 0.2\na b\na b\n", "line 3", "repeats");
  gm_tokenizer *t2 = NULL;
  CHECK(gm_tok_load("/nonexistent/dir", &t2) != 0 && strstr(gm_errmsg(), "/nonexistent/dir/vocab.json"), "missing dir: %s", gm_errmsg());
  free(good);
  free(dup_id);
  free(dup_tok);
  free(bad_id);
  unlink(vp);
  unlink(mp);
  rmdir(dir);
}

static void test_fixture(void) {
  gm_tokenizer *tok = NULL;
  CHECK(gm_tok_load("tests/fixtures/tok", &tok) == 0, "fixture load: %s", gm_errmsg());
  if (!tok) return;
  CHECK(gm_tok_vocab_size(tok) == 557, "fixture vocab size %d", gm_tok_vocab_size(tok));
  int32_t eot = gm_tok_eot_id(tok);
  CHECK(eot == 556, "fixture eot id %d", eot);
  size_t bl;
  const char *b = gm_tok_token_bytes(tok, 0, &bl);
  CHECK(b && bl == 1 && b[0] == '!', "id 0 is the byte '!'");
  CHECK(gm_tok_token_bytes(tok, 557, &bl) == NULL && gm_tok_token_bytes(tok, -1, &bl) == NULL, "ids outside the vocab have no bytes");

  cJSON *g = load_json("tests/golden/tok/fixture.json");
  CHECK(g != NULL, "cannot read tests/golden/tok/fixture.json");
  cJSON *s;
  int k = 0;
  if (g)
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(g, "samples")) {
      const char *text = cJSON_GetObjectItem(s, "text")->valuestring;
      char what[64];
      snprintf(what, sizeof what, "fixture sample %d", k++);
      check_ids(tok, text, strlen(text), cJSON_GetObjectItem(s, "ids"), what);
    }
  cJSON_Delete(g);

  // Segmentation behaviour of our own: '<|endoftext|>' splits the text; invalid bytes are pre-tokens
  // of their own, made of byte tokens, and never merge with their neighbours.
  int32_t *ids, *a, *c;
  size_t n, na, nc;
  CHECK(gm_tok_encode(tok, "x<|endoftext|><|endoftext|>y", 28, &ids, &n) == 0 && n == 4 && ids[1] == eot && ids[2] == eot, "eot twice");
  free(ids);
  gm_tok_encode(tok, " the", 4, &a, &na);
  gm_tok_encode(tok, " an", 3, &c, &nc);
  CHECK(gm_tok_encode(tok, " the\xff\xfe an", 9, &ids, &n) == 0 && n == na + 2 + nc, "invalid bytes: %zu ids", n);
  if (n == na + 2 + nc) {
    size_t l0, l1;
    const char *t0 = gm_tok_token_bytes(tok, ids[na], &l0), *t1 = gm_tok_token_bytes(tok, ids[na + 1], &l1);
    CHECK(memcmp(ids, a, na * 4) == 0 && memcmp(ids + na + 2, c, nc * 4) == 0, "neighbours of invalid bytes encode as alone");
    CHECK(l0 == 1 && l1 == 1 && (unsigned char)t0[0] == 0xFF && (unsigned char)t1[0] == 0xFE, "invalid bytes are byte tokens");
  }
  free(ids);
  free(a);
  free(c);
  CHECK(gm_tok_encode(tok, "", 0, &ids, &n) == 0 && n == 0, "empty text -> no ids");
  free(ids);

  // decode errors name the id and its position
  int32_t bad[3] = {5, 557, 7};
  char *out = NULL;
  size_t ol;
  CHECK(gm_tok_decode(tok, bad, 3, &out, &ol) != 0 && strstr(gm_errmsg(), "557") && strstr(gm_errmsg(), "position 1"), "decode error: %s",
        gm_errmsg());
  bad[1] = -2;
  CHECK(gm_tok_decode(tok, bad, 3, &out, &ol) != 0 && strstr(gm_errmsg(), "-2"), "negative id: %s", gm_errmsg());
  check_round_trips(tok, test_quick() ? 200 : 2000, "fixture");

  // the cache is invisible: a long text encoded twice (cache cold, then warm) gives the same ids
  size_t L = 300000;
  char *big = malloc(L);
  gm_rng r;
  gm_rng_seed(&r, 9);
  for (size_t i = 0; i < L; i++) big[i] = "abcdefghij   \n'.é"[gm_rng_u64(&r) % 17];
  int32_t *i1, *i2;
  size_t n1, n2;
  gm_tok_encode(tok, big, L, &i1, &n1);
  gm_tok_encode(tok, big, L, &i2, &n2);
  CHECK(n1 == n2 && memcmp(i1, i2, n1 * 4) == 0, "cold and warm cache disagree");
  free(i1);
  free(i2);
  free(big);
  gm_tok_free(tok);
}

static void test_gpt2(void) {
  char *dir = test_shared_data("gpt2-bpe");
  char *shakes_path = test_shared_data("tinyshakespeare/input.txt");
  if (!dir || !shakes_path) {
    test_skip("gpt2 tokenizer goldens", "../shared/data/gpt2-bpe or tinyshakespeare not present");
    free(dir);
    free(shakes_path);
    return;
  }
  gm_tokenizer *tok = NULL;
  double t0 = gm_now_s();
  CHECK(gm_tok_load(dir, &tok) == 0, "gpt2 load: %s", gm_errmsg());
  double t_load = gm_now_s() - t0;
  cJSON *g = load_json("tests/golden/tok/gpt2.json");
  CHECK(g != NULL, "cannot read tests/golden/tok/gpt2.json");
  if (tok && g) {
    CHECK(gm_tok_vocab_size(tok) == 50257 && gm_tok_eot_id(tok) == 50256, "gpt2 vocab %d eot %d", gm_tok_vocab_size(tok), gm_tok_eot_id(tok));
    size_t len;
    char *stress = test_slurp_len("tests/golden/tok/stress.txt", &len);
    CHECK(stress != NULL, "cannot read stress.txt");
    if (stress) check_ids(tok, stress, len, cJSON_GetObjectItem(cJSON_GetObjectItem(g, "stress"), "ids"), "gpt2 stress.txt");
    free(stress);

    char *text = test_slurp_len(shakes_path, &len);
    cJSON *gs = cJSON_GetObjectItem(g, "tinyshakespeare");
    int32_t *ids = NULL;
    size_t n = 0;
    t0 = gm_now_s();
    CHECK(text && gm_tok_encode(tok, text, len, &ids, &n) == 0, "encode tinyshakespeare: %s", gm_errmsg());
    double t_enc = gm_now_s() - t0;
    printf("gpt2: load %.3f s, tinyshakespeare %zu bytes -> %zu ids in %.3f s (%.1f MB/s)\n", t_load, len, n, t_enc, len / t_enc / 1e6);
    CHECK(n == (size_t)cJSON_GetObjectItem(gs, "count")->valuedouble, "tinyshakespeare: %zu ids", n);
    char hs[32];
    snprintf(hs, sizeof hs, "%llu", (unsigned long long)gm_hash64(ids, n * sizeof(int32_t)));
    CHECK(strcmp(hs, cJSON_GetObjectItem(gs, "hash64_i32")->valuestring) == 0, "tinyshakespeare id hash %s", hs);
    cJSON *first = cJSON_GetObjectItem(gs, "first");
    int bad = -1;
    for (int i = 0; i < cJSON_GetArraySize(first) && (size_t)i < n && bad < 0; i++)
      if (ids[i] != (int32_t)cJSON_GetArrayItem(first, i)->valuedouble) bad = i;
    CHECK(bad < 0, "tinyshakespeare: first 200 ids differ at %d", bad);
    char *back = NULL;
    size_t bl = 0;
    CHECK(gm_tok_decode(tok, ids, n, &back, &bl) == 0 && bl == len && memcmp(back, text, len) == 0, "tinyshakespeare round trip");
    free(back);
    free(ids);
    free(text);
    check_round_trips(tok, test_quick() ? 200 : 2000, "gpt2");
  }
  cJSON_Delete(g);
  gm_tok_free(tok);
  free(dir);
  free(shakes_path);
}

int main(void) {
  test_errors();
  test_fixture();
  test_gpt2();
  return test_done("test_tok");
}
