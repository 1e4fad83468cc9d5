// Private helpers shared by the exact, fused and accurate GELU modes (owner: gelu_exact*.c,
// gelu_fused.c, gelu_accurate*.c). Not a public API.
#ifndef GPTMEG_GELU_MATH_H
#define GPTMEG_GELU_MATH_H

#include "kernels/gelu/gelu_impl.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

// The three shapes of the family over the reals:
//   ERF:     f = x*Phi(x) = 0.5*x*erfc(-x/sqrt2),        f' = Phi(x) + x*phi(x)
//   TANH:    f = 0.5*x*(1+tanh z) = x*s, s = 1/(1+exp(-2z)), z = a*(x + k*x^3),
//            f' = s*(1 + 2*x*(1-s)*zp) with zp = A + B*x^2 (A = a, B = 3*k*a for autograd;
//            gelu_megatron's custom rule: A = 0.79788456, B = 0.1070322243)
//   SIGMOID: f = x*s, s = 1/(1+exp(-b*x)), f' = s*(1 + b*x*(1-s))
// gelu_10 is ERF clipped at 10 (gelu(x) > 10 exactly when x > 10 for every dtype's values).
typedef enum { GELU_FAM_ERF, GELU_FAM_TANH, GELU_FAM_SIGMOID } gelu_family;

static inline gelu_family gelu_family_of(gm_gelu_variant v) {
  switch (v) {
  case GM_GELU_ERF: case GM_GELU_PYTHON: case GM_GELU_10: return GELU_FAM_ERF;
  case GM_QUICK_GELU: return GELU_FAM_SIGMOID;
  default: return GELU_FAM_TANH;
  }
}

// Decimal constants exactly as the sources write them. NULL: a = sqrt(2/pi) exactly.
static inline const char *gelu_tanh_a_dec(gm_gelu_variant v) {
  switch (v) {
  case GM_GELU_FAST: return "0.7978845608";
  case GM_GELU_MEGATRON: return "0.79788456";
  case GM_OPENAI_GELU: return "0.7978845608028654";
  default: return NULL; // gelu_new, gelu_accurate: sqrt(2/pi); gelu_pytorch_tanh: M_SQRT2*M_2_SQRTPI*0.5
  }
}
#define GELU_K_DEC "0.044715"
#define GELU_QUICK_B_DEC "1.702"
#define GELU_MEG_A_DEC "0.79788456"
#define GELU_MEG_B_DEC "0.1070322243"

// Target floating-point format: p significand bits, quantum of the subnormals 2^qmin, largest
// finite value.
typedef struct { int p; int qmin; long double maxv; } gelu_fmt;

static inline gelu_fmt gelu_fmt_of(gm_dtype dt) {
  gelu_fmt f;
  switch (dt) {
  case GM_F16: f.p = 11; f.qmin = -24; f.maxv = 65504.0L; break;
  case GM_BF16: f.p = 8; f.qmin = -133; f.maxv = 0x1.fep127L; break;
  case GM_F64: f.p = 53; f.qmin = -1074; f.maxv = DBL_MAX; break;
  default: f.p = 24; f.qmin = -149; f.maxv = FLT_MAX; break;
  }
  return f;
}

// Round a long double once, to nearest even, onto the format (subnormals and overflow included).
// The result is exactly representable in the format; the sign of zero is kept.
static inline long double gelu_round_ld(long double v, gelu_fmt f) {
  if (v == 0 || isnan(v) || isinf(v)) return v;
  int e;
  frexpl(v, &e); // v = m * 2^e, 0.5 <= |m| < 1
  int q = e - f.p > f.qmin ? e - f.p : f.qmin;
  long double r = ldexpl(rintl(ldexpl(v, -q)), q);
  if (fabsl(r) > f.maxv) return copysignl(INFINITY, v);
  return r;
}

