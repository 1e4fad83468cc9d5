// io/npy: round trips for every dtype and shape kind; files written by numpy (when python3 with
// numpy is available) read back with the right values, and our files load in numpy; corrupt,
// truncated and unsupported files fail with one clear message naming the file.
#include "gptmeg/npy.h"
#include "harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static void write_bytes(const char *name, const void *b, size_t n) {
  char p[256];
  path_of(p, sizeof p, name);
  FILE *f = fopen(p, "wb");
  fwrite(b, 1, n, f);
  fclose(f);
}

// A v1 file with the given dict text (padded to 64) and `data_bytes` zero bytes of data.
static void write_raw_npy(const char *name, const char *dict, size_t data_bytes) {
  unsigned char buf[4096] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  size_t len = strlen(dict), total = (10 + len + 1 + 63) / 64 * 64, hl = total - 10;
  buf[8] = (unsigned char)(hl & 255);
  buf[9] = (unsigned char)(hl >> 8);
  memcpy(buf + 10, dict, len);
  memset(buf + 10 + len, ' ', hl - len - 1);
  buf[total - 1] = '\n';
  memset(buf + total, 0, data_bytes);
  write_bytes(name, buf, total + data_bytes);
}

static void expect_fail(const char *name, const char *phrase) {
  char p[256];
  path_of(p, sizeof p, name);
  gm_npy a;
  int rc = gm_npy_read(p, GM_BF16, &a);
  CHECK(rc != 0, "%s: read should fail", name);
  CHECK(a.data == NULL, "%s: data left allocated", name);
  const char *m = gm_errmsg();
  CHECK(strstr(m, name) != NULL, "%s: message does not name the file: %s", name, m);
  CHECK(strstr(m, phrase) != NULL, "%s: message lacks '%s': %s", name, phrase, m);
  CHECK(strchr(m, '\n') == NULL, "%s: message is not one line", name);
}

// value k of the test arrays, also computed by the python script: (k % 17) * 0.25 - 2
static double val(size_t k) { return (double)(k % 17) * 0.25 - 2; }

static void round_trips(void) {
  static const gm_dtype dts[] = {GM_F64, GM_F32, GM_F16, GM_BF16, GM_I32, GM_I64};
  static const size_t shapes[][8] = {{0}, {7}, {2, 3, 4}, {1, 2, 1, 2, 1, 2, 1, 3}, {3, 0, 2}};
  static const int ndims[] = {0, 1, 3, 8, 3};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++) {
      size_t count = 1, es = gm_dtype_size(dts[d]);
      for (int k = 0; k < ndims[s]; k++) count *= shapes[s][k];
      unsigned char *buf = malloc(count * es + 1);
      for (size_t k = 0; k < count; k++) {
        if (dts[d] == GM_I32) { int32_t v = (int32_t)k - 5; memcpy(buf + k * 4, &v, 4); }
        else if (dts[d] == GM_I64) { int64_t v = (int64_t)k * 1000000007LL - 3; memcpy(buf + k * 8, &v, 8); }
        else gm_store_f64(dts[d], buf, k, val(k));
      }
      char p[256];
      path_of(p, sizeof p, "rt.npy");
      for (int as_u2 = 0; as_u2 < (dts[d] == GM_F16 ? 2 : 1); as_u2++) {
        CHECK(gm_npy_write(p, dts[d], buf, ndims[s], shapes[s], as_u2) == 0, "write %s ndim %d: %s", gm_dtype_name(dts[d]), ndims[s], gm_errmsg());
        FILE *f = fopen(p, "rb");
        unsigned char head[10];
        CHECK(f && fread(head, 1, 10, f) == 10, "reopen");
        if (f) fclose(f);
        size_t hl = (size_t)head[8] | (size_t)head[9] << 8;
        CHECK((10 + hl) % 64 == 0, "header not 64-aligned: %zu", 10 + hl);
        gm_npy a;
        int rc = gm_npy_read(p, dts[d] == GM_F16 ? GM_F16 : GM_BF16, &a);
        CHECK(rc == 0, "read back %s: %s", gm_dtype_name(dts[d]), gm_errmsg());
        if (rc) continue;
        CHECK(a.dtype == dts[d], "dtype %s read as %s", gm_dtype_name(dts[d]), gm_dtype_name(a.dtype));
        CHECK(a.ndim == ndims[s] && a.count == count, "shape: ndim %d count %zu", a.ndim, a.count);
        for (int k = 0; k < a.ndim && k < ndims[s]; k++) CHECK(a.shape[k] == shapes[s][k], "dim %d", k);
        CHECK(memcmp(a.data, buf, count * es) == 0, "data differs after round trip (%s)", gm_dtype_name(dts[d]));
        CHECK(strcmp(a.descr, as_u2 || dts[d] == GM_BF16 ? "<u2" : dts[d] == GM_F16 ? "<f2" : a.descr) == 0, "descr %s", a.descr);
        gm_npy_free(&a);
      }
      free(buf);
    }
  // a '<u2' file read as bf16 by default
  uint16_t bits[2] = {0x3f80, 0xc000};
  size_t sh = 2;
  char p[256];
  path_of(p, sizeof p, "u2.npy");
  CHECK(gm_npy_write(p, GM_BF16, bits, 1, &sh, false) == 0, "write bf16");
  gm_npy a;
  CHECK(gm_npy_read(p, GM_BF16, &a) == 0 && a.dtype == GM_BF16 && gm_load_f64(GM_BF16, a.data, 1) == -2.0, "bf16 read");
  gm_npy_free(&a);
  // writing into a missing directory fails and leaves nothing behind
  CHECK(gm_npy_write("/nonexistent-dir-gptmeg/x.npy", GM_F32, bits, 1, &sh, false) != 0, "write into a missing dir should fail");
  DIR *dd = opendir(dir);
  struct dirent *e;
  int temps = 0;
  while (dd && (e = readdir(dd)))
    if (strstr(e->d_name, ".tmp.")) temps++;
  if (dd) closedir(dd);
  CHECK(temps == 0, "%d temporary files left", temps);
}

