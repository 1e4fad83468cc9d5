// Shared by the libFuzzer harnesses (fuzz/fuzz_*.c): the input bytes as a file the loaders can
// open by path. A memfd is used (no disk traffic; its path is /proc/self/fd/N); one is made per
// call and closed before returning, so nothing leaks between runs.
#ifndef GPTMEG_FUZZ_COMMON_H
#define GPTMEG_FUZZ_COMMON_H

#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  int fd;
  char path[64];
} fz_file;

static inline void fz_write_all(int fd, const uint8_t *data, size_t size) {
  while (size) {
    ssize_t w = write(fd, data, size);
    if (w <= 0) abort(); // the harness itself is broken: stop loudly
    data += w;
    size -= (size_t)w;
  }
}

// Writes data into a fresh memfd; f->path names it for fopen/open/stat.
static inline void fz_file_open(fz_file *f, const char *name, const uint8_t *data, size_t size) {
  f->fd = memfd_create(name, MFD_CLOEXEC);
  if (f->fd < 0) { perror("memfd_create"); abort(); }
  fz_write_all(f->fd, data, size);
  snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
}

static inline void fz_file_close(fz_file *f) {
  close(f->fd);
  f->fd = -1;
}

// Writes data to path (a real file, for the loaders that look inside a directory).
// Where a harness that must write real files makes its directory: TMPDIR, else /dev/shm (a file
// system in memory: about 1.5x the executions a second of /tmp on disk), else /tmp.
static inline const char *fz_tmpdir(void) {
  const char *tmp = getenv("TMPDIR");
  if (tmp && *tmp) return tmp;
  struct stat sb;
  return stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

static inline void fz_write_path(const char *path, const uint8_t *data, size_t size) {
  FILE *fp = fopen(path, "wb");
  if (!fp) { perror(path); abort(); }
  if (size && fwrite(data, 1, size, fp) != size) abort();
  if (fclose(fp) != 0) abort();
}

// GPTMEG_FUZZ_VERBOSE=1: each loader's outcome on stderr (for checking seeds and reproducing).
const char *gm_errmsg(void);
static inline int fz_report(const char *what, int rc) {
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("GPTMEG_FUZZ_VERBOSE") != NULL;
  if (verbose) fprintf(stderr, "%s: %s\n", what, rc ? gm_errmsg() : "loaded");
  return rc;
}

#endif
