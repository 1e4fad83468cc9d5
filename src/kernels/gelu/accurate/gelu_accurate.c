// Accurate mode (gptmeg's own): the same real function as the written formula, rewritten so no
// step cancels (x*s with s = 1/(1+exp(-2z)) for the tanh forms, 0.5*x*erfc(-x/sqrt2) for erf,
// x/(1+exp(-bx)) for the sigmoid; derivatives likewise), then rounded once to the dtype.
//   f32, f16, bf16: f32 values widened to f64 lanes, own exp (Taylor 11 after ln2 reduction) and
//   erfcx (piecewise degree-9 polynomials) in f64 with explicit FMAs; AVX-512 or AVX2 chosen at run
//   time, the scalar fallback performs the same operations, so every path gives the same bits.
//   f32 forward runs in f32 lanes instead (gelu_accurate_f32.c for the tanh and sigmoid families,
//   gelu_accurate_f32_erf.c for the erf family), the exponent's argument as f32 pairs; so does the
//   f32 backward of the erf family and the tanh forms (gelu_accurate_f32_bwd.c; quick_gelu's stays
//   in f64 lanes).
//   f16/bf16 round the f64 value once to the dtype (no pass through f32); their forward looks the
//   result up in a table of those results for all 65536 inputs (gelu_accurate_table.c, same bits).
//   Worst error vs exact: f32 forward <= 2 ULP, backward <= 2 ULP (erf family and quick_gelu 1),
//   certified on every f32 input with dy = 1
//   (docs/numerics.md 6.2); f16/bf16 exhaustively in tests/test_gelu_accurate.c.
//   f64: scalar long double evaluation of the same forms (gelu_exact_ld.c), rounded once.
// Elementwise with a fixed block split: identical bits for any thread count.
// The ISA is gm_cpu_simd()'s (the CPU's level, capped by GPTMEG_SIMD=scalar|avx2|avx512 for tests).
#include "gptmeg/cpu.h"
#include "kernels/gelu/gelu_math.h"

#include <stdlib.h>
#include <string.h>

