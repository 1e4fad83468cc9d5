// Sampler (greedy ties, temperature, top-k, top-p frequencies, seeds) and KV-cache generation
// (each greedy step equals the argmax of a full forward; stop reasons; thread independence).
#include "gptmeg/model.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Draws n tokens from logits [V] with params; counts[V] gets the histogram.
static void draw(const float *logits, int V, gm_sample_params sp, int n, int *counts) {
  gm_sampler s;
  memset(counts, 0, (size_t)V * sizeof(int));
  if (gm_sampler_init(&s, &sp, V)) { CHECK(0, "sampler init: %s", gm_errmsg()); return; }
  for (int i = 0; i < n; i++) {
    int32_t t = -1;
    if (gm_sampler_next(&s, logits, &t) || t < 0 || t >= V) { CHECK(0, "draw: %s", gm_errmsg()); break; }
    counts[t]++;
  }
  gm_sampler_free(&s);
}

// |observed frequency - p| within 5 standard deviations of a binomial proportion.
static bool freq_ok(int count, int n, double p) {
  double sd = sqrt(p * (1 - p) / n);
  return fabs((double)count / n - p) <= 5 * sd + 1e-12;
}

static void test_sampler(void) {
  const int V = 5, N = 40000;
  // p = 0.5, 0.3, 0.2, 0, 0 (the last two -inf)
  float lg[5] = {logf(0.5f), logf(0.3f), logf(0.2f), -INFINITY, -INFINITY};
  int c[8];
  draw(lg, V, (gm_sample_params){1.0, 0, 1.0, 1}, N, c);
  CHECK(freq_ok(c[0], N, 0.5) && freq_ok(c[1], N, 0.3) && freq_ok(c[2], N, 0.2) && c[3] == 0 && c[4] == 0,
        "T=1 counts %d %d %d %d %d", c[0], c[1], c[2], c[3], c[4]);
  // temperature 0.5 squares the probabilities: .25 .09 .04 -> /.38
  draw(lg, V, (gm_sample_params){0.5, 0, 1.0, 2}, N, c);
  CHECK(freq_ok(c[0], N, .25 / .38) && freq_ok(c[1], N, .09 / .38) && freq_ok(c[2], N, .04 / .38), "T=0.5 counts %d %d %d",
        c[0], c[1], c[2]);
  // top-k 2 renormalises over the two best: 5/8, 3/8
  draw(lg, V, (gm_sample_params){1.0, 2, 1.0, 3}, N, c);
  CHECK(freq_ok(c[0], N, 0.625) && freq_ok(c[1], N, 0.375) && c[2] == 0, "top-k 2 counts %d %d %d", c[0], c[1], c[2]);
  // top-p 0.75: 0.5 < 0.75 <= 0.8, so {0, 1}; top-p 0.45: {0}; top-p 0.85: all three
  draw(lg, V, (gm_sample_params){1.0, 0, 0.75, 4}, N, c);
  CHECK(freq_ok(c[0], N, 0.625) && c[2] == 0, "top-p 0.75 counts %d %d %d", c[0], c[1], c[2]);
  draw(lg, V, (gm_sample_params){1.0, 0, 0.45, 5}, 1000, c);
  CHECK(c[0] == 1000, "top-p 0.45 keeps only the best: %d", c[0]);
  draw(lg, V, (gm_sample_params){1.0, 0, 0.85, 6}, N, c);
  CHECK(freq_ok(c[2], N, 0.2), "top-p 0.85 keeps the third: %d", c[2]);
  // top-k before top-p (HF order): top-k 2 renormalises to .625/.375, then top-p 0.6 keeps {0}
  draw(lg, V, (gm_sample_params){1.0, 2, 0.6, 7}, 1000, c);
  CHECK(c[0] == 1000, "top-k then top-p: %d %d", c[0], c[1]);
  // temperature after which top-p acts: T=0.5 gives .658 for token 0, so top-p 0.6 keeps {0}
  draw(lg, V, (gm_sample_params){0.5, 0, 0.6, 8}, 1000, c);
  CHECK(c[0] == 1000, "temperature then top-p: %d %d", c[0], c[1]);

  // top-p over a large vocabulary (the nucleus spans more than the first ranked prefix of 256):
  // every draw lies in the nucleus computed here by brute force, and its far end is reached
  {
    enum { BV = 3000 };
    static float big[BV];
    static int cnt[BV];
    for (int i = 0; i < BV; i++) big[(i * 7) % BV] = -0.002f * (float)i; // rank i at id 7i mod BV
    double z = 0, cum = 0;
    for (int i = 0; i < BV; i++) z += exp((double)big[(i * 7) % BV]);
    int nucleus = 0;
    while (nucleus < BV && (cum += exp((double)big[(nucleus * 7) % BV]) / z) < 0.8) nucleus++;
    nucleus++; // the token that reaches 0.8 is kept
    draw(big, BV, (gm_sample_params){1.0, 0, 0.8, 12}, 2000, cnt); // ~2% of the mass in the last 50
    int outside = 0, tail = 0;
    for (int i = 0; i < BV; i++) {
      int id = (i * 7) % BV;
      if (i >= nucleus) outside += cnt[id];
      else if (i >= nucleus - 50) tail += cnt[id];
    }
    CHECK(nucleus > 256 && outside == 0 && tail > 0, "top-p 0.8 over %d ids: nucleus %d, %d draws outside, %d in its last 50",
          BV, nucleus, outside, tail);
  }

  // greedy: the lowest id among equal maxima; top-k 1 is greedy
  float tie[6] = {0.5f, 2.0f, -1.0f, 2.0f, 2.0f, 1.9f};
  draw(tie, 6, (gm_sample_params){0.0, 0, 1.0, 9}, 10, c);
  CHECK(c[1] == 10, "greedy tie -> lowest id: %d %d %d", c[1], c[3], c[4]);
  draw(tie, 6, (gm_sample_params){0.8, 1, 1.0, 9}, 200, c);
  CHECK(c[1] == 200, "top-k 1 = greedy with ties: %d %d %d", c[1], c[3], c[4]);
  draw(tie, 6, (gm_sample_params){1.3, 0, 1e-9, 9}, 200, c);
  CHECK(c[1] == 200, "tiny top-p keeps one token (the greedy one): %d %d %d", c[1], c[3], c[4]);

  // seeds: the same seed, the same draws; another seed, other draws
  float flat[64];
  for (int i = 0; i < 64; i++) flat[i] = (float)(i % 7) * 0.1f;
  int32_t a[200], b[200], d[200];
  gm_sampler s1, s2, s3;
  gm_sample_params p1 = {1.0, 0, 1.0, 42}, p3 = {1.0, 0, 1.0, 43};
  gm_sampler_init(&s1, &p1, 64);
  gm_sampler_init(&s2, &p1, 64);
  gm_sampler_init(&s3, &p3, 64);
  int differ = 0;
  for (int i = 0; i < 200; i++) {
    gm_sampler_next(&s1, flat, &a[i]);
    gm_sampler_next(&s2, flat, &b[i]);
    gm_sampler_next(&s3, flat, &d[i]);
    differ += a[i] != d[i];
  }
  CHECK(memcmp(a, b, sizeof a) == 0, "same seed, different draws");
  CHECK(differ > 150, "seeds 42 and 43 agree on %d of 200 draws over 64 tokens", 200 - differ);
  gm_sampler_free(&s1); gm_sampler_free(&s2); gm_sampler_free(&s3);

  // bad parameters and logits
  gm_sampler s;
  CHECK(gm_sampler_init(&s, &(gm_sample_params){-1, 0, 1, 0}, 5) != 0 && strstr(gm_errmsg(), "temperature"), "T < 0");
  CHECK(gm_sampler_init(&s, &(gm_sample_params){NAN, 0, 1, 0}, 5) != 0, "T NaN");
  CHECK(gm_sampler_init(&s, &(gm_sample_params){1, -2, 1, 0}, 5) != 0 && strstr(gm_errmsg(), "top-k"), "k < 0");
  CHECK(gm_sampler_init(&s, &(gm_sample_params){1, 0, 0, 0}, 5) != 0 && strstr(gm_errmsg(), "top-p"), "p = 0");
  CHECK(gm_sampler_init(&s, &(gm_sample_params){1, 0, 1.5, 0}, 5) != 0 && strstr(gm_errmsg(), "top-p"), "p > 1");
  CHECK(gm_sampler_init(&s, &(gm_sample_params){1, 0, 1, 0}, 5) == 0, "init");
  int32_t t;
  float nan5[5] = {0, 1, NAN, 2, 3}, ninf[5] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  CHECK(gm_sampler_next(&s, nan5, &t) != 0 && strstr(gm_errmsg(), "token 2"), "NaN logit: %s", gm_errmsg());
  CHECK(gm_sampler_next(&s, ninf, &t) != 0 && strstr(gm_errmsg(), "-inf"), "all -inf: %s", gm_errmsg());
  gm_sampler_free(&s);
}

