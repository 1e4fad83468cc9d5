// lab/report: compute the compatibility report (every variant:mode in f32, f16, bf16), write it
// atomically as DIR/index.html + DIR/report.json, and print the verdict summary.
//
// Inputs: f16 and bf16 take every finite bit pattern; f32 takes gm_golden_f32_inputs (inputs.h:
// the special values, then a documented mix of magnitudes), non-finite values dropped. Each
// variant:mode runs once per dtype on the whole input as one tensor; torch-cpu runs with 1 thread
// (its bits depend on the thread count, and the report must not), every other mode with
// opts.threads. Then every pair of outputs is compared (OpenMP over pairs).
#include "lab/report_internal.h"
#include "gptmeg/inputs.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const gm_gelu_mode gm_rpt_verdict_modes[RPT_NVERDICT][2] = {
    {GM_MODE_TORCH_CPU, GM_MODE_TORCH_CPU}, {GM_MODE_EAGER, GM_MODE_FUSED}, {GM_MODE_ACCURATE, GM_MODE_ACCURATE}};

const gm_cmp_stats *gm_rpt_pair(const rpt_dtype *d, int i, int j) {
  if (i == j || !d->ok[i] || !d->ok[j]) return NULL;
  return i < j ? &d->pair[i * RPT_NSPEC + j] : &d->pair[j * RPT_NSPEC + i];
}

void gm_rpt_verdict_text(const gm_cmp_stats *s, gm_dtype dt, char *buf, size_t n) {
  gm_tolerance t = gm_default_tolerance(dt);
  if (s->equal == s->n) snprintf(buf, n, "drop-in: bitwise identical");
  else if (s->close_default == s->n) snprintf(buf, n, "yes under assert_close (rtol %g, atol %g), not bitwise", t.rtol, t.atol);
  else
    snprintf(buf, n, "no: %.3g%% of inputs fail assert_close; passes only at rtol %.3g", 100.0 * (double)(s->n - s->close_default) / (double)s->n,
             s->rtol_needed);
}

static int run_spec(gm_gelu_spec s, gm_dtype dt, const void *x, void *y, size_t n, int threads) {
  return gm_gelu_fwd(s, dt, x, y, n, s.mode == GM_MODE_TORCH_CPU ? 1 : threads);
}

static int compute_dtype(const gm_report_opts *o, rpt_dtype *d) {
  double t0 = gm_now_s();
  gm_dtype dt = d->dt;
  size_t es = gm_dtype_size(dt), n;
  void *x;
  if (dt == GM_F32) {
    size_t total = o->n_f32 + gm_special_f32_count();
    float *all = malloc(total * sizeof(float));
    if (!all) return gm_fail("out of memory for %zu f32 inputs", total);
    gm_golden_f32_inputs(o->seed, total, all);
    n = 0;
    for (size_t i = 0; i < total; i++)
      if (isfinite(all[i])) all[n++] = all[i];
    d->excluded = total - n;
    x = all;
  } else {
    x = malloc(65536 * es);
    if (!x) return gm_fail("out of memory");
    n = gm_finite_u16(dt, x);
    d->excluded = 65536 - n;
  }
  d->n = n;
  unsigned char *y[RPT_NSPEC] = {0};
  d->pair = calloc((size_t)RPT_NSPEC * RPT_NSPEC, sizeof *d->pair);
  int rc = 0;
  if (!d->pair) { rc = gm_fail("out of memory"); goto done; }
  for (int i = 0; i < RPT_NSPEC; i++) {
    y[i] = malloc(n * es);
    if (!y[i]) { rc = gm_fail("out of memory for outputs"); goto done; }
    d->ok[i] = run_spec(rpt_spec(i), dt, x, y[i], n, o->threads) == 0;
    if (!d->ok[i]) snprintf(d->err[i], sizeof d->err[i], "%s", gm_errmsg());
  }
  gm_tolerance user = {1e-5, 1e-8};
  // each spec against the exact mode of its variant, and the ULP-vs-x bins
  for (int i = 0; i < RPT_NSPEC; i++) {
    int ex = rpt_index((gm_gelu_spec){rpt_spec(i).variant, GM_MODE_EXACT});
    gm_cmp_init(&d->vs_exact[i]);
    for (int b = 0; b < RPT_BINS; b++) d->bin_max_ulp[i][b] = -1;
    if (!d->ok[i] || !d->ok[ex]) continue;
    gm_cmp_add(&d->vs_exact[i], dt, x, y[i], y[ex], n, user);
    for (size_t k = 0; k < n; k++) {
      uint64_t u = gm_ulp_dist(dt, y[i] + k * es, y[ex] + k * es);
      double xv = gm_load_f64(dt, x, k), uu = u == UINT64_MAX ? 1e30 : (double)u;
      if (xv >= RPT_XMIN && xv < RPT_XMAX) {
        int b = (int)((xv - RPT_XMIN) / (RPT_XMAX - RPT_XMIN) * RPT_BINS);
        if (b >= RPT_BINS) b = RPT_BINS - 1;
        if (uu > d->bin_max_ulp[i][b]) d->bin_max_ulp[i][b] = uu;
      } else if (u > d->outside_max_ulp[i]) d->outside_max_ulp[i] = u;
    }
  }
  int npairs = RPT_NSPEC * (RPT_NSPEC - 1) / 2;
#pragma omp parallel for schedule(dynamic, 4) num_threads(o->threads)
  for (int k = 0; k < npairs; k++) {
    int i = 0, left = k; // k-th pair (i, j) with i < j in row order
    while (left >= RPT_NSPEC - 1 - i) { left -= RPT_NSPEC - 1 - i; i++; }
    int j = i + 1 + left;
    gm_cmp_init(&d->pair[i * RPT_NSPEC + j]);
    if (d->ok[i] && d->ok[j]) gm_cmp_add(&d->pair[i * RPT_NSPEC + j], dt, x, y[i], y[j], n, user);
  }
done:
  for (int i = 0; i < RPT_NSPEC; i++) free(y[i]);
  free(x);
  d->seconds = gm_now_s() - t0;
  return rc;
}