// Read element i of x (dtype dt) exactly; store a value already representable in dt.
static inline long double gelu_load(gm_dtype dt, const void *buf, size_t i) {
  return (long double)gm_load_f64(dt, buf, i);
}
static inline void gelu_store(gm_dtype dt, void *buf, size_t i, long double v) {
  gm_store_f64(dt, buf, i, (double)v);
}

// Long-double interval evaluation (gelu_exact_ld.c). Encloses f(x) (deriv = 0) or f'(x)
// (deriv = 1) of the variant over the reals in [*lo, *hi], assuming glibc's long double expl and
// erfcl are within 32 ulps (their documented bounds are a few ulps). x must be finite, nonzero,
// and inside gelu_core_range. gelu_10's clip is not applied here.
void gm_gelu_ld_interval(gm_gelu_variant v, int deriv, long double x, long double *lo, long double *hi);
// Long double point evaluation of the same rewritten forms (no bound), for accurate f64.
long double gm_gelu_ld_point(gm_gelu_variant v, int deriv, long double x);
// Double evaluation of the same forms with a running error bound (gelu_exact_f64.c), the exact
// mode's first Ziv step for f32, f16 and bf16 (f.p <= 24; false for f64). Sets *r to RN(f(x))
// (deriv = 0, dy = 1) or RN(dy * f'(x)) (deriv = 1; dy finite, nonzero) in the format and returns
// true when the bound decides the rounding; false otherwise. x as for gm_gelu_ld_interval.
bool gm_gelu_f64_decide(gm_gelu_variant v, int deriv, double x, double dy, gelu_fmt f, long double *r);

// The region where the functions need computing; outside it, for every dtype and every finite dy:
//   x < neg: f rounds to -0, f' is negative and dy*f' rounds to -0 (times the sign of dy);
//   x > pos: f rounds to x, f' > 1 and dy*f' rounds to dy.
static inline void gelu_core_range(gm_gelu_variant v, double *neg, double *pos) {
  switch (gelu_family_of(v)) {
  case GELU_FAM_ERF: *neg = -60; *pos = 60; break;           // Q(60) ~ e^-1800
  case GELU_FAM_SIGMOID: *neg = -1880; *pos = 1880; break;   // exp(-1.702*1880) ~ e^-3200
  default: *neg = -32; *pos = 32; break;                     // |z| > 1190 there
  }
}

// ---- accurate f32 kernels (gelu_accurate.c scalar, gelu_accurate_avx512.c, gelu_accurate_avx2.c) ----
// Computed in f64 lanes with gptmeg's own exp and erfc polynomials; the scalar and SIMD kernels
// perform the same IEEE operations in the same order (explicit FMAs), so their bits agree.
typedef struct {
  gelu_family fam;
  int clip10;     // gelu_10: x > 10 -> f = 10, gradient +0
  double a;       // tanh: a of z = a*x*(1 + k*x^2); sigmoid: b = 1.702
  double k;       // 0.044715
  double A, B;    // tanh backward: zp = fma(B, x^2, A)
  double lo, hi;  // core range; x < lo: f = -0, dx = dy * -tiny; x > hi: f = x, dx = dy
  int bwd32_set;  // tanh forms: the f32-lane backward's pieces (0 sqrt(2/pi), 1 gelu_fast, 2 Megatron)
} gelu_acc_params;

// erfcx(t) = exp(t^2)*erfc(t) on [0, 14.5): 29 intervals of width 1/2 (padded to 32), degree 9 in
// u = t - center; table[j][i] is coefficient j of interval i. Relative fit error < 1e-11.
enum { GELU_ERFCX_NI = 29, GELU_ERFCX_DEG = 9 };
extern const double gm_gelu_erfcx_table[GELU_ERFCX_DEG + 1][32];

