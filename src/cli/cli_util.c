// Argument helpers shared by every gptmeg command.
#include "cli/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("gptmeg: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return CLI_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "gptmeg %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\ntry 'gptmeg %s --help'\n", cmd);
  va_end(ap);
  return CLI_USAGE;
}

bool cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return true;
  return false;
}

int cli_parse_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return cli_usage_error(cmd, "%s expects an integer in [%ld, %ld], got '%s'", opt, lo, hi, s);
  *out = v;
  return 0;
}

int cli_parse_double(const char *cmd, const char *opt, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end) return cli_usage_error(cmd, "%s expects a number, got '%s'", opt, s);
  *out = v;
  return 0;
}

const char *cli_value(const char *cmd, int argc, char **argv, int *i) {
  if (*i + 1 >= argc) {
    cli_usage_error(cmd, "option %s needs a value", argv[*i]);
    return NULL;
  }
  return argv[++*i];
}