const double gm_gelu_erfcx_table[GELU_ERFCX_DEG + 1][32] = {
    {0.7703465477362007, 0.5069376502938031, 0.36782291645246334, 0.2849722347374554, 0.231087258730396, 0.19366209627906972, 0.16633534842682218, 0.14558972127503864, 0.12934527478598795, 0.11630270721024732, 0.10561273546889181, 0.09669877816971392, 0.08915663178727438, 0.08269505677505307, 0.0770991803512599, 0.07220717081466976, 0.06789491988272056, 0.06406571555128014, 0.06064311514114366, 0.05756592336481547, 0.05478458695295453, 0.05225856230371755, 0.04995436401029934, 0.04784409793533709, 0.045904344454949904, 0.04411529834806522, 0.042460099233199176, 0.04092430517394598, 0.039495475046439, 0.039495475046439, 0.039495475046439, 0.039495475046439},
    {-0.7432058932320675, -0.36797269165602925, -0.20882187596464263, -0.13097634551449072, -0.08848650280875026, -0.0632376375606351, -0.04719940232117044, -0.03645625753272355, -0.02894433141461534, -0.023503448598163154, -0.01944544467214865, -0.016343218143802483, -0.0139212697545827, -0.01199590063229627, -0.010441052002244, -0.009168019468131287, -0.00811298903062329, -0.007229144948110042, -0.006481536984354881, -0.005843661481610977, -0.005295134559944755, -0.004820077565585235, -0.004405976863777447, -0.004042865615091024, -0.0037227279492399825, -0.0034390592198495565, -0.003186537415734447, -0.0029607748119981504, -0.0027581282720010114, -0.0027581282720010114, -0.0027581282720010114, -0.0027581282720010114},
    {0.5845450702611089, 0.23095813102470586, 0.10679557141479447, 0.05576363007186446, 0.03199262740738877, 0.01975859298649311, 0.012937290882784159, 0.008878755527252027, 0.006331866273847611, 0.004661326368962995, 0.00352415094010767, 0.002725273842848053, 0.0021486958211318023, 0.0017227275070529008, 0.0014015533349907388, 0.0011550199366522095, 0.0009627603800783785, 0.000810697255317259, 0.0006888980358609966, 0.0005902239191084352, 0.0005094577135207921, 0.00044272847367627483, 0.0003871242928030544, 0.0003404269580175561, 0.0003009270767601167, 0.0002672932949833687, 0.00023847847471775152, 0.00021365150897140873, 0.00019214717042458781, 0.00019214717042458781, 0.00019214717042458781, 0.00019214717042458781},
    {-0.3980464147736718, -0.12983606180778126, -0.05021827436968301, -0.022259995236972377, -0.011002060755566099, -0.0059343378967986775, -0.0034354713008561133, -0.0021072828701542935, -0.0013559331670994043, -0.0009080988970280729, -0.0006291014910419428, -0.00044859569827781777, -0.00032794724833623405, -0.00024499330645791123, -0.0001865268823732799, -0.00014440997271732915, -0.00011347726331752673, -9.036264272253815e-05, -7.282010176035464e-05, -5.931884686910334e-05, -4.8795330904390683e-05, -4.049764904349912e-05, -3.388571316204309e-05, -2.8565905589817655e-05, -2.424750595236268e-05, -2.071313920773303e-05, -1.7798417149489957e-05, -1.537770909418515e-05, -1.335406230042195e-05, -1.335406230042195e-05, -1.335406230042195e-05, -1.335406230042195e-05},
    {0.24251726742144464, 0.06679060987747207, 0.022011374714963765, 0.008404321154801074, 0.00361899577880797, 0.001719581991458427, 0.0008860046074768575, 0.000488222391471697, 0.0002845751600572468, 0.00017392830523655162, 0.00011068405654603076, 7.29242890778862e-05, 4.951275960603533e-05, 3.45113442738094e-05, 2.461671891330496e-05, 1.7921324057247687e-05, 1.3286478860119642e-05, 1.001206575066465e-05, 7.656047290630136e-06, 5.9325810683660285e-06, 4.652785876004026e-06, 3.6893732297004102e-06, 2.9550098652647717e-06, 2.3887836687447007e-06, 1.9475644219304706e-06, 1.6003850424474592e-06, 1.324723743545455e-06, 1.1040044632088308e-06, 9.258913218062135e-07, 9.258913218062135e-07, 9.258913218062135e-07, 9.258913218062135e-07},
    {-0.13496710308894094, -0.03189728597054881, -0.009081630987610344, -0.0030209752163786762, -0.0011437285954716385, -0.0004821951104822144, -0.00022238257615345023, -0.00011057957682030951, -5.8595500814056015e-05, -3.277578134165689e-05, -1.9204078748924043e-05, -1.1712414928258884e-05, -7.397000559315716e-06, -4.816693165110163e-06, -3.2222681644666806e-06, -2.2078845441925796e-06, -1.5455251081572738e-06, -1.1028269730101917e-06, -8.006657355455607e-07, -5.904725851189216e-07, -4.417102726978868e-07, -3.347547313147704e-07, -2.5674087217999524e-07, -1.990789935220474e-07, -1.559367139514557e-07, -1.232919669278546e-07, -9.833101922343018e-08, -7.90590901780121e-08, -6.40443859811918e-08, -6.40443859811918e-08, -6.40443859811918e-08, -6.40443859811918e-08},
    {0.06956787709032396, 0.014286186725900043, 0.00355264178887919, 0.0010391173793422336, 0.0003485164253842416, 0.0001311770480483888, 5.4419068308561534e-05, 2.451590557111411e-05, 1.1847949591113433e-05, 6.081060997221835e-06, 3.2875263182023094e-06, 1.8592920029246022e-06, 1.0938312987842852e-06, 6.662198850225854e-07, 4.184239627050848e-07, 2.700724629955469e-07, 1.7863198263161094e-07, 1.2077643827637787e-07, 8.329633288593579e-08, 5.84910751290512e-08, 4.1751832943425126e-08, 3.025327274517496e-08, 2.2225007444188003e-08, 1.65351584403705e-08, 1.2446554483969906e-08, 9.470818630950505e-09, 7.2792444574636345e-09, 5.647323193633898e-09, 4.4196063538490735e-09, 4.4196063538490735e-09, 4.4196063538490735e-09, 4.4196063538490735e-09},
    {-0.033581745053010384, -0.006050461966833372, -0.0013256328448626215, -0.00034350807208012975, -0.00010271607641799351, -3.469746802504491e-05, -1.300434545463223e-05, -5.326587895784791e-06, -2.354573737301654e-06, -1.1115584492452489e-06, -5.555546584724567e-07, -2.91836846492393e-07, -1.6015071357719033e-07, -9.134145968048148e-08, -5.3910622271483996e-08, -3.280543118697417e-08, -2.051686686582286e-08, -1.3151958608116183e-08, -8.621112557369582e-09, -5.766896680965976e-09, -3.929627424991442e-09, -2.7233901771793836e-09, -1.9169769950894043e-09, -1.3688009904727781e-09, -9.903911531583674e-10, -7.254267734345069e-10, -5.374301636424164e-10, -4.0239402759777734e-10, -3.042809442439455e-10, -3.042809442439455e-10, -3.042809442439455e-10, -3.042809442439455e-10},
    {0.015731447045166484, 0.0024924956775210206, 0.00048250252587523165, 0.00011109454077501562, 2.9699853339154748e-05, 9.02689971914837e-06, 3.0633063921396917e-06, 1.1429920501383447e-06, 4.6289142425467487e-07, 2.012702899676694e-07, 9.310720864544674e-08, 4.5473535840182424e-08, 2.329678910092402e-08, 1.245133463287315e-08, 6.910255785611663e-09, 3.9664362214227626e-09, 2.346650932059199e-09, 1.4267724279230342e-09, 8.892122460675173e-10, 5.667997276663923e-10, 3.6878791468101164e-10, 2.4451082951006743e-10, 1.6494245629655164e-10, 1.1305580266163759e-10, 7.86423536400471e-11, 5.5456948907407384e-11, 3.960699412552845e-11, 2.8623761178561815e-11, 2.091604035173285e-11, 2.091604035173285e-11, 2.091604035173285e-11, 2.091604035173285e-11},
    {-0.006785727714354466, -0.0009580116689668863, -0.00016569608397905286, -3.4216481556351035e-05, -8.241606912657693e-06, -2.2682109005195695e-06, -7.005908995194524e-07, -2.3915077335447346e-07, -8.904568417150884e-08, -3.57651127709426e-08, -1.535050771621104e-08, -6.984523123324959e-09, -3.346250496253322e-09, -1.6783418144565297e-09, -8.769168269477253e-10, -4.752815660397753e-10, -2.662377793299392e-10, -1.536519708842256e-10, -9.11083626115403e-11, -5.537101305289683e-11, -3.441842044184436e-11, -2.184099644563456e-11, -1.4125660487766292e-11, -9.297398886214633e-12, -6.219578804467256e-12, -4.223741592145254e-12, -2.9087904572016634e-12, -2.0295202073301044e-12, -1.4333983991440848e-12, -1.4333983991440848e-12, -1.4333983991440848e-12, -1.4333983991440848e-12},
};