static void tensor_experiments(gm_report *r) {
  // The '3x3 experiment': torch.equal(F.gelu(x, approximate='tanh'), gelu_new(x)) on PyTorch CPU
  // for many small tensors of N(0,1) inputs, by tensor length.
  static const size_t lens[] = {9, 16, 1000};
  static const gm_dtype dts[] = {GM_F32, GM_BF16};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (size_t l = 0; l < sizeof lens / sizeof lens[0] && r->n_tensor < RPT_NTENSOR; l++) {
      rpt_tensor_row *t = &r->tensor[r->n_tensor++];
      t->a = (gm_gelu_spec){GM_GELU_NEW, GM_MODE_TORCH_CPU};
      t->b = (gm_gelu_spec){GM_GELU_PYTORCH_TANH, GM_MODE_TORCH_CPU};
      t->dt = dts[d];
      t->len = lens[l];
      t->trials = lens[l] >= 1000 ? 200 : 2000;
      gm_compare_job j = {.a = t->a, .b = t->b, .dtype = t->dt, .src = GM_SRC_DIST, .seed = r->opts.seed,
                          .n = t->len * t->trials, .len = t->len, .trials = t->trials,
                          .user_tol = {1e-5, 1e-8}, .threads = 1};
      t->ok = gm_compare_run(&j, &t->res) == 0;
      if (!t->ok) snprintf(t->err, sizeof t->err, "%s", gm_errmsg());
    }
}

