// The ops layer and the forward's activation table: a forward keeping its activations (gm_acts)
// gives the logits of one that does not, and every kept tensor equals what the probe saw at that
// point of that layer; layer norm's kept mean and rstd are the kernel's row statistics; the
// cross-entropy forward; the backward slots fail until training lands.
#include "gptmeg/kernels.h"
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_L = 8 };

// Every (layer, point) tensor the probe saw, copied: layer -1 at index 0.
typedef struct {
  float *t[MAX_L + 1][GM_N_POINTS];
  size_t n[MAX_L + 1][GM_N_POINTS];
} capture;

static int grab(void *ctx, const gm_probe_tensor *t) {
  capture *c = ctx;
  float **slot = &c->t[t->layer + 1][t->point];
  free(*slot);
  if (!(*slot = malloc(t->numel * sizeof(float)))) return gm_fail("out of memory");
  memcpy(*slot, t->data, t->numel * sizeof(float));
  c->n[t->layer + 1][t->point] = t->numel;
  return 0;
}

static void capture_free(capture *c) {
  for (int l = 0; l <= MAX_L; l++)
    for (int p = 0; p < GM_N_POINTS; p++) free(c->t[l][p]);
}

static int make_model(gm_gpt2 *m, gm_dtype dt) {
  gm_gpt2_config c;
  gm_config_tiny(&c);
  c.n_positions = 64;
  if (gm_gpt2_init_random(m, &c, 11)) return -1;
  for (uint64_t i = 0; i < m->n_params; i++) m->storage[i] *= 4.0f; // logits of order 1, finite in f16
  if (dt != GM_F32 && gm_gpt2_to_dtype(m, dt)) { gm_gpt2_free(m); return -1; }
  return 0;
}

static bool per_layer(gm_point p) { return p != GM_PT_EMBED && p != GM_PT_LNF && p != GM_PT_LOGITS; }