static gelu_acc_params params_of(gm_gelu_variant v) {
  gelu_acc_params p;
  memset(&p, 0, sizeof p);
  p.fam = gelu_family_of(v);
  p.clip10 = v == GM_GELU_10;
  p.k = 0.044715;
  switch (p.fam) {
  case GELU_FAM_ERF: p.lo = -20; p.hi = 20; break;
  case GELU_FAM_SIGMOID: p.a = 1.702; p.lo = -130; p.hi = 130; break;
  default:
    p.lo = -20; p.hi = 20;
    switch (v) {
    case GM_GELU_FAST: p.a = 0.7978845608; break;
    case GM_GELU_MEGATRON: p.a = 0.79788456; break;
    case GM_OPENAI_GELU: p.a = 0.7978845608028654; break;
    default: p.a = 0.79788456080286535588; break; // sqrt(2/pi)
    }
    p.bwd32_set = v == GM_GELU_FAST ? 1 : v == GM_GELU_MEGATRON ? 2 : 0;
    if (v == GM_GELU_MEGATRON) { p.A = 0.79788456; p.B = 0.1070322243; }
    else { p.A = p.a; p.B = 3 * 0.044715 * p.a; }
  }
  return p;
}

// exp(a) for |a| <= 708: a = n*ln2 + r, |r| <= ln2/2, Taylor degree 11 by Horner with FMAs.
static double exp_core(double a) {
  double n = nearbyint(a * 1.4426950408889634);
  double r = fma(-n, 0x1.62e42fefa39efp-1, a); // ln2 = hi + lo
  r = fma(-n, 0x1.abc9e3b39803fp-56, r);
  double q = 1.0 / 39916800;
  q = fma(q, r, 1.0 / 3628800);
  q = fma(q, r, 1.0 / 362880);
  q = fma(q, r, 1.0 / 40320);
  q = fma(q, r, 1.0 / 5040);
  q = fma(q, r, 1.0 / 720);
  q = fma(q, r, 1.0 / 120);
  q = fma(q, r, 1.0 / 24);
  q = fma(q, r, 1.0 / 6);
  q = fma(q, r, 0.5);
  q = fma(q, r, 1.0);
  q = fma(q, r, 1.0);
  int64_t bits = ((int64_t)n + 1023) << 52;
  double scale;
  memcpy(&scale, &bits, 8);
  return q * scale;
}