int gm_report_compute(const gm_report_opts *o, gm_report **out) {
  *out = NULL;
  gm_report *r = calloc(1, sizeof *r);
  if (!r) return gm_fail("out of memory");
  r->opts = *o;
  if (r->opts.threads <= 0) r->opts.threads = gm_threads_default();
  if (r->opts.n_f32 == 0) r->opts.n_f32 = 200000;
  double t0 = gm_now_s();
  time_t now = time(NULL);
  strftime(r->when, sizeof r->when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  static const gm_dtype dts[RPT_NDT] = {GM_F32, GM_F16, GM_BF16};
  for (int d = 0; d < RPT_NDT; d++) {
    r->d[d].dt = dts[d];
    if (!o->quiet) fprintf(stderr, "gptmeg report: %s ...\n", gm_dtype_name(dts[d]));
    if (compute_dtype(&r->opts, &r->d[d])) { gm_report_free(r); return -1; }
  }
  tensor_experiments(r);
  r->seconds = gm_now_s() - t0;
  *out = r;
  return 0;
}

void gm_report_free(gm_report *r) {
  if (!r) return;
  for (int d = 0; d < RPT_NDT; d++) free(r->d[d].pair);
  free(r);
}

int gm_report_add_section(gm_report *r, const char *title, gm_report_section_fn fn, void *user) {
  if (r->n_sections >= RPT_MAX_SECTIONS) return gm_fail("too many report sections (at most %d)", RPT_MAX_SECTIONS);
  rpt_section *s = &r->sections[r->n_sections++];
  snprintf(s->title, sizeof s->title, "%s", title);
  s->fn = fn;
  s->user = user;
  return 0;
}

static int write_file(const char *dir, const char *name, const gm_report *r, int html) {
  char path[4096];
  snprintf(path, sizeof path, "%.4000s/%.60s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) return gm_fail("cannot write '%s': %s", path, strerror(errno));
  int rc = 0;
  if (html) rc = gm_rpt_write_html(r, f);
  else {
    cJSON *j = gm_rpt_json(r);
    char *s = j ? cJSON_Print(j) : NULL;
    if (!s) rc = gm_fail("out of memory building report.json");
    else fputs(s, f), fputc('\n', f);
    free(s);
    cJSON_Delete(j);
  }
  if (fflush(f) != 0 || ferror(f)) rc = rc ? rc : gm_fail("write to '%s' failed: %s", path, strerror(errno));
  if (fclose(f) != 0 && !rc) rc = gm_fail("close of '%s' failed", path);
  return rc;
}

static void remove_report_dir(const char *dir) {
  char p[4096];
  snprintf(p, sizeof p, "%.4000s/index.html", dir);
  unlink(p);
  snprintf(p, sizeof p, "%.4000s/report.json", dir);
  unlink(p);
  rmdir(dir);
}

int gm_report_check_dir(const char *dir) {
  size_t len = strlen(dir);
  if (len == 0 || len > 3000) return gm_fail("bad report directory '%s'", dir);
  struct stat st;
  char probe[4096];
  if (stat(dir, &st) == 0) {
    snprintf(probe, sizeof probe, "%.4000s/report.json", dir);
    if (!S_ISDIR(st.st_mode)) return gm_fail("'%s' exists and is not a directory", dir);
    if (access(probe, F_OK) != 0) return gm_fail("'%s' exists and is not a gptmeg report (no report.json); choose another --out", dir);
  }
  snprintf(probe, sizeof probe, "%.4000s.probe.%ld", dir, (long)getpid());
  if (mkdir(probe, 0755) != 0) return gm_fail("cannot create the report directory '%s': %s", dir, strerror(errno));
  rmdir(probe);
  return 0;
}

int gm_report_write(const gm_report *r, const char *dir) {
  size_t len = strlen(dir);
  if (len == 0 || len > 3000) return gm_fail("bad report directory '%s'", dir);
  char tmp[4096], old[4096], probe[4096];
  struct stat st;
  if (stat(dir, &st) == 0) {
    snprintf(probe, sizeof probe, "%.4000s/report.json", dir);
    if (!S_ISDIR(st.st_mode)) return gm_fail("'%s' exists and is not a directory", dir);
    if (access(probe, F_OK) != 0) return gm_fail("'%s' exists and is not a gptmeg report (no report.json); choose another --out", dir);
  }
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dir, (long)getpid());
  snprintf(old, sizeof old, "%s.old.%ld", dir, (long)getpid());
  if (mkdir(tmp, 0755) != 0) return gm_fail("cannot create '%s': %s", tmp, strerror(errno));
  if (write_file(tmp, "index.html", r, 1) || write_file(tmp, "report.json", r, 0)) {
    char msg[600];
    snprintf(msg, sizeof msg, "%s", gm_errmsg());
    remove_report_dir(tmp);
    return gm_fail("%s", msg);
  }
  bool had_old = stat(dir, &st) == 0;
  if (had_old && rename(dir, old) != 0) {
    int e = errno;
    remove_report_dir(tmp);
    return gm_fail("cannot move the old report '%s' aside: %s", dir, strerror(e));
  }
  if (rename(tmp, dir) != 0) {
    int e = errno;
    if (had_old) rename(old, dir);
    remove_report_dir(tmp);
    return gm_fail("cannot rename '%s' into '%s': %s", tmp, dir, strerror(e));
  }
  if (had_old) remove_report_dir(old);
  return 0;
}

void gm_report_print_summary(const gm_report *r, FILE *f) {
  fprintf(f, "Can gelu_new be replaced by gelu_pytorch_tanh?\n");
  for (int d = 0; d < RPT_NDT; d++) {
    const rpt_dtype *D = &r->d[d];
    for (int v = 0; v < RPT_NVERDICT; v++) {
      gm_gelu_spec a = {GM_GELU_NEW, gm_rpt_verdict_modes[v][0]}, b = {GM_GELU_PYTORCH_TANH, gm_rpt_verdict_modes[v][1]};
      char na[64], nb[64], verdict[200];
      gm_gelu_spec_format(a, na, sizeof na);
      gm_gelu_spec_format(b, nb, sizeof nb);
      const gm_cmp_stats *s = gm_rpt_pair(D, rpt_index(a), rpt_index(b));
      if (!s) { fprintf(f, "  %-5s %-20s -> %-28s not available\n", gm_dtype_name(D->dt), na, nb); continue; }
      gm_rpt_verdict_text(s, D->dt, verdict, sizeof verdict);
      fprintf(f, "  %-5s %-20s -> %-28s %6.2f%% bitwise, max %llu ulp: %s\n", gm_dtype_name(D->dt), na, nb,
              100.0 * (double)s->equal / (double)s->n, (unsigned long long)s->max_ulp, verdict);
    }
  }
  for (int t = 0; t < r->n_tensor; t++) {
    const rpt_tensor_row *T = &r->tensor[t];
    if (!T->ok) continue;
    fprintf(f, "  torch.equal, %s tensors of %zu N(0,1) inputs (torch-cpu): %.1f%% equal\n", gm_dtype_name(T->dt), T->len,
            100.0 * (double)T->res.tensors_equal / (double)T->res.tensors);
  }
  fprintf(f, "(%.1f s)\n", r->seconds);
}