static void test_kept(gm_dtype dt, const char *profile) {
  gm_gpt2 m;
  if (make_model(&m, dt)) { CHECK(0, "%s: model: %s", gm_dtype_name(dt), gm_errmsg()); return; }
  gm_profile p;
  gm_profile_get(profile, dt, &p);
  const int V = m.cfg.vocab_size, B = 2, T = 6, P0 = 3, L = m.cfg.n_layer, D = m.cfg.n_embd;
  if (L > MAX_L) { CHECK(0, "tiny config has %d layers", L); gm_gpt2_free(&m); return; }
  int32_t tok[2 * 6] = {50256, 11, 3, 40000, 7, 812, 1, 2, 3, 4, 5, 6};
  float *plain = malloc((size_t)B * T * V * sizeof(float)), *kept = malloc((size_t)B * T * V * sizeof(float));
  // a prefix through the cache first, so the kept forward runs at t0 > 0 (scores [B, H, T-P0, T])
  gm_kv_cache k1, k2;
  gm_kv_init(&k1, &m, B, T);
  gm_kv_init(&k2, &m, B, T);
  int32_t pre[2 * 3] = {tok[0], tok[1], tok[2], tok[6], tok[7], tok[8]}, rest[2 * 3] = {tok[3], tok[4], tok[5], tok[9], tok[10], tok[11]};
  capture cap = {0};
  gm_acts acts = {0};
  gm_gpt2_run_opts o = {.profile = &p, .tokens = pre, .B = B, .T = P0, .kv = &k1, .logits = plain, .threads = 2};
  int rc = gm_gpt2_run(&m, &o);
  o.kv = &k2, o.acts = &acts; // kept twice: the second run frees the first's table
  rc = rc || gm_gpt2_run(&m, &o);
  o.tokens = rest, o.kv = &k1, o.acts = NULL, o.probe = grab, o.probe_ctx = &cap, o.logits_to_keep = 2;
  rc = rc || gm_gpt2_run(&m, &o);
  o.kv = &k2, o.acts = &acts, o.probe = NULL, o.logits = kept, o.threads = 1;
  rc = rc || gm_gpt2_run(&m, &o);
  CHECK(rc == 0, "%s %s: %s", gm_dtype_name(dt), profile, gm_errmsg());
  if (!rc) {
    CHECK(memcmp(plain, kept, (size_t)B * 2 * V * sizeof(float)) == 0, "%s %s: keeping activations changed the logits",
          gm_dtype_name(dt), profile);
    CHECK(acts.per_layer && acts.len == T && acts.keep_rows == 2, "%s: table shape", gm_dtype_name(dt));
    int bad = 0, missing = 0;
    for (int l = -1; l < L; l++)
      for (int pt = 0; pt < GM_N_POINTS; pt++) {
        if ((l < 0) == per_layer(pt)) continue;
        const float *want = cap.t[l + 1][pt], *got = gm_acts_at(&acts, l, pt);
        if (!want || !got || cap.n[l + 1][pt] != acts.numel[pt]) { missing++; continue; }
        if (memcmp(want, got, acts.numel[pt] * sizeof(float))) {
          bad++;
          fprintf(stderr, "  %s %s: layer %d %s differs\n", gm_dtype_name(dt), profile, l, gm_point_name(pt));
        }
      }
    CHECK(bad == 0 && missing == 0, "%s %s: %d kept tensors differ from the probe's, %d missing", gm_dtype_name(dt), profile,
          bad, missing);
    // the statistics: the kernel's f32 row mean and rstd of each layer norm's input
    gm_ln_kernel kernel = GM_LN_KERNEL_F32;
    if (p.layer_norm == GM_LN_NATIVE && dt == GM_F16) kernel = GM_LN_KERNEL_F16;
    if (p.layer_norm == GM_LN_NATIVE && dt == GM_BF16) kernel = GM_LN_KERNEL_BF16;
    int stat_bad = 0;
    for (int l = 0; l <= L; l++)
      for (int which = 0; which < 2; which++) {
        if (l == L && which) continue;
        gm_point ln = l == L ? GM_PT_LNF : which ? GM_PT_LN2 : GM_PT_LN1;
        const float *in = l == L ? gm_acts_at(&acts, L - 1, GM_PT_RESID)
                          : which ? gm_acts_at(&acts, l, GM_PT_RESID_ATTN)
                          : l ? gm_acts_at(&acts, l - 1, GM_PT_RESID) : gm_acts_at(&acts, -1, GM_PT_EMBED);
        const float *mean = gm_acts_mean(&acts, l, ln), *rstd = gm_acts_rstd(&acts, l, ln);
        if (!mean || !rstd) { stat_bad++; continue; }
        for (int i = 0; i < B * (T - P0); i++) {
          float mu, rs;
          gm_layernorm_row_stats(in + (size_t)i * D, D, m.cfg.layer_norm_epsilon, kernel, &mu, &rs);
          stat_bad += memcmp(&mu, &mean[i], 4) != 0 || memcmp(&rs, &rstd[i], 4) != 0;
        }
      }
    CHECK(stat_bad == 0, "%s %s: %d layer-norm rows' mean/rstd differ from the kernel's", gm_dtype_name(dt), profile, stat_bad);
  }
  // a forward that keeps nothing has no statistics to give
  gm_acts none = {0};
  CHECK(gm_acts_mean(&none, 0, GM_PT_LN1) == NULL && gm_acts_at(&none, 0, GM_PT_QKV) == NULL, "empty table");
  gm_acts_free(&acts);
  capture_free(&cap);
  gm_kv_free(&k1);
  gm_kv_free(&k2);
  free(plain);
  free(kept);
  gm_gpt2_free(&m);
}

