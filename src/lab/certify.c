// Exhaustive certification of a GELU implementation against the exact mode, chunk by chunk.
// The exact mode (kernels/gelu_exact*.c) evaluates in double, then long double, with error bounds,
// and falls back to MPFR near rounding boundaries, so every reference value is the correctly rounded one.
#include "gptmeg/certify.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gm_cert_bucket_labels[GM_CERT_BUCKETS] = {"0", "1", "2", "3-4", "5-16", "17-256", ">256"};

int gm_cert_bucket(uint64_t u) {
  if (u <= 2) return (int)u;
  if (u <= 4) return 3;
  if (u <= 16) return 4;
  if (u <= 256) return 5;
  return 6;
}

// Keys: for f32, bits b -> b if sign clear, -1 - (b & 0x7fffffff) if set (so -0 = -1, +0 = 0).
static uint64_t bits_of_key(gm_dtype dt, int64_t k) {
  uint64_t sign = dt == GM_F32 ? 0x80000000u : 0x8000u;
  return k >= 0 ? (uint64_t)k : (sign | (uint64_t)(-1 - k));
}

int64_t gm_cert_key_max(gm_dtype dt) { return dt == GM_F32 ? 0x7f800000 : dt == GM_F16 ? 0x7c00 : 0x7f80; }
int64_t gm_cert_key_min(gm_dtype dt) { return -1 - gm_cert_key_max(dt); }

static double value_of_bits(gm_dtype dt, uint64_t b) {
  if (dt == GM_F32) { uint32_t u = (uint32_t)b; float f; memcpy(&f, &u, 4); return f; }
  return dt == GM_F16 ? gm_f16_to_f32((uint16_t)b) : gm_bf16_to_f32((uint16_t)b);
}

double gm_cert_value_from_key(gm_dtype dt, int64_t key) { return value_of_bits(dt, bits_of_key(dt, key)); }

int64_t gm_cert_key_from_value(gm_dtype dt, double v, int round_up) {
  if (isnan(v)) return round_up ? gm_cert_key_max(dt) : gm_cert_key_min(dt);
  // binary search over keys (monotone in value)
  int64_t lo = gm_cert_key_min(dt), hi = gm_cert_key_max(dt);
  if (round_up) { // smallest key with value >= v
    while (lo < hi) { int64_t m = lo + (hi - lo) / 2; if (gm_cert_value_from_key(dt, m) >= v) hi = m; else lo = m + 1; }
  } else {        // largest key with value <= v
    while (lo < hi) { int64_t m = lo + (hi - lo + 1) / 2; if (gm_cert_value_from_key(dt, m) <= v) lo = m; else hi = m - 1; }
  }
  return lo;
}

void gm_cert_state_init(gm_cert_state *s, const gm_cert_job *job) {
  memset(s, 0, sizeof *s);
  s->next = job->lo;
}

int gm_cert_step(const gm_cert_job *job, gm_cert_state *s, uint64_t count) {
  if (s->next > job->hi) return 0;
  uint64_t left = (uint64_t)(job->hi - s->next) + 1;
  size_t n = (size_t)(count < left ? count : left);
  size_t es = gm_dtype_size(job->dtype);
  void *x = malloc(n * es), *got = malloc(n * es), *want = malloc(n * es), *dy = malloc(n * es);
  int rc = 0;
  if (!x || !got || !want || !dy) { rc = gm_fail("certify: cannot allocate a chunk of %zu inputs", n); goto done; }
  for (size_t i = 0; i < n; i++) {
    uint64_t b = bits_of_key(job->dtype, s->next + (int64_t)i);
    if (es == 4) { ((uint32_t *)x)[i] = (uint32_t)b; }
    else ((uint16_t *)x)[i] = (uint16_t)b;
    gm_store_f64(job->dtype, dy, i, 1.0);
  }
  gm_gelu_spec exact = {job->spec.variant, GM_MODE_EXACT};
  if (job->backward) {
    if ((rc = gm_gelu_bwd(job->spec, job->dtype, x, dy, got, n, job->threads))) goto done;
    if ((rc = gm_gelu_bwd(exact, job->dtype, x, dy, want, n, job->threads))) goto done;
  } else {
    if ((rc = gm_gelu_fwd(job->spec, job->dtype, x, got, n, job->threads))) goto done;
    if ((rc = gm_gelu_fwd(exact, job->dtype, x, want, n, job->threads))) goto done;
  }
  for (size_t i = 0; i < n; i++) {
    uint64_t u = gm_ulp_dist(job->dtype, (char *)got + i * es, (char *)want + i * es);
    s->hist[gm_cert_bucket(u)]++;
    if (u > s->max_ulp || s->n + i == 0) {
      if (u > s->max_ulp) s->max_ulp = u;
      s->worst_input = gm_load_f64(job->dtype, x, i);
      s->worst_got = gm_load_f64(job->dtype, got, i);
      s->worst_exact = gm_load_f64(job->dtype, want, i);
    }
  }
  s->n += n;
  s->next += (int64_t)n;
done:
  free(x); free(got); free(want); free(dy);
  return rc;
}

