// The torch CPU target a lab result was computed under, in one line, for the report and diverge:
// its name and, per dtype, the ops gptmeg does not reproduce there (gm_target_support_get).
#include "gptmeg/kernels.h"
#include "gptmeg/lab.h"
#include "gptmeg/target.h"

#include <stdio.h>

void gm_lab_target_text(char *buf, size_t n) {
  static const gm_dtype dts[3] = {GM_F32, GM_F16, GM_BF16};
  const gm_torch_target t = gm_torch_target_active();
  char gaps[448];
  if (gm_target_gaps(t, dts, 3, gaps, sizeof gaps)) snprintf(buf, n, "%s; not reproduced there: %s", gm_torch_target_name(t), gaps);
  else snprintf(buf, n, "%s", gm_torch_target_name(t));
}