static void test_crossentropy(void) {
  gm_profile p;
  gm_profile_get("hf", GM_F32, &p);
  const int B = 2, T = 4, V = 5;
  float logits[2 * 4 * 5];
  for (int i = 0; i < B * T * V; i++) logits[i] = (float)((i * 7) % 11) * 0.25f - 1.0f;
  int32_t labels[8] = {3, 1, GM_IGNORE_INDEX, 4, 0, 2, 2, GM_IGNORE_INDEX};
  double want = 0;
  int n = 0;
  for (int b = 0; b < B; b++)
    for (int t = 1; t < T; t++) {
      int32_t y = labels[b * T + t];
      if (y == GM_IGNORE_INDEX) continue;
      const float *x = logits + ((size_t)b * T + t - 1) * V;
      double mx = -INFINITY, s = 0;
      for (int v = 0; v < V; v++) mx = x[v] > mx ? x[v] : mx;
      for (int v = 0; v < V; v++) s += exp((double)x[v] - mx);
      want += mx + log(s) - x[y];
      n++;
    }
  want /= n;
  for (int threads = 1; threads <= 2; threads++) {
    gm_op_ctx c;
    gm_op_ctx_init(&c, &p, threads, NULL, NULL);
    double loss = 0, losses[8];
    int64_t k = 0;
    CHECK(gm_op_crossentropy_fwd(&c, &loss, &k, losses, logits, labels, B, T, V) == 0, "cross-entropy: %s", gm_errmsg());
    CHECK(k == n && loss == want, "cross-entropy %d thread(s): %.17g over %lld, want %.17g over %d", threads, loss,
          (long long)k, want, n);
    CHECK(losses[0] == 0 && losses[2] == 0 && losses[4] == 0 && losses[1] > 0, "per-position losses");
    labels[5] = V;
    CHECK(gm_op_crossentropy_fwd(&c, &loss, NULL, NULL, logits, labels, B, T, V) != 0 && strstr(gm_errmsg(), "[1, 1]"),
          "a label outside the vocabulary accepted");
    labels[5] = 2;
  }
}

// The residual's backward is autograd's sum of a tensor's two gradients: one f32 addition, one
// rounding to the dtype. In f16, 1 + 2^-11 is a tie that rounds to even (1), and 2048 + 1 likewise
// (2048); in f32 both sums are exact. Every result must equal R(a + b) computed independently.
static void test_residual_bwd(void) {
  const gm_dtype dts[] = {GM_F32, GM_F16, GM_BF16};
  const float a0[4] = {1.0f, 2048.0f, -3.5f, 0.0f}, b[4] = {0x1p-11f, 1.0f, 1.25f, -0.0f};
  for (int d = 0; d < 3; d++) {
    gm_profile p;
    gm_profile_get("hf", dts[d], &p);
    gm_op_ctx c;
    gm_op_ctx_init(&c, &p, 1, NULL, NULL);
    float a[4];
    memcpy(a, a0, sizeof a);
    CHECK(gm_op_residual_bwd(&c, a, b, 4) == 0, "residual bwd %s: %s", gm_dtype_name(dts[d]), gm_errmsg());
    for (int i = 0; i < 4; i++) {
      float want = gm_round_f32(dts[d], a0[i] + b[i]);
      CHECK(memcmp(&a[i], &want, sizeof want) == 0, "residual bwd %s [%d]: %a, want %a", gm_dtype_name(dts[d]), i,
            a[i], want);
    }
    if (dts[d] == GM_F16) CHECK(a[0] == 1.0f && a[1] == 2048.0f, "f16 ties must round to even: %a %a", a[0], a[1]);
    if (dts[d] == GM_F32) CHECK(a[0] == 1.0f + 0x1p-11f && a[1] == 2049.0f, "f32 sums are exact: %a %a", a[0], a[1]);
  }
}

int main(void) {
  const gm_dtype dts[] = {GM_F32, GM_F16, GM_BF16};
  const char *profiles[] = {"hf", "megatron"};
  for (int d = 0; d < 3; d++)
    for (int q = 0; q < 2; q++) test_kept(dts[d], profiles[q]);
  test_crossentropy();
  test_residual_bwd();
  return test_done("test_ops_layer");
}
