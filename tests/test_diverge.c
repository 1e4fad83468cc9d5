// gm_diverge_*: identical profiles give zero differences and no first_outside; hf vs meg agree
// within f32's tolerance in f32 and part in f16; one changed knob (scores matmul-div -> baddbmm)
// first adds error at the scores point; the streaming dump round-trips through gm_st_open and
// compares equal to itself with --against; the transformers golden dump (tools/ref/
// gen_diverge_goldens.py) matches hf f16 on `base` bit for bit; bad dumps fail naming the tensor.
#include "gptmeg/diverge.h"
#include "gptmeg/npy.h"
#include "gptmeg/safetensors.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BASE GPTMEG_SOURCE_DIR "/tests/golden/model/base"
#define GOLDEN GPTMEG_SOURCE_DIR "/tests/golden/diverge/base_hf_f16.safetensors"

static int32_t *tokens;
static int TB, TT;

static void read_tokens(void) {
  gm_npy a;
  if (gm_npy_read(BASE "/tokens.npy", GM_BF16, &a)) { CHECK(0, "%s", gm_errmsg()); exit(1); }
  TB = (int)a.shape[0];
  TT = (int)a.shape[1];
  tokens = malloc(a.count * sizeof(int32_t));
  for (size_t i = 0; i < a.count; i++) tokens[i] = a.dtype == GM_I64 ? (int32_t)((int64_t *)a.data)[i] : ((int32_t *)a.data)[i];
  gm_npy_free(&a);
}

static int load(gm_dtype dt, gm_gpt2 *m) {
  if (gm_gpt2_load(m, BASE) || gm_gpt2_to_dtype(m, dt)) { CHECK(0, "%s", gm_errmsg()); return -1; }
  return 0;
}

static bool all_zero(const gm_dv_result *r, bool added) {
  for (int i = 0; i < r->n_rows; i++) {
    const gm_dv_row *R = &r->rows[i];
    if (R->total.max_abs != 0 || R->total.rms_rel != 0 || R->total.n_outside || R->total.max_ulp) return false;
    if (added && (R->added.max_abs != 0 || R->inherited.max_abs != 0)) return false;
  }
  return true;
}

static void test_points(void) {
  gm_gpt2_config c;
  gm_config_tiny(&c);
  CHECK(gm_dv_n_rows(2) == 27, "rows %d", gm_dv_n_rows(2));
  for (int i = 0; i < gm_dv_n_rows(3); i++) {
    int l;
    gm_point p;
    gm_dv_row_point(3, i, &l, &p);
    CHECK(gm_dv_row_index(3, l, p) == i, "row %d", i);
  }
  char n[32];
  gm_dv_tensor_name(1, GM_PT_PROBS, n, sizeof n);
  CHECK(!strcmp(n, "h.1.probs"), "%s", n);
  int64_t s[4];
  CHECK(gm_dv_shape(&c, 2, 5, GM_PT_SCORES, s) == 4 && s[0] == 2 && s[1] == 4 && s[2] == 5 && s[3] == 5, "scores shape");
  CHECK(gm_dv_shape(&c, 2, 5, GM_PT_QKV, s) == 2 && s[0] == 10 && s[1] == 192, "qkv shape");
}