// The erf family's f' = Phi(x) + x*phi(x) vanishes at x0 = ROOT_HI + ROOT_LO; near it the sum
// cancels and the erfcx pieces' 1e-11 fit error would show as hundreds of f32 ULPs, so within
// 2^-8 of x0 the kernels use f' = delta*(C0 + C1*delta + ... + C4*delta^4), delta = (x - ROOT_HI)
// - ROOT_LO: the Taylor series at x0 (mpmath, 50 digits), relative error < 2^-44 there.
#define GELU_ERF_ROOT_HI (-0x1.80ead197f00b4p-1)
#define GELU_ERF_ROOT_LO 0x1.13e74c58cada8p-56
#define GELU_ERF_ROOT_RADIUS 0x1p-8
extern const double gm_gelu_erf_root_taylor[5];

// y = f(x) (deriv 0) or dx = dy*f'(x) (deriv 1) for n f32 inputs; the result goes to of (f32,
// rounded once) or, when of is NULL, to od (the f64 value before rounding, for f16/bf16).
void gm_gelu_acc_kernel_scalar(const gelu_acc_params *p, int deriv, const float *x, const float *dy,
                            float *of, double *od, size_t n);
void gm_gelu_acc_kernel_avx512(const gelu_acc_params *p, int deriv, const float *x, const float *dy,
                            float *of, double *od, size_t n);
void gm_gelu_acc_kernel_avx2(const gelu_acc_params *p, int deriv, const float *x, const float *dy,
                          float *of, double *od, size_t n);

// f16/bf16 storage around those kernels: widen n values of dt (bits) to f32 (exact), and round n
// f64 kernel results ONCE to dt (round to nearest even; NaN as gm_f64_to_f16/bf16 give it), with
// the bits of gm_store_f64. AVX-512: F16C/integer lanes, f64 -> f32 by round-to-odd (truncate,
// then set the last bit if inexact: f32 keeps >= 13 more bits than f16/bf16, so the second
// rounding is the correct single one). The scalar versions are the reference.
void gm_gelu_acc_widen_scalar(gm_dtype dt, const uint16_t *in, float *out, size_t n);
void gm_gelu_acc_narrow_scalar(gm_dtype dt, const double *in, uint16_t *out, size_t n);
void gm_gelu_acc_widen_avx512(gm_dtype dt, const uint16_t *in, float *out, size_t n);
void gm_gelu_acc_narrow_avx512(gm_dtype dt, const double *in, uint16_t *out, size_t n);

// ---- accurate f16/bf16 forward by table (gelu_accurate_table.c) ------------------------------
// The direct evaluation of n f16/bf16 inputs on the calling thread (gelu_accurate.c); the table of
// its results for all 65536 patterns, built on first use (thread-safe; NULL if out of memory); and
// the lookup.
// Tables over the 65536 16-bit patterns, shared by the accurate and torch-cpu modes
// (gelu_accurate_table.c). gm_gelu_table_once: the table in *slot, built by build(ctx) on first use
// and published atomically (a race builds it twice and keeps one, freeing the other); NULL when
// build returns NULL (out of memory: the caller evaluates directly, and a later call tries again).
// gm_gelu_fwd16_table_build: fwd(ctx, x, y, n) run once on every pattern into 65536 entries; NULL if
// out of memory.
void *gm_gelu_table_once(_Atomic(void *) *slot, void *(*build)(const void *ctx), const void *ctx);
// The build context of a table kept per variant and 16-bit dtype.
typedef struct {
  gm_gelu_variant v;
  gm_dtype dt;
} gelu_variant_key;
uint16_t *gm_gelu_fwd16_table_build(void (*fwd)(const void *ctx, const uint16_t *x, uint16_t *y, size_t n),
                                 const void *ctx);
