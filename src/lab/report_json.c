// lab/report_json: JSON forms of comparison statistics (used by `act compare --json` and report.json).
#include "lab/report_internal.h"

#include <math.h>

cJSON *lab_json_num(double v) {
  if (isnan(v)) return cJSON_CreateString("nan");
  if (isinf(v)) return cJSON_CreateString(v > 0 ? "inf" : "-inf");
  return cJSON_CreateNumber(v);
}

void *gm_cmp_stats_json(const gm_cmp_stats *s) {
  cJSON *j = cJSON_CreateObject();
  double n = s->n ? (double)s->n : 1;
  cJSON_AddNumberToObject(j, "n", (double)s->n);
  cJSON_AddNumberToObject(j, "equal_fraction", (double)s->equal / n);
  cJSON_AddNumberToObject(j, "allclose_fraction", (double)s->close_default / n);
  cJSON_AddNumberToObject(j, "user_close_fraction", (double)s->close_user / n);
  cJSON_AddItemToObject(j, "max_abs", lab_json_num(s->max_abs));
  cJSON_AddItemToObject(j, "max_rel", lab_json_num(s->max_rel));
  cJSON_AddNumberToObject(j, "max_ulp", (double)s->max_ulp);
  cJSON *h = cJSON_AddObjectToObject(j, "ulp_histogram");
  for (int b = 0; b < GM_LAB_BUCKETS; b++) cJSON_AddNumberToObject(h, gm_lab_bucket_labels[b], (double)s->hist[b]);
  cJSON_AddItemToObject(j, "mean_signed_error", lab_json_num(gm_cmp_mean_signed(s)));
  cJSON_AddNumberToObject(j, "nan_mismatch", (double)s->nan_mismatch);
  if (s->have_worst) {
    cJSON *w = cJSON_AddObjectToObject(j, "worst");
    cJSON_AddItemToObject(w, "x", lab_json_num(s->worst_x));
    cJSON_AddItemToObject(w, "a", lab_json_num(s->worst_a));
    cJSON_AddItemToObject(w, "b", lab_json_num(s->worst_b));
    cJSON_AddNumberToObject(w, "ulp", (double)s->worst_ulp);
  } else {
    cJSON_AddNullToObject(j, "worst");
  }
  return j;
}