static void test_identical_and_hf_meg(void) {
  gm_gpt2 m32, m16;
  if (load(GM_F32, &m32) || load(GM_F16, &m16)) return;
  gm_profile a, b;
  gm_dv_opts o = {0};
  gm_dv_result r;
  for (int d = 0; d < 2; d++) {
    gm_gpt2 *m = d ? &m16 : &m32;
    gm_profile_get("hf", m->dtype, &a);
    if (gm_diverge_run(m, &a, m, &a, tokens, TB, TT, &o, &r)) { CHECK(0, "%s", gm_errmsg()); continue; }
    CHECK(all_zero(&r, true), "hf vs hf %s: non-zero difference", gm_dtype_name(m->dtype));
    CHECK(r.first_outside == -1 && r.top1_differ == 0, "hf vs hf: first_outside %d", r.first_outside);
    gm_dv_result_free(&r);
  }
  // hf vs meg: within f32's tolerance in f32, outside f16's somewhere in f16
  gm_profile_get("hf", GM_F32, &a);
  gm_profile_get("meg", GM_F32, &b);
  if (!gm_diverge_run(&m32, &a, &m32, &b, tokens, TB, TT, &o, &r)) {
    CHECK(r.first_outside == -1, "hf vs meg f32: first outside at row %d", r.first_outside);
    CHECK(r.cmp_dtype == GM_F32 && r.tol.rtol == gm_default_tolerance(GM_F32).rtol, "f32 tolerance");
    CHECK(r.rows[r.n_rows - 1].total.max_abs > 0, "hf vs meg f32: logits identical (expected a small difference)");
    printf("  hf vs meg f32: logits max |diff| %.3g\n", r.rows[r.n_rows - 1].total.max_abs);
    gm_dv_result_free(&r);
  } else CHECK(0, "%s", gm_errmsg());
  gm_profile_get("hf", GM_F16, &a);
  gm_profile_get("meg", GM_F16, &b);
  if (!gm_diverge_run(&m16, &a, &m16, &b, tokens, TB, TT, &o, &r)) {
    CHECK(r.first_outside >= 0, "hf vs meg f16: every point within the f16 tolerance");
    if (r.first_outside >= 0)
      printf("  hf vs meg f16: first outside at %d %s, logits max |diff| %.3g\n", r.rows[r.first_outside].layer,
             gm_point_name(r.rows[r.first_outside].point), r.rows[r.n_rows - 1].total.max_abs);
    // added + inherited: at embed nothing differs; the total is never larger than added + inherited
    for (int i = 0; i < r.n_rows; i++) {
      const gm_dv_row *R = &r.rows[i];
      CHECK(R->total.max_abs <= R->added.max_abs + R->inherited.max_abs + 1e-12, "row %d: triangle", i);
    }
    gm_dv_result_free(&r);
  } else CHECK(0, "%s", gm_errmsg());
  // f32 vs f16: compared in f16
  gm_profile_get("hf", GM_F32, &a);
  if (!gm_diverge_run(&m32, &a, &m16, &b, tokens, TB, TT, &o, &r)) {
    CHECK(r.cmp_dtype == GM_F16, "f32 vs f16 compared in %s", gm_dtype_name(r.cmp_dtype));
    CHECK(r.rows[0].total.max_abs > 0 && r.rows[0].added.max_abs == r.rows[0].total.max_abs, "embed: rounding to f16 is all added");
    gm_dv_result_free(&r);
  } else CHECK(0, "%s", gm_errmsg());
  gm_gpt2_free(&m32);
  gm_gpt2_free(&m16);
}

// One knob changed: the forced run shows no added error before the scores point, some at it.
static void test_added_knob(void) {
  gm_gpt2 m;
  if (load(GM_F16, &m)) return;
  gm_profile a, b;
  gm_profile_get("hf", GM_F16, &a);
  gm_profile_get("hf", GM_F16, &b);
  CHECK(gm_profile_set_knob(&b, "scores", "baddbmm") == 0, "%s", gm_errmsg());
  gm_dv_opts o = {0};
  gm_dv_result r;
  if (gm_diverge_run(&m, &a, &m, &b, tokens, TB, TT, &o, &r)) { CHECK(0, "%s", gm_errmsg()); gm_gpt2_free(&m); return; }
  int first = -1;
  for (int i = 0; i < r.n_rows && first < 0; i++)
    if (r.rows[i].added.max_abs > 0) first = i;
  CHECK(first >= 0 && r.rows[first].point == GM_PT_SCORES && r.rows[first].layer == 0, "first added at row %d", first);
  // every op other than scores adds nothing: B forced onto A's values computes A's values
  for (int i = 0; i < r.n_rows; i++)
    if (r.rows[i].point != GM_PT_SCORES) CHECK(r.rows[i].added.max_abs == 0, "row %d (%s) adds %g", i, gm_point_name(r.rows[i].point), r.rows[i].added.max_abs);
  CHECK(r.rows[first].inherited.max_abs == 0, "scores of layer 0 inherit nothing");
  // the same through --ulp: 1 ULP of f16 is tolerated
  gm_dv_result_free(&r);
  o.ulp = 1000000;
  if (!gm_diverge_run(&m, &a, &m, &b, tokens, TB, TT, &o, &r)) {
    CHECK(r.first_outside == -1, "with a huge ULP tolerance nothing is outside");
    gm_dv_result_free(&r);
  }
  gm_gpt2_free(&m);
}

