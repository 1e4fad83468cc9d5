// lab/compare: statistics of two output buffers, input generation, and the compare driver
// (A against B, and each against the exact mode, on the same inputs).
#include "gptmeg/lab.h"
#include "gptmeg/inputs.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const gm_lab_bucket_labels[GM_LAB_BUCKETS] = {"0", "1", "2", "3-4", "5-16", "17-256", ">256"};

int gm_lab_bucket(uint64_t u) {
  if (u <= 2) return (int)u;
  if (u <= 4) return 3;
  if (u <= 16) return 4;
  if (u <= 256) return 5;
  return 6;
}

void gm_cmp_init(gm_cmp_stats *s) { memset(s, 0, sizeof *s); }

void gm_cmp_add(gm_cmp_stats *s, gm_dtype dt, const void *x, const void *a, const void *b, size_t n,
                gm_tolerance user) {
  size_t es = gm_dtype_size(dt);
  gm_tolerance def = gm_default_tolerance(dt);
  const unsigned char *pa = a, *pb = b;
  for (size_t i = 0; i < n; i++) {
    const void *ea = pa + i * es, *eb = pb + i * es;
    double va = gm_load_f64(dt, a, i), vb = gm_load_f64(dt, b, i);
    s->n++;
    uint64_t u;
    if (memcmp(ea, eb, es) == 0) { s->equal++; u = 0; }
    else u = gm_ulp_dist(dt, ea, eb);
    if (gm_close(va, vb, def)) s->close_default++;
    if (gm_close(va, vb, user)) s->close_user++;
    if (u == UINT64_MAX) { s->nan_mismatch++; s->hist[GM_LAB_BUCKETS - 1]++; continue; }
    s->hist[gm_lab_bucket(u)]++;
    if (u > s->max_ulp || !s->have_worst) {
      if (u > s->max_ulp) s->max_ulp = u;
      if (u > s->worst_ulp || !s->have_worst) {
        s->worst_ulp = u;
        s->worst_x = gm_load_f64(dt, x, i);
        s->worst_a = va;
        s->worst_b = vb;
        s->have_worst = true;
      }
    }
    if (isfinite(va) && isfinite(vb)) {
      double d = va - vb, ad = fabs(d);
      s->sum_signed += d;
      s->n_signed++;
      if (ad > s->max_abs) s->max_abs = ad;
      if (vb != 0) { double r = ad / fabs(vb); if (r > s->max_rel) s->max_rel = r; }
      if (ad > def.atol) {
        double need = vb != 0 ? (ad - def.atol) / fabs(vb) : INFINITY;
        if (need > s->rtol_needed) s->rtol_needed = need;
      }
    }
  }
}

void gm_cmp_merge(gm_cmp_stats *into, const gm_cmp_stats *from) {
  into->n += from->n;
  into->equal += from->equal;
  into->close_default += from->close_default;
  into->close_user += from->close_user;
  into->nan_mismatch += from->nan_mismatch;
  for (int b = 0; b < GM_LAB_BUCKETS; b++) into->hist[b] += from->hist[b];
  if (from->max_ulp > into->max_ulp) into->max_ulp = from->max_ulp;
  if (from->max_abs > into->max_abs) into->max_abs = from->max_abs;
  if (from->max_rel > into->max_rel) into->max_rel = from->max_rel;
  if (from->rtol_needed > into->rtol_needed) into->rtol_needed = from->rtol_needed;
  into->sum_signed += from->sum_signed;
  into->n_signed += from->n_signed;
  if (from->have_worst && (!into->have_worst || from->worst_ulp > into->worst_ulp)) {
    into->worst_ulp = from->worst_ulp;
    into->worst_x = from->worst_x;
    into->worst_a = from->worst_a;
    into->worst_b = from->worst_b;
    into->have_worst = true;
  }
}

double gm_cmp_mean_signed(const gm_cmp_stats *s) { return s->n_signed ? s->sum_signed / (double)s->n_signed : 0; }

// ---- inputs ---------------------------------------------------------------------------------

int gm_dist_parse(const char *s, gm_dist *out) {
  memset(out, 0, sizeof *out);
  if (strcmp(s, "normal") == 0) { out->kind = GM_DIST_NORMAL; return 0; }
  if (strcmp(s, "wide") == 0) { out->kind = GM_DIST_WIDE; return 0; }
  if (strncmp(s, "uniform:", 8) == 0) {
    char *end;
    const char *p = s + 8;
    double lo = strtod(p, &end);
    if (end != p && *end == ':') {
      p = end + 1;
      double hi = strtod(p, &end);
      if (end != p && *end == 0 && isfinite(lo) && isfinite(hi) && lo < hi) {
        out->kind = GM_DIST_UNIFORM;
        out->lo = lo;
        out->hi = hi;
        return 0;
      }
    }
    return gm_fail("bad distribution '%s': uniform needs uniform:LO:HI with finite LO < HI", s);
  }
  return gm_fail("unknown distribution '%s' (valid: normal, uniform:LO:HI, wide)", s);
}