const double gm_gelu_erf_root_taylor[5] = {0x1.b9d98fa5a3215p-2, 0x1.8d9a941de3ac5p-2, -0x1.2a2ef9bb865aep-6,
                                         -0x1.d2fa4c17c7e84p-4, -0x1.e4088244f901dp-7};

static double one(const gelu_acc_params *p, int deriv, double x, double dy) {
  if (isnan(x)) return x;
  if (p->clip10 && x > 10) return deriv ? 0.0 : 10.0;
  if (x < p->lo) return deriv ? dy * -0x1p-1074 : -0.0;
  if (x > p->hi) return deriv ? dy : x;
  double f, d;
  if (p->fam == GELU_FAM_ERF) {
    double t = fabs(x) * 0.70710678118654752440;
    int i = (int)(t * 2);
    if (i > GELU_ERFCX_NI - 1) i = GELU_ERFCX_NI - 1;
    double u = t - (i * 0.5 + 0.25);
    double P = gm_gelu_erfcx_table[GELU_ERFCX_DEG][i];
    for (int j = GELU_ERFCX_DEG - 1; j >= 0; j--) P = fma(P, u, gm_gelu_erfcx_table[j][i]);
    double G = exp_core(-0.5 * (x * x)); // x*x is exact for f32 x
    double Q = 0.5 * (G * P);
    double Phi = x < 0 ? Q : 1.0 - Q;
    if (!deriv) return x * Phi;
    d = Phi + x * (G * 0.39894228040143267794);
    double delta = (x - GELU_ERF_ROOT_HI) - GELU_ERF_ROOT_LO;
    if (fabs(delta) < GELU_ERF_ROOT_RADIUS) {
      const double *C = gm_gelu_erf_root_taylor;
      double q = C[4];
      for (int j = 3; j >= 0; j--) q = fma(q, delta, C[j]);
      d = q * delta;
    }
    return dy * d;
  }
  double s, om, t;
  if (p->fam == GELU_FAM_SIGMOID) {
    double bx = p->a * x;
    double E = exp_core(-bx);
    s = 1.0 / (1.0 + E);
    if (!deriv) return x * s;
    om = E * s;
    t = bx;
  } else {
    double x2 = x * x;
    double z = p->a * (x * fma(p->k, x2, 1.0));
    double E = exp_core(-2.0 * z);
    s = 1.0 / (1.0 + E);
    if (!deriv) return x * s;
    om = E * s;
    t = 2.0 * x * fma(p->B, x2, p->A);
  }
  f = s;
  d = f * fma(t, om, 1.0);
  return dy * d;
}

