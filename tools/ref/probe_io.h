// The float files tools/ref's hand-built probes share with their Python sides (DIR/NAME, raw f32).
// Included by probe_f32_mt.c, probe_f32_orders.c, probe_linear_bwd.c and probe_lowp_products.c.
#ifndef GM_PROBE_IO_H
#define GM_PROBE_IO_H

#include <stdio.h>
#include <stdlib.h>

// count floats from DIR/NAME; exits with a line naming the file when it is missing or short.
static inline float *probe_read_floats(const char *dir, const char *name, size_t count) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  float *x = malloc(count * sizeof(float));
  if (!x || fread(x, sizeof(float), count, f) != count) {
    fprintf(stderr, "%s: short or out of memory\n", path);
    exit(1);
  }
  fclose(f);
  return x;
}

// count floats to DIR/NAME; exits with a line naming the file when it cannot be written.
static inline void probe_write_floats(const char *dir, const char *name, const float *x, size_t count) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(x, sizeof(float), count, f) != count || fclose(f) != 0) {
    fprintf(stderr, "%s: cannot write\n", path);
    exit(1);
  }
}

#endif