void gm_gelu_acc_fwd16_direct(gm_gelu_variant v, gm_dtype dt, const uint16_t *x, uint16_t *y, size_t n);
const uint16_t *gm_gelu_acc_fwd16_table(gm_gelu_variant v, gm_dtype dt);
void gm_gelu_acc_fwd16_lookup(const uint16_t *table, const uint16_t *x, uint16_t *y, size_t n); // y[i] = table[x[i]]
// Backward: the kernel's f64 derivative d of every pattern (gm_gelu_acc_bwd16_parts), so dx =
// round(dy * d[x]) in f64 gives its bits; NaN d marks a pattern whose result does not depend on dy
// (NaN x, gelu_10 above 10), kept in fixed. dh is d rounded to f32 where that is a normal f32 (NaN
// elsewhere), for the f32 route of the AVX-512 and AVX2 kernels.
typedef struct {
  double d[65536];
  float dh[65536];
  uint16_t fixed[65536];
} gelu_acc_bwd16;
// dx[i] = dy[i] * d[x[i]] computed in f64 and rounded once to dt (f16/bf16); returns whether some
// d[x[i]] is NaN (those elements take the table's fixed result: the caller sets them). Scalar, AVX2
// and AVX-512 (gelu_accurate.c, gelu_accurate_avx2.c, gelu_accurate_avx512.c), the same bits.
bool gm_gelu_acc_bwd16_by_table_scalar(gm_dtype dt, const gelu_acc_bwd16 *t, const uint16_t *x, const uint16_t *dy,
                                    uint16_t *dx, size_t n);
bool gm_gelu_acc_bwd16_by_table_avx512(gm_dtype dt, const gelu_acc_bwd16 *t, const uint16_t *x, const uint16_t *dy,
                                    uint16_t *dx, size_t n);
bool gm_gelu_acc_bwd16_by_table_avx2(gm_dtype dt, const gelu_acc_bwd16 *t, const uint16_t *x, const uint16_t *dy,
                                  uint16_t *dx, size_t n); // needs AVX2, FMA, F16C
void gm_gelu_acc_bwd16_direct(gm_gelu_variant v, gm_dtype dt, const uint16_t *x, const uint16_t *dy, uint16_t *dx, size_t n);
void gm_gelu_acc_bwd16_parts(gm_gelu_variant v, gm_dtype dt, double *d, uint16_t *fixed);
const gelu_acc_bwd16 *gm_gelu_acc_bwd16_table(gm_gelu_variant v, gm_dtype dt);

// ---- accurate f32 forward in f32 lanes (tanh and sigmoid families; gelu_accurate_f32*.c) ------
// The contract and the operations: gelu_accurate_f32.c. Scalar, AVX-512 and AVX2 give the same bits.
extern const float gm_gelu_acc32_exp2_fit5[6];  // (2^rho - 1)/rho, degree-5 fit (all f32-lane kernels)
typedef struct {
  float Mh, Ml, Mkh, Mkl; // M and M*k (f64) as f32 pairs: A = a*(M + Mk*a^2)
  bool sigmoid;           // Mk = 0: A = a*M
} gelu_acc32_consts;
gelu_acc32_consts gm_gelu_acc32_reduction(const gelu_acc_params *p);
// The exponent's reduction T = n + r of the tanh and sigmoid forms for signed a (gelu_accurate_f32.c
// lists the operations), and (2^r - 1)/r by gm_gelu_acc32_exp2_fit5: the scalar steps the forward and
// backward kernels share (gelu_acc32_lanes.h has them for AVX2 and AVX-512).
static inline void gelu_acc32_reduce(const gelu_acc32_consts *K, float a, float *rho, float *nT) {
  if (K->sigmoid) {
    *nT = nearbyintf(a * K->Mh);
    *rho = fmaf(a, K->Ml, fmaf(a, K->Mh, -*nT));
    return;
  }
  float a2h = a * a, a2l = fmaf(a, a, -a2h);
  float u = K->Mkh * a2h, ul = fmaf(K->Mkh, a2h, -u);
  float wh = K->Mh + u;
  float big = K->Mh < u ? K->Mh : u, small = K->Mh > u ? K->Mh : u; // as VMINPS/VMAXPS
  float e = small - (wh - big);
  float wl = (fmaf(K->Mkh, a2l, fmaf(K->Mkl, a2h, K->Ml)) + ul) + e;
  *nT = nearbyintf(a * wh);
  *rho = fmaf(a, wl, fmaf(a, wh, -*nT));
}
// s + e = a + b exactly, s = fl(a + b) (Knuth's TwoSum, any order of magnitudes).
static inline void gelu_acc32_two_sum(float a, float b, float *s, float *e) {
  *s = a + b;
  float ap = *s - b, bp = *s - ap;
  *e = (a - ap) + (b - bp);
}
static inline float gelu_acc32_exp2_poly(float r) {
  const float *C = gm_gelu_acc32_exp2_fit5;
  float P = C[5];
  for (int j = 4; j >= 0; j--) P = fmaf(P, r, C[j]);
  return P;
}
void gm_gelu_acc32_fwd_scalar(const gelu_acc_params *p, const float *x, float *y, size_t n);
void gm_gelu_acc32_fwd_avx512(const gelu_acc_params *p, const float *x, float *y, size_t n);
void gm_gelu_acc32_fwd_avx2(const gelu_acc_params *p, const float *x, float *y, size_t n);