void gm_gelu_acc_kernel_scalar(const gelu_acc_params *p, int deriv, const float *x, const float *dy,
                            float *of, double *od, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double r = one(p, deriv, x[i], deriv ? dy[i] : 1.0);
    if (of) of[i] = (float)r;
    else od[i] = r;
  }
}

void gm_gelu_acc_widen_scalar(gm_dtype dt, const uint16_t *in, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = dt == GM_F16 ? gm_f16_to_f32(in[i]) : gm_bf16_to_f32(in[i]);
}

void gm_gelu_acc_narrow_scalar(gm_dtype dt, const double *in, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = dt == GM_F16 ? gm_f64_to_f16(in[i]) : gm_f64_to_bf16(in[i]);
}

typedef void (*acc_kernel)(const gelu_acc_params *, int, const float *, const float *, float *, double *, size_t);
typedef void (*acc32_kernel)(const gelu_acc_params *, const float *, float *, size_t);
typedef void (*acc32_bwd_kernel)(const gelu_acc_params *, const float *, const float *, float *, size_t);
typedef struct {
  acc_kernel k;
  acc32_kernel fwd32;     // f32 forward, tanh/sigmoid families (gelu_accurate_f32.c)
  acc32_kernel fwd32_erf; // f32 forward, erf family (gelu_accurate_f32_erf.c)
  acc32_bwd_kernel bwd32;     // f32 backward, erf family and tanh forms (gelu_accurate_f32_bwd.c)
  void (*widen)(gm_dtype, const uint16_t *, float *, size_t);
  void (*narrow)(gm_dtype, const double *, uint16_t *, size_t);
  bool (*bwd16_by_table)(gm_dtype, const gelu_acc_bwd16 *, const uint16_t *, const uint16_t *, uint16_t *, size_t);
} acc_isa;

bool gm_gelu_acc_bwd16_by_table_scalar(gm_dtype dt, const gelu_acc_bwd16 *t, const uint16_t *x, const uint16_t *dy,
                                    uint16_t *dx, size_t n) {
  const double *d = t->d;
  bool any = false;
  for (size_t i = 0; i < n; i++) {
    double g = dt == GM_F16 ? gm_f16_to_f32(dy[i]) : gm_bf16_to_f32(dy[i]), p = g * d[x[i]];
    dx[i] = dt == GM_F16 ? gm_f64_to_f16(p) : gm_f64_to_bf16(p);
    any |= isnan(d[x[i]]);
  }
  return any;
}

// The kernels of each SIMD level, chosen per call from gm_cpu_simd(). AVX2 has no widen/narrow of
// its own (the scalar ones, same bits).
static const acc_isa isa_avx512 = {gm_gelu_acc_kernel_avx512, gm_gelu_acc32_fwd_avx512, gm_gelu_acc32_erf_fwd_avx512,
                                   gm_gelu_acc32_bwd_avx512,  gm_gelu_acc_widen_avx512, gm_gelu_acc_narrow_avx512,
                                   gm_gelu_acc_bwd16_by_table_avx512};
static const acc_isa isa_avx2 = {gm_gelu_acc_kernel_avx2, gm_gelu_acc32_fwd_avx2,   gm_gelu_acc32_erf_fwd_avx2,
                                 gm_gelu_acc32_bwd_avx2,  gm_gelu_acc_widen_scalar, gm_gelu_acc_narrow_scalar,
                                 gm_gelu_acc_bwd16_by_table_avx2};
static const acc_isa isa_scalar = {gm_gelu_acc_kernel_scalar, gm_gelu_acc32_fwd_scalar, gm_gelu_acc32_erf_fwd_scalar,
                                   gm_gelu_acc32_bwd_scalar,  gm_gelu_acc_widen_scalar, gm_gelu_acc_narrow_scalar,
                                   gm_gelu_acc_bwd16_by_table_scalar};