// V > 0: each greedy token must be the argmax of the logits it is passed with (not_argmax counts).
typedef struct { int32_t tok[128]; int n, stop_after, V, not_argmax; } collect;
static int on_tok(void *ctx, int32_t t, const float *logits) {
  collect *c = ctx;
  if (c->V > 0 && (!logits || test_argmax(logits, c->V) != t)) c->not_argmax++;
  c->tok[c->n++] = t;
  return c->stop_after && c->n >= c->stop_after;
}

// Runs gm_gpt2_generate; returns its rc.
static int gen(const gm_gpt2 *m, const int32_t *prompt, int np, int max_new, gm_sample_params sp, int32_t eot, int threads,
               collect *c, gm_generate_stats *st) {
  gm_profile p;
  gm_profile_get("hf", GM_F32, &p);
  gm_sampler s;
  if (gm_sampler_init(&s, &sp, m->cfg.vocab_size)) return -1;
  c->n = 0;
  int rc = gm_gpt2_generate(m, &p, prompt, np, max_new, &s, eot, threads, on_tok, c, st);
  gm_sampler_free(&s);
  return rc;
}

static void test_generate(void) {
  gm_gpt2 m;
  if (gm_gpt2_load(&m, GPTMEG_SOURCE_DIR "/tests/golden/model/base")) { CHECK(0, "load: %s", gm_errmsg()); return; }
  const int V = m.cfg.vocab_size, P = m.cfg.n_positions; // 400, 64
  gm_profile p;
  gm_profile_get("hf", GM_F32, &p);
  int32_t prompt[64] = {17, 4, 399, 0, 123};
  collect c = {.V = V}, c2 = {0};
  gm_generate_stats st;
  const int NEW = test_quick() ? 12 : 30;
  gm_sample_params greedy = {0, 0, 1, 0};
  CHECK(gen(&m, prompt, 5, NEW, greedy, -1, 1, &c, &st) == 0, "greedy: %s", gm_errmsg());
  CHECK(c.not_argmax == 0, "greedy: %d of %d tokens are not the argmax of the logits passed with them", c.not_argmax, c.n);
  c.V = 0;
  CHECK(c.n == NEW && st.n_new == NEW && st.stop == GM_STOP_MAX_NEW && st.n_prompt == 5, "greedy: %d new, stop %d", c.n, st.stop);
  // each KV-cache step equals the argmax of the full forward over prompt + tokens so far
  int32_t seq[64];
  memcpy(seq, prompt, 5 * sizeof(int32_t));
  memcpy(seq + 5, c.tok, (size_t)c.n * sizeof(int32_t));
  float *lg = malloc((size_t)P * V * sizeof(float));
  int bad = 0;
  for (int i = 0; i < c.n; i++) {
    int T = 5 + i;
    gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = seq, .B = 1, .T = T, .logits = lg, .threads = 1});
    if (test_argmax(lg + (size_t)(T - 1) * V, V) != c.tok[i]) bad++;
  }
  CHECK(bad == 0, "KV-cache greedy differs from the full forward's argmax at %d of %d steps", bad, c.n);
  // deterministic, thread-independent; top-k 1 with T > 0 is greedy
  CHECK(gen(&m, prompt, 5, NEW, greedy, -1, 2, &c2, &st) == 0 && c2.n == c.n && memcmp(c.tok, c2.tok, (size_t)c.n * 4) == 0,
        "greedy differs between runs / thread counts");
  CHECK(gen(&m, prompt, 5, NEW, (gm_sample_params){0.7, 1, 1, 5}, -1, 1, &c2, &st) == 0 && c2.n == c.n &&
            memcmp(c.tok, c2.tok, (size_t)c.n * 4) == 0,
        "top-k 1 differs from greedy");
  // sampling: the same seed gives the same tokens for 1 and 2 threads; other seeds other tokens
  gm_sample_params sp = {1.5, 0, 1, 11};
  CHECK(gen(&m, prompt, 5, NEW, sp, -1, 1, &c, &st) == 0 && gen(&m, prompt, 5, NEW, sp, -1, 2, &c2, &st) == 0 &&
            c.n == c2.n && memcmp(c.tok, c2.tok, (size_t)c.n * 4) == 0,
        "same seed, different tokens");
  int same_as_first = 0;
  for (uint64_t seed = 12; seed < 17; seed++) {
    sp.seed = seed;
    gen(&m, prompt, 5, NEW, sp, -1, 1, &c2, &st);
    same_as_first += c2.n == c.n && memcmp(c.tok, c2.tok, (size_t)c.n * 4) == 0;
  }
  CHECK(same_as_first == 0, "%d of 5 other seeds reproduced seed 11's tokens", same_as_first);

  // stops: n_positions (the sequence never exceeds it), end-of-text, the callback, max_new 0
  for (int i = 0; i < 64; i++) prompt[i] = (i * 37) % V;
  CHECK(gen(&m, prompt, 60, 10, greedy, -1, 1, &c, &st) == 0 && c.n == 4 && st.stop == GM_STOP_POSITIONS,
        "n_positions stop: %d new, stop %d", c.n, st.stop);
  CHECK(gen(&m, prompt, 64, 10, greedy, -1, 1, &c, &st) == 0 && c.n == 0 && st.stop == GM_STOP_POSITIONS, "full prompt");
  CHECK(gen(&m, prompt, 5, 10, greedy, -1, 1, &c, &st) == 0 && c.n == 10, "reference run");
  int32_t third = c.tok[2];
  int first_hit = 0;
  while (c.tok[first_hit] != third) first_hit++;
  CHECK(gen(&m, prompt, 5, 10, greedy, third, 1, &c2, &st) == 0 && c2.n == first_hit && st.stop == GM_STOP_EOT,
        "eot stop: %d new (want %d), stop %d", c2.n, first_hit, st.stop);
  c2.stop_after = 3;
  CHECK(gen(&m, prompt, 5, 10, greedy, -1, 1, &c2, &st) == 0 && c2.n == 3 && st.stop == GM_STOP_CALLBACK, "callback stop");
  c2.stop_after = 0;
  CHECK(gen(&m, prompt, 5, 0, greedy, -1, 1, &c2, &st) == 0 && c2.n == 0 && st.stop == GM_STOP_MAX_NEW, "max_new 0");
  // errors
  CHECK(gen(&m, prompt, 0, 5, greedy, -1, 1, &c2, &st) != 0 && strstr(gm_errmsg(), "empty"), "empty prompt: %s", gm_errmsg());
  CHECK(gen(&m, prompt, 65, 5, greedy, -1, 1, &c2, &st) != 0 && strstr(gm_errmsg(), "n_positions"), "long prompt");
  prompt[1] = V;
  CHECK(gen(&m, prompt, 5, 5, greedy, -1, 1, &c2, &st) != 0 && strstr(gm_errmsg(), "outside the vocabulary"), "oov prompt");
  gm_sampler s;
  gm_sampler_init(&s, &greedy, V + 1);
  CHECK(gm_gpt2_generate(&m, &p, prompt, 5, 5, &s, -1, 1, NULL, NULL, &st) != 0 && strstr(gm_errmsg(), "sampler"),
        "sampler vocab mismatch");
  gm_sampler_free(&s);
  free(lg);
  gm_gpt2_free(&m);
}

int main(void) {
  test_sampler();
  test_generate();
  return test_done("test_generate");
}