// Erf family forward (gelu_accurate_f32_erf*.c; contract there): 16 columns of degree-8 pieces in
// u = a - (the piece's middle) (tools/fit/erf_pieces_f32.py): columns 0-9 G(a) = erfcx(a/sqrt2)/2
// (x < 0) on [0,1) .. [3,4), [4,6) .. [14,16), columns 10-14 Phi(a) (x >= 0) on [0,1) .. [3,4),
// [4,6), column 15 zeros; row j < 9 is coefficient j rounded to f32, row 9 the constant term's
// rounding error, row 10 the piece's middle. The backward's tables (below) have 32 columns.
// -x^2/2 * log2(e) = x^2 * (KH + KL).
enum {
  GELU_ACC32_ERF_DEG = 8,
  GELU_ACC32_ERF_COLUMNS = 32,     // the backward's tables
  GELU_ACC32_ERF_FWD_COLUMNS = 16, // the forward's: one AVX-512 register a row
  GELU_ACC32_ERF_ROWS = GELU_ACC32_ERF_DEG + 3,
  GELU_ACC32_ERF_MID_ROW = GELU_ACC32_ERF_DEG + 2,
  GELU_ACC32_ERF_PHI_COLUMN = 10, // x >= 0 adds this to the column
};
extern const float gm_gelu_acc32_erf_pieces[GELU_ACC32_ERF_ROWS][GELU_ACC32_ERF_FWD_COLUMNS];
// The G column of the piece holding a, from fl = floor(a) in 0..15: fl itself below 4, then one
// column per two units (integer min, as VPMINSD).
static inline int gelu_acc32_erf_column(int fl) {
  int wide = (fl >> 1) + 2;
  return fl < wide ? fl : wide;
}
#define GELU_ACC32_ERF_KH (-0x1.715476p-1f)
#define GELU_ACC32_ERF_KL (-0x1.4ae0c0p-27f)
#define GELU_ACC32_ERF_AMAX 15.0f // |x| is clamped here (f(-15) rounds to -0)
#define GELU_ACC32_ERF_HI 6.0f    // x >= 6: f = x (1 - Phi(6) < 2^-29)
// v * 2^n rounded once (as VSCALEFPS gives it), for integral n <= 0 (NaN or below -200 act as
// -200) and |v| >= 2^-26 whenever n < -100: the first product is exact, the second rounds.
static inline float gelu_acc32_scale_once(float v, float n) {
  float n1 = n > -100.0f ? n : -100.0f;
  float n2 = n - n1 > -100.0f ? n - n1 : -100.0f;
  return (v * ldexpf(1.0f, (int)n1)) * ldexpf(1.0f, (int)n2);
}
// The erf family's T = -aT^2/2*log2(e) = nT + r for aT >= 0 (gelu_accurate_f32_erf.c).
static inline void gelu_acc32_reduce_erf(float aT, float *r, float *nT) {
  float a2h = aT * aT, a2l = fmaf(aT, aT, -a2h);
  float p = GELU_ACC32_ERF_KH * a2h, pl = fmaf(GELU_ACC32_ERF_KH, a2h, -p);
  *nT = nearbyintf(p);
  *r = (p - *nT) + (pl + fmaf(GELU_ACC32_ERF_KH, a2l, GELU_ACC32_ERF_KL * a2h));
}
void gm_gelu_acc32_erf_fwd_scalar(const gelu_acc_params *p, const float *x, float *y, size_t n);
void gm_gelu_acc32_erf_fwd_avx512(const gelu_acc_params *p, const float *x, float *y, size_t n);
void gm_gelu_acc32_erf_fwd_avx2(const gelu_acc_params *p, const float *x, float *y, size_t n);