static const acc_isa *isa_now(void) {
  switch (gm_cpu_simd()) {
  case GM_SIMD_AVX512: return &isa_avx512;
  case GM_SIMD_AVX2: return &isa_avx2;
  default: return &isa_scalar;
  }
}

enum { BLOCK = 2048 };

// One block (<= BLOCK elements) of f16/bf16: widened to f32, the f64-lane kernel, one rounding.
static void block16(const acc_isa *isa, const gelu_acc_params *p, int deriv, gm_dtype dt, const uint16_t *x,
                    const uint16_t *dy, uint16_t *out, size_t m) {
  float xb[BLOCK], gb[BLOCK];
  double ob[BLOCK];
  isa->widen(dt, x, xb, m);
  if (deriv) isa->widen(dt, dy, gb, m);
  isa->k(p, deriv, xb, deriv ? gb : NULL, NULL, ob, m);
  isa->narrow(dt, ob, out, m);
}

void gm_gelu_acc_fwd16_direct(gm_gelu_variant v, gm_dtype dt, const uint16_t *x, uint16_t *y, size_t n) {
  gelu_acc_params p = params_of(v);
  const acc_isa *isa = isa_now();
  for (size_t i0 = 0; i0 < n; i0 += BLOCK) block16(isa, &p, 0, dt, x + i0, NULL, y + i0, n - i0 < BLOCK ? n - i0 : BLOCK);
}

void gm_gelu_acc_bwd16_direct(gm_gelu_variant v, gm_dtype dt, const uint16_t *x, const uint16_t *dy, uint16_t *dx, size_t n) {
  gelu_acc_params p = params_of(v);
  const acc_isa *isa = isa_now();
  for (size_t i0 = 0; i0 < n; i0 += BLOCK) block16(isa, &p, 1, dt, x + i0, dy + i0, dx + i0, n - i0 < BLOCK ? n - i0 : BLOCK);
}

// The backward kernel returns dy * d(x) in f64 (then one rounding), except for NaN x (x itself)
// and gelu_10 above 10 (+0 whatever dy is). d[i] = the f64 kernel's d for pattern i (its result for
// dy = 1, exact); where the result does not depend on dy, d[i] = NaN and fixed[i] = that result.
void gm_gelu_acc_bwd16_parts(gm_gelu_variant v, gm_dtype dt, double *d, uint16_t *fixed) {
  gelu_acc_params p = params_of(v);
  const acc_isa *isa = isa_now();
  float xb[BLOCK], ones[BLOCK];
  for (int i = 0; i < BLOCK; i++) ones[i] = 1.0f;
  for (uint32_t i0 = 0; i0 < 65536; i0 += BLOCK) {
    uint16_t pat[BLOCK];
    for (int i = 0; i < BLOCK; i++) pat[i] = (uint16_t)(i0 + (uint32_t)i);
    isa->widen(dt, pat, xb, BLOCK);
    isa->k(&p, 1, xb, ones, NULL, d + i0, BLOCK);
    isa->narrow(dt, d + i0, fixed + i0, BLOCK);
    for (int i = 0; i < BLOCK; i++)
      if (isnan(xb[i]) || (p.clip10 && xb[i] > 10)) d[i0 + i] = NAN;
  }
}

