// Softmax of one score row with a masked tail, in PyTorch 2.15's CPU order (ATen's last-dimension
// softmax; contract in nn.h), measured against torch's own f32, f16 and bf16 softmax
// (tests/test_softmax.c, the profile goldens, tests/test_target_aten.c per torch CPU target).
// W is the lanes of ATen's Vectorized<float> under the active torch CPU target's capability: 16
// (AVX512), 8 (AVX2: the avx2 target, measured under ATEN_CPU_CAPABILITY=avx2):
//   m    the row's maximum, masked entries included (exact in any order)
//   exp  SLEEF's expf_u10 of s - m (ATen's Vectorized<float>::exp()); the reduced-type kernel
//        (f16/bf16 rows) takes libm's expf for the last total % W elements instead
//   sum  W lanes, element j into lane j % W in increasing j, folded lane += lane+W/2, ..., +1
//        (vec_reduce_all; AVX2's three shuffles fold in the same order); f32 rows: below W
//        elements one by one, else the tail goes into its lanes; f16/bf16 rows: the last
//        total % W elements are added one by one after the fold
//   out  e * (1 / sum)
// The exp's SLEEF builds (AVX-512, AVX2, scalar with FMA) give the same bits, so GPTMEG_SIMD
// changes nothing; a CPU without FMA runs SLEEF's non-FMA scalar build, whose bits differ in the
// last place for some inputs.
#include "gptmeg/cpu.h"
#include "gptmeg/kernels.h"
#include "gptmeg/target.h"
#include "kernels/softmax/softmax_isa.h"

#include <math.h>
#include <sleef.h>
#include <string.h>

// libsleef exports its scalar FMA build always; sleef.h declares it only under FP_FAST_FMA (-mfma).
float Sleef_expf1_u10purecfma(float);
float Sleef_logf1_u10purecfma(float);

// One exp, SLEEF's scalar build: the FMA one wherever the CPU has FMA (fma = gm_cpu_has(GM_CPU_FMA)),
// whatever GPTMEG_SIMD says (it caps the vector width; the non-FMA build's bits differ).
static float exp1(bool fma, float x) { return fma ? Sleef_expf1_u10purecfma(x) : Sleef_expf1_u10purec(x); }

static void exp_shift_scalar(float *s, int n, float m) {
  const bool fma = gm_cpu_has(GM_CPU_FMA);
  for (int j = 0; j < n; j++) s[j] = exp1(fma, s[j] - m);
}

static void div_row_scalar(float *x, int n, float d) {
  for (int j = 0; j < n; j++) x[j] = x[j] / d;
}

static float row_max_scalar(const float *s, int n) {
  float m = -INFINITY;
  for (int j = 0; j < n; j++)
    if (s[j] > m) m = s[j];
  return m;
}

static void lane_acc_scalar(float *lane, const float *e, int w, int j0, int n, int end, float rest) {
  for (int j = j0; j < end; j++) lane[j % w] = lane[j % w] + (j < n ? e[j] : rest);
}

static void scale_row_scalar(float *s, int n, float inv) {
  for (int j = 0; j < n; j++) s[j] = s[j] * inv;
}

static void log_out_scalar(const float *x, float *y, int n, float m, float l) {
  for (int j = 0; j < n; j++) y[j] = (x[j] - m) - l;
}

static void nll_grad_row_scalar(float *d, const float *e, int n, float s, int t, float g) {
  for (int j = 0; j < n; j++) d[j] = fmaf(-e[j], s, j == t ? g : 0.0f);
}

// The bodies of one SIMD level (softmax_isa.h), chosen per call from gm_cpu_simd().
typedef struct {
  void (*exp_shift)(float *s, int n, float m);
  void (*div_row)(float *x, int n, float d);
  float (*row_max)(const float *s, int n);
  void (*lane_acc)(float *lane, const float *e, int w, int j0, int n, int end, float rest);
  void (*scale_row)(float *s, int n, float inv);
  void (*log_out)(const float *x, float *y, int n, float m, float l);
  void (*nll_grad_row)(float *d, const float *e, int n, float s, int t, float g);
} softmax_isa;

static const softmax_isa isa_scalar = {exp_shift_scalar, div_row_scalar,   row_max_scalar, lane_acc_scalar,
                                       scale_row_scalar, log_out_scalar,   nll_grad_row_scalar};
static const softmax_isa isa_avx2 = {gm_exp_shift_avx2, gm_div_row_avx2, gm_row_max_avx2,     gm_lane_acc_avx2,
                                     gm_scale_row_avx2, gm_log_out_avx2, gm_nll_grad_row_avx2};
static const softmax_isa isa_avx512 = {gm_exp_shift_avx512, gm_div_row_avx2, gm_row_max_avx2,     gm_lane_acc_avx2,
                                       gm_scale_row_avx2,   gm_log_out_avx2, gm_nll_grad_row_avx2};

static const softmax_isa *isa_now(void) {
  switch (gm_cpu_simd()) {
  case GM_SIMD_AVX512: return &isa_avx512;
  case GM_SIMD_AVX2: return &isa_avx2;
  default: return &isa_scalar;
  }
}

void gm_exp_shift_row(float *s, int n, float m) { isa_now()->exp_shift(s, n, m); }