// ---- accurate f32 backward in f32 lanes (erf family and tanh forms; gelu_accurate_f32_bwd*.c) --
// The contract and the operations: gelu_accurate_f32_bwd.c. Pieces (gelu_accurate_f32_bwd_tables.c)
// of 32 columns, degree 8 in u = a - floor(a) - 1/2: columns 0-1 K(a) = H(a)/(a - a0) on [i, i+1)
// (x < 0 next to the root a0 of H; tanh: column 0 on [1/2, 1) only, and column 15 is H on [0, 1/2)
// in u = a - 1/4), then H(a) on [i, i+1) (x < 0; erf columns 2-20, tanh 2-14),
// 24-31 D(a) = f'(a) on [i-24, i-23) (x >= 0), the rest zeros; rows 9 and 10 are the rounding
// errors of rows 0 and 1. erf: tools/fit/erf_bwd_pieces_f32.py, a0 = A0H + A0L; tanh:
// tools/fit/tanh_bwd_pieces_f32.py, one table and root per constant set (gelu_acc_params.bwd32_set).
extern const float gm_gelu_acc32_erf_bwd_pieces[GELU_ACC32_ERF_DEG + 3][GELU_ACC32_ERF_COLUMNS];
#define GELU_ACC32_ERF_BWD_A0H 0x1.80ead2p-1f
#define GELU_ACC32_ERF_BWD_A0L -0x1.a03fd4p-27f
#define GELU_ACC32_ERF_BWD_AMAX 20.0f  // |x| is clamped here (2^128 * f'(-20) rounds to 0)
#define GELU_ACC32_TANH_BWD_AMAX 14.0f // the same for the tanh forms
#define GELU_ACC32_BWD_HI 8.0f         // x >= 8: f' = 1 (|f' - 1| < 2^-43)
enum { GELU_ACC32_TANH_BWD_SETS = 3 }; // sqrt(2/pi), gelu_fast's a, Megatron's a, A, B
enum { GELU_ACC32_TANH_BWD_LOW_COLUMN = 15 }; // tanh: H on [0, 1/2) in u = a - 1/4
extern const float gm_gelu_acc32_tanh_bwd_pieces[GELU_ACC32_TANH_BWD_SETS][GELU_ACC32_ERF_DEG + 3][GELU_ACC32_ERF_COLUMNS];
extern const float gm_gelu_acc32_tanh_bwd_root[GELU_ACC32_TANH_BWD_SETS][2];
typedef struct {
  const float (*E)[GELU_ACC32_ERF_COLUMNS]; // the pieces
  float a0h, a0l, amax;                     // the root of H as an f32 pair; the clamp of |x|
  float low;                                // x < 0 with |x| < low: column 15, u = |x| - 1/4 (tanh)
  bool tanh, clip10;                        // tanh: T from the forward's reduction with K
  gelu_acc32_consts K;
} gelu_acc32_bwd_setup;
gelu_acc32_bwd_setup gm_gelu_acc32_bwd_setup_of(const gelu_acc_params *p);
void gm_gelu_acc32_bwd_scalar(const gelu_acc_params *p, const float *x, const float *dy, float *dx, size_t n);
void gm_gelu_acc32_bwd_avx512(const gelu_acc_params *p, const float *x, const float *dy, float *dx, size_t n);
void gm_gelu_acc32_bwd_avx2(const gelu_acc_params *p, const float *x, const float *dy, float *dx, size_t n);

#endif
