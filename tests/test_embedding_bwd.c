// gm_op_embedding_bwd against PyTorch 2.15 CPU autograd (tools/ref/gen_embedding_bwd_goldens.py),
// bit for bit: dwte and dwpe of GPT2Model's wte(input_ids) + wpe(position_ids) in f32/f16/bf16,
// B in {1, 2, 4}, T in {1, 5, 16}, tokens with repeats, and B from 17 to 64 (ATen's cascade sum over
// the batch, also past its parallel grain), 1 and 2 threads (torch's bits do not depend
// on its thread count: the generator asserts it; ours do not either). Also: either output may be
// NULL, positions past wpe's rows are an error, and a row of -0 gradients gives +0 as torch's
// zeros + grad does.
#include "gptmeg/core.h"
#include "gptmeg/model.h"
#include "gptmeg/ops.h"
#include "gptmeg/safetensors.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN GPTMEG_SOURCE_DIR "/tests/golden/embedding_bwd/emb_bwd.safetensors"
enum { V = 37, P = 16, C = 40 }; // the generator's sizes

// The generator's hash_inputs: dout[i] = R(top 24 bits of i * 2654435761, centred, * 2^(i % 9 - 4)),
// tokens[i] = (i * 40503) % V.
static void hash_inputs(int B, int T, int c, gm_dtype dt, float *dout, int32_t *tok) {
  for (int64_t i = 0; i < (int64_t)B * T * c; i++) {
    uint32_t u = (uint32_t)((uint64_t)i * 2654435761u);
    dout[i] = gm_round_f32(dt, ldexpf((float)((int32_t)(u >> 8) - (1 << 23)), -23 + (int)(i % 9) - 4));
  }
  for (int i = 0; i < B * T; i++) tok[i] = (int32_t)(((int64_t)i * 40503) % V);
}

