// Tokenizer lookup and copy for the model commands (contracts in cli_model.h).
#include "cli/cli_model.h"
#include "gptmeg/core.h"
#include "gptmeg/npy.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Fails naming the first of DIR/vocab.json, DIR/merges.txt that cannot be read; 0 if both can.
static int check_files(const char *dir, const char *hint) {
  static const char *const names[] = {"vocab.json", "merges.txt"};
  for (int i = 0; i < 2; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (access(path, R_OK) != 0)
      return gm_fail("cannot read %s (%s)%s", path, strerror(errno), hint);
  }
  return 0;
}

int cli_load_tokenizer(const char *model_dir, const char *tokdir, gm_tokenizer **out) {
  *out = NULL;
  if (tokdir) {
    if (check_files(tokdir, "")) return -1;
    return gm_tok_load(tokdir, out);
  }
  if (check_files(model_dir, ": the model folder has no tokenizer; pass --tokenizer DIR (a folder with vocab.json and "
                             "merges.txt) or make the model with 'gptmeg init --tokenizer DIR'"))
    return -1;
  return gm_tok_load(model_dir, out);
}

// Copies the file src to dst through a temporary file renamed into place.
static int copy_file(const char *src, const char *dst) {
  FILE *in = fopen(src, "rb");
  if (!in) return gm_fail("cannot open '%s': %s", src, strerror(errno));
  gm_outfile o;
  if (gm_outfile_open(&o, dst)) { fclose(in); return -1; }
  char buf[1 << 16];
  size_t n;
  int rc = 0;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, n, o.fp) != n) { rc = gm_fail("write to '%s' failed: %s", dst, strerror(errno)); break; }
  if (!rc && ferror(in)) rc = gm_fail("read of '%s' failed", src);
  fclose(in);
  if (rc) { gm_outfile_abort(&o); return rc; }
  return gm_outfile_commit(&o);
}

int cli_copy_tokenizer(const char *src_dir, const char *dst_dir) {
  gm_tokenizer *t;
  if (check_files(src_dir, "") || gm_tok_load(src_dir, &t)) return -1;
  gm_tok_free(t);
  static const char *const names[] = {"vocab.json", "merges.txt"};
  for (int i = 0; i < 2; i++) {
    char s[4096], d[4096];
    snprintf(s, sizeof s, "%s/%s", src_dir, names[i]);
    snprintf(d, sizeof d, "%s/%s", dst_dir, names[i]);
    if (copy_file(s, d)) return -1;
  }
  return 0;
}

int cli_read_tokens_npy(const char *path, bool any_shape, int32_t **ids, size_t *n, int *B, int *T) {
  *ids = NULL;
  *n = 0;
  gm_npy a;
  if (gm_npy_read(path, GM_BF16, &a)) return -1;
  int rc = 0;
  if (a.dtype != GM_I32 && a.dtype != GM_I64) rc = gm_fail("%s: token ids must be int32 or int64 (the file holds %s)", path, a.descr);
  else if (!any_shape && a.ndim != 1 && a.ndim != 2)
    rc = gm_fail("%s: tokens must be a [B, T] or [T] array (the file's array has %d dimensions)", path, a.ndim);
  else if (!any_shape && a.count == 0) rc = gm_fail("%s: the array holds no tokens", path);
  else if (a.count > INT_MAX) rc = gm_fail("%s: %zu tokens is more than this command takes (%d)", path, a.count, INT_MAX);
  int32_t *v = NULL;
  if (!rc && !(v = malloc((a.count ? a.count : 1) * sizeof(int32_t)))) rc = gm_fail("out of memory for %zu token ids", a.count);
  for (size_t i = 0; !rc && i < a.count; i++) {
    int64_t x = a.dtype == GM_I64 ? ((const int64_t *)a.data)[i] : ((const int32_t *)a.data)[i];
    if (x < INT32_MIN || x > INT32_MAX) rc = gm_fail("%s: token %lld at index %zu does not fit int32", path, (long long)x, i);
    else v[i] = (int32_t)x;
  }
  if (!rc) {
    *ids = v;
    *n = a.count;
    bool two = !any_shape && a.ndim == 2;
    if (B) *B = two ? (int)a.shape[0] : 1;
    if (T) *T = two ? (int)a.shape[1] : (int)a.count;
  } else free(v);
  gm_npy_free(&a);
  return rc;
}