// e_j of the row: the stored exps below n, then the masked entries' exp (rest_vec below vec_end,
// rest_tail from there).
static inline float elem(const float *e, int n, int vec_end, float rest_vec, float rest_tail, int j) {
  return j < n ? e[j] : (j < vec_end ? rest_vec : rest_tail);
}

// Lanes j % w over j < end (w = 16 or 8, end >= w), folded as vec_reduce_all.
static float lane_sum(const softmax_isa *isa, int w, const float *e, int n, int end, float rest_vec, float rest_tail) {
  float lane[16];
  for (int k = 0; k < w; k++) lane[k] = elem(e, n, end, rest_vec, rest_tail, k);
  isa->lane_acc(lane, e, w, w, n, end, rest_vec); // below end, elem is e[j] or rest_vec
  for (int h = w / 2; h >= 1; h /= 2)
    for (int k = 0; k < h; k++) lane[k] = lane[k] + lane[k + h];
  return lane[0];
}

// The lanes of ATen's Vectorized<float> under the active torch CPU target.
static int aten_lanes(void) {
  return gm_torch_target_get_info(gm_torch_target_active())->aten == GM_ATEN_AVX512 ? 16 : 8;
}

void gm_softmax_row_f32(float *s, int n, int n_masked, float mask_value, bool reduced) {
  const softmax_isa *isa = isa_now();
  float m = isa->row_max(s, n);
  if (n_masked > 0 && mask_value > m) m = mask_value;
  const int w = aten_lanes();
  const int total = n + n_masked, vec_end = reduced ? total - total % w : total;
  int n_vec = n < vec_end ? n : vec_end;
  isa->exp_shift(s, n_vec, m);
  for (int j = n_vec; j < n; j++) s[j] = expf(s[j] - m);
  float rest_vec = n_masked > 0 ? exp1(gm_cpu_has(GM_CPU_FMA), mask_value - m) : 0.0f, rest_tail = n_masked > 0 ? expf(mask_value - m) : 0.0f;
  float sum;
  if (!reduced) {
    if (total < w) {
      sum = elem(s, n, total, rest_vec, rest_vec, 0);
      for (int j = 1; j < total; j++) sum = sum + elem(s, n, total, rest_vec, rest_vec, j);
    } else {
      sum = lane_sum(isa, w, s, n, total, rest_vec, rest_vec);
    }
  } else {
    sum = vec_end > 0 ? lane_sum(isa, w, s, n, vec_end, rest_vec, rest_tail) : 0.0f;
    for (int j = vec_end; j < total; j++) sum = sum + elem(s, n, vec_end, rest_vec, rest_tail, j);
  }
  isa->scale_row(s, n, 1.0f / sum);
}

void gm_div_row_f32(float *x, int n, float d) { isa_now()->div_row(x, n, d); }

// log_softmax of one f32 row in ATen's order (the training loss's; contract in kernels.h). The
// vector pieces skip NaN in the maximum, so a NaN anywhere (which makes the sum NaN) sends the row
// to the scalar definition below, whose NaN propagation is ATen's.
static void log_softmax_scalar(const float *x, float *logp, int V, int W, float *e) {
  float m = x[0];
  for (int j = 1; j < V; j++) m = (x[j] > m || isnan(x[j])) && !isnan(m) ? x[j] : m;
  memcpy(e, x, sizeof(float) * (size_t)V);
  gm_exp_shift_row(e, V, m);
  float s;
  if (V < W) {
    s = e[0];
    for (int j = 1; j < V; j++) s += e[j];
  } else {
    float lane[16] = {0};
    for (int k = 0; k < W; k++) lane[k] = e[k];
    lane_acc_scalar(lane, e, W, W, V, V, 0.0f);
    for (int h = W / 2; h >= 1; h /= 2)
      for (int k = 0; k < h; k++) lane[k] += lane[k + h];
    s = lane[0];
  }
  log_out_scalar(x, logp, V, m, Sleef_logf1_u10purecfma(s));
}

void gm_log_softmax_row_f32(const float *x, float *logp, int V, int W, float *e) {
  const softmax_isa *isa = isa_now();
  if (V < W || isa == &isa_scalar) {
    log_softmax_scalar(x, logp, V, W, e);
    return;
  }
  // (the vector maximum may be the other zero than the scalar one when the row holds both; both
  // zeros then add 1 to the sum, so l > 0 and (x - m) - l is -l whichever zero m is)
  const float m = isa->row_max(x, V);
  memcpy(e, x, sizeof(float) * (size_t)V);
  isa->exp_shift(e, V, m);
  float lane[16];
  for (int k = 0; k < W; k++) lane[k] = e[k];
  isa->lane_acc(lane, e, W, W, V, V, 0.0f);
  for (int h = W / 2; h >= 1; h /= 2)
    for (int k = 0; k < h; k++) lane[k] = lane[k] + lane[k + h];
  if (isnan(lane[0])) { // a NaN in the row (or inf - inf): the scalar definition decides
    log_softmax_scalar(x, logp, V, W, e);
    return;
  }
  isa->log_out(x, logp, V, m, Sleef_logf1_u10purecfma(lane[0]));
}

void gm_nll_grad_row_f32(float *d, const float *e, int n, float s, int t, float g) { isa_now()->nll_grad_row(d, e, n, s, t, g); }
