// gm_onednn_amx_blocking (src/kernels/matmul/onednn_amx.c) against what torch shows of oneDNN's AMX
// K blocking: tests/golden/targets/intel-amx/amx_blocking.json (tools/ref/gen_amx_blocking_goldens.py)
// holds, per case, the observations of tools/ref/probe_bf16_amx_blocks.py's three probes (starts,
// splits, tail_probe). Each probe column is a K vector with a few +-2^24 and 1 entries, times rows
// of ones; here every column is summed in f32 in the order the model's blocking gives (calls of
// `chunk` elements from zero, the tail call, the parts added in order) and the probe's verdict (the
// 1 survives or not) must be the golden's, column for column. Pure arithmetic: runs on any host.
#include "harness.h"
#include "kernels/matmul/onednn_amx.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_OBS = 4096 };
enum { F_OP, F_TA, F_TB, F_SUM, F_M, F_N, F_K, F_NTHR, F_STARTS, F_SPLIT, F_TAIL, F_MIXED, F_IMPL, F_FULL, F_COUNT };
static const char *const FIELD[F_COUNT] = {"op", "trans_a", "trans_b", "with_sum", "M", "N", "K",
                                           "nthr", "starts", "split", "tail", "mixed", "impl", "full"};
static const float BIG = 16777216.0f; // 2^24

typedef struct {
  int pos[3];
  float val[3];
} probe_col; // three entries at increasing positions, in distinct 32-element tiles

// The column's sum in f32 in the model's order: one accumulator per call, a partial sum per part.
static float simulate(const gm_amx_blocking *b, int K, const probe_col *c) {
  const int tail_at = b->tail ? K - K % 32 : K;
  float parts[GM_AMX_MAX_PARTS] = {0};
  float acc = 0.0f;
  int call = -1, part = 0;
  for (int i = 0; i < 3; i++) {
    int p = c->pos[i];
    int this_call = p >= tail_at ? (1 << 30) : (b->chunk ? p / b->chunk : 0);
    int this_part = 0;
    while (this_part + 1 < b->n_parts && b->part_start[this_part + 1] <= p) this_part++;
    if (this_call != call || this_part != part) { // the previous call ends: added to its part
      if (call >= 0) parts[part] = parts[part] + acc;
      acc = 0.0f, call = this_call, part = this_part;
    }
    acc = acc + c->val[i]; // one entry per tile: the tile adds (E + O) = the entry
  }
  parts[part] = parts[part] + acc;
  float total = parts[0];
  for (int i = 1; i < b->n_parts; i++) total = total + parts[i];
  return total;
}

static bool survives(const gm_amx_blocking *b, int K, int p0, float v0, int p1, float v1, int p2, float v2) {
  probe_col c = {{p0, p1, p2}, {v0, v1, v2}};
  return simulate(b, K, &c) != 0.0f;
}

// probe_bf16_amx_blocks.starts(): column j probes b = 32 (j mod (T - 2) + 1); returns the b seen.
// cover: how many starts the probe reaches (N for starts(), every one for starts_full()).
static int obs_starts(const gm_amx_blocking *b, int cover, int K, int *out) {
  int T = K / 32, n = 0;
  if (T < 3) return 0;
  for (int t = 1; t <= T - 2 && t <= cover; t++) // (columns j = t - 1 + k (T - 2) all probe b = 32 t alike)
    if (survives(b, K, 32 * t - 32, BIG, 32 * t, 1.0f, 32 * t + 32, -BIG) && n < MAX_OBS) out[n++] = 32 * t;
  return n;
}

// probe_bf16_amx_blocks.splits() for chunks of c elements: the starts of partial sums seen.
static int obs_splits(const gm_amx_blocking *b, int cover, int K, int c, int *out) {
  int nch = (K + c - 1) / c, n = 0;
  if (nch < 3) return 0;
  for (int s = 1; s <= nch - 2 && s <= cover; s++)
    if (survives(b, K, (s - 1) * c, BIG, s * c, 1.0f, (s + 1) * c, -BIG) && n < MAX_OBS) out[n++] = s * c;
  return n;
}