// The implementation's fingerprint, computed once per state: FNV-1a of its outputs on 4099 fixed
// inputs over every magnitude, so a checkpoint made by another build of the same SPEC (other kernel
// bits) is refused instead of being resumed into a histogram that mixes two implementations.
const char *gm_cert_implementation(const gm_cert_job *job, gm_cert_state *s) {
  if (s->implementation[0]) return s->implementation;
  enum { NPROBE = 4099 };
  size_t es = gm_dtype_size(job->dtype);
  char x[NPROBE * 4], dy[NPROBE * 4], y[NPROBE * 4];
  for (size_t i = 0; i < NPROBE; i++) {
    uint32_t b = (uint32_t)(i * 1048573u + 12345u);
    if (es == 4) memcpy(x + 4 * i, &b, 4);
    else { uint16_t h = (uint16_t)(b >> 8); memcpy(x + 2 * i, &h, 2); }
    gm_store_f64(job->dtype, dy, i, 1.0);
  }
  int rc = job->backward ? gm_gelu_bwd(job->spec, job->dtype, x, dy, y, NPROBE, 1)
                         : gm_gelu_fwd(job->spec, job->dtype, x, y, NPROBE, 1);
  if (rc) return NULL;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < NPROBE * es; i++) h = (h ^ (unsigned char)y[i]) * 1099511628211ull;
  snprintf(s->implementation, sizeof s->implementation, "%016llx", (unsigned long long)h);
  return s->implementation;
}

void gm_cert_json_add_value(void *obj, const char *key, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject((cJSON *)obj, key, v);
  else cJSON_AddStringToObject((cJSON *)obj, key, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

// A value written by gm_cert_json_add_value (NaN if absent).
static double json_value(cJSON *obj, const char *key) {
  cJSON *v = cJSON_GetObjectItem(obj, key);
  if (cJSON_IsString(v)) return strtod(v->valuestring, NULL);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void job_name(const gm_cert_job *job, char *buf, size_t len) {
  char spec[64];
  gm_gelu_spec_format(job->spec, spec, sizeof spec);
  snprintf(buf, len, "%s %s %s [%lld, %lld]", spec, gm_dtype_name(job->dtype), job->backward ? "bwd" : "fwd",
           (long long)job->lo, (long long)job->hi);
}

int gm_cert_save(const char *path, const gm_cert_job *job, gm_cert_state *s) {
  char name[160];
  job_name(job, name, sizeof name);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "job", name);
  char buf[32];
  const char *impl = gm_cert_implementation(job, s);
  if (!impl) { cJSON_Delete(j); return -1; }
  cJSON_AddStringToObject(j, "implementation", impl);
  snprintf(buf, sizeof buf, "%lld", (long long)s->next); cJSON_AddStringToObject(j, "next", buf);
  snprintf(buf, sizeof buf, "%llu", (unsigned long long)s->n); cJSON_AddStringToObject(j, "n", buf);
  snprintf(buf, sizeof buf, "%llu", (unsigned long long)s->max_ulp); cJSON_AddStringToObject(j, "max_ulp", buf);
  gm_cert_json_add_value(j, "worst_input", s->worst_input);
  gm_cert_json_add_value(j, "worst_got", s->worst_got);
  gm_cert_json_add_value(j, "worst_exact", s->worst_exact);
  cJSON *h = cJSON_AddArrayToObject(j, "hist");
  for (int b = 0; b < GM_CERT_BUCKETS; b++) {
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)s->hist[b]);
    cJSON_AddItemToArray(h, cJSON_CreateString(buf));
  }
  char *txt = cJSON_Print(j);
  cJSON_Delete(j);
  gm_outfile o;
  int rc = gm_outfile_open(&o, path);
  if (rc == 0) {
    fputs(txt, (FILE *)o.fp);
    rc = gm_outfile_commit(&o);
  }
  free(txt);
  return rc;
}

static int get_u64(cJSON *j, const char *key, uint64_t *out) {
  cJSON *v = cJSON_GetObjectItem(j, key);
  if (!cJSON_IsString(v)) return -1;
  *out = strtoull(v->valuestring, NULL, 10);
  return 0;
}

int gm_cert_load(const char *path, const gm_cert_job *job, gm_cert_state *s) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char buf[8192];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[len] = 0;
  cJSON *j = cJSON_Parse(buf);
  if (!j) return gm_fail("checkpoint '%s' does not parse", path);
  char name[160];
  job_name(job, name, sizeof name);
  cJSON *jn = cJSON_GetObjectItem(j, "job");
  int rc = 1;
  uint64_t next, hist;
  cJSON *ji = cJSON_GetObjectItem(j, "implementation");
  const char *fps = gm_cert_implementation(job, s);
  if (!fps) { cJSON_Delete(j); return -1; }
  if (!cJSON_IsString(jn) || strcmp(jn->valuestring, name) != 0) {
    rc = gm_fail("checkpoint '%s' is for '%s', not '%s'", path, cJSON_IsString(jn) ? jn->valuestring : "?", name);
  } else if (!cJSON_IsString(ji) || strcmp(ji->valuestring, fps) != 0) {
    rc = gm_fail("checkpoint '%s' was made by another implementation of %s (fingerprint %s, this build %s): "
                 "delete it to start over", path, name, cJSON_IsString(ji) ? ji->valuestring : "none", fps);
  } else if (get_u64(j, "next", &next) || get_u64(j, "n", &s->n) || get_u64(j, "max_ulp", &s->max_ulp)) {
    rc = gm_fail("checkpoint '%s' lacks next/n/max_ulp", path);
  } else {
    s->next = strtoll(cJSON_GetObjectItem(j, "next")->valuestring, NULL, 10);
    s->worst_input = json_value(j, "worst_input");
    s->worst_got = json_value(j, "worst_got");
    s->worst_exact = json_value(j, "worst_exact");
    cJSON *h = cJSON_GetObjectItem(j, "hist");
    for (int b = 0; b < GM_CERT_BUCKETS; b++) {
      cJSON *e = cJSON_GetArrayItem(h, b);
      hist = e && cJSON_IsString(e) ? strtoull(e->valuestring, NULL, 10) : 0;
      s->hist[b] = hist;
    }
  }
  cJSON_Delete(j);
  return rc;
}
