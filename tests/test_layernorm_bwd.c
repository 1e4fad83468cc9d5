// gm_op_layernorm_bwd against PyTorch 2.15 CPU autograd (tools/ref/gen_layernorm_bwd_goldens.py),
// bit for bit: dx, dw, db of F.layer_norm in f32/f16/bf16 under the native rule (profile "hf") and
// the fp32 rule (profile "meg": layer_norm(x.float(), w.float(), b.float()).to(dtype)), C in
// {8, 24, 64, 768}, N rows in {1, 3, 16, 64} (768: 1, 3), plus rows of 5, 12, 40, 44 (partial vectors,
// x offset so that the reductions' last bits show in dx), with 1, 2, 3 and 4 threads (torch's
// dgamma and dbeta depend on its thread count; ours follow c->threads). mean and rstd come from
// gm_op_layernorm_fwd, as the model's backward gets them. And GPT-2's width C = 768 over 256 rows
// (inputs from an integer hash the generator shares): dw, db for 1 to 4 threads, dx of two rows. Also: NULL outputs are skipped; no rows give zero
// parameter gradients.
#include "gptmeg/core.h"
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "gptmeg/safetensors.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN GPTMEG_SOURCE_DIR "/tests/golden/layernorm_bwd/ln_bwd.safetensors"

// The generator's hash_inputs (all values exact in f32, then rounded to the dtype).
static uint32_t h24(int64_t i) { return (uint32_t)((uint64_t)i * 2654435761u) >> 8; }
static void hash_inputs(int C, int N, gm_dtype dt, float *x, float *w, float *b, float *dy) {
  for (int64_t i = 0; i < (int64_t)N * C; i++) {
    x[i] = gm_round_f32(dt, ldexpf((float)((int32_t)h24(i) - (1 << 23) + (1 << 21)), -21));
    dy[i] = gm_round_f32(dt, ldexpf((float)((int32_t)h24(i + 1000003) - (1 << 23)), (int)(i % 5) - 25));
  }
  for (int j = 0; j < C; j++) {
    w[j] = gm_round_f32(dt, ldexpf((float)((1 << 23) + (int32_t)(h24(j + 77) >> 1) - (1 << 22)), -23));
    b[j] = gm_round_f32(dt, ldexpf((float)((int32_t)h24(j + 999) - (1 << 23)), -26));
  }
}

static float *get(const gm_safetensors *st, const char *prefix, const char *what) {
  char name[160];
  snprintf(name, sizeof name, "%s%s", prefix, what);
  return test_st_f32(st, name, NULL, NULL);
}

