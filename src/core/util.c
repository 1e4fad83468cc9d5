// Errors, version, clock, RNG, atomic output files.
#include "gptmeg/core.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char errbuf[1024];

// The message is kept on one line: control characters (a file's bytes quoted into it, say) are
// written as \n, \r, \t or \xNN.
int gm_fail(const char *fmt, ...) {
  char raw[sizeof errbuf];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  size_t o = 0;
  for (const unsigned char *c = (const unsigned char *)raw; *c && o + 5 < sizeof errbuf; c++) {
    if (*c >= 0x20 && *c != 0x7f) errbuf[o++] = (char)*c;
    else if (*c == '\n' || *c == '\r' || *c == '\t') {
      errbuf[o++] = '\\';
      errbuf[o++] = *c == '\n' ? 'n' : *c == '\r' ? 'r' : 't';
    } else o += (size_t)snprintf(errbuf + o, sizeof errbuf - o, "\\x%02x", *c);
  }
  errbuf[o] = '\0';
  return -1;
}

const char *gm_errmsg(void) { return errbuf[0] ? errbuf : "unknown error"; }

#ifndef GPTMEG_VERSION
#define GPTMEG_VERSION "dev"
#endif
const char *gm_version(void) { return GPTMEG_VERSION; }

int gm_threads_default(void) { return omp_get_max_threads(); }

double gm_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void gm_rng_seed(gm_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t gm_rng_u64(gm_rng *r) { // xoshiro256**
  uint64_t *s = r->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
  return out;
}

double gm_rng_uniform(gm_rng *r) { return (double)(gm_rng_u64(r) >> 11) * 0x1p-53; }

double gm_rng_normal(gm_rng *r) {
  double u1 = gm_rng_uniform(r), u2 = gm_rng_uniform(r);
  if (u1 < 0x1p-60) u1 = 0x1p-60;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

int gm_outfile_open(gm_outfile *o, const char *path) {
  memset(o, 0, sizeof *o);
  size_t n = strlen(path) + 32;
  o->final_path = strdup(path);
  o->tmp_path = malloc(n);
  if (!o->final_path || !o->tmp_path) { gm_outfile_abort(o); return gm_fail("out of memory"); }
  snprintf(o->tmp_path, n, "%s.tmp.%ld", path, (long)getpid());
  o->fp = fopen(o->tmp_path, "wb");
  if (!o->fp) {
    int r = gm_fail("cannot write '%s': %s", path, strerror(errno));
    free(o->final_path); free(o->tmp_path); memset(o, 0, sizeof *o);
    return r;
  }
  return 0;
}

int gm_outfile_commit(gm_outfile *o) {
  int rc = 0;
  if (!o->fp) return gm_fail("output file was not open");
  if (fflush((FILE *)o->fp) != 0 || ferror((FILE *)o->fp)) rc = gm_fail("write to '%s' failed: %s", o->final_path, strerror(errno));
  if (fclose((FILE *)o->fp) != 0 && rc == 0) rc = gm_fail("close of '%s' failed: %s", o->final_path, strerror(errno));
  o->fp = NULL;
  if (rc == 0 && rename(o->tmp_path, o->final_path) != 0) rc = gm_fail("cannot rename into '%s': %s", o->final_path, strerror(errno));
  if (rc != 0) unlink(o->tmp_path);
  free(o->final_path); free(o->tmp_path);
  o->final_path = o->tmp_path = NULL;
  return rc;
}

void gm_outfile_abort(gm_outfile *o) {
  if (o->fp) { fclose((FILE *)o->fp); o->fp = NULL; }
  if (o->tmp_path) unlink(o->tmp_path);
  free(o->final_path); free(o->tmp_path);
  o->final_path = o->tmp_path = NULL;
}
