// Numerics profiles: each is one setting of every knob in gm_profile (NUMERICS.md section 6).
#include "gptmeg/model.h"

#include <string.h>

int gm_profile_get(const char *name, gm_dtype dt, gm_profile *out) {
  memset(out, 0, sizeof *out);
  if (strcmp(name, "hf") != 0)
    return gm_fail("unknown or unbuilt numerics profile '%s' (built: hf)", name);
  if (dt != GM_F32) return gm_fail("profile 'hf' in %s is not built yet (built: f32)", gm_dtype_name(dt));
  out->name = "hf";
  out->dtype = dt;
  out->layer_norm = GM_LN_IN_DTYPE;
  out->scores = GM_SCORES_DIVIDE_AFTER;
  out->mask = GM_MASK_FINFO_MIN;
  out->softmax = GM_SOFTMAX_IN_DTYPE;
  out->act_from_config = true;
  // eager: the HF formulas op by op in f32, as eager PyTorch runs them; unlike torch-cpu its bits
  // do not depend on the thread count, which the forward guarantees.
  out->gelu_mode = MODE_EAGER;
  out->honor_upcast_option = true;
  // Probe: if the GELU library cannot evaluate this mode for f32 yet, use the private fallback.
  float x = 0.5f, y = 0.0f;
  gm_gelu_spec s = {GELU_NEW, out->gelu_mode};
  out->private_gelu = gm_gelu_fwd(s, GM_F32, &x, &y, 1, 1) != 0;
  return 0;
}