int main(void) {
  gm_safetensors st;
  if (gm_st_open(&st, GOLDEN)) {
    CHECK(0, "%s", gm_errmsg());
    return test_done("test_layernorm_bwd");
  }
  static const int shapes[][2] = {{8, 1},  {8, 3},  {8, 16},  {8, 64},  {24, 1},  {24, 3},  {24, 16}, {24, 64},
                                  {64, 1}, {64, 3}, {64, 16}, {64, 64}, {5, 32}, {12, 32}, {40, 32}, {44, 32},
                                  {768, 1}, {768, 3}};
  const int n_shapes = (int)(sizeof shapes / sizeof *shapes);
  const struct { const char *name; gm_dtype dt; } dts[] = {{"f32", GM_F32}, {"f16", GM_F16}, {"bf16", GM_BF16}};
  const struct { const char *rule, *profile; } rules[] = {{"native", "hf"}, {"fp32", "meg"}};
  int cases = 0, compared = 0;
  for (size_t d = 0; d < 3; d++)
    for (int s = 0; s < n_shapes; s++) {
      if (test_quick() && shapes[s][0] == 768 && s != n_shapes - 1) continue;
      const int C = shapes[s][0], N = shapes[s][1];
      char p[64];
      snprintf(p, sizeof p, "%s.%d.%d.", dts[d].name, C, N);
      float *x = get(&st, p, "x"), *w = get(&st, p, "w"), *b = get(&st, p, "b"), *dy = get(&st, p, "dy");
      if (!x || !w || !b || !dy) {
        CHECK(0, "%s: %s inputs missing", GOLDEN, p);
        free(x), free(w), free(b), free(dy);
        continue;
      }
      const size_t n = (size_t)N * C;
      float *mean = malloc(N * sizeof(float)), *rstd = malloc(N * sizeof(float)), *y = malloc(n * sizeof(float));
      float *dx = malloc(n * sizeof(float)), *dw = malloc(C * sizeof(float)), *db = malloc(C * sizeof(float));
      float *dx1 = malloc(n * sizeof(float));
      for (int r = 0; r < 2; r++) {
        // f32 runs: one graph for both rules, stored once as "native"
        const char *rule = dts[d].dt == GM_F32 ? "native" : rules[r].rule;
        gm_profile prof;
        CHECK(gm_profile_get(rules[r].profile, dts[d].dt, &prof) == 0, "profile %s", rules[r].profile);
        gm_op_ctx c;
        gm_op_ctx_init(&c, &prof, 1, NULL, NULL);
        CHECK(gm_op_layernorm_fwd(&c, y, mean, rstd, x, w, b, N, C, 1e-5) == 0, "forward: %s", gm_errmsg());
        char q[96];
        snprintf(q, sizeof q, "%s%s.", p, rule);
        float *gdx = get(&st, q, "dx");
        if (!gdx) { CHECK(0, "%s: %sdx missing", GOLDEN, q); continue; }
        for (int threads = 1; threads <= 4; threads++) {
          gm_op_ctx_init(&c, &prof, threads, NULL, NULL);
          memset(dx, 0xff, n * sizeof(float));
          int rc = gm_op_layernorm_bwd(&c, dx, dw, db, dy, x, w, mean, rstd, N, C);
          CHECK(rc == 0, "%s %s: %s", p, rule, gm_errmsg());
          int bad = test_count_diff(dx, gdx, n);
          CHECK(bad == 0, "%s%s, %d threads: %d of %zu dx differ from torch", p, rules[r].rule, threads, bad, n);
          if (threads == 1) memcpy(dx1, dx, n * sizeof(float));
          char tq[128];
          snprintf(tq, sizeof tq, "%st%d.", q, threads);
          float *gdw = get(&st, tq, "dw"), *gdb = get(&st, tq, "db");
          if (!gdw || !gdb) {
            CHECK(0, "%s: %sdw/db missing", GOLDEN, tq);
          } else {
            int bw = test_count_diff(dw, gdw, C), bb = test_count_diff(db, gdb, C);
            CHECK(bw == 0 && bb == 0, "%s%s, %d threads: dw differs from torch in %d of %d, db in %d", p,
                  rules[r].rule, threads, bw, C, bb);
            compared += (int)n + 2 * C;
          }
          free(gdw), free(gdb);
        }
        // NULL outputs are skipped; the others keep their bits
        gm_op_ctx_init(&c, &prof, 2, NULL, NULL);
        memset(dx, 0, n * sizeof(float));
        CHECK(gm_op_layernorm_bwd(&c, dx, NULL, NULL, dy, x, w, mean, rstd, N, C) == 0, "dx only");
        CHECK(memcmp(dx, dx1, n * sizeof(float)) == 0, "%s%s: dx alone differs", p, rules[r].rule);
        free(gdx);
        cases++;
      }
      printf("  %-4s C = %3d, N = %2d: dx, dw, db bit-identical to torch (native and fp32 rules, 1 to 4 threads)\n",
             dts[d].name, C, N);
      free(mean), free(rstd), free(y), free(dx), free(dw), free(db), free(dx1);
      free(x), free(w), free(b), free(dy);
    }
  printf("  %d cases, %d values compared bit for bit\n", cases, compared);
  CHECK(cases == 3 * 2 * (test_quick() ? n_shapes - 1 : n_shapes), "only %d cases", cases);
  // GPT-2's width over 256 rows (hashed inputs): dw, db with 1 to 4 threads, dx of two rows
  for (size_t d = 0; d < 3; d++)
    for (int r = 0; r < (dts[d].dt == GM_F32 ? 1 : 2); r++) {
      const int C = 768, N = 256, rows[2] = {0, 255};
      const size_t n = (size_t)N * C;
      float *x = malloc(n * sizeof(float)), *dy = malloc(n * sizeof(float)), *dx = malloc(n * sizeof(float));
      float *w = malloc(C * sizeof(float)), *b = malloc(C * sizeof(float)), *dw = malloc(C * sizeof(float));
      float *db = malloc(C * sizeof(float)), *y = malloc(n * sizeof(float));
      float *mean = malloc(N * sizeof(float)), *rstd = malloc(N * sizeof(float));
      hash_inputs(C, N, dts[d].dt, x, w, b, dy);
      gm_profile prof;
      gm_profile_get(rules[r].profile, dts[d].dt, &prof);
      gm_op_ctx c;
      gm_op_ctx_init(&c, &prof, 1, NULL, NULL);
      CHECK(gm_op_layernorm_fwd(&c, y, mean, rstd, x, w, b, N, C, 1e-5) == 0, "forward: %s", gm_errmsg());
      char q[96];
      snprintf(q, sizeof q, "%s.big.%d.%d.%s.", dts[d].name, C, N, rules[r].rule);
      float *gdx = get(&st, q, "dx_rows");
      for (int threads = 1; threads <= 4; threads++) {
        gm_op_ctx_init(&c, &prof, threads, NULL, NULL);
        CHECK(gm_op_layernorm_bwd(&c, dx, dw, db, dy, x, w, mean, rstd, N, C) == 0, "%s", gm_errmsg());
        char tq[128];
        snprintf(tq, sizeof tq, "%st%d.", q, threads);
        float *gdw = get(&st, tq, "dw"), *gdb = get(&st, tq, "db");
        if (!gdx || !gdw || !gdb) {
          CHECK(0, "%s: %s missing", GOLDEN, tq);
        } else {
          int bx = test_count_diff(dx + (size_t)rows[0] * C, gdx, C) + test_count_diff(dx + (size_t)rows[1] * C, gdx + C, C);
          int bw = test_count_diff(dw, gdw, C), bb = test_count_diff(db, gdb, C);
          CHECK(bx == 0 && bw == 0 && bb == 0, "%s, %d threads: dx (2 rows) differs in %d, dw in %d, db in %d of %d", q,
                threads, bx, bw, bb, C);
        }
        free(gdw), free(gdb);
      }
      printf("  %-4s C = 768, N = 256 (%s rule): dw, db (1 to 4 threads) and dx rows bit-identical to torch\n",
             dts[d].name, rules[r].rule);
      free(gdx), free(x), free(dy), free(dx), free(w), free(b), free(dw), free(db), free(y), free(mean), free(rstd);
    }
  gm_st_close(&st);
  { // no rows: the parameter gradients are zeros (torch's too), nothing else is touched
    gm_profile prof;
    gm_profile_get("hf", GM_BF16, &prof);
    gm_op_ctx c;
    gm_op_ctx_init(&c, &prof, 2, NULL, NULL);
    float dw[8], db[8];
    for (int j = 0; j < 8; j++) dw[j] = db[j] = 1.0f;
    CHECK(gm_op_layernorm_bwd(&c, NULL, dw, db, NULL, NULL, NULL, NULL, NULL, 0, 8) == 0, "%s", gm_errmsg());
    int nz = 0;
    for (int j = 0; j < 8; j++) nz += dw[j] != 0.0f || db[j] != 0.0f;
    CHECK(nz == 0, "no rows: %d parameter gradients not zero", nz);
  }
  return test_done("test_layernorm_bwd");
}
