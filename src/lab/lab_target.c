// The torch CPU target a lab result was computed under, in one line, for the report and diverge:
// its name and, per dtype, the ops gptmeg does not reproduce there (gm_target_support_get).
#include "gptmeg/kernels.h"
#include "gptmeg/lab.h"
#include "gptmeg/target.h"

#include <stdio.h>

void gm_lab_target_text(char *buf, size_t n) {
  const gm_torch_target t = gm_torch_target_active();
  static const gm_dtype dts[3] = {GM_F32, GM_F16, GM_BF16};
  size_t k = (size_t)snprintf(buf, n, "%s", gm_torch_target_name(t));
  const char *sep = "; not reproduced there: ";
  for (int op = 0; op < GM_KOP_N && k < n; op++)
    for (int d = 0; d < 3 && k < n; d++)
      if (!gm_target_support_get(t, (gm_kernel_op)op, dts[d]).exact) {
        k += (size_t)snprintf(buf + k, n - k, "%s%s %s%s", sep, gm_dtype_name(dts[d]), gm_kernel_op_name((gm_kernel_op)op),
                              gm_target_support_get(t, (gm_kernel_op)op, dts[d]).partial ? " (in part)" : "");
        sep = ", ";
      }
}
