// lab/certify: run every input of a range through a GELU implementation and compare it with the
// correctly rounded result (the exact mode), with a resumable checkpoint.
#ifndef GPTMEG_CERTIFY_H
#define GPTMEG_CERTIFY_H

#include "gptmeg/gelu.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GM_CERT_BUCKETS = 7 };
extern const char *const gm_cert_bucket_labels[GM_CERT_BUCKETS]; // "0","1","2","3-4","5-16","17-256",">256"
int gm_cert_bucket(uint64_t ulp);

typedef struct {
  gm_gelu_spec spec;
  gm_dtype dtype;     // f32, f16 or bf16
  int backward;       // certify dx with dy = 1 (the derivative itself, rounded once)
  int64_t lo, hi;     // inclusive range of ordered keys (see gm_cert_key_from_value)
  int threads;
} gm_cert_job;

typedef struct {
  uint64_t n;                    // inputs done
  uint64_t max_ulp;
  double worst_input, worst_got, worst_exact;
  uint64_t hist[GM_CERT_BUCKETS];
  int64_t next;                  // next key to do (resume point); > hi when done
  char implementation[17];       // SPEC's fingerprint in hex, "" until gm_cert_implementation
} gm_cert_state;

// Ordered key of a value in the dtype: adjacent representable values have adjacent keys, -0 and
// +0 are distinct keys (-0 just below +0); NaNs are outside [key(-inf), key(+inf)] and not run.
int64_t gm_cert_key_from_value(gm_dtype dt, double v, int round_up);
double gm_cert_value_from_key(gm_dtype dt, int64_t key);
int64_t gm_cert_key_min(gm_dtype dt); // key of -inf
int64_t gm_cert_key_max(gm_dtype dt); // key of +inf

void gm_cert_state_init(gm_cert_state *s, const gm_cert_job *job);
// Runs up to `count` keys from s->next, updating s. Returns 0 or an error.
int gm_cert_step(const gm_cert_job *job, gm_cert_state *s, uint64_t count);
// The implementation's fingerprint, FNV-1a of SPEC's outputs on 4099 fixed inputs as 16 hex
// digits: differs between builds whose bits differ (checkpoints carry it and are refused by another
// implementation; --json prints it). Computed once per state; NULL if SPEC cannot run.
const char *gm_cert_implementation(const gm_cert_job *job, gm_cert_state *s);
// Adds v to a cJSON object: a number, or the string "inf", "-inf" or "nan" (JSON has no such numbers).
void gm_cert_json_add_value(void *cjson_object, const char *key, double v);
// Checkpoint file (JSON): save atomically; load returns 1 if a matching checkpoint was read,
// 0 if the file does not exist, -1 on error (a checkpoint of another job is an error).
int gm_cert_save(const char *path, const gm_cert_job *job, gm_cert_state *s);
int gm_cert_load(const char *path, const gm_cert_job *job, gm_cert_state *s);

#ifdef __cplusplus
}
#endif
#endif