static void dtype_range(gm_dtype dt, double *log2_min, double *max_finite) {
  switch (dt) {
  case GM_F16: *log2_min = -24; *max_finite = 65504.0; break;
  case GM_BF16: *log2_min = -133; *max_finite = 0x1.fep127; break;
  case GM_F64: *log2_min = -1074; *max_finite = DBL_MAX; break;
  default: *log2_min = -149; *max_finite = FLT_MAX; break;
  }
}

void gm_dist_fill(gm_dist d, gm_dtype dt, gm_rng *r, void *x, size_t n) {
  double lmin, maxf;
  dtype_range(dt, &lmin, &maxf);
  double lmax = log2(maxf);
  for (size_t i = 0; i < n; i++) {
    double v;
    if (d.kind == GM_DIST_NORMAL) v = gm_rng_normal(r);
    else if (d.kind == GM_DIST_UNIFORM) v = d.lo + (d.hi - d.lo) * gm_rng_uniform(r);
    else {
      double e = lmin + (lmax - lmin) * gm_rng_uniform(r);
      double ip = floor(e);
      v = ldexp(exp2(e - ip), (int)ip);
      if (v > maxf) v = maxf;
      if (gm_rng_u64(r) & 1) v = -v;
    }
    gm_store_f64(dt, x, i, v);
  }
}

size_t gm_finite_u16(gm_dtype dt, uint16_t *out) {
  uint16_t expmask = dt == GM_F16 ? 0x7c00 : 0x7f80;
  size_t k = 0;
  for (uint32_t b = 0; b < 65536; b++)
    if (((uint16_t)b & expmask) != expmask) out[k++] = (uint16_t)b;
  return k;
}

void gm_dy_fill(gm_dtype dt, uint64_t seed, uint64_t first, void *dy, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t w = gm_stream_u64(seed ^ GM_DY_SALT, first + i);
    double u = (double)(w >> 12) * 0x1p-52;
    gm_store_f64(dt, dy, i, (w & 1) ? -(1 + u) : 1 + u);
  }
}

// ---- driver ---------------------------------------------------------------------------------

enum { F32_EXHAUSTIVE_CHUNK = 1 << 24 };

static size_t tensor_len(const gm_compare_job *j) {
  if (j->trials) return j->len;
  if (j->src == GM_SRC_EXHAUSTIVE) return j->dtype == GM_F32 ? F32_EXHAUSTIVE_CHUNK : 65536;
  return j->n;
}

size_t gm_compare_bytes(const gm_compare_job *j) {
  size_t L = tensor_len(j), es = gm_dtype_size(j->dtype);
  size_t bufs = 4 + (j->grad ? 1 : 0); // x, a, b, exact (+ dy)
  if (L > SIZE_MAX / es / bufs) return SIZE_MAX;
  return L * es * bufs;
}

static size_t mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) { fclose(f); return (size_t)kb * 1024; }
    fclose(f);
  }
  long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
  return pages > 0 && ps > 0 ? (size_t)pages * (size_t)ps : SIZE_MAX;
}

static int run_side(const gm_compare_job *j, gm_gelu_spec s, const void *x, const void *dy, void *out, size_t n) {
  int rc = j->grad ? gm_gelu_bwd(s, j->dtype, x, dy, out, n, j->threads) : gm_gelu_fwd(s, j->dtype, x, out, n, j->threads);
  if (rc) {
    char name[64], msg[400];
    gm_gelu_spec_format(s, name, sizeof name);
    snprintf(msg, sizeof msg, "%s", gm_errmsg());
    return gm_fail("%s %s in %s: %s", name, j->grad ? "backward" : "forward", gm_dtype_name(j->dtype), msg);
  }
  return 0;
}