// probe_bf16_amx_blocks.tail_probe(): '1' per column j whose 1 at the tail survives.
static void obs_tail(const gm_amx_blocking *b, int N, int K, char *out, int cap) {
  int bt = K - K % 32, n = 0;
  if (K % 32 != 0 && bt >= 64)
    for (int j = 0; j < bt / 32 - 1 && j < N && n + 1 < cap; j++)
      out[n++] = survives(b, K, 32 * j, -BIG, bt - 32, BIG, bt, 1.0f) ? '1' : '0';
  out[n] = 0;
}

static bool same_list(const cJSON *arr, const int *v, int n) {
  if (cJSON_GetArraySize(arr) != n) return false;
  for (int i = 0; i < n; i++)
    if (cJSON_GetArrayItem(arr, i)->valueint != v[i]) return false;
  return true;
}

static void print_list(const char *what, const int *v, int n) {
  fprintf(stderr, "    model %s:", what);
  for (int i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", v[i]);
  fprintf(stderr, "%s\n", n > 40 ? " ..." : "");
}

static void test_known(void) {
  gm_amx_blocking b;
  // the dW of a batch of 880 rows: chunks of 448, then the partial tile at 864 a call of its own
  CHECK(gm_onednn_amx_blocking(768, 3072, 880, true, false, false, 1, 1, &b) == 0 && b.chunk == 448 && b.tail == 1 &&
            b.n_parts == 1,
        "mmta 768 x 880 x 3072: chunk %d tail %d parts %d", b.chunk, b.tail, b.n_parts);
  // GPT-2's fc on 2 threads at M 64 (macro, B as stored): 12 tiles a call, no split
  CHECK(gm_onednn_amx_blocking(64, 3072, 768, false, false, true, 2, 1, &b) == 0 && b.chunk == 384 && b.tail == 0 &&
            b.n_parts == 1,
        "addmm 64 x 768 x 3072 t2: chunk %d tail %d parts %d", b.chunk, b.tail, b.n_parts);
  CHECK(gm_onednn_amx_blocking(1, 768, 768, false, false, true, 1, 1, &b) == GM_AMX_NOT_AMX, "M == 1: oneDNN's GEMV");
  CHECK(gm_onednn_amx_blocking(768, 1, 768, false, false, true, 1, 1, &b) == GM_AMX_NOT_AMX, "N == 1: oneDNN's GEMV");
  CHECK(gm_onednn_amx_blocking(16, 16, 16, false, false, true, 1, 1, &b) == GM_AMX_NOT_ONEDNN, "M N K <= 4096: ATen");
  // the small shape AMX declines (2 M_blk K <= 126 bytes), on 3 threads only for M 3 K 31 (M_blk 2)
  CHECK(gm_onednn_amx_blocking(2, 70, 31, false, false, true, 1, 1, &b) == GM_AMX_NOT_AMX, "M 2 K 31: avx512_core_bf16");
  CHECK(gm_onednn_amx_blocking(3, 48, 31, false, false, true, 2, 1, &b) == 0, "M 3 K 31 t2: AMX");
  CHECK(gm_onednn_amx_blocking(3, 48, 31, false, false, true, 3, 1, &b) == GM_AMX_NOT_AMX, "M 3 K 31 t3: not AMX");
  // a K split of two chunks on 2 threads where N (16) hides it from the old probe
  CHECK(gm_onednn_amx_blocking(4, 16, 3072, false, true, true, 2, 1, &b) == 0 && b.chunk == 1536 && b.n_parts == 2,
        "linear 4 x 3072 x 16 t2: chunk %d parts %d", b.chunk, b.n_parts);
  // an odd K with A transposed (the dW of an odd number of rows): chunks of 448, the partial tile at
  // 864 (seven elements and a padded zero) a call of its own (probe_bf16_amx_blocks.py --triples)
  CHECK(gm_onednn_amx_blocking(768, 768, 881, true, false, false, 1, 1, &b) == 0 && b.chunk == 448 && b.tail == 1 &&
            b.n_parts == 1,
        "mmta 768 x 881 x 768: chunk %d tail %d parts %d", b.chunk, b.tail, b.n_parts);
}

int main(void) {
  test_known();
  char path[512];
  snprintf(path, sizeof path, "%s/tests/golden/targets/intel-amx/amx_blocking.json", GPTMEG_SOURCE_DIR);
  char *txt = test_slurp(path);
  CHECK(txt != NULL, "%s missing (run tools/ref/gen_amx_blocking_goldens.py on an AMX host)", path);
  if (!txt) return test_done("amx_blocking");
  cJSON *doc = cJSON_Parse(txt);
  CHECK(doc != NULL, "%s does not parse", path);
  if (!doc) {
    free(txt);
    return test_done("amx_blocking");
  }
  printf("  golden: torch %s on %s\n", cJSON_GetObjectItem(doc, "torch")->valuestring,
         cJSON_GetObjectItem(doc, "cpu")->valuestring);
  static int st[MAX_OBS], sp[MAX_OBS];
  static char tail[MAX_OBS + 1];
  int cases = 0, passed = 0;
  const cJSON *c;
  // a case is a list in the order of "fields"
  int at[F_COUNT];
  for (int f = 0; f < F_COUNT; f++) {
    at[f] = -1;
    for (int i = 0; i < cJSON_GetArraySize(cJSON_GetObjectItem(doc, "fields")); i++)
      if (!strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "fields"), i)->valuestring, FIELD[f])) at[f] = i;
    CHECK(at[f] >= 0, "%s: no field %s", path, FIELD[f]);
    if (at[f] < 0) return test_done("amx_blocking");
  }
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
    const char *op = cJSON_GetArrayItem(c, at[F_OP])->valuestring;
    const int M = cJSON_GetArrayItem(c, at[F_M])->valueint, N = cJSON_GetArrayItem(c, at[F_N])->valueint,
              K = cJSON_GetArrayItem(c, at[F_K])->valueint, nthr = cJSON_GetArrayItem(c, at[F_NTHR])->valueint;
    const bool ta = cJSON_GetArrayItem(c, at[F_TA])->valueint, tb = cJSON_GetArrayItem(c, at[F_TB])->valueint,
               ws = cJSON_GetArrayItem(c, at[F_SUM])->valueint;
    const char *impl = cJSON_GetArrayItem(c, at[F_IMPL])->valuestring;
    const int cover = cJSON_GetArrayItem(c, at[F_FULL])->valueint ? 1 << 30 : N;
    cases++;
    gm_amx_blocking b;
    int r = gm_onednn_amx_blocking(M, N, K, ta, tb, ws, nthr, 1, &b);
    // torch's implementation: AMX (0), ATen (-2), oneDNN without AMX (-3: GEMV, small shapes)
    int want = !strcmp(impl, "amx") ? 0 : !strcmp(impl, "aten") ? GM_AMX_NOT_ONEDNN : GM_AMX_NOT_AMX;
    CHECK(r == want, "%s M %d N %d K %d t%d: model %d, torch runs %s (%d)", op, M, N, K, nthr, r, impl, want);
    if (r != want) continue;
    if (r) {
      passed++;
      continue;
    }
    int ns = obs_starts(&b, cover, K, st);
    // the splits probe runs for more than one thread with the first start seen as its chunk
    int nsp = nthr > 1 && ns > 0 ? obs_splits(&b, cover, K, st[0], sp) : 0;
    obs_tail(&b, N, K, tail, sizeof tail);
    const char *gtail = cJSON_GetArrayItem(c, at[F_TAIL])->valuestring;
    bool ok_s = same_list(cJSON_GetArrayItem(c, at[F_STARTS]), st, ns);
    bool ok_sp = same_list(cJSON_GetArrayItem(c, at[F_SPLIT]), sp, nsp);
    bool ok_t = strcmp(gtail, tail) == 0;
    bool ok_m = cJSON_GetArraySize(cJSON_GetArrayItem(c, at[F_MIXED])) == 0;
    bool ok = ok_s && ok_sp && ok_t && ok_m;
    CHECK(ok, "%s M %d N %d K %d t%d (chunk %d tail %d parts %d):%s%s%s%s", op, M, N, K, nthr, b.chunk, b.tail,
          b.n_parts, ok_s ? "" : " block starts differ", ok_sp ? "" : " partial-sum starts differ",
          ok_t ? "" : " tail probe differs", ok_m ? "" : " (torch: starts that depend on the column)");
    if (!ok_s) print_list("starts", st, ns);
    if (!ok_sp) print_list("split", sp, nsp);
    if (!ok_t) fprintf(stderr, "    model tail: %s\n    torch tail: %s\n", tail, gtail);
    passed += ok;
  }
  printf("  %d of %d cases: the model's blocking gives torch's probe observations\n", passed, cases);
  CHECK(cases > 0, "no cases in %s", path);
  cJSON_Delete(doc);
  free(txt);
  return test_done("amx_blocking");
}