static void test_dump_against(void) {
  gm_gpt2 m;
  if (load(GM_F16, &m)) return;
  gm_profile p;
  gm_profile_get("megatron", GM_F16, &p);
  char path[128];
  snprintf(path, sizeof path, "/tmp/gptmeg_test_diverge_%ld.safetensors", (long)getpid());
  CHECK(gm_diverge_dump(&m, &p, tokens, TB, TT, 1, path) == 0, "%s", gm_errmsg());
  gm_safetensors st;
  if (gm_st_open(&st, path)) { CHECK(0, "%s", gm_errmsg()); gm_gpt2_free(&m); return; }
  CHECK(st.n_tensors == gm_dv_n_rows(m.cfg.n_layer), "%d tensors", st.n_tensors);
  const gm_st_tensor *lg = gm_st_find(&st, "logits"), *sc = gm_st_find(&st, "h.1.scores");
  CHECK(lg && lg->ndim == 2 && lg->shape[0] == TB * TT && lg->shape[1] == m.cfg.vocab_size, "logits shape");
  CHECK(sc && sc->ndim == 4 && sc->shape[1] == m.cfg.n_head && sc->shape[3] == TT, "scores shape");
  if (lg) { // the dumped logits are the forward's
    float *x = malloc(lg->numel * sizeof(float)), *y = malloc(lg->numel * sizeof(float));
    gm_st_read_f32(lg, x);
    CHECK(gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &p, .tokens = tokens, .B = TB, .T = TT, .logits = y, .threads = 1}) == 0, "%s", gm_errmsg());
    CHECK(memcmp(x, y, lg->numel * sizeof(float)) == 0, "dumped logits differ from the forward's");
    free(x);
    free(y);
  }
  gm_st_close(&st);
  gm_dv_opts o = {0};
  gm_dv_result r;
  if (!gm_diverge_against(&m, &p, tokens, TB, TT, path, &o, &r)) {
    CHECK(all_zero(&r, false) && r.first_outside == -1 && r.against, "the run against its own dump differs");
    gm_dv_result_free(&r);
  } else CHECK(0, "%s", gm_errmsg());
  // a dump of other shapes: one clear error naming the tensor
  CHECK(gm_diverge_against(&m, &p, tokens, 1, TT / 2, path, &o, &r) != 0 && strstr(gm_errmsg(), "'embed'"), "%s", gm_errmsg());
  // a dump through a run's opts (diverge --dump) holds run A
  char path2[160];
  snprintf(path2, sizeof path2, "%s.b", path);
  gm_profile hf;
  gm_profile_get("hf", GM_F16, &hf);
  o.dump_path = path2;
  if (!gm_diverge_run(&m, &p, &m, &hf, tokens, TB, TT, &o, &r)) {
    gm_dv_result_free(&r);
    o.dump_path = NULL;
    if (!gm_diverge_against(&m, &p, tokens, TB, TT, path2, &o, &r)) { CHECK(all_zero(&r, false), "run A's dump differs"); gm_dv_result_free(&r); }
    else CHECK(0, "%s", gm_errmsg());
  } else CHECK(0, "%s", gm_errmsg());
  unlink(path);
  unlink(path2);
  // no half-written file on a failed dump (a bad token aborts the forward after the header)
  int32_t *bad = malloc((size_t)TB * TT * sizeof(int32_t));
  memcpy(bad, tokens, (size_t)TB * TT * sizeof(int32_t));
  bad[TB * TT - 1] = m.cfg.vocab_size;
  CHECK(gm_diverge_dump(&m, &p, bad, TB, TT, 1, path) != 0, "bad token accepted");
  CHECK(access(path, F_OK) != 0, "a failed dump left %s", path);
  free(bad);
  gm_gpt2_free(&m);
}

// transformers' own activations (tools/ref/gen_diverge_goldens.py): hf f16 on base is bit for bit.
static void test_golden(void) {
  gm_gpt2 m;
  if (load(GM_F16, &m)) return;
  gm_profile p;
  gm_profile_get("hf", GM_F16, &p);
  gm_dv_opts o = {0};
  gm_dv_result r;
  if (!gm_diverge_against(&m, &p, tokens, TB, TT, GOLDEN, &o, &r)) {
    const gm_dv_row *lg = &r.rows[r.n_rows - 1];
    CHECK(lg->point == GM_PT_LOGITS && lg->total.max_abs == 0 && lg->total.max_ulp == 0, "logits max_abs %g", lg->total.max_abs);
    CHECK(r.first_outside == -1 && r.top1_differ == 0, "golden: first outside at row %d", r.first_outside);
    gm_dv_result_free(&r);
  } else CHECK(0, "%s", gm_errmsg());
  gm_gpt2_free(&m);
}

int main(void) {
  read_tokens();
  test_points();
  test_identical_and_hf_meg();
  test_added_knob();
  test_dump_against();
  test_golden();
  free(tokens);
  return test_done("test_diverge");
}