int main(void) {
  gm_safetensors st;
  if (gm_st_open(&st, GOLDEN)) {
    CHECK(0, "%s", gm_errmsg());
    return test_done("test_embedding_bwd");
  }
  const struct { const char *name; gm_dtype dt; } dts[] = {{"f32", GM_F32}, {"f16", GM_F16}, {"bf16", GM_BF16}};
  const int Bs[] = {1, 2, 4}, Ts[] = {1, 5, 16};
  int cases = 0;
  float *dwte = malloc((size_t)V * C * sizeof(float)), *dwpe = malloc((size_t)P * C * sizeof(float));
  for (int d = 0; d < 3; d++)
    for (int bi = 0; bi < 3; bi++)
      for (int ti = 0; ti < 3; ti++) {
        const int B = Bs[bi], T = Ts[ti];
        char name[64];
        snprintf(name, sizeof name, "%s.%d.%d.tok", dts[d].name, B, T);
        int64_t nt = 0;
        float *ftok = test_st_f32(&st, name, &nt, NULL);
        snprintf(name, sizeof name, "%s.%d.%d.dout", dts[d].name, B, T);
        float *dout = test_st_f32(&st, name, NULL, NULL);
        snprintf(name, sizeof name, "%s.%d.%d.dwte", dts[d].name, B, T);
        float *gwte = test_st_f32(&st, name, NULL, NULL);
        snprintf(name, sizeof name, "%s.%d.%d.dwpe", dts[d].name, B, T);
        float *gwpe = test_st_f32(&st, name, NULL, NULL);
        if (!ftok || !dout || !gwte || !gwpe) {
          CHECK(0, "%s: %s B=%d T=%d missing", GOLDEN, dts[d].name, B, T);
          free(ftok), free(dout), free(gwte), free(gwpe);
          continue;
        }
        int32_t tok[64];
        for (int i = 0; i < B * T; i++) tok[i] = (int32_t)ftok[i];
        gm_profile prof;
        gm_profile_get("hf", dts[d].dt, &prof);
        for (int threads = 1; threads <= 2; threads++) {
          gm_op_ctx c;
          gm_op_ctx_init(&c, &prof, threads, NULL, NULL);
          memset(dwte, 0xff, (size_t)V * C * sizeof(float));
          memset(dwpe, 0xff, (size_t)P * C * sizeof(float));
          CHECK(gm_op_embedding_bwd(&c, dwte, dwpe, dout, tok, B, T, 0, C, V, P) == 0, "%s", gm_errmsg());
          int bw = test_count_diff(dwte, gwte, (size_t)V * C), bp = test_count_diff(dwpe, gwpe, (size_t)P * C);
          CHECK(bw == 0 && bp == 0, "%s B=%d T=%d, %d threads: dwte differs from torch in %d of %d, dwpe in %d of %d",
                dts[d].name, B, T, threads, bw, V * C, bp, P * C);
          // each output alone
          memset(dwte, 0, (size_t)V * C * sizeof(float));
          CHECK(gm_op_embedding_bwd(&c, dwte, NULL, dout, tok, B, T, 0, C, V, P) == 0, "dwte alone");
          CHECK(test_count_diff(dwte, gwte, (size_t)V * C) == 0, "%s B=%d T=%d: dwte alone differs", dts[d].name, B, T);
          memset(dwpe, 0, (size_t)P * C * sizeof(float));
          CHECK(gm_op_embedding_bwd(&c, NULL, dwpe, dout, tok, B, T, 0, C, V, P) == 0, "dwpe alone");
          CHECK(test_count_diff(dwpe, gwpe, (size_t)P * C) == 0, "%s B=%d T=%d: dwpe alone differs", dts[d].name, B, T);
        }
        printf("  %-4s B = %d, T = %2d: dwte, dwpe bit-identical to torch (1 and 2 threads)\n", dts[d].name, B, T);
        cases++;
        free(ftok), free(dout), free(gwte), free(gwpe);
      }
  CHECK(cases == 27, "only %d of 27 cases", cases);

  // larger batches: ATen's cascade sum over the batch (and, past 32768 elements, its parallel sum)
  static const int big[][3] = {{64, 5, 40}, {48, 15, 50}, {20, 3, 8}, {17, 1, 6}, {64, 2, 16}};
  int big_cases = 0;
  for (int d = 0; d < 3; d++)
    for (int k = 0; k < 5; k++) {
      const int B = big[k][0], T = big[k][1], c = big[k][2];
      char name[80];
      snprintf(name, sizeof name, "%s.big.%d.%d.%d.dwte", dts[d].name, B, T, c);
      float *gwte = test_st_f32(&st, name, NULL, NULL);
      snprintf(name, sizeof name, "%s.big.%d.%d.%d.dwpe", dts[d].name, B, T, c);
      float *gwpe = test_st_f32(&st, name, NULL, NULL);
      float *dout = malloc((size_t)B * T * c * sizeof(float));
      float *w1 = malloc((size_t)V * c * sizeof(float)), *w2 = malloc((size_t)P * c * sizeof(float));
      int32_t *tok = malloc((size_t)B * T * sizeof(int32_t));
      if (!gwte || !gwpe) {
        CHECK(0, "%s: %s", GOLDEN, name);
      } else {
        hash_inputs(B, T, c, dts[d].dt, dout, tok);
        gm_profile prof;
        gm_profile_get("hf", dts[d].dt, &prof);
        for (int threads = 1; threads <= 2; threads++) {
          gm_op_ctx c1;
          gm_op_ctx_init(&c1, &prof, threads, NULL, NULL);
          CHECK(gm_op_embedding_bwd(&c1, w1, w2, dout, tok, B, T, 0, c, V, P) == 0, "%s", gm_errmsg());
          int bw = test_count_diff(w1, gwte, (size_t)V * c), bp = test_count_diff(w2, gwpe, (size_t)P * c);
          CHECK(bw == 0 && bp == 0, "%s B=%d T=%d C=%d, %d threads: dwte differs from torch in %d of %d, dwpe in %d of %d",
                dts[d].name, B, T, c, threads, bw, V * c, bp, P * c);
        }
        printf("  %-4s B = %2d, T = %2d, C = %2d: dwte, dwpe bit-identical to torch (1 and 2 threads)\n", dts[d].name, B, T,
               c);
        big_cases++;
      }
      free(gwte), free(gwpe), free(dout), free(w1), free(w2), free(tok);
    }
  CHECK(big_cases == 15, "only %d of 15 large cases", big_cases);
  gm_st_close(&st);

  // positions past wpe's rows fail; -0 gradients land as +0 (torch adds them onto zeros)
  gm_profile prof;
  gm_profile_get("hf", GM_F32, &prof);
  gm_op_ctx c;
  gm_op_ctx_init(&c, &prof, 1, NULL, NULL);
  float g[2 * C];
  for (int j = 0; j < 2 * C; j++) g[j] = -0.0f;
  int32_t tok2[2] = {3, 3};
  CHECK(gm_op_embedding_bwd(&c, dwte, dwpe, g, tok2, 1, 2, P - 1, C, V, P) != 0, "positions past P accepted");
  CHECK(gm_op_embedding_bwd(&c, dwte, dwpe, g, tok2, 1, 2, 0, C, V, P) == 0, "%s", gm_errmsg());
  CHECK(!signbit(dwte[3 * C]) && !signbit(dwpe[0]) && !signbit(dwpe[C]), "-0 gradients kept their sign");
  free(dwte), free(dwpe);

  // gm_op_embedding_bwd_tied == embedding_bwd into a scratch + residual_bwd (the autograd sum onto
  // lm_head's gradient), with -0, +-tiny and ordinary values in the lm_head gradient, every dtype,
  // 1 and 2 threads; tokens repeat and most rows are untouched (wide V)
  {
    enum { TV = 3000, TB = 3, TT = 7, TC = 24 };
    float *lm = malloc((size_t)TV * TC * sizeof(float)), *ref = malloc((size_t)TV * TC * sizeof(float));
    float *emb = malloc((size_t)TV * TC * sizeof(float)), *got = malloc((size_t)TV * TC * sizeof(float));
    float dout[TB * TT * TC];
    int32_t tok[TB * TT];
    for (int d = 0; d < 3; d++) {
      hash_inputs(TB, TT, TC, dts[d].dt, dout, tok);
      for (int i = 0; i < TB * TT; i++) tok[i] = (int32_t)(((int64_t)i * 977) % 11 * 271); // repeats, spread out
      for (size_t i = 0; i < (size_t)TV * TC; i++)
        lm[i] = i % 3 == 0 ? -0.0f : gm_round_f32(dts[d].dt, ldexpf((float)((int)(i * 2654435761u >> 20) - 2048), -12 - (int)(i % 5) * 30));
      gm_profile pr;
      gm_profile_get("hf", dts[d].dt, &pr);
      for (int threads = 1; threads <= 2; threads++) {
        gm_op_ctx ct;
        gm_op_ctx_init(&ct, &pr, threads, NULL, NULL);
        memcpy(ref, lm, (size_t)TV * TC * sizeof(float));
        CHECK(gm_op_embedding_bwd(&ct, emb, NULL, dout, tok, TB, TT, 0, TC, TV, P) == 0, "%s", gm_errmsg());
        CHECK(gm_op_residual_bwd(&ct, ref, emb, (size_t)TV * TC) == 0, "%s", gm_errmsg());
        memcpy(got, lm, (size_t)TV * TC * sizeof(float));
        CHECK(gm_op_embedding_bwd_tied(&ct, got, dout, tok, TB, TT, TC, TV) == 0, "%s", gm_errmsg());
        CHECK(memcmp(got, ref, (size_t)TV * TC * sizeof(float)) == 0, "%s, %d threads: the tied sum differs from scratch + add",
              dts[d].name, threads);
      }
    }
    printf("  tied: lm_head's gradient + the embedding's without a (V, C) scratch, bit-identical to scratch + add\n");
    free(lm), free(ref), free(emb), free(got);
  }
  return test_done("test_embedding_bwd");
}