static int run_f32ish(gm_gelu_variant v, int deriv, gm_dtype dt, const void *x, const void *dy, void *out,
                      size_t n, int threads) {
  gelu_acc_params p = params_of(v);
  const acc_isa *isa = isa_now();
  const uint16_t *table = dt != GM_F32 && !deriv ? gm_gelu_acc_fwd16_table(v, dt) : NULL;
  const gelu_acc_bwd16 *dtable = dt != GM_F32 && deriv ? gm_gelu_acc_bwd16_table(v, dt) : NULL;
  acc_kernel k = isa->k;
  bool lanes32 = dt == GM_F32 && !deriv;
  bool lanes32_bwd = dt == GM_F32 && deriv && p.fam != GELU_FAM_SIGMOID;
  acc32_kernel k32 = p.fam == GELU_FAM_ERF ? isa->fwd32_erf : isa->fwd32;
  size_t nb = (n + BLOCK - 1) / BLOCK;
  // Guided: blocks are independent (the same bits under any split), and a thread that wakes late
  // from its OpenMP wait (src/cli/main.c: a short spin, then sleep) takes fewer of them; with a static split it
  // finishes last. f32 gelu_pytorch_tanh, 2^20 on two threads: 4,160-4,450 -> 4,640-4,680 Melem/s.
#pragma omp parallel for schedule(guided, 2) num_threads(gelu_threads_for(n, threads))
  for (size_t b = 0; b < nb; b++) {
    size_t i0 = b * BLOCK, m = n - i0 < BLOCK ? n - i0 : BLOCK;
    if (lanes32) {
      k32(&p, (const float *)x + i0, (float *)out + i0, m);
      continue;
    }
    if (lanes32_bwd) {
      isa->bwd32(&p, (const float *)x + i0, (const float *)dy + i0, (float *)out + i0, m);
      continue;
    }
    if (dt == GM_F32) {
      k(&p, deriv, (const float *)x + i0, deriv ? (const float *)dy + i0 : NULL, (float *)out + i0, NULL, m);
      continue;
    }
    if (table) {
      gm_gelu_acc_fwd16_lookup(table, (const uint16_t *)x + i0, (uint16_t *)out + i0, m);
      continue;
    }
    if (dtable) {
      const uint16_t *xs = (const uint16_t *)x + i0;
      uint16_t *os = (uint16_t *)out + i0;
      bool some_fixed = isa->bwd16_by_table(dt, dtable, xs, (const uint16_t *)dy + i0, os, m);
      for (size_t i = 0; some_fixed && i < m; i++) // d(x) NaN marks a result that does not use dy
        if (isnan(dtable->d[xs[i]])) os[i] = dtable->fixed[xs[i]];
      continue;
    }
    block16(isa, &p, deriv, dt, (const uint16_t *)x + i0, deriv ? (const uint16_t *)dy + i0 : NULL, (uint16_t *)out + i0, m);
  }
  return 0;
}

// f64: long double forms, one rounding; special values as in the exact mode.
static double one_f64(gm_gelu_variant v, int deriv, double x, double dy) {
  if (isnan(x) || (deriv && isnan(dy))) return x + dy;
  if (v == GM_GELU_10 && x > 10) return deriv ? 0.0 : 10.0;
  if (x == 0) return deriv ? dy * 0.5 : x;
  double lo, hi;
  gelu_core_range(v, &lo, &hi);
  if (x < lo) return deriv ? dy * -0x1p-1074 : -0.0;
  if (x > hi) return deriv ? dy : x;
  long double r = gm_gelu_ld_point(v, deriv, x);
  return deriv ? (double)(r * dy) : (double)r;
}

static int run_f64(gm_gelu_variant v, int deriv, const double *x, const double *dy, double *out, size_t n, int threads) {
#pragma omp parallel for schedule(static) num_threads(gelu_threads_for(n, threads))
  for (size_t i = 0; i < n; i++) out[i] = one_f64(v, deriv, x[i], deriv ? dy[i] : 1.0);
  return 0;
}

int gm_gelu_accurate_fwd(gm_gelu_variant v, gm_dtype dt, const void *x, void *y, size_t n, int threads) {
  if (dt == GM_F64) return run_f64(v, 0, x, NULL, y, n, threads);
  return run_f32ish(v, 0, dt, x, NULL, y, n, threads);
}

int gm_gelu_accurate_bwd(gm_gelu_variant v, gm_dtype dt, const void *x, const void *dy, void *dx, size_t n, int threads) {
  if (dt == GM_F64) return run_f64(v, 1, x, dy, dx, n, threads);
  return run_f32ish(v, 1, dt, x, dy, dx, n, threads);
}
