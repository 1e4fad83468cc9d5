// lab/diverge_dump: streaming safetensors writer for the activations of one forward (--dump), and
// gm_diverge_dump. Memory stays bounded: only the header is built in memory; each tensor goes to
// the file as the probe sees it.
#include "lab/diverge_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// Appends printf output to a growing buffer; returns -1 on out of memory.
static int buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if (*buf && *len + (size_t)n < *cap) { *len += (size_t)n; return 0; }
    size_t nc = (*cap + (size_t)n + 1) * 2;
    char *nb = realloc(*buf, nc);
    if (!nb) return -1;
    *buf = nb;
    *cap = nc;
  }
}

int gm_dv_dump_open(dv_dump *d, const gm_gpt2_config *c, const gm_profile *p, int B, int T, const char *path) {
  memset(d, 0, sizeof *d);
  d->n_layer = c->n_layer;
  d->n_rows = gm_dv_n_rows(c->n_layer);
  d->numel = calloc((size_t)d->n_rows, sizeof(size_t));
  char *h = NULL;
  size_t len = 0, cap = 0;
  int rc = 0;
  if (!d->numel) return gm_fail("out of memory");
  rc |= buf_printf(&h, &len, &cap, "{\"__metadata__\":{\"format\":\"pt\",\"profile\":\"%s\",\"dtype\":\"%s\",\"B\":\"%d\",\"T\":\"%d\"}",
                   p->name, gm_dtype_name(p->dtype), B, T);
  uint64_t off = 0;
  for (int r = 0; r < d->n_rows && !rc; r++) {
    int layer;
    gm_point pt;
    int64_t shape[4];
    char name[64];
    gm_dv_row_point(d->n_layer, r, &layer, &pt);
    gm_dv_tensor_name(layer, pt, name, sizeof name);
    int nd = gm_dv_shape(c, B, T, pt, shape);
    size_t n = 1;
    rc |= buf_printf(&h, &len, &cap, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[", name);
    for (int k = 0; k < nd; k++) { n *= (size_t)shape[k]; rc |= buf_printf(&h, &len, &cap, "%s%lld", k ? "," : "", (long long)shape[k]); }
    d->numel[r] = n;
    rc |= buf_printf(&h, &len, &cap, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                     (unsigned long long)(off + 4 * n));
    off += 4 * n;
  }
  rc |= buf_printf(&h, &len, &cap, "}");
  while (!rc && len % 8) rc |= buf_printf(&h, &len, &cap, " ");
  if (rc) { free(h); free(d->numel); d->numel = NULL; return gm_fail("out of memory for the dump header"); }
  if (gm_outfile_open(&d->o, path)) { free(h); free(d->numel); d->numel = NULL; return -1; }
  unsigned char l8[8];
  for (int k = 0; k < 8; k++) l8[k] = (unsigned char)((uint64_t)len >> (8 * k));
  if (fwrite(l8, 1, 8, d->o.fp) != 8 || fwrite(h, 1, len, d->o.fp) != len) {
    free(h);
    int e = gm_fail("write to '%s' failed: %s", path, strerror(errno));
    gm_dv_dump_abort(d);
    return e;
  }
  free(h);
  return 0;
}

int gm_dv_dump_put(dv_dump *d, int row, const float *data, size_t numel) {
  if (row != d->next || row >= d->n_rows || numel != d->numel[row])
    return gm_fail("dump: tensor %d (%zu values) arrived out of order (expected tensor %d)", row, numel, d->next);
  // little-endian f32 (the build targets x86-64/aarch64 little-endian hosts)
  if (fwrite(data, sizeof(float), numel, d->o.fp) != numel)
    return gm_fail("write to '%s' failed: %s", d->o.final_path, strerror(errno));
  d->next++;
  return 0;
}

int gm_dv_dump_commit(dv_dump *d) {
  int rc;
  if (d->next != d->n_rows) {
    rc = gm_fail("dump: only %d of %d tensors were written", d->next, d->n_rows);
    gm_dv_dump_abort(d);
    return rc;
  }
  rc = gm_outfile_commit(&d->o);
  free(d->numel);
  d->numel = NULL;
  return rc;
}

void gm_dv_dump_abort(dv_dump *d) {
  if (d->o.fp) gm_outfile_abort(&d->o);
  free(d->numel);
  d->numel = NULL;
}

// The probe of gm_diverge_dump: appends each point's tensor.
static int dump_probe(void *ctx, const gm_probe_tensor *t) {
  dv_dump *d = ctx;
  int row = gm_dv_row_index(d->n_layer, t->layer, t->point);
  if (row < 0) return gm_fail("unexpected probe point");
  return gm_dv_dump_put(d, row, t->data, t->numel);
}

int gm_diverge_dump(const gm_gpt2 *m, const gm_profile *p, const int32_t *tokens, int B, int T, int threads,
                    const char *path) {
  if (T <= 0 || T > m->cfg.n_positions) return gm_fail("sequence length %d is outside [1, %d]", T, m->cfg.n_positions);
  float *logits = malloc((size_t)B * T * m->cfg.vocab_size * sizeof(float));
  if (!logits) return gm_fail("out of memory for logits");
  gm_kv_cache kv;
  dv_dump d;
  int rc = gm_kv_init(&kv, m, B, T);
  if (!rc && (rc = gm_dv_dump_open(&d, &m->cfg, p, B, T, path)) == 0) {
    rc = gm_gpt2_run(m, &(gm_gpt2_run_opts){.profile = p, .tokens = tokens, .B = B, .T = T, .kv = &kv, .logits = logits,
                                             .threads = threads, .probe = dump_probe, .probe_ctx = &d});
    if (rc) gm_dv_dump_abort(&d);
    else rc = gm_dv_dump_commit(&d);
  }
  gm_kv_free(&kv);
  free(logits);
  return rc;
}
