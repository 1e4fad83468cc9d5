// Tokenizer lookup and copy for the model commands (contracts in cli_model.h).
#include "cli/cli_model.h"
#include "gptmeg/core.h"

#include <errno.h>
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