static void corrupt_files(void) {
  write_bytes("magic.npy", "\x93NUMPX\x01\x00\x10\x00{}", 12);
  expect_fail("magic.npy", "bad magic");
  write_bytes("short.npy", "\x93NUMPY\x01\x00\xff\x00{'descr'", 19);
  expect_fail("short.npy", "truncated .npy header");
  write_raw_npy("trunc.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }", 47);
  expect_fail("trunc.npy", "truncated data");
  write_raw_npy("extra.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 20);
  expect_fail("extra.npy", "shape/size mismatch");
  write_raw_npy("big.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", 16);
  expect_fail("big.npy", "'>f4'");
  write_raw_npy("cplx.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (4,), }", 32);
  expect_fail("cplx.npy", "unsupported dtype '<c8'");
  write_raw_npy("fort.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16);
  expect_fail("fort.npy", "fortran_order");
  write_raw_npy("dims.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4);
  expect_fail("dims.npy", "more than 8 dimensions");
  write_raw_npy("nodict.npy", "[1, 2]", 0);
  expect_fail("nodict.npy", "not a dict");
  write_raw_npy("noshape.npy", "{'descr': '<f4', 'fortran_order': False, }", 0);
  expect_fail("noshape.npy", "lacks 'shape'");
  write_raw_npy("negshape.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0);
  expect_fail("negshape.npy", "bad .npy shape");
  write_bytes("v9.npy", "\x93NUMPY\x09\x00\x10\x00", 10);
  expect_fail("v9.npy", "version 9.0");
  expect_fail("missing.npy", "cannot open");
}

static void numpy_interop(void) {
  if (system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) { test_skip("numpy interop", "python3 with numpy not available"); return; }
  char cmd[2048];
  // numpy writes: f64/f32/f16/u2(bf16 bits)/i4/i8, a v2.0 file; then loads one of ours
  char mine[256];
  path_of(mine, sizeof mine, "mine.npy");
  float fv[6];
  for (int k = 0; k < 6; k++) fv[k] = (float)val((size_t)k);
  size_t sh[2] = {2, 3};
  CHECK(gm_npy_write(mine, GM_F32, fv, 2, sh, false) == 0, "write mine");
  snprintf(cmd, sizeof cmd,
           "python3 - '%s' <<'PY'\n"
           "import sys, numpy as np\n"
           "d = sys.argv[1]\n"
           "v = lambda n: (np.arange(n) %% 17) * 0.25 - 2\n"
           "for name, dt in [('f8', '<f8'), ('f4', '<f4'), ('f2', '<f2'), ('i4', '<i4'), ('i8', '<i8')]:\n"
           "    a = v(24).astype(dt).reshape(2, 3, 4) if dt[1] == 'f' else (np.arange(24) - 5).astype(dt).reshape(2, 3, 4)\n"
           "    np.save(d + '/np_' + name + '.npy', a)\n"
           "bf = (v(10).astype('<f4').view('<u4') >> 16).astype('<u2')\n"
           "np.save(d + '/np_bf16.npy', bf)\n"
           "with open(d + '/np_v2.npy', 'wb') as f:\n"
           "    np.lib.format.write_array(f, v(5).astype('<f4'), version=(2, 0))\n"
           "np.save(d + '/np_fort.npy', np.asfortranarray(v(6).astype('<f4').reshape(2, 3)))\n"
           "np.save(d + '/np_big.npy', v(3).astype('>f4'))\n"
           "m = np.load(d + '/mine.npy')\n"
           "assert m.dtype == np.float32 and m.shape == (2, 3), (m.dtype, m.shape)\n"
           "assert (m.ravel() == v(6).astype(np.float32)).all()\n"
           "PY",
           dir);
  int rc = system(cmd);
  CHECK(rc == 0, "numpy script failed (or numpy could not load our file)");
  if (rc) return;
  static const struct { const char *name; gm_dtype dt; } files[] = {
      {"np_f8.npy", GM_F64}, {"np_f4.npy", GM_F32}, {"np_f2.npy", GM_F16}, {"np_i4.npy", GM_I32}, {"np_i8.npy", GM_I64}};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[256];
    path_of(p, sizeof p, files[i].name);
    gm_npy a;
    if (gm_npy_read(p, GM_BF16, &a)) { CHECK(0, "%s: %s", files[i].name, gm_errmsg()); continue; }
    CHECK(a.dtype == files[i].dt && a.ndim == 3 && a.shape[0] == 2 && a.shape[1] == 3 && a.shape[2] == 4, "%s: dtype/shape", files[i].name);
    for (size_t k = 0; k < 24; k++) {
      double got, want = gm_dtype_is_float(a.dtype) ? val(k) : (double)k - 5;
      if (a.dtype == GM_I32) got = ((int32_t *)a.data)[k];
      else if (a.dtype == GM_I64) got = (double)((int64_t *)a.data)[k];
      else got = gm_load_f64(a.dtype, a.data, k);
      CHECK(got == want, "%s[%zu] = %g, wanted %g", files[i].name, k, got, want);
    }
    gm_npy_free(&a);
  }
  char p[256];
  gm_npy a;
  path_of(p, sizeof p, "np_bf16.npy");
  CHECK(gm_npy_read(p, GM_BF16, &a) == 0 && a.dtype == GM_BF16 && a.count == 10, "np_bf16");
  for (size_t k = 0; k < a.count; k++) CHECK(gm_load_f64(GM_BF16, a.data, k) == val(k), "bf16[%zu]", k);
  gm_npy_free(&a);
  path_of(p, sizeof p, "np_v2.npy");
  CHECK(gm_npy_read(p, GM_BF16, &a) == 0 && a.dtype == GM_F32 && a.count == 5, "v2.0 file: %s", gm_errmsg());
  for (size_t k = 0; k < a.count; k++) CHECK(gm_load_f64(GM_F32, a.data, k) == val(k), "v2[%zu]", k);
  gm_npy_free(&a);
  expect_fail("np_fort.npy", "fortran_order");
  expect_fail("np_big.npy", "'>f4'");
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/gptmeg_test_npy.%ld", (long)getpid());
  char cmd[128];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  if (system(cmd) != 0) { CHECK(0, "mkdir"); return test_done("test_npy"); }
  round_trips();
  corrupt_files();
  numpy_interop();
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return test_done("test_npy");
}