int gm_compare_run(const gm_compare_job *j, gm_compare_result *res) {
  memset(res, 0, sizeof *res);
  gm_cmp_init(&res->ab);
  gm_cmp_init(&res->a_exact);
  gm_cmp_init(&res->b_exact);
  double t0 = gm_now_s();
  gm_dtype dt = j->dtype;
  if (!gm_dtype_is_float(dt)) return gm_fail("compare needs a float dtype, got %s", gm_dtype_name(dt));
  if (j->src == GM_SRC_EXHAUSTIVE && j->trials) return gm_fail("--exhaustive cannot be combined with --len/--trials");
  if (j->src == GM_SRC_EXHAUSTIVE && dt == GM_F64) return gm_fail("--exhaustive is not possible for f64 (2^64 inputs); use --n N");
  if (j->src == GM_SRC_EXHAUSTIVE && dt == GM_F32 && !j->allow_f32_exhaustive)
    return gm_fail("--exhaustive in f32 means 2^32 inputs (hours); use --n N for a sample, or add --really-all-f32");
  if (j->trials && j->len == 0) return gm_fail("--len must be at least 1");
  if (j->trials && j->src == GM_SRC_ARRAY && j->len * j->trials != j->n)
    return gm_fail("--len %zu x --trials %zu = %zu does not match the %zu inputs given", j->len, j->trials, j->len * j->trials, j->n);
  size_t need = gm_compare_bytes(j), avail = mem_available();
  if (need == SIZE_MAX || need > avail / 10 * 9)
    return gm_fail("this comparison needs %.3g GB of memory at once (tensor of %zu elements, %d buffers), more than the %.3g GB available; use a smaller --n, or --len L --trials K",
                   (double)need / 1e9, tensor_len(j), j->grad ? 5 : 4, (double)avail / 1e9);
  size_t L = tensor_len(j), es = gm_dtype_size(dt);
  unsigned char *x = malloc(L * es + 1), *a = malloc(L * es + 1), *b = malloc(L * es + 1), *e = malloc(L * es + 1);
  unsigned char *dy = j->grad ? malloc(L * es + 1) : NULL;
  int rc = 0;
  if (!x || !a || !b || !e || (j->grad && !dy)) { rc = gm_fail("out of memory for %zu-element buffers", L); goto done; }
  gm_rng rng;
  gm_rng_seed(&rng, j->seed);
  bool try_exact = true;
  uint64_t done_elems = 0;
  uint64_t chunks = j->trials ? j->trials : (j->src == GM_SRC_EXHAUSTIVE && dt == GM_F32) ? (1ull << 32) / F32_EXHAUSTIVE_CHUNK : 1;
  for (uint64_t c = 0; c < chunks; c++) {
    size_t n;
    if (j->src == GM_SRC_EXHAUSTIVE && dt != GM_F32) {
      n = gm_finite_u16(dt, (uint16_t *)x);
      res->excluded = 65536 - n;
    } else if (j->src == GM_SRC_EXHAUSTIVE) {
      uint32_t *xf = (uint32_t *)x;
      n = 0;
      for (uint64_t k = 0; k < F32_EXHAUSTIVE_CHUNK; k++) {
        uint32_t bits = (uint32_t)(c * F32_EXHAUSTIVE_CHUNK + k);
        if ((bits & 0x7f800000u) != 0x7f800000u) xf[n++] = bits;
        else res->excluded++;
      }
    } else if (j->src == GM_SRC_ARRAY) {
      n = j->trials ? j->len : j->n;
      memcpy(x, (const unsigned char *)j->array + done_elems * es, n * es);
    } else {
      n = j->trials ? j->len : j->n;
      gm_dist_fill(j->dist, dt, &rng, x, n);
    }
    if (j->grad) gm_dy_fill(dt, j->seed, done_elems, dy, n);
    if (run_side(j, j->a, x, dy, a, n) || run_side(j, j->b, x, dy, b, n)) { rc = -1; goto done; }
    gm_cmp_add(&res->ab, dt, x, a, b, n, j->user_tol);
    res->tensors++;
    if (memcmp(a, b, n * es) == 0) res->tensors_equal++;
    if (try_exact) {
      gm_gelu_spec ex = {j->a.variant, GM_MODE_EXACT}, exb = {j->b.variant, GM_MODE_EXACT};
      if (run_side(j, ex, x, dy, e, n)) {
        try_exact = false;
        snprintf(res->exact_error, sizeof res->exact_error, "%s", gm_errmsg());
      } else {
        gm_cmp_add(&res->a_exact, dt, x, a, e, n, j->user_tol);
        if (exb.variant != ex.variant && run_side(j, exb, x, dy, e, n)) {
          try_exact = false;
          snprintf(res->exact_error, sizeof res->exact_error, "%s", gm_errmsg());
        } else gm_cmp_add(&res->b_exact, dt, x, b, e, n, j->user_tol);
      }
    }
    done_elems += n;
  }
  res->have_exact = try_exact;
done:
  free(x); free(a); free(b); free(e); free(dy);
  res->seconds = gm_now_s() - t0;
  return rc;
}
