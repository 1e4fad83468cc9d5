// Kept scratch buffers for the matmul family: one grow-only buffer per thread and slot. A fresh
// malloc of a packing buffer on every call costs a page fault per 4 KB (3-6% of a 256 x 768 x 768
// f32 product, about 5% of a bf16 prefill). Held in a pthread key whose destructor frees them when
// the thread ends (OpenMP replaces its workers when the thread count changes; a _Thread_local
// pointer would leak theirs). No numerics: the buffers only hold packed copies.
#include "kernels/matmul/matmul_isa.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
  void *buf[GM_SCRATCH_SLOTS];
  size_t cap[GM_SCRATCH_SLOTS];
} scratch_set;

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool key_ok;

static void set_free(void *p) {
  scratch_set *s = p;
  for (int i = 0; i < GM_SCRATCH_SLOTS; i++) free(s->buf[i]);
  free(s);
}

static void key_init(void) { key_ok = pthread_key_create(&key, set_free) == 0; }

void *gm_matmul_scratch(gm_scratch_slot slot, size_t bytes) {
  if ((unsigned)slot >= GM_SCRATCH_SLOTS) return NULL;
  pthread_once(&once, key_init);
  if (!key_ok) return NULL; // the caller takes its no-scratch path
  scratch_set *s = pthread_getspecific(key);
  if (!s) {
    if (!(s = calloc(1, sizeof *s))) return NULL;
    if (pthread_setspecific(key, s) != 0) { free(s); return NULL; }
  }
  if (bytes > s->cap[slot] || !s->buf[slot]) {
    free(s->buf[slot]);
    size_t want = (bytes ? bytes : 1);
    s->buf[slot] = aligned_alloc(64, (want + 63) / 64 * 64);
    s->cap[slot] = s->buf[slot] ? want : 0;
  }
  return s->buf[slot];
}
